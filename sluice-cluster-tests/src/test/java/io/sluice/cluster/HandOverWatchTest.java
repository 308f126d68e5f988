package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.cluster.ratis.StuckHandOver;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * The watch for hand-overs left pending, driven by a clock the test moves: a leader that shows the sign is probed,
 * and steps down only if it still refuses appends as stepping down a hand-over's time later.
 */
class HandOverWatchTest {

    private static final PartitionId STUCK = new PartitionId("t", 0);
    private static final PartitionId FINE = new PartitionId("t", 1);

    private final ManualTasks tasks = new ManualTasks();
    private final Map<PartitionId, Leader> leaders = new ConcurrentHashMap<>();
    private final List<PartitionId> steppedDown = new ArrayList<>();
    private final HandOverWatch watch = new HandOverWatch(1, tasks, leaders::keySet, leaders::get, steppedDown::add,
            Leadership.HAND_OVER_MILLIS);

    /** A leading replica: its refusals as the test makes them, and how it answers probes. */
    private final class Leader implements HandOverWatch.Replica {
        final StuckHandOver refusals = new StuckHandOver(Duration.ofMillis(Leadership.HAND_OVER_MILLIS));
        volatile boolean refusing;
        volatile boolean ready = true;
        int probes;

        @Override
        public boolean isLeaderReady() {
            return ready;
        }

        @Override
        public StuckHandOver stuckHandOver() {
            return refusals;
        }

        @Override
        public boolean refusesAsSteppingDown() {
            probes++;
            return refusing;
        }

    }

    /** An append refused as stepping down every 100 ms for {@code millis}, as the test's clock moves on. */
    private void refuseFor(Leader leader, long millis) {
        for (long t = 0; t < millis; t += 100) {
            leader.refusals.refused(tasks.nanoTime());
            tasks.advance(Duration.ofMillis(100));
        }
    }

    @AfterEach
    void close() {
        tasks.close();
        assertThat(tasks.failures()).as("rounds that threw").isEmpty();
    }

    @Test
    void theStuckThresholdOutlastsTheLongestHandOverThisNodeAsksFor() {
        assertThat(new Leader().refusals.stuckNanos()).isGreaterThan(Duration.ofMillis(Leadership.HAND_OVER_MILLIS)
                .toNanos());
    }

    @Test
    void aLeaderRefusingPastAnyHandOverIsProbedTwiceAHandOverApartAndStepsDown() {
        Leader stuck = new Leader();
        Leader fine = new Leader();
        leaders.put(STUCK, stuck);
        leaders.put(FINE, fine);
        watch.start();
        stuck.refusing = true;
        refuseFor(stuck, 1_800);
        assertThat(stuck.probes).as("probes while the refusals span less than the stuck time").isZero();
        refuseFor(stuck, 200);
        assertThat(stuck.probes).as("the first probe").isEqualTo(1);
        assertThat(fine.probes).as("a leader with no refusals is not probed").isZero();
        assertThat(tasks.pending()).contains("node-1-hand-over-check-t-0");
        tasks.advance(Duration.ofMillis(Leadership.HAND_OVER_MILLIS));
        assertThat(steppedDown).as("within a hand-over's time of the first probe").isEmpty();
        tasks.advance(Duration.ofMillis(100));
        assertThat(stuck.probes).as("the second probe").isEqualTo(2);
        assertThat(steppedDown).containsExactly(STUCK);
    }

    @Test
    void aLeaderThatTakesAppendsAgainByTheSecondProbeStaysLeader() {
        Leader stuck = new Leader();
        leaders.put(STUCK, stuck);
        watch.start();
        stuck.refusing = true;
        refuseFor(stuck, 2_000);
        assertThat(stuck.probes).isEqualTo(1);
        stuck.refusing = false; // the hand-over ended in its time
        tasks.advance(Duration.ofMillis(Leadership.HAND_OVER_MILLIS + 100));
        assertThat(stuck.probes).isEqualTo(2);
        assertThat(steppedDown).isEmpty();
        tasks.advance(Duration.ofSeconds(10));
        assertThat(stuck.probes).as("the refusals that were the sign are dealt with").isEqualTo(2);
    }

    @Test
    void aLeaderThatLostItsLeadershipMeanwhileIsLeftAlone() {
        Leader stuck = new Leader();
        leaders.put(STUCK, stuck);
        watch.start();
        stuck.refusing = true;
        refuseFor(stuck, 2_000);
        stuck.ready = false;
        tasks.advance(Duration.ofMillis(Leadership.HAND_OVER_MILLIS + 100));
        assertThat(stuck.probes).as("not probed again once no longer leading").isEqualTo(1);
        assertThat(steppedDown).isEmpty();
    }
}
