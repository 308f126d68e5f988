package io.sluice.cluster;

import io.sluice.broker.Replication.Appended;
import io.sluice.broker.Replication.NotLeaderException;
import io.sluice.broker.Replication.PartitionView;
import io.sluice.broker.ProducerHistory;
import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.store.KafkaBatch;
import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.RaftPeerId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The partitions as the broker sees them through {@link io.sluice.broker.Replication}: who leads each (this node's
 * replica, the other replicas while it is stopped here, or the replicas of a partition this node holds none of,
 * {@link LeadersElsewhere}), whether that leader is in doubt, appends, and the high watermark.
 *
 * <p>Thread-safe: the broker's request threads call it.
 */
final class ReplicaViews {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaViews.class);

    /**
     * How long a follower may go without a word from its leader before the leader is in doubt: the leader's next
     * heartbeat follows each answer by half {@link RaftSettings#RPC_TIMEOUT_MIN} (75 ms), and a round trip more; and
     * less than {@link RaftSettings#RPC_TIMEOUT_MIN}, so that the doubt begins before the follower can stand for
     * election and stop naming that leader.
     */
    static final long LEADER_SILENCE_MILLIS = RaftSettings.RPC_TIMEOUT_MIN.toLong(TimeUnit.MILLISECONDS) * 4 / 5;
    /**
     * How long a doubt lasts at most: a dead leader is noticed within two election timeouts of its last word and the
     * election takes a round trip or two more, and a partition that cannot elect (no majority reachable from here) is
     * not waited for again until it had a leader.
     */
    static final long DOUBT_MILLIS = 4 * RaftSettings.RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS);

    private final int self;
    private final Replicas replicas;
    private final ReplicaRestarts restarts;
    private final MetadataState metadata;
    private final LeadersElsewhere leadersElsewhere;
    private final LongSupplier nanoClock;
    /** When a replica was first found unsure of its leader, by partition, until it is sure again. */
    private final Map<PartitionId, Long> unsureSince = new ConcurrentHashMap<>();

    /**
     * @param self this node's id
     * @param replicas the replicas it hosts
     * @param restarts its replicas stopped after their log failed
     * @param metadata what it applied of the metadata
     * @param leadersElsewhere who leads the partitions it holds no replica of
     * @param nanoClock the clock doubts are timed by
     */
    ReplicaViews(int self, Replicas replicas, ReplicaRestarts restarts, MetadataState metadata,
               LeadersElsewhere leadersElsewhere, LongSupplier nanoClock) {
        this.self = self;
        this.replicas = replicas;
        this.restarts = restarts;
        this.metadata = metadata;
        this.leadersElsewhere = leadersElsewhere;
        this.nanoClock = nanoClock;
    }

    /**
     * In doubt: a candidate, a follower that knows no leader, or one whose leader has been silent for more than
     * {@link #LEADER_SILENCE_MILLIS}, for less than {@link #DOUBT_MILLIS} since it was first found so (roles read from
     * one snapshot of the replica's). A partition this node holds no replica of is in doubt while its replicas are
     * being asked who leads and none was heard of lately ({@link LeadersElsewhere#inDoubt}).
     */
    boolean leaderInDoubt(String topic, int partition) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        if (replica == null) {
            MetadataCommands.Topic known = metadata.topic(topic);
            return known != null && partition >= 0 && partition < known.partitions()
                    && !known.replicas().get(partition).contains(self)
                    && leadersElsewhere.inDoubt(new PartitionId(topic, partition), known.replicas().get(partition));
        }
        RoleInfoProto role = ReplicatedPartition.roleInfo(replica.division());
        PartitionId id = new PartitionId(topic, partition);
        if (role == null) {
            // Still starting: it knows no leader yet, and the others are asked, as for a follower that knows none.
            role = RoleInfoProto.newBuilder().setRole(RaftPeerRole.FOLLOWER).build();
        }
        if (role.getRole() == RaftPeerRole.CANDIDATE
                || role.getRole() == RaftPeerRole.FOLLOWER && !role.getFollowerInfo().getLeaderInfo().hasId()) {
            // A replica that knows no leader (just started, or standing for election because it has heard from none):
            // the other replicas say whether one of them leads, a round trip, rather than hold the answer until a
            // leader's first heartbeat reaches it, which after a restart took seconds (the leader's connection to it
            // backs off while it is down). Only a replica that says it leads is named, so a leader that died is not.
            // While the answer is on its way the replica is unsure as below, within the same bounded doubt.
            if (leadersElsewhere.freshLeader(id, othersOf(topic, partition)) != null) {
                unsureSince.remove(id);
                return false;
            }
        }
        boolean unsure = switch (role.getRole()) {
            case CANDIDATE -> true;
            case FOLLOWER -> !role.getFollowerInfo().getLeaderInfo().hasId()
                    || role.getFollowerInfo().getLeaderInfo().getLastRpcElapsedTimeMs() > LEADER_SILENCE_MILLIS;
            default -> false;
        };
        if (!unsure) {
            unsureSince.remove(id);
            return false;
        }
        long now = nanoClock.getAsLong();
        return now - unsureSince.computeIfAbsent(id, key -> now) < TimeUnit.MILLISECONDS.toNanos(DOUBT_MILLIS);
    }

    /** @return the partition's replicas other than this node, as the metadata names them (none if it names none) */
    private List<Integer> othersOf(String topic, int partition) {
        MetadataCommands.Topic known = metadata.topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return List.of();
        }
        return known.replicas().get(partition).stream().filter(id -> id != self).toList();
    }

    /** @return the partition's leader, epoch, replicas and in-sync replicas as this node knows them, or null */
    PartitionView partition(String topic, int partition) {
        MetadataCommands.Topic known = metadata.topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return null;
        }
        List<Integer> replicaIds = known.replicas().get(partition);
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        if (replica == null) {
            PartitionId id = new PartitionId(topic, partition);
            PartitionView away = restarts.whileStopped(id);
            if (away != null) {
                return away;
            }
            // No replica here: a topic on fewer brokers than the cluster has, whose leader this node asks of them.
            return replicaIds.contains(self) ? new PartitionView(-1, -1, replicaIds, List.of())
                    : leadersElsewhere.view(id, replicaIds);
        }
        var info = replica.division().getInfo();
        RaftPeerId leader = info.getLeaderId();
        int epoch = (int) Math.min(Integer.MAX_VALUE, info.getCurrentTerm());
        List<Integer> inSync = replicaIds;
        if (info.isLeader()) {
            inSync = replica.inSync();
        }
        if (leader == null && !info.isLeader()) {
            // No leader heard of here yet: the one the other replicas name, if they name one (leaderInDoubt).
            PartitionView told = leadersElsewhere.freshLeader(new PartitionId(topic, partition),
                    othersOf(topic, partition));
            if (told != null) {
                return new PartitionView(told.leader(), Math.max(epoch, told.leaderEpoch()), replicaIds, inSync);
            }
        }
        return new PartitionView(leader == null ? -1 : ClusterNode.nodeId(leader), epoch, replicaIds, inSync);
    }

    /** @return the Raft term this node's replica is in, or -1 */
    int leaderEpoch(String topic, int partition) {
        MetadataCommands.Topic known = metadata.topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return -1;
        }
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        return replica == null ? -1 : (int) Math.min(Integer.MAX_VALUE, replica.term());
    }

    /**
     * @return whether this node's replica leads, ready, with a store that agrees with its log; a leader whose store
     *     lost batches its log names steps aside (its replica is rebuilt)
     */
    boolean leads(String topic, int partition) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        if (replica == null || !replica.isLeaderReady()) {
            return false;
        }
        try {
            replica.machine().settle();
            return true;
        } catch (IOException | RuntimeException e) {
            LOG.error("{}-{}: the store does not agree with the Raft log: {}", topic, partition, e.toString());
            if (e instanceof LostBatchesException) {
                // A leader that cannot serve what its log names steps aside: its replica is rebuilt.
                restarts.logFailed(replica.id(), replica.machine(), e);
            }
            return false;
        }
    }

    /** Appends a batch through this node's replica, which must lead. */
    Appended append(String topic, int partition, KafkaBatch batch) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        if (replica == null) {
            CompletableFuture<Long> refused = CompletableFuture.failedFuture(new NotLeaderException("node " + self
                    + " holds no replica of " + topic + "-" + partition));
            return new Appended(refused, refused);
        }
        ReplicatedPartition.Appended appended = replica.append(batch);
        return new Appended(appended.stored(), appended.committed());
    }

    /**
     * Moves a partition's log start through this node's replica, which must lead ({@link ReplicatedPartition#deleteRecords}).
     */
    CompletableFuture<Long> deleteRecords(String topic, int partition, long offset) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        if (replica == null) {
            return CompletableFuture.failedFuture(new NotLeaderException("node " + self + " holds no replica of "
                    + topic + "-" + partition));
        }
        return replica.deleteRecords(offset);
    }

    /** @return the partition's log start as this node's replica applied it, 0 without one */
    long logStart(String topic, int partition) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        return replica == null ? 0 : replica.machine().logStart();
    }

    /** @return the offset below which this node's replica knows the partition committed, 0 without one */
    long highWatermark(String topic, int partition) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        return replica == null ? 0 : replica.highWatermark();
    }

    /** @return the producers this node's replica keeps of its log, or null (no replica, or none kept yet) */
    ProducerHistory producerHistory(String topic, int partition) {
        ReplicatedPartition replica = replicas.replicaOf(topic, partition);
        return replica == null ? null : replica.machine().producerHistory();
    }
}
