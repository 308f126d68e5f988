package io.sluice.cluster;

import io.sluice.broker.Replication.PartitionView;
import io.sluice.cluster.ClusterNode.PartitionId;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Who leads the partitions this node holds no replica of (a topic whose replication factor is below the cluster's
 * size), as their replicas report it.
 *
 * <p>A Kafka client sends Metadata to whichever broker it is connected to with the fewest requests in flight, which may
 * be one with no replica of the partition every time (a client bootstrapped at that broker alone); every Kafka broker
 * knows each partition's leader from the controller's metadata. Here leadership lives in each partition's own Raft
 * group, which only its replicas belong to, so a node asks the replicas (a group-info round trip to each, until one
 * says it leads) when it is asked about such a partition and has no answer younger than {@link #FRESH_MILLIS}, and
 * answers from its last one meanwhile. While it asks and has heard of no leader, the partition's leader is in doubt
 * here ({@link #asking}), so a Metadata answer waits for the round trip rather than send the client into a backoff.
 * A replica that does not lead names no leader: the leader's term and the replicas' own views are not mixed.
 *
 * <p>Thread-safe: asks run on the given executor, at most one per partition at a time.
 */
final class LeadersElsewhere {

    /** How old the last answer about a partition may be before a question about it asks the replicas again. */
    static final long FRESH_MILLIS = 500;

    private static final Logger LOG = LoggerFactory.getLogger(LeadersElsewhere.class);

    /** A replica's role in a partition's group, as it answers when asked: a round trip to that node. */
    @FunctionalInterface
    interface Replicas {
        /**
         * @return the role of node {@code node} in the group of {@code partition}
         * @throws IOException if the node cannot be reached or does not host the group
         */
        RoleInfoProto role(int node, PartitionId partition) throws IOException;
    }

    /** What the replicas last said, and when (the clock's nanoseconds). */
    private record Heard(PartitionView view, long atNanos) {
    }

    private final Replicas replicas;
    private final Executor executor;
    private final LongSupplier nanoClock;
    private final Map<PartitionId, Heard> heard = new ConcurrentHashMap<>();
    private final Set<PartitionId> inFlight = ConcurrentHashMap.newKeySet();

    /**
     * @param replicas how to ask a replica
     * @param executor where asks run (they block for a round trip per replica asked)
     * @param nanoClock the clock answers are aged by
     */
    LeadersElsewhere(Replicas replicas, Executor executor, LongSupplier nanoClock) {
        this.replicas = replicas;
        this.executor = executor;
        this.nanoClock = nanoClock;
    }

    /**
     * The partition as its replicas last described it (no leader if none said it leads, or none was asked yet), every
     * replica listed as in sync (a node that does not lead cannot know which are, as a follower cannot); asks again in
     * the background when that answer is older than {@link #FRESH_MILLIS}.
     *
     * @param partition a partition this node holds no replica of
     * @param replicaIds its replicas
     * @return what is known of it
     */
    PartitionView view(PartitionId partition, List<Integer> replicaIds) {
        Heard last = heard.get(partition);
        if (last == null || nanoClock.getAsLong() - last.atNanos() > TimeUnit.MILLISECONDS.toNanos(FRESH_MILLIS)) {
            ask(partition, replicaIds);
        }
        return last != null ? last.view() : new PartitionView(-1, -1, replicaIds, List.of());
    }

    /** @return true while the replicas are being asked and no leader was heard of since the last answer */
    boolean asking(PartitionId partition) {
        if (!inFlight.contains(partition)) {
            return false;
        }
        Heard last = heard.get(partition);
        return last == null || last.view().leader() < 0;
    }

    private void ask(PartitionId partition, List<Integer> replicaIds) {
        if (!inFlight.add(partition)) {
            return;
        }
        try {
            executor.execute(() -> {
                try {
                    heard.put(partition, new Heard(askReplicas(partition, replicaIds), nanoClock.getAsLong()));
                } finally {
                    inFlight.remove(partition);
                }
            });
        } catch (RuntimeException e) {
            inFlight.remove(partition);
            throw e;
        }
    }

    private PartitionView askReplicas(PartitionId partition, List<Integer> replicaIds) {
        for (int node : replicaIds) {
            try {
                RoleInfoProto role = replicas.role(node, partition);
                if (role.getRole() == RaftPeerRole.LEADER) {
                    int epoch = (int) Math.min(Integer.MAX_VALUE, role.getLeaderInfo().getTerm());
                    return new PartitionView(node, epoch, replicaIds, replicaIds);
                }
            } catch (IOException | RuntimeException e) {
                LOG.debug("node {} did not say whether it leads {}: {}", node, partition, e.toString());
            }
        }
        return new PartitionView(-1, -1, replicaIds, List.of());
    }
}
