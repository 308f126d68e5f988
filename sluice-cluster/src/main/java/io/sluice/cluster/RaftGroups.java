package io.sluice.cluster;

import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.GroupManagementRequest;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.statemachine.StateMachine;
import org.apache.ratis.util.FileUtils;

/**
 * A node's Ratis server and the Raft groups it hosts: the metadata group, which every node belongs to, and one group
 * per partition it has a replica of (multi-Raft). It names the groups and the peers (a node's peer id is
 * {@code n<id>}), and adds, removes and looks up this node's members of them.
 *
 * <p>A group id is a name-based UUID of the cluster id and the partition: of the topic's id and the partition for a
 * topic created since topics can be deleted, so that a topic created again under a deleted topic's name has other
 * groups, which a node that was away during the deletion cannot take for the old ones; of the topic's name and the
 * partition for a topic created before, whose groups keep their names. Every node names a group alike, and a node of
 * another cluster cannot join it. Which topics name their groups by id this node learns from the metadata as it hosts
 * them ({@link #nameGroups}), and, as it starts, from the group directories it finds ({@link Replicas}).
 *
 * <p>The server and every Raft client the node builds ({@link #newClient}) speak the node's TLS, if it has one
 * ({@link RaftTls}), or plain text.
 *
 * <p>Thread-safe once {@link #start started}.
 */
final class RaftGroups implements AutoCloseable {

    private final String clusterId;
    private final ClusterSpec cluster;
    private final ClusterSpec.Node self;
    private final Path raftDirectory;
    private final RaftGroupId metadataGroupId;
    private final RaftGroup metadataGroup;
    /** The client id and call ids of the requests this node makes of its own server. */
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    /** The id of each topic whose groups are named by its id, by the topic's name. */
    private final Map<String, UUID> namedById = new ConcurrentHashMap<>();
    /** The node's TLS on its Raft port and to the others', or null for plain text. */
    private final RaftTls tls;
    private volatile RaftServer server;

    /**
     * @param clusterId the cluster's id (part of every group id)
     * @param cluster the cluster's brokers
     * @param self this node among them
     * @param raftDirectory where the Raft logs live
     * @param tls the node's TLS on its Raft port and to the others', or null for plain text
     */
    RaftGroups(String clusterId, ClusterSpec cluster, ClusterSpec.Node self, Path raftDirectory, RaftTls tls) {
        this.clusterId = clusterId;
        this.tls = tls;
        this.cluster = cluster;
        this.self = self;
        this.raftDirectory = raftDirectory;
        this.metadataGroupId = metadataGroupId(clusterId);
        this.metadataGroup = RaftGroup.valueOf(metadataGroupId, peers(cluster.nodes().stream()
                .map(ClusterSpec.Node::id).toList()));
    }

    /**
     * Builds and starts the server: the groups found in the Raft directory start with it.
     *
     * @param properties its properties ({@link RaftSettings})
     * @param machines the state machine of each group it starts
     */
    void start(RaftProperties properties, StateMachine.Registry machines) throws IOException {
        RaftServer built = RaftServer.newBuilder().setServerId(ClusterNode.peerId(self.id())).setProperties(properties)
                .setParameters(RaftSettings.parameters(tls)).setStateMachineRegistry(machines).build();
        server = built;
        built.start();
    }

    /**
     * @return a builder of a Raft client of this node's: it speaks the node's TLS, if it has one (every client the node
     *     builds comes from here; one without it cannot reach a server that wants TLS)
     */
    RaftClient.Builder newClient() {
        return RaftClient.newBuilder().setParameters(RaftSettings.parameters(tls));
    }

    /** @return a client of a group that asks its leader, {@code leader}, first ({@link LeaderSnapshots#clientOf}) */
    RaftClient leaderClient(RaftGroupId group, RaftPeerId leader) {
        return LeaderSnapshots.clientOf(newClient(), group, peer(leader));
    }

