package io.sluice.cluster;

import io.sluice.broker.Replication.PartitionView;
import io.sluice.cluster.ClusterNode.PartitionId;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;
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
 * group, which only its replicas belong to, so a node asks the replicas (a group-info round trip to each, all at once)
 * when it is asked about such a partition and has no answer younger than {@link #FRESH_MILLIS} that named a leader,
 * and answers from its last one meanwhile. Of the replicas that say they lead, the one in the highest term is named: a leader cut off from
 * the others still says it leads until it steps down, in an older term.
 *
 * <p>The leader is in doubt here ({@link #inDoubt}) while the replicas are being asked and none was heard to lead, or
 * the last answer is older than twice {@link #FRESH_MILLIS} (a node asked nothing for a while): a Metadata answer then
 * waits for the round trip rather than name no leader, or a stale one, and send the client into a backoff. A doubt
 * lasts at most {@code doubtMillis} from when it began, until a leader is heard of again: replicas that cannot be
 * reached do not hold every answer.
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
    private final long doubtNanos;
    private final Map<PartitionId, Heard> heard = new ConcurrentHashMap<>();
    private final Set<PartitionId> inFlight = ConcurrentHashMap.newKeySet();
    /** When the current doubt about a partition began, until a leader is heard of and fresh again. */
    private final Map<PartitionId, Long> doubtSince = new ConcurrentHashMap<>();

    /**
     * @param replicas how to ask a replica
     * @param executor where asks run (a task per partition asked, and one per replica asked, each blocking for a
     *     round trip); one that refuses (it was shut down) leaves the last answers as they are
     * @param nanoClock the clock answers are aged by
     * @param doubtMillis the longest a doubt lasts
     */
    LeadersElsewhere(Replicas replicas, Executor executor, LongSupplier nanoClock, long doubtMillis) {
        this.replicas = replicas;
        this.executor = executor;
        this.nanoClock = nanoClock;
        this.doubtNanos = TimeUnit.MILLISECONDS.toNanos(doubtMillis);
    }

    /**
     * The partition as its replicas last described it (no leader if none said it leads, or none was asked yet), every
     * replica listed as in sync (a node that does not lead cannot know which are, as a follower cannot); asks again in
     * the background when that answer is older than {@link #FRESH_MILLIS} or named no leader.
     *
     * @param partition a partition this node holds no replica of
     * @param replicaIds its replicas
     * @return what is known of it
     */
    PartitionView view(PartitionId partition, List<Integer> replicaIds) {
        Heard last = heard.get(partition);
        // An answer that named no leader (none elected yet, or none reachable) is asked again at the next question.
        if (last == null || last.view().leader() < 0
                || ageNanos(last) > TimeUnit.MILLISECONDS.toNanos(FRESH_MILLIS)) {
            ask(partition, replicaIds);
        }
        return last != null ? last.view() : noLeader(replicaIds);
    }

    /**
     * The leader the replicas named in an answer younger than {@link #FRESH_MILLIS}, for a replica here that knows
     * none itself (an older answer may name one that has died since); asks again as {@link #view} does.
     *
     * @param partition a partition
     * @param replicaIds the replicas to ask (this node's own replica left out)
     * @return the partition as the fresh answer describes it, or null if none named a leader
     */
    PartitionView freshLeader(PartitionId partition, List<Integer> replicaIds) {
        view(partition, replicaIds);
        Heard last = heard.get(partition);
        return last != null && last.view().leader() >= 0
                && ageNanos(last) <= TimeUnit.MILLISECONDS.toNanos(FRESH_MILLIS) ? last.view() : null;
    }

    /**
     * Whether an answer about the partition should wait: asks the replicas if the last answer is not fresh (as
     * {@link #view} does), then is true while they are being asked and the last answer named no leader or is older
     * than twice {@link #FRESH_MILLIS}, for at most the doubt's length since it began.
     *
     * @param partition a partition this node holds no replica of
     * @param replicaIds its replicas
     * @return true if a Metadata answer naming this partition's leader should wait for the replicas' answer
     */
    boolean inDoubt(PartitionId partition, List<Integer> replicaIds) {
        view(partition, replicaIds);
        Heard last = heard.get(partition);
        boolean unsure = last == null || last.view().leader() < 0
                || ageNanos(last) > 2 * TimeUnit.MILLISECONDS.toNanos(FRESH_MILLIS);
        if (!unsure) {
            doubtSince.remove(partition);
            return false;
        }
        if (!inFlight.contains(partition)) {
            return false;
        }
        long now = nanoClock.getAsLong();
        return now - doubtSince.computeIfAbsent(partition, key -> now) < doubtNanos;
    }

    private long ageNanos(Heard last) {
        return nanoClock.getAsLong() - last.atNanos();
    }

    private static PartitionView noLeader(List<Integer> replicaIds) {
        return new PartitionView(-1, -1, replicaIds, List.of());
    }

    private void ask(PartitionId partition, List<Integer> replicaIds) {
        if (!inFlight.add(partition)) {
            return;
        }
        try {
            executor.execute(() -> {
                try {
                    PartitionView view = askReplicas(partition, replicaIds);
                    if (view != null) {
                        heard.put(partition, new Heard(view, nanoClock.getAsLong()));
                    }
                } finally {
                    inFlight.remove(partition);
                }
            });
        } catch (RejectedExecutionException e) {
            // The node is closing: the last answers stand.
            inFlight.remove(partition);
        }
    }

    /** @return the replica that says it leads in the highest term, or none; null if interrupted (closing) */
    private PartitionView askReplicas(PartitionId partition, List<Integer> replicaIds) {
        List<CompletableFuture<RoleInfoProto>> roles = new ArrayList<>(replicaIds.size());
        for (int node : replicaIds) {
            CompletableFuture<RoleInfoProto> role = new CompletableFuture<>();
            roles.add(role);
            try {
                executor.execute(() -> {
                    try {
                        role.complete(replicas.role(node, partition));
                    } catch (IOException | RuntimeException e) {
                        LOG.debug("node {} did not say whether it leads {}: {}", node, partition, e.toString());
                        role.complete(null);
                    }
                });
            } catch (RejectedExecutionException e) {
                return null;
            }
        }
        int leader = -1;
        long term = -1;
        for (int i = 0; i < replicaIds.size(); i++) {
            RoleInfoProto role;
            try {
                role = roles.get(i).get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return null;
            } catch (java.util.concurrent.ExecutionException e) {
                continue;
            }
            if (role != null && role.getRole() == RaftPeerRole.LEADER && role.getLeaderInfo().getTerm() > term) {
                leader = replicaIds.get(i);
                term = role.getLeaderInfo().getTerm();
            }
        }
        return leader < 0 ? noLeader(replicaIds)
                : new PartitionView(leader, (int) Math.min(Integer.MAX_VALUE, term), replicaIds, replicaIds);
    }
}
