package io.sluice.cluster;

import io.sluice.broker.Replication.Election;
import io.sluice.cluster.ClusterNode.PartitionId;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Where the leadership of this node's partitions goes: to their preferred replicas ({@link PreferredLeaders}, checked
 * each second by the task {@code node-<id>-preferred-leaders}), on a preferred election a client asks for, and away
 * from a leader left refusing appends by a hand-over stuck pending ({@link HandOverWatch}). Hand-overs are Ratis's
 * leadership transfers: appends are refused for the round trip one takes, and the preferred replica is told to stand
 * at once.
 *
 * <p>Thread-safe.
 */
final class Leadership {

    private static final Logger LOG = LoggerFactory.getLogger(Leadership.class);

    /**
     * The longest a preferred election lets Ratis hand leadership over: Ratis refuses the partition's appends while it
     * does, waiting for the preferred replica's log to match, and for a replica that died meanwhile until the time is
     * up. A few election timeouts; a client's ElectLeaders timeout only bounds how long its answer waits.
     */
    static final long HAND_OVER_MILLIS = 3 * RaftSettings.RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS);
    /** How often the partitions led here are checked for their preferred replicas. */
    static final long PREFERRED_CHECK_MILLIS = 1_000;

    private static final AtomicLong TRANSFER_CALLS = new AtomicLong();

    private final RaftGroups groups;
    private final Replicas replicas;
    private final MetadataState metadata;
    private final ReplicaViews partitions;
    private final Executor askers;
    private final Tasks tasks;
    /** The client id and call ids of the step-downs the hand-over watch asks for. */
    private final ClientId stepDowns = ClientId.randomId();
    private final AtomicLong stepDownCalls = new AtomicLong();

    /**
     * @param groups the node's groups
     * @param replicas the replicas it hosts
     * @param metadata what it applied of the metadata (each partition's replicas, the preferred one first)
     * @param partitions what it knows of each partition's leader
     * @param askers where asks of other nodes run (a virtual thread each)
     * @param tasks where the checks run
     */
    Leadership(RaftGroups groups, Replicas replicas, MetadataState metadata, ReplicaViews partitions, Executor askers,
               Tasks tasks) {
        this.groups = groups;
        this.replicas = replicas;
        this.metadata = metadata;
        this.partitions = partitions;
        this.askers = askers;
        this.tasks = tasks;
    }

    /**
     * Starts handing the partitions this node leads to their preferred replicas: those of groups it added lately, and,
     * every {@code checkInterval} (zero: never), every other one.
     */
    void keepPreferredLeaders(Duration checkInterval) {
        PreferredLeaders preferred = new PreferredLeaders(groups.selfId(), new PreferredLeaders.Node() {
            @Override
            public List<PreferredLeaders.Led> led() {
                return ledHere();
            }

            @Override
            public CompletableFuture<Boolean> handOver(PartitionId partition, int to) {
                return transferLeadership(partition, to, RaftSettings.RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS))
                        .thenApply(RaftClientReply::isSuccess);
            }
        }, checkInterval, tasks::nanoTime);
        tasks.every("node-" + groups.selfId() + "-preferred-leaders", Duration.ofMillis(PREFERRED_CHECK_MILLIS),
                preferred::check);
    }

    /** @return the partitions this node leads now, with their replicas (once the metadata names them) */
    private List<PreferredLeaders.Led> ledHere() {
        long now = tasks.nanoTime();
        replicas.added().entrySet().removeIf(entry -> {
            PartitionId id = entry.getKey();
            if (now - entry.getValue() >= TimeUnit.SECONDS.toNanos(PreferredLeaders.NEW_GROUP_SECONDS)) {
                return true;
            }
            MetadataCommands.Topic topic = metadata.topic(id.topic());
            ReplicatedPartition replica = replicas.replicaOf(id.topic(), id.partition());
            RaftPeerId leader = replica == null ? null : replica.division().getInfo().getLeaderId();
            return topic != null && id.partition() < topic.partitions() && leader != null
                    && ClusterNode.nodeId(leader) == topic.replicas().get(id.partition()).getFirst();
        });
        List<PreferredLeaders.Led> led = new ArrayList<>();
        for (PartitionId id : replicas.known()) {
            MetadataCommands.Topic topic = metadata.topic(id.topic());
            ReplicatedPartition replica = replicas.replicaOf(id.topic(), id.partition());
            if (topic == null || id.partition() >= topic.partitions() || replica == null) {
                continue;
            }
            var info = replica.division().getInfo();
            if (info.isLeader()) {
                boolean isNew = replicas.added().containsKey(id);
                led.add(new PreferredLeaders.Led(id, topic.replicas().get(id.partition()), info.getCurrentTerm(),
                        replica.inSync(), isNew));
            }
        }
        return led;
    }

    /**
     * Asks this node's replica of a partition, which leads it, to hand leadership to replica {@code to}: Ratis refuses
     * appends meanwhile, waits (up to {@code timeoutMillis}) for that replica's log to match, and tells it to stand.
     */
    CompletableFuture<RaftClientReply> transferLeadership(PartitionId partition, int to, long timeoutMillis) {
        return groups.transferLeadership(ClientId.randomId(), TRANSFER_CALLS.incrementAndGet(),
                groups.groupId(partition), ClusterNode.peerId(to), timeoutMillis);
    }

    /** Has this node's replica of a partition, which leads it, step down: the group elects again. */
    void stepDown(PartitionId partition) {
        groups.transferLeadership(stepDowns, stepDownCalls.incrementAndGet(), groups.groupId(partition), null,
                RaftSettings.RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS)).whenComplete((reply, failure) -> {
                    if (failure != null || !reply.isSuccess()) {
                        LOG.warn("node {}: {}'s leader here did not step down: {}", groups.selfId(), partition,
                                failure != null ? failure.toString() : reply.getException());
                    }
                });
    }

    /**
     * A preferred election: the leader (this node, or asked through a client of the group) hands leadership to the
     * partition's first replica, if that replica is in sync (this node leads) or answers its leader (another does),
     * within {@link #HAND_OVER_MILLIS}; PREFERRED_NOT_AVAILABLE otherwise, at once, as Kafka answers.
     */
    CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        MetadataCommands.Topic known = metadata.topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("no partition " + partition
                    + " of topic " + topic));
        }
        List<Integer> replicaIds = known.replicas().get(partition);
        int preferred = replicaIds.getFirst();
        int leader = partitions.partition(topic, partition).leader();
        if (leader == preferred) {
            return CompletableFuture.completedFuture(Election.NOT_NEEDED);
        } else if (leader < 0) {
            return CompletableFuture.completedFuture(Election.PREFERRED_NOT_AVAILABLE);
        }
        PartitionId id = new PartitionId(topic, partition);
        long handOver = Math.max(1, Math.min(HAND_OVER_MILLIS, timeoutMillis));
        CompletableFuture<RaftClientReply> reply;
        if (leader == groups.selfId()) {
            ReplicatedPartition replica = replicas.replicaOf(topic, partition);
            if (replica == null || !replica.division().getInfo().isLeader() || !replica.inSync().contains(preferred)) {
                return CompletableFuture.completedFuture(Election.PREFERRED_NOT_AVAILABLE);
            }
            reply = transferLeadership(id, preferred, handOver);
        } else {
            reply = CompletableFuture.supplyAsync(() -> handOverAt(id, replicaIds, leader, preferred, handOver),
                    askers);
        }
        return reply.handle((answer, failure) -> {
            if (failure != null || answer == null || !answer.isSuccess()) {
                LOG.info("node {}: {} not handed to its preferred replica, node {}: {}", groups.selfId(), id,
                        preferred, failure != null ? failure.toString() : answer == null ? "not answering its leader"
                                : answer.getException());
                return Election.PREFERRED_NOT_AVAILABLE;
            }
            return Election.ELECTED;
        });
    }

    /**
     * Asks another node, which leads a partition, to hand it to {@code preferred}, if that replica has answered the
     * leader within an election timeout (a dead one would hold the hand-over, and the partition's appends, until
     * its time is up).
     *
     * @return the leader's answer, or null if the preferred replica is not answering it
     */
    private RaftClientReply handOverAt(PartitionId id, List<Integer> replicaIds, int leader, int preferred,
                                       long handOverMillis) {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties,
                TimeDuration.valueOf(handOverMillis + 1_000, TimeUnit.MILLISECONDS));
        RaftPeerId leaderId = ClusterNode.peerId(leader);
        try (RaftClient client = groups.newClient().setProperties(properties)
                .setRaftGroup(RaftGroup.valueOf(groups.groupId(id), groups.peers(replicaIds))).setLeaderId(leaderId)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build()) {
            RoleInfoProto role = client.getGroupManagementApi(leaderId).info(groups.groupId(id)).getRoleInfoProto();
            long answeredWithin = RaftSettings.RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS);
            boolean answering = role.getRole() == RaftPeerRole.LEADER
                    && role.getLeaderInfo().getFollowerInfoList().stream().anyMatch(follower ->
                    ClusterNode.nodeId(RaftPeerId.valueOf(follower.getId().getId())) == preferred
                            && follower.getLastRpcElapsedTimeMs() <= answeredWithin);
            return answering ? client.admin().transferLeadership(ClusterNode.peerId(preferred), leaderId,
                    handOverMillis) : null;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