    /**
     * Fails with an error naming the address when this node's Raft port cannot be listened on: Ratis's gRPC server,
     * started on a port in use, ends the JVM (System.exit) without closing the store.
     */
    static void checkPortFree(String host, int port) throws IOException {
        if (port == 0) {
            return;
        }
        try (ServerSocket probe = new ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new InetSocketAddress(host, port));
        } catch (IOException e) {
            throw new IOException("cannot listen for Raft on " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    /** @return the server (once started) */
    RaftServer server() {
        return server;
    }

    /** @return this node's id */
    int selfId() {
        return self.id();
    }

    /** @return the cluster's brokers */
    ClusterSpec cluster() {
        return cluster;
    }

    /** @return the id of the cluster's metadata group */
    static RaftGroupId metadataGroupId(String clusterId) {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes((clusterId + "\u0000metadata")
                .getBytes(StandardCharsets.UTF_8)));
    }

    /** @return the id of this cluster's metadata group */
    RaftGroupId metadataGroupId() {
        return metadataGroupId;
    }

    /** @return the metadata group: every node of the cluster */
    RaftGroup metadataGroup() {
        return metadataGroup;
    }

    /**
     * @return the group id of a partition in this cluster: named by its topic's id if this node knows the topic names
     *     its groups so, else by its topic's name
     */
    RaftGroupId groupId(ClusterNode.PartitionId partition) {
        UUID topicId = namedById.get(partition.topic());
        return topicId != null ? groupIdById(topicId, partition.partition())
                : groupIdByName(partition.topic(), partition.partition());
    }

    /** @return the group id of a topic's partition, named as the topic names its groups */
    RaftGroupId groupId(MetadataCommands.Topic topic, int partition) {
        return topic.groupsById() ? groupIdById(topic.id(), partition) : groupIdByName(topic.name(), partition);
    }

    /** @return the group id of a partition of a topic whose groups are named by its name (created before deletions) */
    RaftGroupId groupIdByName(String topic, int partition) {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes((clusterId + "\u0000" + topic + "\u0000" + partition)
                .getBytes(StandardCharsets.UTF_8)));
    }

