package io.sluice.cluster;

import io.sluice.broker.Replication;
import io.sluice.broker.Replication.Election;
import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import io.sluice.cluster.ratis.RaftLogTail;
import io.sluice.cluster.ratis.RaftTransport;
import io.sluice.store.Store;
import io.sluice.store.StoreStatus;
import io.sluice.store.TopicLayout;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.GroupManagementRequest;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.TransferLeadershipRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.statemachine.StateMachine;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.SizeInBytes;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One broker's part of the cluster: one Ratis server (multi-Raft) over the broker's {@link Store}, speaking Raft on
 * the node's Raft port. It hosts the metadata group, which every node belongs to ({@link MetadataStateMachine}: the
 * topics and each partition's replicas), and one group per partition it has a replica of, each with its own log,
 * leader and {@link PartitionStateMachine}. It is the broker's {@link Replication}.
 *
 * <p>Group ids are derived from the cluster id (and the topic and partition), so every node names a group alike,
 * and a node started with another cluster id cannot take part in this cluster's groups.
 */
public final class ClusterNode implements Replication, AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ClusterNode.class);

    /** A partition a node hosts a replica of. */
    public record PartitionId(String topic, int partition) {

        @Override
        public String toString() {
            return topic + "-" + partition;
        }
    }

    /**
     * The Raft timeouts: a follower suspects its leader after 150-300 ms without a word from it. Ratis's follower sleeps
     * a random timeout and then checks whether it heard from the leader within that timeout, so a dead leader is
     * noticed one to two timeouts after its last heartbeat; the leader sends one every half {@link #RPC_TIMEOUT_MIN}
     * while it has nothing to append.
     */
    static final TimeDuration RPC_TIMEOUT_MIN = TimeDuration.valueOf(150, TimeUnit.MILLISECONDS);
    static final TimeDuration RPC_TIMEOUT_MAX = TimeDuration.valueOf(300, TimeUnit.MILLISECONDS);
    /**
     * How long a leader that stepped down for want of a majority keeps out of elections, and the JVM pause after which
     * Ratis steps a leader down (its default is 10 s for both). A leader steps down once no majority has answered it
     * for {@link #RPC_TIMEOUT_MAX} (Ratis's LeaderStateImpl.checkLeadership).
     */
    static final TimeDuration APPENDER_STEP_DOWN_WAIT = TimeDuration.valueOf(1200, TimeUnit.MILLISECONDS);
    /** The waits between a leader's attempts to a replica after failed ones: 1 ms ten times, 20 ms, then 200 ms. */
    static final String APPENDER_RETRY_POLICY = "1ms,10, 20ms,2000, 200ms,1000000";

    private final String clusterId;
    private final ClusterSpec cluster;
    private final ClusterSpec.Node self;
    private final Store store;
    private final boolean force;
    private final NodeHooks hooks;
    private final Map<RaftGroupId, PartitionId> known = new ConcurrentHashMap<>();
    private final Map<PartitionId, ReplicatedPartition> partitions = new ConcurrentHashMap<>();
    private final List<BiConsumer<String, Integer>> listeners = new CopyOnWriteArrayList<>();
    private final ClientId clientId = ClientId.randomId();
    private final AtomicLong callIds = new AtomicLong();
    private final Tuning tuning;
    private final RaftGroupId metadataGroupId;
    private final MetadataStateMachine metadata;
    private final RaftServer server;
    /** Replaced when Ratis closes it (it does after some failures, and then refuses every later request). */
    private final java.util.concurrent.atomic.AtomicReference<RaftClient> metadataClient =
            new java.util.concurrent.atomic.AtomicReference<>();
    private final RaftGroup metadataGroup;
    /** Present while this node rejoins the cluster after losing its Raft data (see {@link #join}). */
    private final Path rejoinMarker;
    private final Path raftDirectory;
    /**
     * Topics created in the metadata log below this index may have had this node among their groups' voters before
     * it lost its data: it rejoins those groups rather than add them as a voter; 0 if it lost nothing.
     */
    private volatile long rejoinBelow;
    /** Partition groups this node is rejoining now. */
    private final AtomicInteger rejoining = new AtomicInteger();
    private volatile boolean closed;
    private Thread joining;

    /**
     * Starts the node's Raft server with the groups it hosted before (their Raft logs are under
     * {@code raftDirectory}), joins the metadata group, and hosts the replicas the metadata gives this node.
     *
     * @param clusterId the cluster's id (part of every group id)
     * @param cluster the cluster's brokers
     * @param nodeId this broker's id in {@code cluster}
     * @param raftDirectory where the Raft logs live
     * @param store the broker's store, which holds the partitions' batches
     * @param force force each batch before its log entry is written (the store's SYNC flush)
     * @throws IOException if the server cannot start
     */
    public ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, Path raftDirectory, Store store,
                       boolean force) throws IOException {
        this(clusterId, cluster, nodeId, -1, Tuning.DEFAULT, raftDirectory, store, force);
    }

    /** How often, by default, a node checks that the partitions it leads are led by their preferred replicas (Kafka's). */
    public static final int PREFERRED_LEADER_CHECK_SECONDS = 300;

    /**
     * How a partition's Raft log is kept, and where its leadership goes.
     *
     * @param snapshotEveryEntries a replica takes a snapshot each time this many entries were applied since its last
     *     one, and the log below it is purged
     * @param logSegmentBytes the size of the Raft log's segment files (a purge removes whole segments)
     * @param entriesInFlight the most entries of a partition its leader has submitted and not yet had answered; batches
     *     produced meanwhile wait and share the next entry ({@link ReplicatedPartition})
     * @param refillWait the longest the next entry waits, once an entry was answered, for as many new batches as the
     *     answered one carried (zero: no wait)
     * @param preferredLeaders whether this node hands the leadership of partitions it leads to their preferred
     *     replicas ({@link PreferredLeaders})
     * @param leaderImbalanceCheck how often it checks every partition it leads for that (zero: only a new group's
     *     leader hands over)
     */
    record Tuning(long snapshotEveryEntries, long logSegmentBytes, int entriesInFlight, Duration refillWait,
                  boolean preferredLeaders, Duration leaderImbalanceCheck) {

        /** The wait for answered producers' next batches, 1 ms (0.5 ms to 2 ms measured alike: docs/benchmarks.md). */
        static final Duration REFILL_WAIT = Duration.ofMillis(1);

        /**
         * One entry in flight: batches that arrive during its round trip share the next, with those the answered
         * producers send at once (docs/benchmarks.md).
         */
        static final Tuning DEFAULT = new Tuning(100_000, 8L << 20, 1, REFILL_WAIT, true,
                Duration.ofSeconds(PREFERRED_LEADER_CHECK_SECONDS));

        Tuning {
            if (snapshotEveryEntries < 1 || logSegmentBytes < 1 || entriesInFlight < 1 || refillWait.isNegative()
                    || leaderImbalanceCheck.isNegative()) {
                throw new IllegalArgumentException("not a tuning: " + snapshotEveryEntries + " entries per snapshot, "
                        + logSegmentBytes + "-byte log segments, " + entriesInFlight + " entries in flight, a "
                        + refillWait + " wait for answered producers, leaders checked every " + leaderImbalanceCheck);
            }
        }

        /**
         * With the given wait for answered producers, and leadership left where elections put it (as most tests want
         * it: a hand-over would move the leader they act on).
         */
        Tuning(long snapshotEveryEntries, long logSegmentBytes, int entriesInFlight, Duration refillWait) {
            this(snapshotEveryEntries, logSegmentBytes, entriesInFlight, refillWait, false, Duration.ZERO);
        }

        /** With the default wait for answered producers, and leadership left where elections put it. */
        Tuning(long snapshotEveryEntries, long logSegmentBytes, int entriesInFlight) {
            this(snapshotEveryEntries, logSegmentBytes, entriesInFlight, REFILL_WAIT);
        }

        /** @return this tuning with leaders handed to preferred replicas, checked every {@code check} (zero: only new) */
        Tuning withPreferredLeaders(Duration check) {
            return new Tuning(snapshotEveryEntries, logSegmentBytes, entriesInFlight, refillWait, true, check);
        }
    }

    /**
     * As the public constructor, listening on {@code listenPort} rather than the Raft port the cluster string gives
     * (which then reaches this node through something in between, such as a test's network proxy); -1 for that port.
     */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Tuning tuning, Path raftDirectory,
                Store store, boolean force) throws IOException {
        this(clusterId, cluster, nodeId, listenPort, tuning, raftDirectory, store, force, new StartPhases(nodeId),
                NodeHooks.NONE);
    }

    /**
     * As above, timing the start's phases into {@code phases}, with {@code hooks} where a test reaches into this node
     * ({@link NodeHooks#NONE} in production).
     */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Tuning tuning, Path raftDirectory,
                Store store, boolean force, StartPhases phases, NodeHooks hooks) throws IOException {
        this.hooks = Objects.requireNonNull(hooks, "hooks");
        this.clusterId = Objects.requireNonNull(clusterId, "clusterId");
        this.cluster = cluster;
        this.tuning = tuning;
        this.self = cluster.nodes().stream().filter(node -> node.id() == nodeId).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("node id " + nodeId + " is not in the cluster "
                        + cluster));
        this.store = store;
        this.force = force;
        checkIdentity(FileIO.DEFAULT, raftDirectory, clusterId, nodeId);
        this.metadataGroupId = metadataGroupId(clusterId);
        this.metadata = new MetadataStateMachine(this::onTopic, this::hostPartitions, this::onOffsets, this::onForget,
                this::keepGroups, peer -> peers(List.of(nodeId(peer))).getFirst());
        metadata.answerShortQueries(this::answerShort);
        // The partition groups found in the Raft directory start with the server: name them before it starts. The
        // store has every topic this node took part in (created before its groups are).
        store.declaredTopics().forEach((topic, count) -> {
            if (store.layout(topic) == TopicLayout.BATCHES) {
                for (int p = 0; p < count; p++) {
                    PartitionId partition = new PartitionId(topic, p);
                    known.put(groupId(partition), partition);
                    // Retention keeps the whole partition until its group has read its Raft log.
                    RetentionHold.holdWhole(store, partition);
                }
            }
        });
        int raftPort = listenPort >= 0 ? listenPort : self.raftPort();
        checkRaftPortFree(self.host(), raftPort);
        RaftProperties properties = new RaftProperties();
        RaftConfigKeys.Rpc.setType(properties, new RaftTransport());
        RaftServerConfigKeys.setStorageDir(properties, List.of(raftDirectory.toFile()));
        GrpcConfigKeys.Server.setHost(properties, self.host());
        GrpcConfigKeys.Server.setPort(properties, raftPort);
        // Ratis's log cache keeps no entry's batches: the state machine keeps those of the entries its leader has in
        // flight, until applied, and sends them to followers from memory; the store is read only for a follower that
        // fell behind.
        RaftServerConfigKeys.Log.StateMachineData.setCachingEnabled(properties, true);
        RaftServerConfigKeys.Rpc.setTimeoutMin(properties, RPC_TIMEOUT_MIN);
        RaftServerConfigKeys.Rpc.setTimeoutMax(properties, RPC_TIMEOUT_MAX);
        // Heartbeats on a channel of their own: a follower busy writing (and forcing) entries still answers them in
        // time, so a slow disk does not cost the leader its leadership. A node back from a restart asks first
        // whether it could win (pre-vote) rather than disrupt a working leader with a higher term.
        GrpcConfigKeys.Server.setHeartbeatChannel(properties, true);
        RaftServerConfigKeys.LeaderElection.setPreVote(properties, true);
        // A leader cut off from its followers steps down after RPC_TIMEOUT_MAX, so the entries it appends and cannot
        // commit meanwhile, which the next leader's log replaces, stay few; it then keeps out of elections, and a JVM
        // pause steps a leader down, after 1.2 s rather than Ratis's 10 s.
        RaftServerConfigKeys.LeaderElection.setLeaderStepDownWaitTime(properties, APPENDER_STEP_DOWN_WAIT);
        // A leader finds where a returning replica's log agrees with its own one entry per round trip, each
        // "inconsistent" answer counted as an error; Ratis's default waits 1 s, then 5 s, between such rounds after
        // ten of them, so a tail of a few dozen entries took minutes to replace.
        RaftServerConfigKeys.Log.Appender.setRetryPolicy(properties, APPENDER_RETRY_POLICY);
        // Snapshots let a partition's log be purged; a replica that needs entries purged from the leader's log
        // copies the batches from the leader's store (PartitionStateMachine), rather than have Ratis send files.
        RaftServerConfigKeys.Snapshot.setAutoTriggerEnabled(properties, true);
        RaftServerConfigKeys.Snapshot.setAutoTriggerThreshold(properties, tuning.snapshotEveryEntries());
        RaftServerConfigKeys.Snapshot.setRetentionFileNum(properties, 2);
        RaftServerConfigKeys.Log.setPurgeUptoSnapshotIndex(properties, true);
        RaftServerConfigKeys.Log.setPurgeGap(properties, (int) Math.min(1024, tuning.snapshotEveryEntries()));
        RaftServerConfigKeys.Log.setSegmentSizeMax(properties, SizeInBytes.valueOf(tuning.logSegmentBytes()));
        RaftServerConfigKeys.Log.Appender.setInstallSnapshotEnabled(properties, false);
        // No commit-index entries in the log: Ratis's leader appends one after each advance of the commit index and
        // sends it to the followers like any entry, which with one data entry in flight per partition doubled the
        // entries each node writes, forces and sends (docs/benchmarks.md: a quarter less broker CPU per record
        // without). Raft does not need the commit index on disk; a restarted node learns it from its group's leader,
        // and applies its log's entries once it has.
        RaftServerConfigKeys.Log.setLogMetadataEnabled(properties, false);
        if (!force) {
            // ASYNC: an acknowledged batch is in the page cache of a majority, as Kafka's acks=all; the Raft log of
            // entry headers is written and forced in the background, not waited for (Ratis's unsafe flush).
            RaftServerConfigKeys.Log.setUnsafeFlushEnabled(properties, true);
        }
        this.rejoinMarker = raftDirectory.resolve(REJOIN_FILE);
        this.raftDirectory = raftDirectory;
        boolean resuming = Files.exists(rejoinMarker);
        if (resuming) {
            // The groups in the Raft directory start with the server, and the metadata they replay must not add
            // partition groups as a voter before the rejoin says which topics are older than it.
            rejoinBelow = Long.MAX_VALUE;
        }
        this.server = RaftServer.newBuilder().setServerId(peerId(nodeId)).setProperties(properties)
                .setStateMachineRegistry(this::machineFor).build();
        server.start();
        phases.done("Raft server started (" + known.size() + " partition groups named)");
        try {
            this.metadataGroup = RaftGroup.valueOf(metadataGroupId, peers(cluster.nodes().stream()
                    .map(ClusterSpec.Node::id).toList()));
            this.metadataClient.set(newMetadataClient());
            RaftProperties asking = new RaftProperties();
            RaftClientConfigKeys.Rpc.setRequestTimeout(asking, TimeDuration.valueOf(1, TimeUnit.SECONDS));
            this.replicasClient = RaftClient.newBuilder().setProperties(asking).setRaftGroup(metadataGroup)
                    .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build();
            // The metadata's snapshot (if it started from one) takes this node's part before the node serves.
            metadata.applyStartSnapshot();
            phases.done("metadata snapshot applied");
            if (resuming) {
                // A rejoin was under way when this node stopped: it goes on (each step may be taken again).
                joining = Thread.ofVirtual().name("node-" + nodeId + "-rejoin").start(this::rejoinAll);
            } else if (!hosts(metadataGroupId)) {
                joining = Thread.ofVirtual().name("node-" + nodeId + "-join").start(this::join);
            } else {
                inBackground("node-" + nodeId + "-register", this::register);
            }
            inBackground("node-" + nodeId + "-retention-holds", this::moveRetentionHolds);
            inBackground("node-" + nodeId + "-stuck-hand-overs", this::watchHandOvers);
            if (tuning.preferredLeaders()) {
                PreferredLeaders preferred = new PreferredLeaders(nodeId, new PreferredLeaders.Node() {
                    @Override
                    public List<PreferredLeaders.Led> led() {
                        return ledHere();
                    }

                    @Override
                    public CompletableFuture<Boolean> handOver(PartitionId partition, int to) {
                        return transferLeadership(partition, to, RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS))
                                .thenApply(RaftClientReply::isSuccess);
                    }
                }, tuning.leaderImbalanceCheck(), System::nanoTime);
                inBackground("node-" + nodeId + "-preferred-leaders", () -> keepPreferredLeaders(preferred));
            }
        } catch (RuntimeException e) {
            RaftClient client = metadataClient.get();
            if (client != null) {
                closeQuietly(client);
            }
            if (replicasClient != null) {
                closeQuietly(replicasClient);
            }
            askers.shutdownNow();
            try {
                server.close();
            } catch (IOException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /**
     * Fails with an error naming the address when this node's Raft port cannot be listened on: Ratis's gRPC server,
     * started on a port in use, ends the JVM (System.exit) without closing the store.
     */
    static void checkRaftPortFree(String host, int port) throws IOException {
        if (port == 0) {
            return;
        }
        try (java.net.ServerSocket probe = new java.net.ServerSocket()) {
            probe.setReuseAddress(true);
            probe.bind(new java.net.InetSocketAddress(host, port));
        } catch (IOException e) {
            throw new IOException("cannot listen for Raft on " + host + ":" + port + ": " + e.getMessage(), e);
        }
    }

    /** @return the id of the cluster's metadata group */
    static RaftGroupId metadataGroupId(String clusterId) {
        return RaftGroupId.valueOf(UUID.nameUUIDFromBytes((clusterId + "\u0000metadata")
                .getBytes(StandardCharsets.UTF_8)));
    }

    private RaftClient newMetadataClient() {
        return newMetadataClient(null);
    }

    /**
     * A client sends first to the leader it is given, else to the one the JVM's Ratis clients last saw lead the group
     * (they keep it while they ask), else to the first node. That one may not host the group any more (it lost its
     * data, or its replica stopped), and Ratis fails a request so answered for good, closing the client: a new client
     * starts at the leader this node's member of the group knows, or at another node than the one that failed.
     *
     * @param failed the node the last client was sending to, or null
     */
    private RaftClient newMetadataClient(RaftPeerId failed) {
        RaftPeerId first = null;
        RaftServer.Division here = divisionOrNull(metadataGroupId);
        RaftPeerId known = here == null ? null : here.getInfo().getLeaderId();
        if (known != null && !known.equals(failed)) {
            first = known;
        } else if (failed != null) {
            first = metadataGroup.getPeers().stream().map(RaftPeer::getId).filter(id -> !id.equals(failed))
                    .findFirst().orElse(null);
        }
        return RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(metadataGroup)
                .setLeaderId(first).setClientId(ClientId.randomId()).build();
    }

    /**
     * Submits a metadata command; on a client Ratis closed, or a node that does not host the group, once more on a
     * new client ({@link #newMetadataClient(RaftPeerId)}).
     */
    private CompletableFuture<RaftClientReply> sendMetadata(String command) {
        RaftClient client = metadataClient.get();
        return client.async().send(Message.valueOf(command)).exceptionallyCompose(failure -> {
            Throwable cause = failure instanceof java.util.concurrent.CompletionException && failure.getCause() != null
                    ? failure.getCause() : failure;
            if (!(cause instanceof org.apache.ratis.protocol.exceptions.AlreadyClosedException
                    || cause instanceof org.apache.ratis.protocol.exceptions.GroupMismatchException) || closed) {
                return CompletableFuture.failedFuture(cause);
            }
            RaftClient fresh = newMetadataClient(client.getLeaderId());
            if (metadataClient.compareAndSet(client, fresh)) {
                closeQuietly(client);
            } else {
                closeQuietly(fresh);
                fresh = metadataClient.get();
            }
            return fresh.async().send(Message.valueOf(command));
        });
    }

    /**
     * The metadata's answer to a topic, partitions, offsets or forget command. The command is sent once this node has
     * applied a member record ({@link #register}; its own or another node's), so a record precedes it in the log: a
     * topic or a commit logged before any member record marks the log as one from before the records, which makes a
     * node of a new cluster that starts late (with no Raft data, as a lost directory) rejoin rather than join as new.
     * (Not its own record: a node that rejoined a cluster from before the records is not recorded until it restarts.)
     *
     * @return the answer's text, once the cluster applied the command; fails if the cluster did not take it
     */
    private CompletableFuture<String> metadataAnswer(String command) {
        // Once a record is applied (all but the first moments of a new cluster), sent at once, in the caller's order;
        // before, async: the record's apply ends the wait, and a send must not hold the metadata's apply thread.
        CompletableFuture<Void> recorded = metadata.state().awaitMembers();
        return (recorded.isDone() ? sendMetadata(command) : recorded.thenComposeAsync(any -> sendMetadata(command)))
                .thenCompose(reply -> reply.isSuccess()
                        ? CompletableFuture.completedFuture(reply.getMessage().getContent().toStringUtf8())
                        : CompletableFuture.failedFuture(reply.getException()));
    }

    private static void closeQuietly(RaftClient client) {
        try {
            client.close();
        } catch (IOException e) {
            LOG.debug("closing a metadata client: {}", e.toString());
        }
    }

    /** The file in a node's Raft directory that says it is rejoining the cluster. */
    static final String REJOIN_FILE = "sluice-rejoining";

    /**
     * A node with no metadata group in its Raft directory: a new cluster's, or one whose data were lost (a wiped or
     * replaced disk). It asks the other nodes: if none has a metadata log with an entry, the cluster has not formed
     * and this node takes part as a voter from the start (and records that it did, {@link #register}). If one has,
     * the cluster formed, and it asks the metadata, through the log, whether it took part ({@link #askToJoin}): if it
     * did, it may have acknowledged entries and voted before it lost them, and it rejoins ({@link #rejoinAll}); if
     * not (it started just after the others formed the cluster), the same command records it, and it takes part as a
     * voter, with nothing to have lost. Until it can tell, it waits: a node that cannot tell must not vote.
     */
    private void join() {
        long nextReport = System.nanoTime();
        int attempts = 0;
        try {
            while (!closed) {
                List<Integer> silent = new ArrayList<>();
                boolean formed = clusterFormed(silent);
                String answer = formed ? askToJoin(attempts++) : null;
                if (MetadataCommands.TOOK_PART.equals(answer)) {
                    LOG.warn("node {} has no Raft data and the cluster has formed with it: it rejoins every group it"
                            + " belongs to, catching up before it counts as a voter", self.id());
                    DurableFile.write(rejoinMarker, "rejoining\n");
                    rejoinAll();
                    return;
                }
                if (MetadataCommands.RECORDED.equals(answer)) {
                    LOG.info("node {} has no Raft data and never took part in the cluster formed without it: it"
                            + " joins as a voter", self.id());
                    addGroup(metadataGroup, "the metadata");
                    return;
                }
                if (!formed && silent.isEmpty()) {
                    addGroup(metadataGroup, "the metadata");
                    register();
                    return;
                }
                if (System.nanoTime() >= nextReport) {
                    LOG.info("node {} has no Raft data; waiting for nodes {} to tell whether the cluster has formed"
                            + " with it", self.id(), silent.isEmpty() ? otherIds() : silent);
                    nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                }
                Thread.sleep(200);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.error("node {} could not join the cluster: {}", self.id(), e.toString());
            }
        }
    }

    /** @return the ids of the other nodes */
    private List<Integer> otherIds() {
        return cluster.nodes().stream().map(ClusterSpec.Node::id).filter(id -> id != self.id()).toList();
    }

    /**
     * @param silent gets the nodes that did not answer
     * @return true if another node's metadata log holds an entry
     */
    private boolean clusterFormed(List<Integer> silent) throws IOException {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(1, TimeUnit.SECONDS));
        try (RaftClient client = RaftClient.newBuilder().setProperties(properties).setRaftGroup(metadataGroup)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build()) {
            for (ClusterSpec.Node node : cluster.nodes()) {
                if (node.id() == self.id()) {
                    continue;
                }
                RaftPeerId peer = peerId(node.id());
                try {
                    if (client.getGroupManagementApi(peer).list().getGroupIds().contains(metadataGroupId)) {
                        var log = client.getGroupManagementApi(peer).info(metadataGroupId).getLogInfoProto();
                        if (log.hasLastEntry() && log.getLastEntry().getIndex() >= 0) {
                            return true;
                        }
                    }
                } catch (IOException | RuntimeException e) {
                    silent.add(node.id());
                }
            }
        }
        return false;
    }

    /**
     * Submits {@code join <this node>} through the other nodes (a command in the log, not a read a deposed leader
     * could answer), starting at each in turn from one attempt to the next (one may not host the group).
     *
     * @param attempt how many times this node asked before
     * @return {@link MetadataStateMachine#TOOK_PART}, {@link MetadataStateMachine#RECORDED}, or null if no leader
     *     answered
     */
    private String askToJoin(int attempt) {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(1, TimeUnit.SECONDS));
        List<RaftPeer> others = metadataGroup.getPeers().stream().filter(peer -> !peer.getId().equals(server.getId()))
                .toList();
        try (RaftClient client = RaftClient.newBuilder().setProperties(properties)
                .setRaftGroup(RaftGroup.valueOf(metadataGroupId, others)).setClientId(ClientId.randomId())
                .setLeaderId(others.get(attempt % others.size()).getId())
                .setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(3,
                        TimeDuration.valueOf(200, TimeUnit.MILLISECONDS))).build()) {
            RaftClientReply reply = client.io().send(Message.valueOf(MetadataCommands.joinCommand(self.id())));
            String answer = reply.isSuccess() ? reply.getMessage().getContent().toStringUtf8() : null;
            return MetadataCommands.TOOK_PART.equals(answer) || MetadataCommands.RECORDED.equals(answer)
                    ? answer : null;
        } catch (IOException | RuntimeException e) {
            LOG.debug("node {}: no answer to whether it took part: {}", self.id(), e.toString());
            return null;
        }
    }

    /**
     * Records in the metadata that this node took part (its member of the metadata group runs), retried until done
     * or the node closes; skipped once the metadata this node applied records it. Submitted at every start otherwise
     * (the command is idempotent), so that a node from before the records is recorded too. A node of a new cluster
     * registers just after it starts its member: if its data are lost before the record is committed, it is taken for
     * a new node when it comes back.
     */
    private void register() throws InterruptedException {
        while (!closed && !metadata.state().members().contains(self.id())) {
            RaftServer.Division here = divisionOrNull(metadataGroupId);
            if (here == null || here.getInfo().getLeaderId() == null) {
                // No leader yet (a cluster starting): a request now only fails, and Ratis logs each failure as an
                // error.
                Thread.sleep(100);
                continue;
            }
            try {
                sendMetadata(MetadataCommands.memberCommand(self.id())).get(30, TimeUnit.SECONDS);
                return;
            } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException
                    | RuntimeException e) {
                if (!closed) {
                    LOG.debug("node {}: recording that it took part, tried again: {}", self.id(), e.toString());
                    Thread.sleep(300);
                }
            }
        }
    }

    /**
     * Rejoins the metadata group, then every partition group the replayed metadata names this node a replica of
     * (those go on in the background, started as the topics are applied), then removes the marker.
     */
    private void rejoinAll() {
        try {
            long[] removedAt = new long[1];
            rejoin(metadataGroup, "the metadata", index -> {
                removedAt[0] = index;
                rejoinBelow = index + 1;
            });
            // Every topic created before this node left the metadata group's configuration is applied once the
            // metadata is applied that far; then no partition rejoin starts any more.
            while (!closed && (metadata.getLastAppliedTermIndex() == null
                    || metadata.getLastAppliedTermIndex().getIndex() < removedAt[0] || rejoining.get() > 0)) {
                Thread.sleep(100);
            }
            if (!closed) {
                Files.deleteIfExists(rejoinMarker);
                LOG.warn("node {} rejoined the cluster: its groups are caught up and it votes again", self.id());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (IOException | RuntimeException e) {
            if (!closed) {
                LOG.error("node {} could not rejoin the cluster: {}", self.id(), e.toString());
            }
        }
    }

    /**
     * Rejoins one group this node may have been a voter of before it lost its data, as Raft's membership changes
     * allow: the group's leader takes it out of the configuration (it is not asked for, nor counted in, votes and
     * commits from then on), the group starts here with no configuration of its own (no election timer: it waits to
     * be contacted), and the leader adds it back, which Ratis does once it caught up with the log (or installed a
     * snapshot). Each step is retried until it succeeds or the node closes. A group this node leads (a rejoin resumed
     * after the whole cluster restarted) is left as it is: it won an election, so its log holds every committed entry.
     *
     * @param afterRemoval told the group's commit index once this node is out of its configuration
     */
    private void rejoin(RaftGroup group, String what, java.util.function.LongConsumer afterRemoval)
            throws InterruptedException, IOException {
        rejoin(group, what, afterRemoval, false);
    }

    /**
     * As {@link #rejoin(RaftGroup, String, java.util.function.LongConsumer)}; with {@code keepLog}, the group starts
     * from the log in its directory rather than empty (a replica stopped here whose data are intact). Out of the
     * configuration, no append reaches the group while it starts (Ratis 3.3.0 fails a start that one races).
     */
    private void rejoin(RaftGroup group, String what, java.util.function.LongConsumer afterRemoval, boolean keepLog)
            throws InterruptedException, IOException {
        RaftGroupId id = group.getGroupId();
        List<RaftPeer> others = group.getPeers().stream().filter(peer -> !peer.getId().equals(server.getId()))
                .toList();
        RaftServer.Division here = divisionOrNull(id);
        if (here != null && here.getInfo().isAlive() && here.getInfo().isLeader()) {
            afterRemoval.accept(here.getRaftLog().getLastCommittedIndex());
            return;
        }
        if (others.size() < 2) {
            // One other replica: every commit needed both, so it has them all, and this node's empty vote cannot
            // elect a leader that lacks one; but Ratis 3.3.0 counts no vote from an empty log once the candidate has
            // commits (LeaderElection), so the other, which stepped down without this one's answers, is not elected
            // again either, and the group waits (docs/design.md). None: the data are gone.
            if (others.isEmpty() && !keepLog) {
                LOG.error("node {} lost the only replica of {}: it starts empty", self.id(), what);
            }
            if (here == null) {
                if (!keepLog) {
                    deleteGroupDirectory(id);
                }
                addGroup(group, what, !keepLog);
            }
            afterRemoval.accept(0);
            return;
        }
        RaftGroup othersGroup = RaftGroup.valueOf(id, others);
        try (RaftClient client = othersClient(othersGroup)) {
            // A client per attempt: one told by a replica that this node leads (it did, until its group stopped here)
            // goes on asking this node, which no longer has the group, and Ratis's client does not look elsewhere
            // after that answer; a new one starts from the others again.
            RaftClientReply removed = untilDone(what + ": leaving its configuration", () -> {
                try (RaftClient attempt = othersClient(othersGroup)) {
                    return attempt.admin().setConfiguration(others);
                }
            });
            long committed = removed.getCommitInfos().stream()
                    .mapToLong(org.apache.ratis.proto.RaftProtos.CommitInfoProto::getCommitIndex).max().orElse(-1);
            while (committed < 0 && !closed) {
                // Every topic created before the removal must be rejoined: without its index, ask until known.
                try {
                    committed = client.getGroupManagementApi(removed.getServerId()).info(id).getLogInfoProto()
                            .getCommitted().getIndex();
                } catch (IOException | RuntimeException e) {
                    Thread.sleep(300);
                }
            }
            afterRemoval.accept(committed);
            untilDone(what + ": joining its configuration again", () -> {
                if (keepLog && divisionOrNull(id) == null) {
                    addGroup(RaftGroup.valueOf(id), what, false);
                }
                if (!keepLog && divisionOrNull(id) == null) {
                    // Out of the configuration now: the log of a replica that lost batches goes.
                    deleteGroupDirectory(id);
                }
                startEmptyUnlessAlive(id, what);
                try (RaftClient attempt = othersClient(othersGroup)) {
                    return attempt.admin().setConfiguration(List.copyOf(group.getPeers()));
                }
            });
            LOG.info("node {} rejoined the Raft group of {}", self.id(), what);
        }
    }

    /** A client of a group's other replicas, which retries a request for up to 5 s. */
    private static RaftClient othersClient(RaftGroup others) {
        return RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(others)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(10,
                        TimeDuration.valueOf(500, TimeUnit.MILLISECONDS))).build();
    }

    /** Deletes the directory a group not running here left (Ratis starts a group empty only where none is). */
    private void deleteGroupDirectory(RaftGroupId id) throws IOException {
        org.apache.ratis.util.FileUtils.deleteFully(raftDirectory.resolve(id.getUuid().toString()));
    }

    /** @return this node's member of the group, or null if it hosts none */
    private RaftServer.Division divisionOrNull(RaftGroupId id) {
        if (!hosts(id)) {
            return null;
        }
        try {
            return server.getDivision(id);
        } catch (IOException e) {
            return null;
        }
    }

    /**
     * The group runs here, alive: if Ratis closed it (a member out of the configuration that stood for election is
     * told to shut down), it is removed with its directory and started again, empty, with no configuration.
     */
    private void startEmptyUnlessAlive(RaftGroupId id, String what) throws IOException {
        RaftServer.Division here = divisionOrNull(id);
        if (here != null && here.getInfo().isAlive()) {
            return;
        }
        if (here != null) {
            removeGroup(id, true, what);
        }
        addGroup(RaftGroup.valueOf(id), what);
    }

    private interface Step {
        RaftClientReply run() throws IOException;
    }

    private RaftClientReply untilDone(String what, Step step) throws InterruptedException, IOException {
        long nextReport = System.nanoTime();
        while (!closed) {
            String failure;
            try {
                RaftClientReply reply = step.run();
                if (reply.isSuccess()) {
                    return reply;
                }
                failure = String.valueOf(reply.getException());
            } catch (IOException | RuntimeException e) {
                failure = e.toString();
            }
            if (System.nanoTime() >= nextReport) {
                LOG.info("node {} rejoining, {} not done yet (tried again): {}", self.id(), what, failure);
                nextReport = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            }
            Thread.sleep(300);
        }
        throw new IOException("node " + self.id() + " closed while " + what);
    }

    /** The file in a node's Raft directory that names the cluster and node its data belong to. */
    static final String IDENTITY_FILE = "sluice-node";

    /**
     * A Raft directory belongs to one node of one cluster: the first start writes which; a later start as another
     * node, or in another cluster, is refused (its logs would be taken for another node's, or joined to groups of
     * another cluster).
     */
    static void checkIdentity(FileIO io, Path raftDirectory, String clusterId, int nodeId) throws IOException {
        if (clusterId.isBlank() || clusterId.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            throw new IllegalArgumentException("a cluster id is printable ASCII without spaces, not '" + clusterId
                    + "'");
        }
        Path file = raftDirectory.resolve(IDENTITY_FILE);
        String identity = "cluster.id=" + clusterId + "\nnode.id=" + nodeId + "\n";
        if (io.exists(file)) {
            String found = DurableFile.read(io, file);
            if (!found.equals(identity)) {
                throw new IllegalStateException(raftDirectory + " holds the Raft logs of "
                        + found.trim().replace('\n', ' ') + ", not of cluster.id=" + clusterId + " node.id=" + nodeId
                        + ": start this node with its own cluster id, node id and directory");
            }
            return;
        }
        // The directory's name is forced into its parent too: a first start cut short by a power cut must not come
        // back as a node that lost its Raft data (docs/design.md, "A lost data directory").
        DurableFile.createDirectories(io, raftDirectory);
        DurableFile.write(io, file, file.resolveSibling(IDENTITY_FILE + ".tmp"), identity);
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
        if (groupId.equals(metadataGroupId)) {
            return metadata;
        }
        PartitionId partition = known.get(groupId);
        if (partition == null) {
            throw new IllegalStateException("node " + self.id() + " has a Raft group " + groupId + " that is no"
                    + " partition of cluster " + clusterId + " it knows");
        }
        return new PartitionStateMachine(store, partition.topic(), partition.partition(), force,
                end -> changed(partition), peer -> peers(List.of(nodeId(peer))).getFirst(),
                (machine, cause) -> logFailed(partition, machine, cause), hooks);
    }

    private void changed(PartitionId partition) {
        if (!shortHere.isEmpty() && shortHere.containsKey(partition)) {
            // A replica that lost batches is back in a group that has a leader: it no longer holds others back.
            RaftServer.Division here = divisionOrNull(groupId(partition));
            if (here != null && here.getInfo().isAlive() && here.getInfo().getLeaderId() != null
                    && shortHere.remove(partition) != null) {
                LOG.info("node {}: the replica of {} follows leader {} again", self.id(), partition,
                        here.getInfo().getLeaderId());
            }
        }
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(partition.topic(), partition.partition());
        }
    }

    private List<RaftPeer> peers(List<Integer> ids) {
        return ids.stream().map(id -> {
            ClusterSpec.Node node = cluster.nodes().stream().filter(n -> n.id() == id).findFirst()
                    .orElseThrow(() -> new IllegalArgumentException("node " + id + " is not in the cluster"));
            return RaftPeer.newBuilder().setId(peerId(id)).setAddress(node.raftAddress()).build();
        }).toList();
    }

    private boolean hosts(RaftGroupId groupId) {
        for (RaftGroupId id : server.getGroupIds()) {
            if (id.equals(groupId)) {
                return true;
            }
        }
        return false;
    }

    private void addGroup(RaftGroup group, String what) throws IOException {
        addGroup(group, what, true);
    }

    /**
     * @param format start the group empty; without, it starts from its directory (its log and snapshot recovered)
     */
    private void addGroup(RaftGroup group, String what, boolean format) throws IOException {
        RaftClientReply reply = server.groupManagement(GroupManagementRequest.newAdd(clientId, server.getId(),
                callIds.incrementAndGet(), group, format));
        if (!reply.isSuccess()) {
            throw new IOException("node " + self.id() + " cannot add the Raft group of " + what + ": "
                    + reply.getException());
        }
    }

    /** Stops a group on this node, deleting its directory or keeping it. */
    private void removeGroup(RaftGroupId id, boolean deleteDirectory, String what) throws IOException {
        RaftClientReply reply = server.groupManagement(GroupManagementRequest.newRemove(clientId, server.getId(),
                callIds.incrementAndGet(), id, deleteDirectory, false));
        if (!reply.isSuccess()) {
            throw new IOException("node " + self.id() + " cannot remove its group of " + what + ": "
                    + reply.getException());
        }
    }

    /** The metadata created a topic (or this node replays its creation): take this node's part. */
    private void onTopic(MetadataCommands.Topic topic, long index) {
        hostPartitions(topic, 0, index);
    }

    /** Makes the store have the topic with at least this many partitions (the metadata's apply and rejoins race). */
    private void ensureTopic(String name, int partitions) {
        synchronized (topicsInStore) {
            int count = store.queueCount(name);
            if (count == 0) {
                store.createTopic(name, TopicLayout.BATCHES, partitions);
            } else if (count < partitions) {
                store.increaseQueueCount(name, partitions);
            }
        }
    }

    /** Guards creating and growing topics in the store. */
    private final Object topicsInStore = new Object();

    /**
     * Hosts this node's replicas of the topic's partitions from {@code from} on (or rejoins them, if older): all of a
     * topic just created, the new ones of a topic that gained partitions.
     */
    private void hostPartitions(MetadataCommands.Topic topic, int from, long index) {
        boolean older = index < rejoinBelow;
        if (!older) {
            ensureTopic(topic.name(), topic.partitions());
        }
        for (int p = from; p < topic.partitions(); p++) {
            List<Integer> replicas = topic.replicas().get(p);
            if (!replicas.contains(self.id())) {
                continue;
            }
            PartitionId partition = new PartitionId(topic.name(), p);
            if (older) {
                rejoinPartition(topic, partition, replicas);
                continue;
            }
            try {
                host(partition, replicas);
                resumeRestart(partition);
            } catch (IOException e) {
                throw new IllegalStateException("cannot host " + partition + ": " + e.getMessage(), e);
            }
        }
    }

    /** At most this many partition groups rejoin at once (each holds a client and a copy from its leader). */
    private final java.util.concurrent.Semaphore rejoinSlots = new java.util.concurrent.Semaphore(4);
    private final java.util.Set<Thread> backgroundThreads = ConcurrentHashMap.newKeySet();

    /**
     * In the background (the metadata's apply thread goes on): rejoin a partition's group, creating its topic in the
     * store first, retrying after any failure until it is done or the node closes; the marker stays until then.
     */
    private void rejoinPartition(MetadataCommands.Topic topic, PartitionId partition, List<Integer> replicas) {
        RaftGroupId groupId = groupId(partition);
        known.put(groupId, partition);
        rejoining.incrementAndGet();
        inBackground("node-" + self.id() + "-rejoin-" + partition, () -> {
            while (!closed) {
                rejoinSlots.acquire();
                try {
                    ensureTopic(topic.name(), topic.partitions());
                    rejoin(RaftGroup.valueOf(groupId, peers(replicas)), partition.toString(), index -> { });
                    // A replica looked up before the group started again here held the old member.
                    partitions.remove(partition);
                    partition(partition);
                    changed(partition);
                    rejoining.decrementAndGet();
                    return;
                } catch (IOException | RuntimeException e) {
                    if (!closed) {
                        LOG.error("node {} could not rejoin the group of {} (tried again): {}", self.id(),
                                partition, e.toString());
                    }
                } finally {
                    rejoinSlots.release();
                }
                Thread.sleep(1000);
            }
        });
    }

    /**
     * Partition groups stopped on this node because their log could not be written, until they are back in their
     * configuration: the state machine whose log failed.
     */
    private final Map<PartitionId, Object> stopped = new ConcurrentHashMap<>();
    /** Stopped groups whose started-again member failed too before the rejoin finished: they stop once more. */
    private final java.util.Set<PartitionId> failedAgain = ConcurrentHashMap.newKeySet();
    /** How many times in a row each partition's replica stopped here (its restarts back off). */
    private final Map<PartitionId, Integer> logFailures = new ConcurrentHashMap<>();

    /** How often each partition's retention hold follows its Raft log's start. */
    static final long RETENTION_HOLD_MILLIS = 5_000;

    /**
     * Moves each partition's retention hold to the first batch its Raft log names, every few seconds: the log's start
     * moves up as Ratis purges it after a snapshot, on a partition written to or not.
     */
    private void moveRetentionHolds() throws InterruptedException {
        while (!closed) {
            Thread.sleep(RETENTION_HOLD_MILLIS);
            for (ReplicatedPartition partition : partitions.values()) {
                partition.machine().holdRetentionAtLog();
            }
        }
    }

    /** @return how many times the partition's replica stopped here since the node started, its log failing */
    int replicaStops(String topic, int partition) {
        return logFailures.getOrDefault(new PartitionId(topic, partition), 0);
    }

    /**
     * A replica's log could not be written here (its store refused a batch, as on a full disk, or a Raft log write
     * failed): Ratis's log takes nothing more, so the group stops on this node, its directory kept. If it led, the
     * other replicas elect a leader and go on without it. Once the store takes appends again it starts from its
     * directory and catches up as a restarted follower does.
     */
    private void logFailed(PartitionId partition, PartitionStateMachine machine, Throwable cause) {
        if (closed) {
            return;
        }
        if (rootCause(cause) instanceof LostBatchesException) {
            lostBatches.add(partition);
        }
        Object prior = stopped.putIfAbsent(partition, machine);
        if (prior != null) {
            if (prior != machine) {
                failedAgain.add(partition);
            }
            return;
        }
        if (lostBatches.contains(partition)) {
            LOG.error("node {}: the replica of {} stops on this broker: {}. The other replicas go on; this one"
                    + " rejoins its group empty and copies the partition from their leader, or, if too many of them"
                    + " lost batches too for a leader to be elected, cuts its log back to its store",
                    self.id(), partition, rootCause(cause).getMessage());
        } else {
            LOG.error("node {}: the replica of {} stops on this broker: its log could not be written ({}). The other"
                    + " replicas go on; this one starts again, and catches up, once the store takes appends",
                    self.id(), partition, rootCause(cause).toString());
        }
        startRestart(partition);
    }

    /**
     * Partitions whose replica here lost batches its Raft log names ({@link LostBatchesException}):
     * it rejoins its group empty rather than with its log.
     */
    private final Set<PartitionId> lostBatches = ConcurrentHashMap.newKeySet();

    /** The text of a restart marker: the partition, and whether its replica is rebuilt empty. */
    static String restartMarkerText(PartitionId partition, boolean rebuild) {
        return partition.topic() + "\n" + partition.partition() + "\n" + (rebuild ? REBUILD + "\n" : "");
    }

    /** The line of a restart marker saying that the replica lost batches and is rebuilt empty. */
    static final String REBUILD = "rebuild";

    private void startRestart(PartitionId partition) {
        inBackground("node-" + self.id() + "-restart-" + partition, () -> restartAfterLogFailure(partition));
    }

    /** A task that ends when interrupted. */
    private interface Interruptible {
        void run() throws InterruptedException;
    }

    /** Runs a task in a virtual thread that {@link #close()} interrupts and waits for. */
    private void inBackground(String name, Interruptible task) {
        Thread thread = Thread.ofVirtual().name(name).unstarted(() -> {
            try {
                task.run();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                backgroundThreads.remove(Thread.currentThread());
            }
        });
        backgroundThreads.add(thread);
        thread.start();
    }

    private static Throwable rootCause(Throwable failure) {
        Throwable cause = failure;
        while (cause.getCause() != null && cause.getCause() != cause) {
            cause = cause.getCause();
        }
        return cause;
    }

    /**
     * Stops the group here (its directory kept), then once a second: learns from the other replicas who leads, for
     * clients asking this node, and once the store takes appends (and, after repeated failures, a back-off of up to a
     * minute has passed), rejoins with its own log. A replica that lost batches its log names rejoins empty once
     * another replica leads; where the replicas that lost batches are too many for the others to elect a leader, it
     * cuts its log back to what its store holds and starts again in its configuration ({@link #cutBackIfTooManyShort}).
     * A forced marker names the partition meanwhile, so a broker restarted halfway goes on with the rejoin
     * ({@link #resumeRestart}).
     */
    private void restartAfterLogFailure(PartitionId partition) throws InterruptedException {
        RaftGroupId id = groupId(partition);
        List<Integer> replicas = replicasOf(partition, id);
        if (replicas == null) {
            return;
        }
        RaftGroup group = RaftGroup.valueOf(id, peers(replicas));
        boolean rebuild = lostBatches.contains(partition);
        int failures = logFailures.merge(partition, 1, Integer::sum);
        long notBefore = System.nanoTime() + TimeUnit.SECONDS.toNanos(Math.min(60, 1L << Math.min(6, failures - 1)));
        boolean removed = false;
        String refusal = null;
        try (RaftClient others = RaftClient.newBuilder().setProperties(new RaftProperties())
                .setRaftGroup(group).setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry())
                .build()) {
            while (!closed) {
                try {
                    if (!removed) {
                        RaftServer.Division here = divisionOrNull(id);
                        if (here != null && (here.getInfo().getLifeCycleState() == LifeCycle.State.NEW
                                || here.getInfo().getLifeCycleState() == LifeCycle.State.STARTING)) {
                            // Still starting with the server (a restart resumed): stopping it now fails halfway.
                            Thread.sleep(200);
                            continue;
                        }
                        PartitionStateMachine machine = here != null
                                && here.getStateMachine() instanceof PartitionStateMachine m ? m
                                : stopped.get(partition) instanceof PartitionStateMachine m ? m : null;
                        if (here != null) {
                            DurableFile.write(restartMarker(id), restartMarkerText(partition, rebuild));
                            removeGroup(id, false, partition.toString());
                            partitions.remove(partition);
                        }
                        removed = true;
                        if (rebuild) {
                            readHeld(partition, id, machine);
                        }
                    }
                    boolean led = learnLeader(partition, replicas, others);
                    String why = storeRefusal();
                    if (why != null && !why.equals(refusal)) {
                        LOG.warn("node {}: the replica of {} waits for the store to take appends: {}", self.id(),
                                partition, why);
                    }
                    refusal = why;
                    if (why == null && System.nanoTime() - notBefore >= 0) {
                        if (led) {
                            // Out of the configuration and back, with its own log (or empty, if it lost batches the
                            // log names): no append reaches the group while it starts, and it catches up from where
                            // its log ends.
                            rejoin(group, partition.toString(), index -> { }, !rebuild);
                            shortHere.remove(partition);
                        } else if (rebuild && !cutBackIfTooManyShort(partition, id, replicas)) {
                            // Its batches can come from a leader only: it waits for the others to elect one, which
                            // needs a majority of the replicas without this one (docs/design.md).
                            Thread.sleep(1000);
                            continue;
                        } else {
                            // No leader among the others (their disks may be full too, or they lost batches too and
                            // this replica's log was cut back to its store): no append can race the start, so the
                            // group starts from its directory in its configuration, as on a restart.
                            addGroup(group, partition.toString(), false);
                        }
                        partitions.remove(partition);
                        partition(partition);
                        elsewhere.remove(partition);
                        Files.deleteIfExists(restartMarker(id));
                        LOG.info("node {}: the replica of {} started again after its log failed{}", self.id(),
                                partition, rebuild && led ? ", empty, to copy the batches it lost" : "");
                        if (rebuild) {
                            // A loss found while this restart kept the log stays marked for the next one.
                            lostBatches.remove(partition);
                        }
                        break;
                    }
                } catch (IOException | RuntimeException e) {
                    if (!closed) {
                        LOG.error("node {}: restarting the replica of {} failed (tried again): {}", self.id(),
                                partition, e.toString());
                    }
                }
                Thread.sleep(1000);
            }
        } catch (IOException e) {
            LOG.error("node {}: cannot close the client of {}'s other replicas: {}", self.id(), partition,
                    e.toString());
        }
        Object failed = stopped.remove(partition);
        changed(partition);
        if (!closed && failedAgain.remove(partition)) {
            ReplicatedPartition current = partitions.get(partition);
            if (current != null && current.machine() != failed) {
                logFailed(partition, current.machine(), new IOException("the log failed again while rejoining"));
            }
        }
    }

    /**
     * Partitions whose replica here lost batches its Raft log names and is out of its group: how far its store holds
     * the log (the last entry held whole), which the other replicas' nodes ask ({@link #answerShort}). Kept until the
     * replica is back in a group that has a leader.
     */
    private final Map<PartitionId, RaftLogTail.Held> shortHere = new ConcurrentHashMap<>();

    /**
     * Reads how far the stopped replica's store holds its Raft log (its group stopped, its files at rest), and, if
     * the log can be cut back to it, reports the replica short from now on.
     *
     * @param machine the replica's stopped state machine (its latest snapshot), or null if not known
     */
    private void readHeld(PartitionId partition, RaftGroupId id, PartitionStateMachine machine) throws IOException {
        if (machine == null) {
            return;
        }
        RaftLogTail.Held held = RaftLogTail.held(logDirectory(id), OpenSegmentBelowSnapshot.maxEntryBytes(server),
                store.nextOffset(partition.topic(), partition.partition()),
                machine.latestSnapshot() == null ? -1 : machine.latestSnapshot().index(),
                machine.latestSnapshot() == null ? 0 : machine.latestSnapshot().end(),
                data -> EntryHeader.decode(data).end());
        // Not when the store lacks even the snapshot's batches, or starts past the entry it would be cut back to (a
        // copy from a leader cut short), or holds all the log names (a rebuild cut short by a stop): a copy from a
        // leader only.
        if (held != null && held.isShort()
                && store.minOffset(partition.topic(), partition.partition()) <= held.wholeEnd()) {
            shortHere.put(partition, held);
        }
    }

    /** @return the directory of a group's Raft log segments */
    private Path logDirectory(RaftGroupId id) {
        return raftDirectory.resolve(id.getUuid().toString()).resolve("current");
    }

    /** The answer to another node asking whether this node's replica of a partition is short. */
    private String answerShort(PartitionId partition) {
        RaftLogTail.Held held = shortHere.get(partition);
        return held == null ? "whole" : "short " + held.wholeIndex();
    }

    /**
     * With no leader among the other replicas: if so many of the partition's replicas lost batches their logs name
     * that those left cannot elect a leader (a power cut of a majority of them under ASYNC), no replica can be rebuilt
     * from a leader. This one then cuts its Raft log back to the last entry its store holds whole, and its store to
     * that entry's end, and says in the log what it gave up; it then starts in its configuration and votes, so the
     * replica with the longest log is elected and the others follow it.
     *
     * @return whether the log was cut back (the marker then names a restart with its log)
     */
    private boolean cutBackIfTooManyShort(PartitionId partition, RaftGroupId id, List<Integer> replicas)
            throws IOException {
        RaftLogTail.Held held = shortHere.get(partition);
        if (held == null) {
            return false;
        }
        List<Integer> shortOnes = new ArrayList<>(List.of(self.id()));
        for (int other : replicas) {
            if (other != self.id() && askShort(other, partition)) {
                shortOnes.add(other);
            }
        }
        // Those not short are fewer than a majority: no leader can be elected without a short one's vote.
        if (shortOnes.size() < replicas.size() - replicas.size() / 2) {
            if (!shortOnes.equals(reportedShort.put(partition, shortOnes))) {
                LOG.warn("node {}: the replica of {} lost batches its Raft log names and waits to be rebuilt from a"
                        + " leader among the others; replicas known to have lost batches: {} of {}", self.id(),
                        partition, shortOnes, replicas);
            }
            return false;
        }
        // The marker first: a stop before the cut leaves a log its store is short of, which the group's start finds
        // again; one after it, a log the store holds, which restarts as any stopped replica does.
        DurableFile.write(restartMarker(id), restartMarkerText(partition, false));
        long cut = RaftLogTail.cutAfter(logDirectory(id), held.wholeIndex(),
                OpenSegmentBelowSnapshot.maxEntryBytes(server));
        long stored = store.nextOffset(partition.topic(), partition.partition());
        if (stored > held.wholeEnd()) {
            store.truncateQueue(partition.topic(), partition.partition(), held.wholeEnd());
        }
        reportedShort.remove(partition);
        LOG.error("node {}: replicas {} of {}'s replicas {} lost batches their Raft logs name (a power cut under ASYNC),"
                + " too many for the others to elect a leader: this replica's Raft log is cut back to entry {}, the"
                + " last whose batches its store holds ({} entries cut, {} to {}), and its store to offset {}. Offsets"
                + " {} to {} of {}, acknowledged or not, are given up here: they are lost unless the replica elected"
                + " now holds them", self.id(), shortOnes, partition, replicas, held.wholeIndex(), cut,
                held.wholeIndex() + 1, held.lastIndex(), held.wholeEnd(), held.wholeEnd(), held.namedEnd() - 1,
                partition);
        return true;
    }

    /** The short replicas each partition's replica here last reported waiting for, so each change is logged once. */
    private final Map<PartitionId, List<Integer>> reportedShort = new ConcurrentHashMap<>();

    /** @return whether node {@code other} answers that its replica of the partition is short (no answer: no) */
    private boolean askShort(int other, PartitionId partition) {
        RaftClient client = replicasClient;
        if (client == null) {
            return false;
        }
        try {
            RaftClientReply reply = client.io().sendStaleRead(Message.valueOf("short " + partition.topic() + " "
                    + partition.partition()), 0, peerId(other));
            return reply.isSuccess() && reply.getMessage().getContent().toStringUtf8().startsWith("short ");
        } catch (IOException | RuntimeException e) {
            LOG.debug("node {}: node {} did not say whether its replica of {} is short: {}", self.id(), other,
                    partition, e.toString());
            return false;
        }
    }

    /**
     * @return a partition's replicas, as the metadata names them, or, until this node's metadata has replayed its
     *     topic or the partitions it gained (a group started from the Raft directory can fail before that), as its
     *     group's configuration here
     *     does; waits for the metadata if neither is known yet. Null once the node closes.
     */
    private List<Integer> replicasOf(PartitionId partition, RaftGroupId id) throws InterruptedException {
        boolean told = false;
        while (!closed) {
            MetadataCommands.Topic topic = metadata.state().topic(partition.topic());
            // A partition the topic gained later is named once the metadata has replayed that too.
            if (topic != null && partition.partition() < topic.partitions()) {
                return topic.replicas().get(partition.partition());
            }
            RaftServer.Division here = divisionOrNull(id);
            if (here != null) {
                return here.getGroup().getPeers().stream().map(peer -> nodeId(peer.getId())).sorted().toList();
            }
            if (!told) {
                LOG.info("node {}: the replica of {} waits for the metadata to name its replicas", self.id(),
                        partition);
                told = true;
            }
            Thread.sleep(200);
        }
        return null;
    }

    /** The marker of a replica stopped after its log failed, until it is back in its group's configuration. */
    private Path restartMarker(RaftGroupId id) {
        return raftDirectory.resolve(RESTART_FILE_PREFIX + id.getUuid());
    }

    /** The start of the name of a restart marker, which ends with the group's id. */
    static final String RESTART_FILE_PREFIX = "sluice-restarting-";

    /**
     * At start, a partition whose replica was stopped after its log failed and had not rejoined: the rejoin goes on
     * (the group, started from its directory with the server, may have been left out of its configuration).
     */
    private void resumeRestart(PartitionId partition) {
        Path marker = restartMarker(groupId(partition));
        if (Files.exists(marker) && stopped.putIfAbsent(partition, RESUMED) == null) {
            boolean rebuild;
            try {
                rebuild = Files.readAllLines(marker, StandardCharsets.UTF_8).contains(REBUILD);
            } catch (IOException e) {
                // Unreadable: rebuilt empty, which is right whatever the marker said.
                rebuild = true;
            }
            if (rebuild) {
                lostBatches.add(partition);
            }
            LOG.warn("node {}: the replica of {} was stopped after its log failed; it rejoins its group{}", self.id(),
                    partition, rebuild ? " empty" : "");
            startRestart(partition);
        }
    }

    /** Stands in {@link #stopped} for the failed state machine of a replica whose restart resumed at start. */
    private static final Object RESUMED = new Object();

    /** Checks every second which partitions led here should be handed to their preferred replicas. */
    private void keepPreferredLeaders(PreferredLeaders preferred) throws InterruptedException {
        while (!closed) {
            Thread.sleep(1_000);
            try {
                preferred.check();
            } catch (RuntimeException e) {
                LOG.warn("node {}: the preferred leaders' check failed: {}", self.id(), e.toString());
            }
        }
    }

    /** The client id of the step-downs {@link #watchHandOvers} asks for. */
    private final ClientId stepDowns = ClientId.randomId();
    private final AtomicLong stepDownCalls = new AtomicLong();

    /**
     * Every half second: the leader here of a partition that shows the sign of a hand-over stuck pending
     * ({@link StuckHandOver}), if it still refuses appends as stepping down, and again a hand-over's time later,
     * steps down, and the group elects again.
     */
    private void watchHandOvers() throws InterruptedException {
        while (!closed) {
            Thread.sleep(500);
            for (PartitionId id : known.values()) {
                if (closed) {
                    return;
                }
                try {
                    ReplicatedPartition replica = replicaOf(id.topic(), id.partition());
                    if (replica == null || !replica.isLeaderReady()
                            || !replica.stuckHandOver().stuck(System.nanoTime())) {
                        continue;
                    }
                    replica.stuckHandOver().ended();
                    // Still refusing, and still a hand-over's time later: not one hand-over in its time.
                    if (!replica.refusesAsSteppingDown()) {
                        continue;
                    }
                    Thread.sleep(HAND_OVER_MILLIS + 100);
                    if (!replica.isLeaderReady() || !replica.refusesAsSteppingDown()) {
                        continue;
                    }
                    LOG.warn("node {}: {} has refused appends as handing its leadership over for {} ms or more, a"
                            + " hand-over left pending with no time limit: its leader here steps down", self.id(), id,
                            TimeUnit.NANOSECONDS.toMillis(replica.stuckHandOver().stuckNanos()));
                    server.transferLeadershipAsync(new TransferLeadershipRequest(stepDowns, server.getId(),
                            groupId(id), stepDownCalls.incrementAndGet(), null,
                            RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS))).whenComplete((reply, failure) -> {
                                if (failure != null || !reply.isSuccess()) {
                                    LOG.warn("node {}: {}'s leader here did not step down: {}", self.id(), id,
                                            failure != null ? failure.toString() : reply.getException());
                                }
                            });
                } catch (IOException | RuntimeException e) {
                    LOG.warn("node {}: the check of {}'s hand-over failed: {}", self.id(), id, e.toString());
                }
            }
        }
    }

    /**
     * When this node added a partition's group (a topic created or grown since it started), until the group's leader
     * is its preferred replica, for PreferredLeaders: a new group's leadership goes there, as Kafka's first leader
     * of a partition is its preferred replica; later moves wait for the periodic check.
     */
    private final Map<PartitionId, Long> added = new ConcurrentHashMap<>();

    /** @return the partitions this node leads now, with their replicas (once the metadata names them) */
    private List<PreferredLeaders.Led> ledHere() {
        long now = System.nanoTime();
        added.entrySet().removeIf(entry -> {
            PartitionId id = entry.getKey();
            if (now - entry.getValue() >= TimeUnit.SECONDS.toNanos(PreferredLeaders.NEW_GROUP_SECONDS)) {
                return true;
            }
            MetadataCommands.Topic topic = metadata.state().topic(id.topic());
            ReplicatedPartition replica = replicaOf(id.topic(), id.partition());
            RaftPeerId leader = replica == null ? null : replica.division().getInfo().getLeaderId();
            return topic != null && id.partition() < topic.partitions() && leader != null
                    && nodeId(leader) == topic.replicas().get(id.partition()).getFirst();
        });
        List<PreferredLeaders.Led> led = new ArrayList<>();
        for (PartitionId id : known.values()) {
            MetadataCommands.Topic topic = metadata.state().topic(id.topic());
            ReplicatedPartition replica = replicaOf(id.topic(), id.partition());
            if (topic == null || id.partition() >= topic.partitions() || replica == null) {
                continue;
            }
            var info = replica.division().getInfo();
            if (info.isLeader()) {
                boolean isNew = added.containsKey(id);
                led.add(new PreferredLeaders.Led(id, topic.replicas().get(id.partition()), info.getCurrentTerm(),
                        inSync(replica), isNew));
            }
        }
        return led;
    }

    /**
     * Asks this node's replica of a partition, which leads it, to hand leadership to replica {@code to}: Ratis refuses
     * appends meanwhile, waits (up to {@code timeoutMillis}) for that replica's log to match, and tells it to stand.
     */
    private CompletableFuture<RaftClientReply> transferLeadership(PartitionId partition, int to, long timeoutMillis) {
        try {
            return server.transferLeadershipAsync(new TransferLeadershipRequest(ClientId.randomId(), server.getId(),
                    groupId(partition), TRANSFER_CALLS.incrementAndGet(), peerId(to), timeoutMillis));
        } catch (IOException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private static final AtomicLong TRANSFER_CALLS = new AtomicLong();

    /** Asks the replicas of partitions this node holds none of who leads them ({@link #partition}). */
    private volatile RaftClient replicasClient;
    /** Runs those asks, a virtual thread each. */
    private final java.util.concurrent.ExecutorService askers = java.util.concurrent.Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("leaders-elsewhere-", 0).factory());
    private final LeadersElsewhere leadersElsewhere = new LeadersElsewhere((node, partition) ->
            replicasClient.getGroupManagementApi(peerId(node)).info(groupId(partition)).getRoleInfoProto(),
            askers, System::nanoTime, DOUBT_MILLIS);

    /** Partitions whose replica is stopped here, as the other replicas report them: who leads, in which term. */
    private final Map<PartitionId, PartitionView> elsewhere = new ConcurrentHashMap<>();

    /** Asks the other replicas of a partition stopped here which of them leads, so this node can tell clients. */
    private boolean learnLeader(PartitionId partition, List<Integer> replicas, RaftClient others) {
        List<Integer> inSync = replicas.stream().filter(replica -> replica != self.id()).toList();
        for (int other : inSync) {
            try {
                var role = others.getGroupManagementApi(peerId(other)).info(groupId(partition)).getRoleInfoProto();
                if (role.getRole() == RaftPeerRole.LEADER) {
                    int term = (int) Math.min(Integer.MAX_VALUE, role.getLeaderInfo().getTerm());
                    elsewhere.put(partition, new PartitionView(other, term, replicas, inSync));
                    changed(partition);
                    return true;
                }
            } catch (IOException | RuntimeException e) {
                LOG.debug("node {}: node {} did not say who leads {}: {}", self.id(), other, partition, e.toString());
            }
        }
        elsewhere.remove(partition);
        return false;
    }

    /**
     * @return why the replica should not start again now (a log turned read-only, or the disk above the emergency
     *     ratio: appends resume below the hard ratio, and catching up could push it straight back), or null
     */
    private String storeRefusal() {
        double emergency = store.config().retention().diskEmergencyRatio();
        List<StoreStatus> statuses = new ArrayList<>(store.ownLogStatuses().values());
        statuses.add(store.status());
        for (StoreStatus status : statuses) {
            if (status.state() != StoreStatus.State.OPEN) {
                return "a log is " + status.state() + (status.reason() == null ? "" : ": " + status.reason());
            }
            double used = status.lastRetention() == null ? 0 : status.lastRetention().diskUsedRatio();
            if (status.appendsRefused() || used > emergency) {
                return String.format("the disk is %.1f%% full, above the emergency ratio %.1f%%", used * 100,
                        emergency * 100);
            }
        }
        return null;
    }

    /** The metadata committed a group's offsets: this node's store keeps them as consumer positions. */
    private void onOffsets(MetadataCommands.Offsets offsets) {
        for (CommittedOffset offset : offsets.offsets()) {
            store.commitOffset(offsets.group(), offset.topic(), offset.partition(), offset.offset());
        }
    }

    /**
     * The metadata is about to apply a snapshot holding these groups' offsets (each group with its partitions): the
     * store forgets every other group, and every group holding positions of partitions the snapshot's lacks. Such
     * positions were forgotten before the snapshot, or committed after it (the log that follows commits them again);
     * the snapshot's commits come next.
     */
    private void keepGroups(Map<String, Set<PartitionId>> groups) {
        Map<String, Set<PartitionId>> stored = new java.util.HashMap<>();
        for (io.sluice.store.ConsumerPosition position : store.consumerPositions()) {
            stored.computeIfAbsent(position.group(), g -> new java.util.HashSet<>())
                    .add(new PartitionId(position.topic(), position.queueId()));
        }
        stored.forEach((group, partitions) -> {
            Set<PartitionId> kept = groups.get(group);
            if (kept == null || !kept.containsAll(partitions)) {
                onForget(group);
            }
        });
    }

    /** The metadata forgot a group's offsets (deleted or expired by its coordinator): so does this node's store. */
    private void onForget(String group) {
        try {
            store.removeConsumerGroup(group);
        } catch (RuntimeException e) {
            // The cluster forgot them; this node keeps them until it is rebuilt (a closed store, a failed disk).
            LOG.error("node cannot forget the committed offsets of group {}: {}", group, e.toString());
        }
    }

    /**
     * Makes this node a replica of a partition: creates its Raft group here if the node does not host it yet.
     * Every replica's node must be told (each adds the group on its own server); the metadata does so.
     *
     * @param replicas the node ids of the partition's replicas, this node among them
     * @return the partition's replica on this node
     */
    ReplicatedPartition host(PartitionId partition, List<Integer> replicas) throws IOException {
        if (!replicas.contains(self.id())) {
            throw new IllegalArgumentException("node " + self.id() + " is not among " + partition + "'s replicas "
                    + replicas);
        }
        RaftGroupId groupId = groupId(partition);
        known.put(groupId, partition);
        if (!hosts(groupId)) {
            addGroup(RaftGroup.valueOf(groupId, peers(replicas)), partition.toString());
            added.put(partition, System.nanoTime());
        }
        return partition(partition);
    }

    /** @return this node's replica of a partition it hosts */
    ReplicatedPartition partition(PartitionId partition) throws IOException {
        ReplicatedPartition existing = partitions.get(partition);
        if (existing != null) {
            return existing;
        }
        RaftServer.Division division = server.getDivision(groupId(partition));
        ReplicatedPartition created = new ReplicatedPartition(partition, division, clientId, callIds,
                tuning.entriesInFlight(), tuning.refillWait());
        ReplicatedPartition raced = partitions.putIfAbsent(partition, created);
        return raced != null ? raced : created;
    }

    /** @return this node's replica of the partition, or null if it hosts none */
    private ReplicatedPartition replicaOf(String topic, int partition) {
        PartitionId id = new PartitionId(topic, partition);
        // Every produce and fetch asks: a replica found once is kept (until its group stops or rejoins here), so the
        // group id's digest and the walk over the server's groups are paid once per partition, not per request.
        ReplicatedPartition found = partitions.get(id);
        if (found != null) {
            return found;
        }
        RaftGroupId groupId = groupId(id);
        if (!known.containsKey(groupId) || !hosts(groupId)) {
            return null;
        }
        try {
            return partition(id);
        } catch (IOException e) {
            return null;
        }
    }

    @Override
    public int self() {
        return self.id();
    }

    @Override
    public List<Node> brokers() {
        return cluster.nodes().stream().map(node -> new Node(node.id(), node.host(), node.clientPort())).toList();
    }

    @Override
    public int controller() {
        try {
            RaftPeerId leader = server.getDivision(metadataGroupId).getInfo().getLeaderId();
            return leader == null ? -1 : nodeId(leader);
        } catch (IOException e) {
            return -1;
        }
    }

    @Override
    public boolean controllerReady() {
        try {
            return server.getDivision(metadataGroupId).getInfo().isLeaderReady();
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * How long a follower may go without a word from its leader before the leader is in doubt: the leader's next
     * heartbeat follows each answer by half {@link #RPC_TIMEOUT_MIN} (75 ms), and a round trip more; and less than
     * {@link #RPC_TIMEOUT_MIN}, so that the doubt begins before the follower can stand for election and stop naming
     * that leader.
     */
    static final long LEADER_SILENCE_MILLIS = RPC_TIMEOUT_MIN.toLong(TimeUnit.MILLISECONDS) * 4 / 5;
    /**
     * How long a doubt lasts at most: a dead leader is noticed within two election timeouts of its last word and the
     * election takes a round trip or two more, and a partition that cannot elect (no majority reachable from here) is
     * not waited for again until it had a leader.
     */
    static final long DOUBT_MILLIS = 4 * RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS);
    /** When a replica was first found unsure of its leader, by partition, until it is sure again. */
    private final Map<PartitionId, Long> unsureSince = new ConcurrentHashMap<>();

    /**
     * In doubt: a candidate, a follower that knows no leader, or one whose leader has been silent for more than
     * {@link #LEADER_SILENCE_MILLIS}, for less than {@link #DOUBT_MILLIS} since it was first found so (roles read from
     * one snapshot of the replica's). A partition this node holds no replica of is in doubt while its replicas are
     * being asked who leads and none was heard of lately ({@link LeadersElsewhere#inDoubt}).
     */
    @Override
    public boolean leaderInDoubt(String topic, int partition) {
        ReplicatedPartition replica = replicaOf(topic, partition);
        if (replica == null) {
            MetadataCommands.Topic known = metadata.state().topic(topic);
            return known != null && partition >= 0 && partition < known.partitions()
                    && !known.replicas().get(partition).contains(self.id())
                    && leadersElsewhere.inDoubt(new PartitionId(topic, partition), known.replicas().get(partition));
        }
        RoleInfoProto role = replica.division().getInfo().getRoleInfoProto();
        PartitionId id = new PartitionId(topic, partition);
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
        long now = System.nanoTime();
        return now - unsureSince.computeIfAbsent(id, key -> now) < TimeUnit.MILLISECONDS.toNanos(DOUBT_MILLIS);
    }

    /** @return the partition's replicas other than this node, as the metadata names them (none if it names none) */
    private List<Integer> othersOf(String topic, int partition) {
        MetadataCommands.Topic known = metadata.state().topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return List.of();
        }
        return known.replicas().get(partition).stream().filter(id -> id != self.id()).toList();
    }

    @Override
    public PartitionView partition(String topic, int partition) {
        MetadataCommands.Topic known = metadata.state().topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return null;
        }
        List<Integer> replicas = known.replicas().get(partition);
        ReplicatedPartition replica = replicaOf(topic, partition);
        if (replica == null) {
            PartitionId id = new PartitionId(topic, partition);
            PartitionView away = elsewhere.get(id);
            if (away != null) {
                return away;
            }
            // No replica here: a topic on fewer brokers than the cluster has, whose leader this node asks of them.
            return replicas.contains(self.id()) ? new PartitionView(-1, -1, replicas, List.of())
                    : leadersElsewhere.view(id, replicas);
        }
        var info = replica.division().getInfo();
        RaftPeerId leader = info.getLeaderId();
        int epoch = (int) Math.min(Integer.MAX_VALUE, info.getCurrentTerm());
        List<Integer> inSync = replicas;
        if (info.isLeader()) {
            inSync = inSync(replica);
        }
        if (leader == null && !info.isLeader()) {
            // No leader heard of here yet: the one the other replicas name, if they name one (leaderInDoubt).
            PartitionView told = leadersElsewhere.freshLeader(new PartitionId(topic, partition),
                    othersOf(topic, partition));
            if (told != null) {
                return new PartitionView(told.leader(), Math.max(epoch, told.leaderEpoch()), replicas, inSync);
            }
        }
        return new PartitionView(leader == null ? -1 : nodeId(leader), epoch, replicas, inSync);
    }

    /**
     * The longest a preferred election lets Ratis hand leadership over: Ratis refuses the partition's appends while it
     * does, waiting for the preferred replica's log to match, and for a replica that died meanwhile until the time is
     * up. A few election timeouts; a client's ElectLeaders timeout only bounds how long its answer waits.
     */
    static final long HAND_OVER_MILLIS = 3 * RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS);

    /**
     * A preferred election: the leader (this node, or asked through a client of the group) hands leadership to the
     * partition's first replica, if that replica is in sync (this node leads) or answers its leader (another does),
     * within {@link #HAND_OVER_MILLIS}; PREFERRED_NOT_AVAILABLE otherwise, at once, as Kafka answers.
     */
    @Override
    public CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        MetadataCommands.Topic known = metadata.state().topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("no partition " + partition
                    + " of topic " + topic));
        }
        List<Integer> replicas = known.replicas().get(partition);
        int preferred = replicas.getFirst();
        int leader = partition(topic, partition).leader();
        if (leader == preferred) {
            return CompletableFuture.completedFuture(Election.NOT_NEEDED);
        } else if (leader < 0) {
            return CompletableFuture.completedFuture(Election.PREFERRED_NOT_AVAILABLE);
        }
        PartitionId id = new PartitionId(topic, partition);
        long handOver = Math.max(1, Math.min(HAND_OVER_MILLIS, timeoutMillis));
        CompletableFuture<RaftClientReply> reply;
        if (leader == self.id()) {
            ReplicatedPartition replica = replicaOf(topic, partition);
            if (replica == null || !replica.division().getInfo().isLeader() || !inSync(replica).contains(preferred)) {
                return CompletableFuture.completedFuture(Election.PREFERRED_NOT_AVAILABLE);
            }
            reply = transferLeadership(id, preferred, handOver);
        } else {
            reply = CompletableFuture.supplyAsync(() -> handOverAt(id, replicas, leader, preferred, handOver), askers);
        }
        return reply.handle((answer, failure) -> {
            if (failure != null || answer == null || !answer.isSuccess()) {
                LOG.info("node {}: {} not handed to its preferred replica, node {}: {}", self.id(), id, preferred,
                        failure != null ? failure.toString() : answer == null ? "not answering its leader"
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
    private RaftClientReply handOverAt(PartitionId id, List<Integer> replicas, int leader, int preferred,
                                       long handOverMillis) {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties,
                TimeDuration.valueOf(handOverMillis + 1_000, TimeUnit.MILLISECONDS));
        try (RaftClient client = RaftClient.newBuilder().setProperties(properties)
                .setRaftGroup(RaftGroup.valueOf(groupId(id), peers(replicas))).setLeaderId(peerId(leader))
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.noRetry()).build()) {
            RoleInfoProto role = client.getGroupManagementApi(peerId(leader)).info(groupId(id)).getRoleInfoProto();
            boolean answering = role.getRole() == RaftPeerRole.LEADER
                    && role.getLeaderInfo().getFollowerInfoList().stream().anyMatch(follower ->
                    nodeId(RaftPeerId.valueOf(follower.getId().getId())) == preferred
                            && follower.getLastRpcElapsedTimeMs() <= RPC_TIMEOUT_MAX.toLong(TimeUnit.MILLISECONDS));
            return answering ? client.admin().transferLeadership(peerId(preferred), peerId(leader), handOverMillis)
                    : null;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The leader knows how far each follower's log matches its own: those that have every committed entry are in
     * sync, with itself. (Another replica does not know: it reports every replica.)
     *
     * @return the replicas in sync, as this node's replica, which leads, knows them
     */
    private List<Integer> inSync(ReplicatedPartition replica) {
        var info = replica.division().getInfo();
        List<Integer> inSync = new ArrayList<>(List.of(self.id()));
        long committed = replica.division().getRaftLog().getLastCommittedIndex();
        var followers = info.getRoleInfoProto().getLeaderInfo().getFollowerInfoList();
        long[] matched = info.getFollowerMatchIndices();
        for (int i = 0; i < followers.size() && i < matched.length; i++) {
            if (matched[i] >= committed) {
                inSync.add(nodeId(RaftPeerId.valueOf(followers.get(i).getId().getId())));
            }
        }
        return inSync;
    }

    @Override
    public int leaderEpoch(String topic, int partition) {
        MetadataCommands.Topic known = metadata.state().topic(topic);
        if (known == null || partition < 0 || partition >= known.partitions()) {
            return -1;
        }
        ReplicatedPartition replica = replicaOf(topic, partition);
        return replica == null ? -1 : (int) Math.min(Integer.MAX_VALUE, replica.term());
    }

    @Override
    public boolean leads(String topic, int partition) {
        ReplicatedPartition replica = replicaOf(topic, partition);
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
                logFailed(replica.id(), replica.machine(), e);
            }
            return false;
        }
    }

    @Override
    public Appended append(String topic, int partition, byte[] batch) {
        ReplicatedPartition replica = replicaOf(topic, partition);
        if (replica == null) {
            CompletableFuture<Long> refused = CompletableFuture.failedFuture(new NotLeaderException("node " + self.id()
                    + " holds no replica of " + topic + "-" + partition));
            return new Appended(refused, refused);
        }
        ReplicatedPartition.Appended appended = replica.append(batch);
        return new Appended(appended.stored(), appended.committed());
    }

    @Override
    public long highWatermark(String topic, int partition) {
        ReplicatedPartition replica = replicaOf(topic, partition);
        return replica == null ? 0 : replica.highWatermark();
    }

    /**
     * @return the brokers of a topic's partition: replicas go round the brokers (by id), each partition starting one
     *     further on from a start the topic's name picks, so leaders spread
     */
    private List<Integer> placement(String topic, int partition, int replicationFactor) {
        List<Integer> ids = cluster.nodes().stream().map(ClusterSpec.Node::id).sorted().toList();
        int start = Math.floorMod(topic.hashCode(), ids.size());
        List<Integer> nodes = new ArrayList<>();
        for (int r = 0; r < replicationFactor; r++) {
            nodes.add(ids.get((start + partition + r) % ids.size()));
        }
        return nodes;
    }

    @Override
    public CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor) {
        List<Integer> ids = cluster.nodes().stream().map(ClusterSpec.Node::id).sorted().toList();
        if (replicationFactor < 1 || replicationFactor > ids.size()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("replication factor "
                    + replicationFactor + " cannot be met by a cluster of " + ids.size() + " brokers"));
        }
        if (partitions < 1 || partitions > store.config().maxQueuesPerTopic()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("the partition count must be between 1"
                    + " and " + store.config().maxQueuesPerTopic() + ", was " + partitions));
        }
        List<List<Integer>> replicas = new ArrayList<>();
        for (int p = 0; p < partitions; p++) {
            replicas.add(placement(topic, p, replicationFactor));
        }
        String command = new MetadataCommands.Topic(topic, replicas).command();
        return metadataAnswer(command).thenCompose(answer -> {
            if (answer.equals("exists")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic
                        + " already exists"));
            }
            if (!answer.equals("created")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException(answer));
            }
            return metadata.state().awaitTopic(topic).thenApply(created -> null);
        });
    }

    @Override
    public CompletableFuture<Void> addPartitions(String topic, int partitions) {
        MetadataCommands.Topic current = metadata.state().topic(topic);
        if (current == null) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " does not exist"));
        }
        if (partitions <= current.partitions() || partitions > store.config().maxQueuesPerTopic()) {
            return CompletableFuture.failedFuture(new IllegalArgumentException("topic " + topic + " has "
                    + current.partitions() + " partitions; a new count must be larger and at most "
                    + store.config().maxQueuesPerTopic() + ", was " + partitions));
        }
        // The new partitions' replicas go on round the brokers from where the topic's last one left off, as many as
        // its first partition has.
        List<List<Integer>> replicas = new ArrayList<>(current.replicas());
        for (int p = current.partitions(); p < partitions; p++) {
            replicas.add(placement(topic, p, current.replicas().getFirst().size()));
        }
        String command = new MetadataCommands.Topic(topic, replicas).growCommand();
        return metadataAnswer(command).thenCompose(answer -> {
            if (!answer.equals("grown")) {
                return CompletableFuture.failedFuture(new IllegalArgumentException(answer));
            }
            return metadata.state().awaitPartitions(topic, partitions).thenApply(grown -> null);
        });
    }

    @Override
    public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
        if (offsets.isEmpty()) {
            return CompletableFuture.completedFuture(null);
        }
        String command;
        try {
            command = offsetsCommand(group, offsets);
        } catch (NotLeaderException e) {
            return CompletableFuture.failedFuture(e);
        }
        // The coordinator (the metadata leader) applies a commit before its reply comes: its store has the offsets
        // once this completes, and every other node's soon after.
        return metadataAnswer(command).thenCompose(answer -> answer.equals("committed")
                ? CompletableFuture.<Void>completedFuture(null)
                : CompletableFuture.failedFuture(answer.startsWith(MetadataCommands.STALE_COORDINATOR)
                        ? new NotLeaderException("the commit reached the metadata after node " + self.id()
                                + " stopped coordinating the groups: " + answer)
                        : new IllegalArgumentException(answer)));
    }

    /**
     * @return the command committing a group's offsets, stamped with the term this node coordinates the groups in: a
     *     commit logged in another term (a retry of its request reaching a later leader) is refused, since the group
     *     may have committed again through that leader meanwhile
     * @throws NotLeaderException if this node does not coordinate the groups (lead the metadata) now
     */
    String offsetsCommand(String group, List<CommittedOffset> offsets) {
        long term = groupsCoordination().epoch();
        if (term < 0) {
            throw new NotLeaderException("node " + self.id() + " does not coordinate the groups now");
        }
        return new MetadataCommands.Offsets(group, offsets, term).command();
    }

    @Override
    public GroupsCoordination groupsCoordination() {
        long epoch = -1;
        try {
            var info = server.getDivision(metadataGroupId).getInfo();
            if (info.isLeader()) {
                epoch = info.getCurrentTerm();
            }
        } catch (IOException e) {
            epoch = -1;
        }
        return new GroupsCoordination(epoch, metadata.applied());
    }

    @Override
    public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision) {
        if (decision.epoch() < 0) {
            return CompletableFuture.failedFuture(new IllegalStateException("node " + self.id()
                    + " did not coordinate the groups when it decided to forget group " + group));
        }
        return metadataAnswer(new MetadataCommands.Forget(group, decision.applied(), decision.epoch()).command())
                .thenCompose(answer -> switch (answer) {
                    case MetadataCommands.FORGOTTEN -> CompletableFuture.completedFuture(true);
                    case MetadataCommands.KEPT -> CompletableFuture.completedFuture(false);
                    default -> CompletableFuture.failedFuture(new IllegalArgumentException(answer));
                });
    }

    @Override
    public int defaultReplicationFactor() {
        return Math.min(3, cluster.nodes().size());
    }

    @Override
    public void onChange(BiConsumer<String, Integer> listener) {
        listeners.add(listener);
    }

    /** @return this node's id */
    public int id() {
        return self.id();
    }

    /** @return the node's store */
    public Store store() {
        return store;
    }

    /** @return true if this node leads the metadata group (the controller) */
    public boolean isController() {
        try {
            return server.getDivision(metadataGroupId).getInfo().getCurrentRole() == RaftPeerRole.LEADER;
        } catch (IOException e) {
            return false;
        }
    }

    /** @return the nodes that, as far as this node has applied the metadata, took part in the cluster */
    java.util.Set<Integer> members() {
        return metadata.state().members();
    }

    /** @return a partition's replicas as this node's metadata names them (the preferred one first), or null */
    List<Integer> replicasOf(String topic, int partition) {
        MetadataCommands.Topic known = metadata.state().topic(topic);
        return known == null || partition < 0 || partition >= known.partitions() ? null
                : known.replicas().get(partition);
    }

    /** @return this node's member of the metadata group */
    RaftServer.Division metadataDivision() throws IOException {
        return server.getDivision(metadataGroupId);
    }

    /** Stops the Raft server (the store stays open: its owner closes it). */
    @Override
    public void close() throws IOException {
        closed = true;
        Thread join = joining;
        if (join != null) {
            join.interrupt();
        }
        backgroundThreads.forEach(Thread::interrupt);
        for (Thread thread : List.copyOf(backgroundThreads)) {
            try {
                thread.join(2_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        askers.shutdownNow();
        try {
            if (!askers.awaitTermination(2, TimeUnit.SECONDS)) {
                LOG.warn("node {}: asks of other nodes' replicas still running at close", self.id());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            metadataClient.get().close();
        } finally {
            try {
                RaftClient asking = replicasClient;
                if (asking != null) {
                    asking.close();
                }
            } finally {
                server.close();
            }
        }
        LOG.debug("node {} left the cluster", self.id());
    }
}
