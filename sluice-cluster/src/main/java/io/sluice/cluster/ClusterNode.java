package io.sluice.cluster;

import io.sluice.store.Store;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.GroupManagementRequest;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.statemachine.StateMachine;
import org.apache.ratis.util.TimeDuration;

/**
 * One broker's part of the cluster: one Ratis server (multi-Raft: a group per partition, each with its own log,
 * leader and {@link PartitionStateMachine}) over the broker's {@link Store}, speaking Raft on the node's Raft port.
 *
 * <p>A partition's group id is derived from the cluster id, the topic and the partition, so every node names the
 * same group alike, and a node of another cluster (another cluster id) cannot take part in this one's groups.
 */
public final class ClusterNode implements AutoCloseable {

    /** A partition a node hosts a replica of. */
    public record PartitionId(String topic, int partition) {

        @Override
        public String toString() {
            return topic + "-" + partition;
        }
    }

    private final String clusterId;
    private final ClusterSpec cluster;
    private final ClusterSpec.Node self;
    private final Store store;
    private final boolean force;
    private final Map<RaftGroupId, PartitionId> known = new ConcurrentHashMap<>();
    private final Map<PartitionId, ReplicatedPartition> partitions = new ConcurrentHashMap<>();
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final RaftServer server;

    /**
     * Starts the node's Raft server; the groups of {@code hosted} that it hosted before (their Raft logs are under
     * {@code raftDirectory}) start with it.
     *
     * @param clusterId the cluster's id (part of every group id)
     * @param cluster the cluster's brokers
     * @param nodeId this broker's id in {@code cluster}
     * @param raftDirectory where the Raft logs live
     * @param store the broker's store, which holds the partitions' batches
     * @param force force each batch before its log entry is written (the store's SYNC flush)
     * @param hosted every partition this node may host a replica of
     * @throws IOException if the server cannot start
     */
    public ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, Path raftDirectory, Store store,
                       boolean force, Collection<PartitionId> hosted) throws IOException {
        this(clusterId, cluster, nodeId, -1, raftDirectory, store, force, hosted);
    }

    /**
     * As the public constructor, listening on {@code listenPort} rather than the Raft port the cluster string gives
     * (which then reaches this node through something in between, such as a test's network proxy); -1 for that port.
     */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Path raftDirectory, Store store,
                boolean force, Collection<PartitionId> hosted) throws IOException {
        this.clusterId = Objects.requireNonNull(clusterId, "clusterId");
        this.cluster = cluster;
        this.self = cluster.nodes().stream().filter(node -> node.id() == nodeId).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("node id " + nodeId + " is not in the cluster "
                        + cluster));
        this.store = store;
        this.force = force;
        for (PartitionId partition : hosted) {
            known.put(groupId(partition), partition);
        }
        RaftProperties properties = new RaftProperties();
        RaftServerConfigKeys.setStorageDir(properties, List.of(raftDirectory.toFile()));
        GrpcConfigKeys.Server.setHost(properties, self.host());
        GrpcConfigKeys.Server.setPort(properties, listenPort >= 0 ? listenPort : self.raftPort());
        // The leader keeps the batches of entries in flight in its log cache, so they are sent to followers from
        // memory; the store is read only for a follower that fell behind.
        RaftServerConfigKeys.Log.StateMachineData.setCachingEnabled(properties, true);
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties, TimeDuration.valueOf(300, java.util.concurrent.TimeUnit.MILLISECONDS));
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties, TimeDuration.valueOf(600, java.util.concurrent.TimeUnit.MILLISECONDS));
        this.server = RaftServer.newBuilder().setServerId(peerId(nodeId)).setProperties(properties)
                .setStateMachineRegistry(this::machineFor).build();
        server.start();
    }

    /** @return the Raft peer id of a node id */
    public static RaftPeerId peerId(int nodeId) {
        return RaftPeerId.valueOf("n" + nodeId);
    }

    /** @return the node id of a Raft peer id */
    public static int nodeId(RaftPeerId peer) {
        return Integer.parseInt(peer.toString().substring(1));
    }

    /** @return the group id of a partition in this cluster */
    public RaftGroupId groupId(PartitionId partition) {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes((clusterId + "\u0000" + partition.topic() + "\u0000"
                + partition.partition()).getBytes(StandardCharsets.UTF_8)));
    }

    private StateMachine machineFor(RaftGroupId groupId) {
        PartitionId partition = known.get(groupId);
        if (partition == null) {
            throw new IllegalStateException("node " + self.id() + " has a Raft group " + groupId + " that is no"
                    + " partition of cluster " + clusterId + " it knows");
        }
        return new PartitionStateMachine(store, partition.topic(), partition.partition(), force, end -> { });
    }

    /**
     * Makes this node a replica of a partition: creates its Raft group here if the node does not host it yet.
     * Every replica's node must be told (each adds the group on its own server).
     *
     * @param replicas the node ids of the partition's replicas, this node among them
     * @return the partition's replica on this node
     */
    public ReplicatedPartition host(PartitionId partition, List<Integer> replicas) throws IOException {
        if (!replicas.contains(self.id())) {
            throw new IllegalArgumentException("node " + self.id() + " is not among " + partition + "'s replicas "
                    + replicas);
        }
        RaftGroupId groupId = groupId(partition);
        known.put(groupId, partition);
        boolean hosted = false;
        for (RaftGroupId id : server.getGroupIds()) {
            hosted |= id.equals(groupId);
        }
        if (!hosted) {
            List<RaftPeer> peers = replicas.stream().map(id -> {
                ClusterSpec.Node node = cluster.nodes().stream().filter(n -> n.id() == id).findFirst()
                        .orElseThrow(() -> new IllegalArgumentException("replica " + id + " is not in the cluster"));
                return RaftPeer.newBuilder().setId(peerId(id)).setAddress(node.raftAddress()).build();
            }).toList();
            RaftClientReply reply = server.groupManagement(GroupManagementRequest.newAdd(clientId, server.getId(),
                    callIds.incrementAndGet(), RaftGroup.valueOf(groupId, peers)));
            if (!reply.isSuccess()) {
                throw new IOException("node " + self.id() + " cannot add the Raft group of " + partition + ": "
                        + reply.getException());
            }
        }
        return partition(partition);
    }

    /** @return this node's replica of a partition it hosts */
    public ReplicatedPartition partition(PartitionId partition) throws IOException {
        ReplicatedPartition existing = partitions.get(partition);
        if (existing != null) {
            return existing;
        }
        RaftServer.Division division = server.getDivision(groupId(partition));
        ReplicatedPartition created = new ReplicatedPartition(partition, division, clientId, callIds);
        ReplicatedPartition raced = partitions.putIfAbsent(partition, created);
        return raced != null ? raced : created;
    }

    /** @return this node's id */
    public int id() {
        return self.id();
    }

    /** @return the node's store */
    public Store store() {
        return store;
    }

    /** Stops the Raft server (the store stays open: its owner closes it). */
    @Override
    public void close() throws IOException {
        server.close();
    }
}
