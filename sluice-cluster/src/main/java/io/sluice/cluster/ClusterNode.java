package io.sluice.cluster;

import io.sluice.broker.Replication;
import io.sluice.broker.ProducerHistory;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.statemachine.StateMachine;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One broker's part of the cluster: one Ratis server (multi-Raft) over the broker's {@link Store}, speaking Raft on
 * the node's Raft port. It hosts the metadata group, which every node belongs to ({@link MetadataStateMachine}: the
 * topics and each partition's replicas), and one group per partition it has a replica of, each with its own log,
 * leader and {@link PartitionStateMachine}. It is the broker's {@link Replication}.
 *
 * <p>The node is a facade over its parts, each with one job: the server and its groups ({@link RaftGroups}), the
 * metadata client ({@link MetadataClient}), membership and join/rejoin ({@link Membership}), replica hosting
 * ({@link Replicas}, with {@link ReplicaRestarts} and {@link ShortReplicas} for replicas whose log failed or lost
 * batches), leadership and hand-overs ({@link Leadership}, {@link HandOverWatch}), and the partitions the broker sees
 * ({@link ReplicaViews}). Here they are wired together, and the {@link Replication} methods delegate to them. Their
 * recurring duties are named tasks on the node's {@link Tasks}.
 *
 * <p>Group ids are derived from the cluster id (and the topic's id, or for a topic from before deletions its name,
 * and the partition), so every node names a group alike, and a node started with another cluster id cannot take part
 * in this cluster's groups. Thread-safe.
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

        /** The wait for answered producers' next batches, 1 ms (0.5 ms to 2 ms did alike: docs/benchmarks.md). */
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

    private final ClusterSpec cluster;
    private final ClusterSpec.Node self;
    private final Store store;
    /** The store flushes SYNC: the Raft log forces its entries too. */
    private final boolean force;
    private final NodeHooks hooks;
    private volatile boolean closed;
    private final Tasks tasks;
    private final RaftGroups groups;
    private final MetadataStateMachine metadata;
    private final MetadataClient metadataClient;
    private final Replicas replicas;
    private final ReplicaRestarts restarts;
    private final Membership membership;
    private final ReplicaViews partitions;
    private final Leadership leadership;
    private final TopicDeletions deletions;
    /** This start's barrier in the metadata log: once applied here, what is left of deleted topics goes. */
    private final MetadataCommands.Barrier barrier;
    /** Runs this node's asks of other nodes (who leads, a hand-over elsewhere), a virtual thread each. */
    private final ExecutorService askers = Executors.newThreadPerTaskExecutor(
            Thread.ofVirtual().name("leaders-elsewhere-", 0).factory());

    /**
     * Starts the node's Raft server with the groups it hosted before (their Raft logs are under
     * {@code raftDirectory}), joins the metadata group, and hosts the replicas the metadata gives this node.
     *
     * @param clusterId the cluster's id (part of every group id)
     * @param cluster the cluster's brokers
     * @param nodeId this broker's id in {@code cluster}
     * @param raftDirectory where the Raft logs live
     * @param store the broker's store, which holds the partitions' batches; under its SYNC flush each batch is
     *     forced before its log entry is written, and the Raft log forces its entries too
     * @throws IOException if the server cannot start
     */
    public ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, Path raftDirectory, Store store)
            throws IOException {
        this(clusterId, cluster, nodeId, raftDirectory, store, null);
    }

    /**
     * As the constructor above, speaking Raft over mutual TLS with {@code raftTls}: its server takes connections only
     * from peers whose certificate {@code raftTls} trusts, and its clients present the node's certificate
     * (docs/cluster.md, "Raft over mutual TLS"); null for plain text.
     */
    public ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, Path raftDirectory, Store store,
                       RaftTls raftTls) throws IOException {
        this(clusterId, cluster, nodeId, -1, Tuning.DEFAULT, raftDirectory, store, new StartPhases(nodeId),
                NodeHooks.NONE, raftTls);
    }

    /**
     * As the public constructor, listening on {@code listenPort} rather than the Raft port the cluster string gives
     * (which then reaches this node through something in between, such as a test's network proxy); -1 for that port.
     */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Tuning tuning, Path raftDirectory,
                Store store) throws IOException {
        this(clusterId, cluster, nodeId, listenPort, tuning, raftDirectory, store, new StartPhases(nodeId),
                NodeHooks.NONE);
    }

    /**
     * As above, timing the start's phases into {@code phases}, with {@code hooks} where a test reaches into this node
     * ({@link NodeHooks#NONE} in production).
     */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Tuning tuning, Path raftDirectory,
                Store store, StartPhases phases, NodeHooks hooks) throws IOException {
        this(clusterId, cluster, nodeId, listenPort, tuning, raftDirectory, store, phases, hooks, null);
    }

    /** As above, speaking Raft over mutual TLS with {@code raftTls} (null: plain text). */
    ClusterNode(String clusterId, ClusterSpec cluster, int nodeId, int listenPort, Tuning tuning, Path raftDirectory,
                Store store, StartPhases phases, NodeHooks hooks, RaftTls raftTls) throws IOException {
        Objects.requireNonNull(clusterId, "clusterId");
        this.hooks = Objects.requireNonNull(hooks, "hooks");
        this.cluster = cluster;
        this.self = cluster.nodes().stream().filter(node -> node.id() == nodeId).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("node id " + nodeId + " is not in the cluster "
                        + cluster));
        this.store = store;
        this.force = store.config().flushMode() == FlushMode.SYNC;
        NodeIdentity.check(FileIO.DEFAULT, raftDirectory, clusterId, nodeId);
        this.groups = new RaftGroups(clusterId, cluster, self, raftDirectory, raftTls);
        this.tasks = new ScheduledTasks("node-" + nodeId + "-tasks");
        StoreOffsets offsets = new StoreOffsets(store);
        this.barrier = new MetadataCommands.Barrier(nodeId, new java.security.SecureRandom().nextLong());
        this.metadata = new MetadataStateMachine(this::onTopic, this::hostPartitions, offsets::commit,
                offsets::forget, offsets::keepOnly, this::keepConfigs, this::keepId, this::onDeleted,
                this::onBarrier, groups::leaderClient);
        this.metadataClient = new MetadataClient(groups, metadata, () -> closed, store.config().maxQueuesPerTopic());
        ShortReplicas shorts = new ShortReplicas(groups, store, metadataClient::asker);
        metadata.answerShortQueries(shorts::answer);
        this.replicas = new Replicas(groups, store, tuning, shorts, tasks::nanoTime);
        // The partition groups found in the Raft directory start with the server: name them before it starts.
        replicas.nameStoredPartitions();
        this.restarts = new ReplicaRestarts(groups, replicas, shorts, metadata.state(), store, tasks, () -> closed);
        this.deletions = new TopicDeletions(groups, replicas, restarts, store, topic -> {
            hostPartitions(topic, 0, metadata.state().createdAt(topic.name()));
            replicas.keepConfigs(topic);
        });
        this.membership = new Membership(groups, metadataClient, metadata, replicas, tasks, () -> closed);
        LeadersElsewhere leadersElsewhere = new LeadersElsewhere((node, partition) -> metadataClient.asker()
                .getGroupManagementApi(peerId(node)).info(groups.groupId(partition)).getRoleInfoProto(),
                askers, System::nanoTime, ReplicaViews.DOUBT_MILLIS);
        this.partitions = new ReplicaViews(nodeId, replicas, restarts, metadata.state(), leadersElsewhere,
                tasks::nanoTime);
        this.leadership = new Leadership(groups, replicas, metadata.state(), partitions, askers, tasks);
        int raftPort = listenPort >= 0 ? listenPort : self.raftPort();
        RaftGroups.checkPortFree(self.host(), raftPort);
        groups.start(RaftSettings.properties(tuning, self.host(), raftPort, raftDirectory, force), this::machineFor);
        phases.done("Raft server started (" + replicas.known().size() + " partition groups named)");
        try {
            metadataClient.open();
            // The metadata's snapshot (if it started from one) takes this node's part before the node serves.
            metadata.applyStartSnapshot();
            phases.done("metadata snapshot applied");
            startDuties(tuning);
        } catch (RuntimeException e) {
            closeAfterFailedStart(e);
            throw e;
        }
    }

    /** How often a controller looks for topics created before ids, which it then gives theirs. */
    static final long TOPIC_IDS_CHECK_MILLIS = 1_000;

    /** Starts the node's recurring duties, each a task. */
    private void startDuties(Tuning tuning) {
        membership.start();
        // While this node is the controller, topics created before ids get theirs (KIP-516) through the metadata.
        tasks.every("node-" + self.id() + "-topic-ids", Duration.ofMillis(TOPIC_IDS_CHECK_MILLIS),
                metadataClient::identifyTopics);
        replicas.startRetentionHolds(tasks);
        tasks.start("node-" + self.id() + "-barrier", Duration.ZERO, this::submitBarrier);
        new HandOverWatch(self.id(), tasks, replicas::known, id -> replicas.replicaOf(id.topic(), id.partition()),
                leadership::stepDown, Leadership.HAND_OVER_MILLIS).start();
        if (tuning.preferredLeaders()) {
            leadership.keepPreferredLeaders(tuning.leaderImbalanceCheck());
        }
    }

    /** How long the barrier's submission waits for an answer before it is sent again. */
    private static final long BARRIER_TIMEOUT_SECONDS = 30;

    /**
     * One round of submitting this start's barrier ({@link MetadataCommands.Barrier}), until the metadata answers it:
     * once a leader is known (before, a request only fails).
     */
    private Tasks.Next submitBarrier() throws InterruptedException {
        RaftServer.Division here = groups.divisionOrNull(groups.metadataGroupId());
        if (here == null || here.getInfo().getLeaderId() == null) {
            return Tasks.Next.inMillis(100);
        }
        try {
            metadataClient.answer(barrier.command()).get(BARRIER_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            return Tasks.Next.DONE;
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException
                 | RuntimeException e) {
            LOG.debug("node {}: its barrier was not answered, sent again: {}", self.id(), e.toString());
            return Tasks.Next.inMillis(300);
        }
    }

    /** A barrier applied here: this node's own, of this start, has it sweep what is left of deleted topics. */
    private void onBarrier(MetadataCommands.Barrier applied) {
        if (applied.equals(barrier)) {
            deletions.sweep(metadata.state());
        }
    }

    /** The metadata deleted a topic (or this node replays it, or finds it deleted): this node deletes its part. */
    private void onDeleted(MetadataCommands.Topic topic) {
        deletions.deleted(topic);
    }

    private void closeAfterFailedStart(RuntimeException failure) {
        closed = true;
        tasks.close();
        askers.shutdownNow();
        try {
            metadataClient.close();
        } catch (IOException suppressed) {
            failure.addSuppressed(suppressed);
        }
        try {
            groups.close();
        } catch (IOException suppressed) {
            failure.addSuppressed(suppressed);
        }
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
        return groups.groupId(partition);
    }

    /** The state machine of a group the server starts: the metadata's, or a partition's this node named. */
    private StateMachine machineFor(RaftGroupId groupId) {
        if (groupId.equals(groups.metadataGroupId())) {
            return metadata;
        }
        PartitionId partition = replicas.partitionOf(groupId);
        if (partition == null) {
            throw new IllegalStateException("node " + self.id() + " has a Raft group " + groupId + " that is no"
                    + " partition of its cluster it knows");
        }
        return new PartitionStateMachine(store, partition.topic(), partition.partition(),
                end -> replicas.changed(partition), groups::leaderClient,
                (machine, cause) -> restarts.logFailed(partition, machine, cause), hooks);
    }

    /** The metadata changed a topic's configs (or this node replays it): the store keeps them. */
    private void keepConfigs(MetadataCommands.Topic topic) {
        if (!deletions.storeHoldsAnother(topic)) {
            replicas.keepConfigs(topic);
        }
    }

    /** The metadata gave a topic created before ids its id (or this node replays it): the store keeps it. */
    private void keepId(MetadataCommands.Topic topic) {
        replicas.keepId(topic);
    }

    /** The metadata created a topic (or this node replays its creation): take this node's part. */
    private void onTopic(MetadataCommands.Topic topic, long index) {
        hostPartitions(topic, 0, index);
    }

    /**
     * Hosts this node's replicas of the topic's partitions from {@code from} on (or rejoins them, if older than this
     * node's rejoin): all of a topic just created, the new ones of a topic that gained partitions. Not while the store
     * holds another topic of its name ({@link TopicDeletions#storeHoldsAnother}).
     */
    private void hostPartitions(MetadataCommands.Topic topic, int from, long index) {
        if (deletions.storeHoldsAnother(topic)) {
            return;
        }
        groups.nameGroups(topic);
        boolean older = membership.rejoins(index);
        if (!older) {
            replicas.ensureTopic(topic);
        }
        for (int p = from; p < topic.partitions(); p++) {
            List<Integer> replicaIds = topic.replicas().get(p);
            if (!replicaIds.contains(self.id())) {
                continue;
            }
            PartitionId partition = new PartitionId(topic.name(), p);
            if (older) {
                membership.rejoinPartition(topic, partition, replicaIds);
                continue;
            }
            try {
                replicas.host(partition, replicaIds);
                restarts.resumeIfMarked(partition);
            } catch (IOException e) {
                throw new IllegalStateException("cannot host " + partition + ": " + e.getMessage(), e);
            }
        }
    }

    /**
     * Makes this node a replica of a partition: creates its Raft group here if the node does not host it yet.
     * Every replica's node must be told (each adds the group on its own server); the metadata does so.
     *
     * @param replicaIds the node ids of the partition's replicas, this node among them
     * @return the partition's replica on this node
     */
    ReplicatedPartition host(PartitionId partition, List<Integer> replicaIds) throws IOException {
        return replicas.host(partition, replicaIds);
    }

    /** @return this node's replica of a partition it hosts */
    ReplicatedPartition partition(PartitionId partition) throws IOException {
        return replicas.partition(partition);
    }

    /** @return how many times the partition's replica stopped here since the node started, its log failing */
    int replicaStops(String topic, int partition) {
        return restarts.stops(new PartitionId(topic, partition));
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
        return metadataClient.controller();
    }

    @Override
    public boolean controllerReady() {
        return metadataClient.controllerReady();
    }

    @Override
    public PartitionView partition(String topic, int partition) {
        return partitions.partition(topic, partition);
    }

    @Override
    public ProducerHistory producerHistory(String topic, int partition) {
        return partitions.producerHistory(topic, partition);
    }

    /** See {@link ReplicaViews#leaderInDoubt}. */
    @Override
    public boolean leaderInDoubt(String topic, int partition) {
        return partitions.leaderInDoubt(topic, partition);
    }

    @Override
    public int leaderEpoch(String topic, int partition) {
        return partitions.leaderEpoch(topic, partition);
    }

    @Override
    public boolean leads(String topic, int partition) {
        return partitions.leads(topic, partition);
    }

    @Override
    public Appended append(String topic, int partition, KafkaBatch batch) {
        return partitions.append(topic, partition, batch);
    }

    @Override
    public long highWatermark(String topic, int partition) {
        return partitions.highWatermark(topic, partition);
    }

    @Override
    public long logStartOffset(String topic, int partition) {
        return partitions.logStart(topic, partition);
    }

    @Override
    public CompletableFuture<Long> deleteRecords(String topic, int partition, long offset) {
        return partitions.deleteRecords(topic, partition, offset);
    }

    @Override
    public CompletableFuture<Void> createTopic(String topic, int partitionCount, int replicationFactor,
                                               Map<String, String> configs) {
        return metadataClient.createTopic(topic, partitionCount, replicationFactor, configs);
    }

    @Override
    public CompletableFuture<Void> deleteTopic(String topic) {
        return metadataClient.deleteTopic(topic);
    }

    @Override
    public CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change) {
        return metadataClient.alterTopicConfigs(topic, change);
    }

    @Override
    public String securityRecord(String kind) {
        return metadataClient.securityRecord(kind);
    }

    @Override
    public CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change) {
        return metadataClient.alterSecurityRecord(kind, change);
    }

    @Override
    public CompletableFuture<Void> addPartitions(String topic, int partitionCount) {
        return metadataClient.addPartitions(topic, partitionCount);
    }

    @Override
    public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
        return metadataClient.commitOffsets(group, offsets);
    }

    @Override
    public CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long epoch) {
        return metadataClient.saveTransaction(transactionalId, state, epoch);
    }

    @Override
    public Map<String, byte[]> savedTransactions() {
        return metadataClient.savedTransactions();
    }

    /** See {@link MetadataClient#offsetsCommand}. */
    String offsetsCommand(String group, List<CommittedOffset> offsets) {
        return metadataClient.offsetsCommand(group, offsets);
    }

    @Override
    public GroupsCoordination groupsCoordination() {
        return metadataClient.groupsCoordination();
    }

    @Override
    public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision) {
        return metadataClient.forgetGroup(group, decision);
    }

    /** See {@link Leadership#electPreferredLeader}. */
    @Override
    public CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        return leadership.electPreferredLeader(topic, partition, timeoutMillis);
    }

    @Override
    public int defaultReplicationFactor() {
        return Math.min(3, cluster.nodes().size());
    }

    @Override
    public void onChange(BiConsumer<String, Integer> listener) {
        replicas.onChange(listener);
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
        return metadataClient.isController();
    }

    /** @return the nodes that, as far as this node has applied the metadata, took part in the cluster */
    Set<Integer> members() {
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
        return metadataClient.division();
    }

    /** Stops the node's duties and its Raft server (the store stays open: its owner closes it). */
    @Override
    public void close() throws IOException {
        closed = true;
        tasks.close();
        askers.shutdownNow();
        try {
            if (!askers.awaitTermination(2, TimeUnit.SECONDS)) {
                LOG.warn("node {}: asks of other nodes' replicas still running at close", self.id());
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        try {
            metadataClient.close();
        } finally {
            groups.close();
        }
        LOG.debug("node {} left the cluster", self.id());
    }
}
