package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.cluster.ClusterNode.PartitionId;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

/** Which partitions a node hands to their preferred replicas, and when. */
class PreferredLeadersTest {

    private static final PartitionId NEW = new PartitionId("t", 0);
    private static final PartitionId OLD = new PartitionId("t", 1);
    private static final PartitionId OWN = new PartitionId("t", 2);

    private final AtomicLong now = new AtomicLong(5_000_000_000L);
    private final List<PreferredLeaders.Led> led = new ArrayList<>();
    private final Map<PartitionId, CompletableFuture<Boolean>> handedOver = new HashMap<>();
    private final List<String> handOvers = new ArrayList<>();

    private PreferredLeaders preferred(Duration interval) {
        return new PreferredLeaders(1, new PreferredLeaders.Node() {
            @Override
            public List<PreferredLeaders.Led> led() {
                return led;
            }

            @Override
            public CompletableFuture<Boolean> handOver(PartitionId partition, int to) {
                handOvers.add(partition + "->" + to);
                CompletableFuture<Boolean> done = new CompletableFuture<>();
                handedOver.put(partition, done);
                return done;
            }
        }, interval, now::get);
    }

    @Test
    void aNewGroupsLeaderHandsOverOnceThePreferredReplicaIsInSync() {
        PreferredLeaders preferred = preferred(Duration.ZERO);
        led.add(new PreferredLeaders.Led(NEW, List.of(2, 3, 1), 2, List.of(1, 3), true));
        led.add(new PreferredLeaders.Led(OLD, List.of(3, 1, 2), 4, List.of(1, 2, 3), false));
        led.add(new PreferredLeaders.Led(OWN, List.of(1, 2, 3), 1, List.of(1, 2, 3), true));
        assertThat(preferred.check()).as("node 2 not in sync yet").isZero();
        led.set(0, new PreferredLeaders.Led(NEW, List.of(2, 3, 1), 2, List.of(1, 2, 3), true));
        now.addAndGet(Duration.ofHours(1).toNanos());
        assertThat(preferred.check()).isEqualTo(1);
        assertThat(handOvers).as("an older group is left alone without the periodic check").containsExactly("t-0->2");
        assertThat(preferred.check()).as("not while the hand-over is under way").isZero();
        handedOver.get(NEW).complete(false);
        assertThat(preferred.check()).as("not again within the back-off").isZero();
        now.addAndGet(Duration.ofMillis(PreferredLeaders.FIRST_BACK_OFF_MILLIS).toNanos());
        assertThat(preferred.check()).as("again after the back-off").isEqualTo(1);
        handedOver.get(NEW).complete(false);
        now.addAndGet(Duration.ofMillis(PreferredLeaders.FIRST_BACK_OFF_MILLIS).toNanos());
        assertThat(preferred.check()).as("the back-off doubled").isZero();
        now.addAndGet(Duration.ofMillis(PreferredLeaders.FIRST_BACK_OFF_MILLIS).toNanos());
        assertThat(preferred.check()).isEqualTo(1);
    }

    @Test
    void aCheckStartsAFewHandOversAtATime() {
        PreferredLeaders preferred = preferred(Duration.ZERO);
        for (int p = 0; p < 10; p++) {
            led.add(new PreferredLeaders.Led(new PartitionId("many", p), List.of(2, 1, 3), 1, List.of(1, 2, 3), true));
        }
        assertThat(preferred.check()).isEqualTo(PreferredLeaders.HAND_OVERS_PER_CHECK);
        handedOver.values().forEach(done -> done.complete(true));
        led.subList(0, PreferredLeaders.HAND_OVERS_PER_CHECK).clear(); // led by node 2 now
        assertThat(preferred.check()).isEqualTo(PreferredLeaders.HAND_OVERS_PER_CHECK);
    }

    @Test
    void thePeriodicCheckHandsOverEveryPartitionLedAwayFromItsPreferredReplica() {
        PreferredLeaders preferred = preferred(Duration.ofSeconds(300));
        led.add(new PreferredLeaders.Led(OLD, List.of(3, 1, 2), 4, List.of(1, 2, 3), false));
        led.add(new PreferredLeaders.Led(OWN, List.of(1, 2, 3), 6, List.of(1, 2, 3), false));
        assertThat(preferred.check()).as("before the interval").isZero();
        now.addAndGet(Duration.ofSeconds(299).toNanos());
        assertThat(preferred.check()).isZero();
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        assertThat(preferred.check()).isEqualTo(1);
        assertThat(handOvers).containsExactly("t-1->3");
        handedOver.get(OLD).complete(true);
        now.addAndGet(Duration.ofSeconds(1).toNanos());
        assertThat(preferred.check()).as("the next full check is an interval later").isZero();
    }
}