    /**
     * @return the group id of a partition of the topic with this id, whose groups are named by it: the word
     *     {@code topic-id} between the cluster id and the id keeps it from the id of a topic named as the id's text
     */
    RaftGroupId groupIdById(UUID topicId, int partition) {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes((clusterId + "\u0000topic-id\u0000" + topicId + "\u0000"
                + partition).getBytes(StandardCharsets.UTF_8)));
    }

    /** This node names the topic's groups as the topic does from now on ({@link #groupId(ClusterNode.PartitionId)}). */
    void nameGroups(MetadataCommands.Topic topic) {
        nameGroups(topic.name(), topic.groupsById() ? topic.id() : null);
    }

    /** This node names the groups of the topic by {@code topicId} from now on, or by its name if null. */
    void nameGroups(String topic, UUID topicId) {
        if (topicId == null) {
            namedById.remove(topic);
        } else {
            namedById.put(topic, topicId);
        }
    }

    /** @return the id this node names the topic's groups by, or null if by its name */
    UUID groupsNamedBy(String topic) {
        return namedById.get(topic);
    }

    /** @return whether the group's directory is in the Raft directory */
    boolean hasDirectory(RaftGroupId id) {
        return java.nio.file.Files.isDirectory(raftDirectory.resolve(id.getUuid().toString()));
    }

    /** @return the members of a group of these nodes, each with its Raft address */
    List<RaftPeer> peers(List<Integer> ids) {
        return ids.stream().map(id -> {
            ClusterSpec.Node node = cluster.nodes().stream().filter(n -> n.id() == id).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("node " + id + " is not in the cluster"));
            return RaftPeer.newBuilder().setId(ClusterNode.peerId(id)).setAddress(node.raftAddress()).build();
        }).toList();
    }

    /** @return the member of a group with this peer id, with its Raft address */
    RaftPeer peer(RaftPeerId id) {
        return peers(List.of(ClusterNode.nodeId(id))).getFirst();
    }

    /** @return the group's members other than this node */
    List<RaftPeer> others(RaftGroup group) {
        return group.getPeers().stream().filter(peer -> !peer.getId().equals(server.getId())).toList();
    }

    /** @return whether this node hosts the group (started, or starting) */
    boolean hosts(RaftGroupId groupId) {
        for (RaftGroupId id : server.getGroupIds()) {
            if (id.equals(groupId)) {
                return true;
            }
        }
        return false;
    }

    /** @return this node's member of the group, or null if it hosts none */
    RaftServer.Division divisionOrNull(RaftGroupId id) {
        if (!hosts(id)) {
            return null;
        }
        try {
            return server.getDivision(id);
        } catch (IOException e) {
            return null;
        }
    }

    /** @return this node's member of the group */
    RaftServer.Division division(RaftGroupId id) throws IOException {
        return server.getDivision(id);
    }

    /**
     * Starts a group on this node.
     *
     * @param what the group, for the error
     * @param format start the group empty; without, it starts from its directory (its log and snapshot recovered)
     */
    void add(RaftGroup group, String what, boolean format) throws IOException {
        RaftClientReply reply = server.groupManagement(GroupManagementRequest.newAdd(clientId, server.getId(),
                callIds.incrementAndGet(), group, format));
        if (!reply.isSuccess()) {
            throw new IOException("node " + self.id() + " cannot add the Raft group of " + what + ": "
                    + reply.getException());
        }
    }

    /** Stops a group on this node, deleting its directory or keeping it. */
    void remove(RaftGroupId id, boolean deleteDirectory, String what) throws IOException {
        RaftClientReply reply = server.groupManagement(GroupManagementRequest.newRemove(clientId, server.getId(),
                callIds.incrementAndGet(), id, deleteDirectory, false));
        if (!reply.isSuccess()) {
            throw new IOException("node " + self.id() + " cannot remove its group of " + what + ": "
                    + reply.getException());
        }
    }

    /** Deletes the directory a group not running here left (Ratis starts a group empty only where none is). */
    void deleteDirectory(RaftGroupId id) throws IOException {
        FileUtils.deleteFully(raftDirectory.resolve(id.getUuid().toString()));
    }

    /** @return the directory of a group's Raft log segments */
    Path logDirectory(RaftGroupId id) {
        return raftDirectory.resolve(id.getUuid().toString()).resolve("current");
    }

    /** @return the node's Raft directory */
    Path raftDirectory() {
        return raftDirectory;
    }

    /** @return the largest entry the server reads back from a log */
    int maxEntryBytes() {
        return OpenSegmentBelowSnapshot.maxEntryBytes(server);
    }

    /** @return the client id this node's own requests of its server carry */
    ClientId clientId() {
        return clientId;
    }

    /** @return the call ids of this node's own requests of its server */
    AtomicLong callIds() {
        return callIds;
    }

    /**
     * Asks this node's member of a group, which leads it, to hand leadership over: to {@code to}, or, if null, to
     * whichever replica the group elects (it steps down).
     *
     * @param client the request's client id
     * @param callId its call id
     * @param timeoutMillis how long Ratis tries
     * @return Ratis's answer
     */
    CompletableFuture<RaftClientReply> transferLeadership(ClientId client, long callId, RaftGroupId group,
                                                          RaftPeerId to, long timeoutMillis) {
        try {
            return server.transferLeadershipAsync(new TransferLeadershipRequest(client, server.getId(), group, callId,
                    to, timeoutMillis));
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Stops the server and every group on it. */
    @Override
    public void close() throws IOException {
        RaftServer running = server;
        if (running != null) {
            running.close();
        }
    }
}
