package io.sluice.cluster;

import io.sluice.cluster.ClusterNode.PartitionId;
import java.util.concurrent.CompletableFuture;

/**
 * Where a test reaches into one node to make a moment happen that it cannot bring about from outside: a network cut
 * right after an install, a disk that stalls. Each node is given its own (so two nodes in one JVM are reached apart);
 * production nodes get {@link #NONE}, which does nothing. Implementations must be thread-safe: Ratis's threads call
 * them.
 */
interface NodeHooks {

    /** No hook: what every production node runs with. */
    NodeHooks NONE = new NodeHooks() {
    };

    /**
     * Runs on the install's thread once this node's replica of {@code partition} installed a snapshot from its leader,
     * before Ratis is told (a test cuts the network there, so that the leader's next notice, at which Ratis loads what
     * was installed, never comes).
     *
     * @param partition the partition
     */
    default void afterInstall(PartitionId partition) {
    }

    /**
     * As this node's replica of {@code partition} stores the batches of a log entry: a future the entry's write waits
     * for too (a test stalls one replica's disk so), or null for none.
     *
     * @param partition the partition
     * @return the future to wait for, or null
     */
    default CompletableFuture<?> storeDelay(PartitionId partition) {
        return null;
    }
}
