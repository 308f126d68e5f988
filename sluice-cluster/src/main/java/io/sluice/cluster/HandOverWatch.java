package io.sluice.cluster;

import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.cluster.Tasks.Next;
import io.sluice.cluster.ratis.StuckHandOver;
import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The watch for hand-overs left pending (docs/cluster.md, "A hand-over stuck pending"; {@link StuckHandOver}): every
 * {@link #CHECK_MILLIS} (the task {@code node-<id>-stuck-hand-overs}) the node looks at the partitions it leads, and a
 * leader that shows the sign is probed, twice, a hand-over's time apart (the second probe a task of its own,
 * {@code node-<id>-hand-over-check-<partition>}); if it refuses appends as stepping down both times, it steps down
 * and the group elects again, which clears the pending hand-over.
 *
 * <p>Thread-safe; the rounds run on the node's {@link Tasks}.
 */
final class HandOverWatch {

    private static final Logger LOG = LoggerFactory.getLogger(HandOverWatch.class);

    /** How often the partitions led here are looked at. */
    static final long CHECK_MILLIS = 500;

    /** A replica of a partition on this node, as the watch sees it. */
    interface Replica {
        /** @return whether the replica leads and has committed an entry of its term */
        boolean isLeaderReady();

        /** @return its refusals of appends as stepping down */
        StuckHandOver stuckHandOver();

        /**
         * Probes the replica with an empty append, which appends nothing either way.
         *
         * @return whether it refused the probe as a leader stepping down
         */
        boolean refusesAsSteppingDown() throws IOException, InterruptedException;
    }

    private final int self;
    private final Tasks tasks;
    private final Supplier<Collection<PartitionId>> partitions;
    private final Function<PartitionId, Replica> replicaOf;
    private final Consumer<PartitionId> stepDown;
    private final long handOverMillis;

    /**
     * @param self this node's id
     * @param tasks where the checks run
     * @param partitions the partitions whose groups this node hosts
     * @param replicaOf this node's replica of a partition, or null
     * @param stepDown has this node's replica of a partition, which leads, step down
     * @param handOverMillis the longest hand-over this node asks for: the wait between the two probes is a little
     *     longer
     */
    HandOverWatch(int self, Tasks tasks, Supplier<Collection<PartitionId>> partitions,
                  Function<PartitionId, Replica> replicaOf, Consumer<PartitionId> stepDown, long handOverMillis) {
        this.self = self;
        this.tasks = tasks;
        this.partitions = partitions;
        this.replicaOf = replicaOf;
        this.stepDown = stepDown;
        this.handOverMillis = handOverMillis;
    }

    /** Starts the watch. */
    void start() {
        tasks.start("node-" + self + "-stuck-hand-overs", Duration.ofMillis(CHECK_MILLIS), () -> {
            check();
            return Next.inMillis(CHECK_MILLIS);
        });
    }

    /**
     * Probes each leader here that shows the sign of a hand-over stuck pending; one that refuses the probe as stepping
     * down is probed again a hand-over's time later.
     */
    void check() throws InterruptedException {
        for (PartitionId id : partitions.get()) {
            try {
                Replica replica = replicaOf.apply(id);
                if (replica == null || !replica.isLeaderReady()
                        || !replica.stuckHandOver().stuck(tasks.nanoTime())) {
                    continue;
                }
                replica.stuckHandOver().ended();
                if (replica.refusesAsSteppingDown()) {
                    tasks.start("node-" + self + "-hand-over-check-" + id, Duration.ofMillis(handOverMillis + 100),
                            () -> {
                                probeAgain(id, replica);
                                return Next.DONE;
                            });
                }
            } catch (IOException | RuntimeException e) {
                LOG.warn("node {}: the check of {}'s hand-over failed: {}", self, id, e.toString());
            }
        }
    }

    /** Still refusing, and still a hand-over's time later: not one hand-over in its time; the leader steps down. */
    private void probeAgain(PartitionId id, Replica replica) throws InterruptedException {
        try {
            if (!replica.isLeaderReady() || !replica.refusesAsSteppingDown()) {
                return;
            }
            LOG.warn("node {}: {} has refused appends as handing its leadership over for {} ms or more, a hand-over"
                    + " left pending with no time limit: its leader here steps down", self, id,
                    TimeUnit.NANOSECONDS.toMillis(replica.stuckHandOver().stuckNanos()));
            stepDown.accept(id);
        } catch (IOException | RuntimeException e) {
            LOG.warn("node {}: the check of {}'s hand-over failed: {}", self, id, e.toString());
        }
    }
}
