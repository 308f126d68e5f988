package io.sluice.cluster;

import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.zip.CRC32C;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.TimeDuration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's metadata, replicated on every node by a Raft group of its own: the topics, each partition's
 * replicas, the consumer groups' committed offsets. Every node applies the same commands in the same order and acts
 * on them ({@code onTopic}: create the topic in its store, host the Raft groups of its replicas). The Raft log is the
 * record: a node that starts again applies its latest snapshot ({@link #takeSnapshot}: the commands that rebuild the
 * state), then replays the log after it.
 *
 * <p>Commands are text, one per entry: {@code topic <name> <partitions> <replicas of 0>;<replicas of 1>;...} with
 * each replica list comma separated, e.g. {@code topic orders 2 1,2,3;2,3,1}; {@code partitions <name> <partitions>
 * <replicas of 0>;...}, which gives a topic more partitions (the replicas of those it has unchanged, each node hosting
 * its replicas of the new ones); and a consumer group's committed
 * offsets, {@code offsets <group> <topic>:<partition>=<offset>;...}, which every node keeps in its store, and
 * {@code forget <group> <index> <term>}, which removes them from every node's store unless the log holds a commit of
 * the group after entry {@code index} (the coordinator decides to forget a group on what it had applied up to there; a
 * commit the cluster took since keeps the group on every node alike), and is refused in an entry of another term than
 * the one the coordinator decided in (it may have lost its place, and the next coordinator's members). And the record
 * of the nodes that took part (and so may have voted and acknowledged entries), which a node that comes back with no
 * Raft data needs to tell a lost directory from a first start: {@code member <node>}, which a node submits once its
 * member of this group runs, and {@code join <node>}, which a node with no Raft data submits through the others before
 * it starts its member: it answers {@link #TOOK_PART} if the node is recorded (or the log holds topics or offsets from
 * before any record, so that an absence proves nothing), else records the node and answers {@link #RECORDED}.
 */
final class MetadataStateMachine extends BaseStateMachine {

    private static final Logger LOG = LoggerFactory.getLogger(MetadataStateMachine.class);

    /**
     * A topic as the cluster knows it.
     *
     * @param name its name
     * @param replicas for each partition, the node ids of its replicas
     */
    record Topic(String name, List<List<Integer>> replicas) {

        Topic {
            replicas = replicas.stream().map(List::copyOf).toList();
        }

        int partitions() {
            return replicas.size();
        }

        String command() {
            StringBuilder text = new StringBuilder("topic ").append(name).append(' ').append(replicas.size())
                    .append(' ');
            for (int p = 0; p < replicas.size(); p++) {
                text.append(p == 0 ? "" : ";");
                List<Integer> nodes = replicas.get(p);
                for (int i = 0; i < nodes.size(); i++) {
                    text.append(i == 0 ? "" : ",").append(nodes.get(i));
                }
            }
            return text.toString();
        }

        /** @return the command giving the topic these partitions (more than it has, the first ones unchanged) */
        String growCommand() {
            return "partitions" + command().substring("topic".length());
        }

        /** @throws IllegalArgumentException if the text is not a topic command */
        static Topic parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 4 || !parts[0].equals("topic")) {
                throw new IllegalArgumentException("not a metadata command: " + command);
            }
            int partitions = Integer.parseInt(parts[2]);
            String[] lists = parts[3].split(";");
            if (partitions < 1 || lists.length != partitions) {
                throw new IllegalArgumentException("a topic command with " + partitions + " partitions and "
                        + lists.length + " replica lists: " + command);
            }
            List<List<Integer>> replicas = new ArrayList<>();
            for (String list : lists) {
                List<Integer> nodes = new ArrayList<>();
                for (String node : list.split(",")) {
                    nodes.add(Integer.parseInt(node));
                }
                replicas.add(nodes);
            }
            return new Topic(parts[1], replicas);
        }
    }

    /**
     * A consumer group's committed offsets.
     *
     * @param group the group's store name
     * @param offsets the partitions' next offsets
     * @param term the term the coordinator led the metadata group in when it took the commit: an entry of another term
     *     (its request reached the log only through a later leader, after the coordinator lost its place and the group
     *     may have committed again through the next one) is refused; -1 for none (a snapshot's lines, and the commits
     *     of logs written before commits carried it)
     */
    record Offsets(String group, List<io.sluice.broker.Replication.CommittedOffset> offsets, long term) {

        /** Offsets without a term, as a snapshot holds them. */
        Offsets(String group, List<io.sluice.broker.Replication.CommittedOffset> offsets) {
            this(group, offsets, -1);
        }

        String command() {
            StringBuilder text = new StringBuilder("offsets ").append(group).append(' ');
            for (int i = 0; i < offsets.size(); i++) {
                var offset = offsets.get(i);
                text.append(i == 0 ? "" : ";").append(offset.topic()).append(':').append(offset.partition())
                        .append('=').append(offset.offset());
            }
            return term < 0 ? text.toString() : text.append(' ').append(term).toString();
        }

        /** @return the offsets by partition, in topic and partition order (a map of its own) */
        java.util.SortedMap<ClusterNode.PartitionId, Long> byPartition() {
            java.util.SortedMap<ClusterNode.PartitionId, Long> map = new java.util.TreeMap<>(
                    java.util.Comparator.comparing(ClusterNode.PartitionId::topic)
                            .thenComparingInt(ClusterNode.PartitionId::partition));
            offsets.forEach(offset -> map.put(new ClusterNode.PartitionId(offset.topic(), offset.partition()),
                    offset.offset()));
            return map;
        }

        /** @throws IllegalArgumentException if the text is not an offsets command */
        static Offsets parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 3 && parts.length != 4 || !parts[0].equals("offsets")) {
                throw new IllegalArgumentException("not an offsets command: " + command);
            }
            List<io.sluice.broker.Replication.CommittedOffset> offsets = new ArrayList<>();
            for (String item : parts[2].split(";")) {
                int colon = item.lastIndexOf(':');
                int equals = item.lastIndexOf('=');
                if (colon <= 0 || equals < colon) {
                    throw new IllegalArgumentException("not a committed offset: " + item);
                }
                offsets.add(new io.sluice.broker.Replication.CommittedOffset(item.substring(0, colon),
                        Integer.parseInt(item.substring(colon + 1, equals)), Long.parseLong(item.substring(equals + 1))));
            }
            return new Offsets(parts[1], offsets, parts.length == 4 ? Long.parseLong(parts[3]) : -1);
        }
    }

    /**
     * A coordinator's decision to forget a consumer group's committed offsets (a group deleted or expired).
     *
     * @param group the group's store name
     * @param unlessCommittedAfter the log index up to which the coordinator had applied commits when it decided: a
     *     commit of the group at a later index keeps it
     * @param term the term the coordinator led the metadata group in when it decided: an entry of another term (the
     *     coordinator lost its place before the decision reached the log) is refused
     */
    record Forget(String group, long unlessCommittedAfter, long term) {

        String command() {
            return "forget " + group + " " + unlessCommittedAfter + " " + term;
        }

        /** @throws IllegalArgumentException if the text is not a forget command */
        static Forget parse(String command) {
            String[] parts = command.split(" ");
            if (parts.length != 4 || !parts[0].equals("forget") || parts[1].isEmpty()) {
                throw new IllegalArgumentException("not a forget command: " + command);
            }
            return new Forget(parts[1], Long.parseLong(parts[2]), Long.parseLong(parts[3]));
        }
    }

    /** The answer to a forget command whose group's offsets are gone on every node. */
    static final String FORGOTTEN = "forgotten";

    /** The answer to a forget command whose group committed after the coordinator's decision: every node keeps it. */
    static final String KEPT = "kept";

    /** The answer to {@code join <node>} for a node that took part, or may have. */
    static final String TOOK_PART = "took-part";

    /** The answer to {@code join <node>} for a node that had not: it is recorded now, before it takes part. */
    static final String RECORDED = "recorded";

    private final Map<String, Topic> topics = new ConcurrentHashMap<>();
    private final Set<Integer> members = ConcurrentHashMap.newKeySet();
    /** Completes once a member record (any node's) is applied here. */
    private final CompletableFuture<Void> anyMember = new CompletableFuture<>();
    /** The log held topics or offsets before any member record (a cluster from before the records). */
    private volatile boolean untracked;
    private final Map<String, CompletableFuture<Topic>> awaited = new ConcurrentHashMap<>();
    /** Futures waiting for a topic to have at least a number of partitions here, by topic. */
    private final Map<String, List<Map.Entry<Integer, CompletableFuture<Topic>>>> awaitedGrowth =
            new ConcurrentHashMap<>();
    private final PartitionsAdded onPartitions;
    /** Each group with committed offsets, by store name (applied by the updater alone). */
    private final Map<String, Committed> committed = new ConcurrentHashMap<>();
    /** Each topic's creation and growths as logged, in log order: what a snapshot keeps of it. */
    private final Map<String, List<Logged>> topicEntries = new ConcurrentHashMap<>();
    private final BiConsumer<Topic, Long> onTopic;
    private final Consumer<Offsets> onOffsets;
    private final Consumer<String> onForget;
    private final Consumer<Map<String, Set<ClusterNode.PartitionId>>> keepGroups;
    private final Function<RaftPeerId, RaftPeer> peers;
    /** The snapshots of the group's current start (a group removed and added again starts with a directory anew). */
    private volatile SnapshotStorage snapshots = new SnapshotStorage();
    /** The snapshot this node started from, read at its start and not applied yet ({@link #applySnapshot}). */
    private volatile Snapshot startSnapshot;
    private final Object snapshotLock = new Object();
    private volatile RaftServer server;

    /** A command as logged, with its entry's index. */
    record Logged(long index, String command) {
    }

    /** A group's offsets as the log's commits left them, and the log index of its latest commit. */
    private record Committed(long index, Map<ClusterNode.PartitionId, Long> offsets) {
    }

    /**
     * @param onTopic told of each topic, with the log index of its creation, as this node applies it (and again as
     *     it replays its log)
     * @param onPartitions told of each topic that gained partitions, as this node applies it (and again as it replays
     *     its log)
     * @param onOffsets told of each group's offsets commit as this node applies it
     * @param onForget told of each group (store name) whose offsets the cluster forgets, as this node applies it
     * @param keepGroups told, before a snapshot's commands are applied, of the groups (store names) that have offsets
     *     in it, each with its partitions: any other group the node's store holds, or one
     *     holding other partitions, was forgotten before the snapshot (and committed again), or committed after it
     *     (the log that follows commits it again); the snapshot's commits follow
     * @param peers a node's Raft address by its id (a node installing a snapshot asks the leader for it)
     */
    MetadataStateMachine(BiConsumer<Topic, Long> onTopic, PartitionsAdded onPartitions, Consumer<Offsets> onOffsets,
                         Consumer<String> onForget, Consumer<Map<String, Set<ClusterNode.PartitionId>>> keepGroups,
                         Function<RaftPeerId, RaftPeer> peers) {
        this.onTopic = onTopic;
        this.onPartitions = onPartitions;
        this.onOffsets = onOffsets;
        this.onForget = onForget;
        this.keepGroups = keepGroups;
        this.peers = peers;
    }

    /** Answers {@code short <topic> <partition>} for this node's replica of the partition. */
    private volatile Function<ClusterNode.PartitionId, String> replicaQueries = partition -> "whole";

    /**
     * Has this node's metadata member answer the read-only query {@code short <topic> <partition>} (any member
     * answers it, leader or not, from this node's own state; a stale read): whether this node's replica of the
     * partition lost batches its Raft log names and stays out of its group ({@code short <index>}, the last entry its
     * store holds whole) or not ({@code whole}).
     */
    void answerShortQueries(Function<ClusterNode.PartitionId, String> answer) {
        replicaQueries = answer;
    }

    /** Told of a topic that gained partitions. */
    @FunctionalInterface
    interface PartitionsAdded {
        /**
         * @param topic the topic as it is now
         * @param before how many partitions it had
         * @param index the log index of the change
         */
        void added(Topic topic, int before, long index);
    }

    /** @return completes once this node has applied the topic's creation with at least this many partitions */
    CompletableFuture<Topic> awaitPartitions(String name, int partitions) {
        CompletableFuture<Topic> future = new CompletableFuture<>();
        awaitedGrowth.computeIfAbsent(name, n -> new java.util.concurrent.CopyOnWriteArrayList<>())
                .add(Map.entry(partitions, future));
        Topic known = topics.get(name);
        if (known != null && known.partitions() >= partitions) {
            future.complete(known);
        }
        return future;
    }

    /** @return the index of the last log entry this node applied, -1 before any */
    long applied() {
        TermIndex last = getLastAppliedTermIndex();
        return last == null ? -1 : last.getIndex();
    }

    /** @return the topic, or null if the cluster has none of that name (as far as this node has applied) */
    Topic topic(String name) {
        return topics.get(name);
    }

    /** @return the nodes recorded as having taken part, as far as this node has applied the log */
    Set<Integer> members() {
        return Set.copyOf(members);
    }

    /**
     * @return completes once this node has applied a record that a node took part: a command sent from then on
     *     follows one in the log, so the log does not look like one from before the records
     */
    CompletableFuture<Void> awaitMembers() {
        return anyMember;
    }

    /** @return completes once this node has applied the topic's creation */
    CompletableFuture<Topic> awaitTopic(String name) {
        CompletableFuture<Topic> future = awaited.computeIfAbsent(name, n -> new CompletableFuture<>());
        Topic known = topics.get(name);
        if (known != null) {
            future.complete(known);
        }
        return future;
    }

    /** @return the command recording that node {@code id} took part */
    static String memberCommand(int id) {
        return "member " + id;
    }

    /** @return the command a node with no Raft data submits to learn whether it took part */
    static String joinCommand(int id) {
        return "join " + id;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        applyStartSnapshot();
        LogEntryProto entry = trx.getLogEntry();
        String answer = apply(entry.getStateMachineLogEntry().getLogData().toString(StandardCharsets.UTF_8),
                entry.getTerm(), entry.getIndex());
        updateLastAppliedTermIndex(TermIndex.valueOf(entry));
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(answer)));
    }

    /** Applies a command logged at {@code index} in {@code term}; @return its answer */
    private String apply(String command, long term, long index) {
        try {
            if (command.startsWith("member ") || command.startsWith("join ")) {
                return applyMember(command);
            } else if (command.startsWith("offsets ")) {
                return applyOffsets(Offsets.parse(command), term, index);
            } else if (command.startsWith("forget ")) {
                return applyForget(Forget.parse(command), term);
            } else if (command.startsWith("partitions ")) {
                return applyPartitions(Topic.parse("topic" + command.substring("partitions".length())), index);
            } else {
                return applyTopic(Topic.parse(command), index);
            }
        } catch (RuntimeException e) {
            // Malformed: every node refuses it alike, and nothing changed.
            return "refused " + e.getMessage();
        }
    }

    private String applyMember(String command) {
        int id = Integer.parseInt(command.substring(command.indexOf(' ') + 1));
        String answer;
        if (command.startsWith("member ")) {
            answer = members.add(id) ? RECORDED : "known";
        } else if (members.contains(id) || untracked) {
            return TOOK_PART;
        } else {
            members.add(id);
            answer = RECORDED;
        }
        anyMember.complete(null);
        return answer;
    }

    private String applyOffsets(Offsets offsets, long term, long index) {
        if (offsets.term() >= 0 && offsets.term() != term) {
            return STALE_COORDINATOR + offsets.term() + ", logged in term " + term;
        }
        // Counted before the store takes them: a store that fails half way must not let a forget decided before this
        // commit wipe what it did take.
        committed.compute(offsets.group(), (group, before) -> {
            if (before == null) {
                return new Committed(index, offsets.byPartition());
            }
            before.offsets().putAll(offsets.byPartition());
            return new Committed(index, before.offsets());
        });
        onOffsets.accept(offsets);
        untracked |= members.isEmpty();
        return "committed";
    }

    /** How an answer refusing a coordinator's command logged in another term than its own begins. */
    static final String STALE_COORDINATOR = "refused: decided by the coordinator of term ";

    private String applyForget(Forget forget, long term) {
        if (term != forget.term()) {
            return STALE_COORDINATOR + forget.term() + ", logged in term " + term;
        }
        Committed last = committed.get(forget.group());
        if (last != null && last.index() > forget.unlessCommittedAfter()) {
            return KEPT;
        }
        forget(forget.group());
        return FORGOTTEN;
    }

    private void forget(String group) {
        committed.remove(group);
        onForget.accept(group);
    }

    private String applyPartitions(Topic grown, long index) {
        Topic current = topics.get(grown.name());
        if (current == null) {
            return "refused: no topic " + grown.name();
        }
        if (grown.partitions() <= current.partitions()) {
            return "refused: topic " + grown.name() + " has " + current.partitions() + " partitions";
        }
        if (!grown.replicas().subList(0, current.partitions()).equals(current.replicas())) {
            return "refused: the replicas of " + grown.name() + "'s partitions are not " + current.replicas();
        }
        topics.put(grown.name(), grown);
        topicEntries.computeIfAbsent(grown.name(), n -> new java.util.concurrent.CopyOnWriteArrayList<>())
                .add(new Logged(index, grown.growCommand()));
        try {
            onPartitions.added(grown, current.partitions(), index);
        } catch (RuntimeException e) {
            // The cluster has them; this node could not take its part (a full disk, a closed store).
            LOG.error("node cannot host its replicas of topic {}'s new partitions: {}", grown.name(), e.toString());
        }
        var waiting = awaitedGrowth.get(grown.name());
        if (waiting != null) {
            waiting.removeIf(wait -> {
                if (wait.getKey() > grown.partitions()) {
                    return false;
                }
                wait.getValue().complete(grown);
                return true;
            });
        }
        return "grown";
    }

    private String applyTopic(Topic topic, long index) {
        String answer;
        if (topics.putIfAbsent(topic.name(), topic) == null) {
            untracked |= members.isEmpty();
            topicEntries.put(topic.name(), new java.util.concurrent.CopyOnWriteArrayList<>(
                    List.of(new Logged(index, topic.command()))));
            answer = "created";
            try {
                onTopic.accept(topic, index);
            } catch (RuntimeException e) {
                // The cluster has the topic; this node could not take its part (a full disk, a closed store).
                LOG.error("node cannot host its replicas of topic {}: {}", topic.name(), e.toString());
            }
        } else {
            answer = "exists";
        }
        awaitTopic(topic.name()).complete(topics.get(topic.name()));
        return answer;
    }

    // Snapshots.

    /**
     * Also called again when the group is added again on this node (a rejoin): the topics and members applied so far
     * stay (their commands apply again alike); the snapshots are those of the new directory, and without one the
     * applied index and the groups' offsets start over with the group's log.
     */
    @Override
    public void initialize(RaftServer raftServer, RaftGroupId raftGroupId, RaftStorage storage) throws IOException {
        if (getLifeCycleState() == LifeCycle.State.NEW) {
            getLifeCycle().startAndTransition(() -> start(raftServer, raftGroupId, storage), IOException.class);
            return;
        }
        start(raftServer, raftGroupId, storage);
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            // Removed while it installed a snapshot.
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }

    private void start(RaftServer raftServer, RaftGroupId raftGroupId, RaftStorage storage) throws IOException {
        super.initialize(raftServer, raftGroupId, storage);
        this.server = raftServer;
        SnapshotStorage fresh = new SnapshotStorage();
        fresh.init(storage);
        snapshots = fresh;
        SingleFileSnapshotInfo latest = fresh.getLatestSnapshot();
        if (latest != null) {
            // Applied before any entry after it, or by the node as it starts (its callbacks host partitions, which
            // the Raft server starting this group cannot do yet).
            startSnapshot = readSnapshot(latest.getFile().getPath());
            setLastAppliedTermIndex(latest.getTermIndex());
            LOG.info("metadata: starting from the snapshot at {}", latest.getTermIndex());
        } else if (started) {
            // Added again, empty (a rejoin): its log is applied from its start again. Ratis refuses an applied index
            // that goes back (and reads it, unchecked, when it adds a group), and a forget is decided on the indexes
            // of this log's commits.
            setLastAppliedTermIndex(TermIndex.INITIAL_VALUE);
            committed.clear();
        }
        // Ratis loads the log once this returns; a segment the (readable) snapshot covers must be closed by then.
        OpenSegmentBelowSnapshot.closeIfBelow(storage.getStorageDir().getCurrentDir().toPath(),
                latest == null ? -1 : latest.getIndex(), OpenSegmentBelowSnapshot.maxEntryBytes(raftServer),
                "metadata");
        started = true;
    }

    /** The group started here before (it is started again when a rejoin adds it again). */
    private volatile boolean started;

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return snapshots;
    }

    /**
     * Applies the snapshot this node's metadata started from, if not done yet: the node calls it once its Raft server
     * runs, and the first entry applied after the snapshot does.
     */
    void applyStartSnapshot() {
        if (startSnapshot == null) {
            return;
        }
        synchronized (snapshotLock) {
            Snapshot snapshot = startSnapshot;
            if (snapshot != null) {
                try {
                    applySnapshot(snapshot);
                } finally {
                    // Only now: a caller that found it set waits on the lock until it is applied.
                    startSnapshot = null;
                }
            }
        }
    }

    /**
     * Every so many entries (Ratis decides, as for the partitions): the state up to the last entry applied is written
     * to a file, forced, and Ratis may purge the log below it. The state is what the log's commands left: the
     * members, each topic's creation and growths with their indexes, and each group's offsets with the index of its
     * latest commit, as commands a node applies in order when it starts from the snapshot ({@link #snapshotText}).
     */
    @Override
    public long takeSnapshot() throws IOException {
        applyStartSnapshot();
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return RaftLog.INVALID_LOG_INDEX;
        }
        Path path = snapshots.getSnapshotFile(last.getTerm(), last.getIndex()).toPath();
        DurableFile.write(path, snapshotText());
        snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), last));
        return last.getIndex();
    }

    /** The first line of a snapshot file. */
    private static final String SNAPSHOT_HEADER = "sluice-metadata-snapshot 1";

    /**
     * @return the snapshot of what this node applied: a header, {@code untracked=<true|false>}, then one line
     *     {@code <index> <command>} per command to apply (members at index -1, then the topics' creations and growths
     *     and one offsets command per group, together in log order), then {@code crc32c=<hex>} of all before it
     */
    String snapshotText() {
        List<Logged> lines = new ArrayList<>();
        members.stream().sorted().forEach(id -> lines.add(new Logged(-1, memberCommand(id))));
        List<Logged> logged = new ArrayList<>();
        topicEntries.values().forEach(logged::addAll);
        committed.forEach((group, last) -> {
            List<io.sluice.broker.Replication.CommittedOffset> list = new ArrayList<>();
            last.offsets().forEach((partition, offset) -> list.add(new io.sluice.broker.Replication.CommittedOffset(
                    partition.topic(), partition.partition(), offset)));
            logged.add(new Logged(last.index(), new Offsets(group, list).command()));
        });
        logged.sort(java.util.Comparator.comparingLong(Logged::index));
        lines.addAll(logged);
        StringBuilder body = new StringBuilder(SNAPSHOT_HEADER).append('\n').append("untracked=").append(untracked)
                .append('\n');
        for (Logged line : lines) {
            body.append(line.index()).append(' ').append(line.command()).append('\n');
        }
        return body + "crc32c=" + crcOf(body.toString()) + "\n";
    }

    private static String crcOf(String body) {
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.UTF_8));
        return Long.toHexString(crc.getValue());
    }

    /** A snapshot's content: whether the log held topics or offsets before any member record, and its commands. */
    record Snapshot(boolean untracked, List<Logged> lines) {
    }

    /** @throws IOException if the text is not a whole snapshot (a torn or damaged file) */
    static Snapshot parseSnapshot(String text) throws IOException {
        int crcAt = text.lastIndexOf("crc32c=");
        if (crcAt < 0 || !text.endsWith("\n") || !text.startsWith(SNAPSHOT_HEADER + "\n")
                || !text.substring(crcAt).equals("crc32c=" + crcOf(text.substring(0, crcAt)) + "\n")) {
            throw new IOException("not a whole metadata snapshot (its checksum or framing does not match)");
        }
        String[] lines = text.substring(0, crcAt).split("\n");
        if (lines.length < 2 || !lines[1].startsWith("untracked=")) {
            throw new IOException("a metadata snapshot without its untracked line");
        }
        List<Logged> commands = new ArrayList<>();
        for (int i = 2; i < lines.length; i++) {
            int space = lines[i].indexOf(' ');
            try {
                commands.add(new Logged(Long.parseLong(lines[i].substring(0, Math.max(space, 0))),
                        lines[i].substring(space + 1)));
            } catch (NumberFormatException e) {
                throw new IOException("a metadata snapshot line without its index: " + lines[i], e);
            }
        }
        return new Snapshot(Boolean.parseBoolean(lines[1].substring("untracked=".length())), commands);
    }

    private static Snapshot readSnapshot(Path path) throws IOException {
        try {
            return parseSnapshot(Files.readString(path, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IOException("the metadata snapshot " + path + " is damaged: " + e.getMessage(), e);
        }
    }

    /**
     * Applies a snapshot's commands over what this node applied before (nothing at a start; less than the snapshot
     * after a node behind the leader's log installs it): a topic, partition or member known already stays; a group
     * whose offsets the snapshot lacks, or holds fewer partitions of, was forgotten before it (and, for the latter,
     * committed again) and is forgotten here first, as is such a group in the store ({@code keepGroups}).
     */
    void applySnapshot(Snapshot snapshot) {
        untracked |= snapshot.untracked();
        Map<String, Set<ClusterNode.PartitionId>> kept = new java.util.HashMap<>();
        for (Logged line : snapshot.lines()) {
            if (line.command().startsWith("offsets ")) {
                Offsets offsets = Offsets.parse(line.command());
                kept.put(offsets.group(), offsets.byPartition().keySet());
            }
        }
        for (String group : List.copyOf(committed.keySet())) {
            Set<ClusterNode.PartitionId> partitions = kept.get(group);
            if (partitions == null || !partitions.containsAll(committed.get(group).offsets().keySet())) {
                forget(group);
            }
        }
        // The store may hold more than this node applied: positions of a start's earlier run, forced in its store.
        keepGroups.accept(Map.copyOf(kept));
        for (Logged line : snapshot.lines()) {
            String answer = apply(line.command(), -1, line.index());
            if (answer.startsWith("refused")) {
                // A growth this node had applied already.
                LOG.debug("metadata snapshot line {} {} not applied: {}", line.index(), line.command(), answer);
            }
        }
    }

    /** The most of a snapshot one answer carries (one gRPC message each; Ratis's limit is 64 MiB). */
    static final int SNAPSHOT_CHUNK_BYTES = 1 << 20;

    /**
     * Answers {@code snapshot <term> <index> <from> <max>}: {@code <term> <index> <size>}, a newline, and up to
     * {@code <max>} bytes from byte {@code <from>} on of the snapshot at that term and index ({@code -1 -1}: the
     * latest); {@code none} if there is no snapshot yet. A node installing a snapshot reads it so, a chunk at a time.
     */
    @Override
    public CompletableFuture<Message> query(Message request) {
        String query = request.getContent().toStringUtf8();
        String[] words = query.split(" ");
        try {
            if (words.length == 3 && words[0].equals("short")) {
                return CompletableFuture.completedFuture(Message.valueOf(replicaQueries.apply(
                        new ClusterNode.PartitionId(words[1], Integer.parseInt(words[2])))));
            }
            if (words.length != 5 || !words[0].equals("snapshot")) {
                throw new IllegalArgumentException("unknown query: " + query);
            }
            long term = Long.parseLong(words[1]);
            long index = Long.parseLong(words[2]);
            long from = Long.parseLong(words[3]);
            int max = Math.min(Integer.parseInt(words[4]), SNAPSHOT_CHUNK_BYTES);
            SingleFileSnapshotInfo latest = snapshots.getLatestSnapshot();
            if (index < 0 && latest == null) {
                return CompletableFuture.completedFuture(Message.valueOf("none"));
            }
            TermIndex at = index < 0 ? latest.getTermIndex() : TermIndex.valueOf(term, index);
            // Only the chunk asked for is read: a large snapshot is read a MiB per query, not whole each time.
            try (java.nio.channels.FileChannel file = java.nio.channels.FileChannel.open(
                    snapshots.getSnapshotFile(at.getTerm(), at.getIndex()).toPath())) {
                long size = file.size();
                if (from < 0 || from > size || max < 1) {
                    throw new IllegalArgumentException("no bytes " + from + " (" + max + " of them) in the snapshot"
                            + " at " + at + ", of " + size + " bytes");
                }
                java.nio.ByteBuffer chunk = java.nio.ByteBuffer.allocate((int) Math.min(max, size - from));
                while (chunk.hasRemaining() && file.read(chunk, from + chunk.position()) >= 0) {
                    // reads until the chunk is full
                }
                if (chunk.hasRemaining()) {
                    throw new IOException("the snapshot at " + at + " ended before its size, " + size + " bytes");
                }
                ByteString header = ByteString.copyFromUtf8(at.getTerm() + " " + at.getIndex() + " " + size + "\n");
                return CompletableFuture.completedFuture(Message.valueOf(header.concat(ByteString.copyFrom(
                        chunk.flip()))));
            }
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Reads one chunk of a snapshot, as {@link #query} answers: the query's text to its answer's bytes. */
    @FunctionalInterface
    interface SnapshotSource {
        ByteString ask(String query) throws IOException;
    }

    /**
     * Reads the latest snapshot of a leader, a chunk of at most {@code chunk} bytes at a time, every chunk of the same
     * snapshot (one the leader deleted meanwhile fails the read, which is tried again).
     *
     * @return the snapshot's term and index and its text, or null if the leader has none
     */
    static Map.Entry<TermIndex, String> fetchSnapshot(SnapshotSource source, int chunk) throws IOException {
        java.io.ByteArrayOutputStream text = new java.io.ByteArrayOutputStream();
        TermIndex at = null;
        long size = 0;
        do {
            ByteString answer = source.ask("snapshot " + (at == null ? "-1 -1" : at.getTerm() + " " + at.getIndex())
                    + " " + text.size() + " " + chunk);
            String head = answer.substring(0, Math.min(answer.size(), 100)).toStringUtf8();
            int newline = head.indexOf('\n');
            if (newline < 0) {
                if (head.equals("none") && at == null) {
                    return null;
                }
                throw new IOException("not a snapshot chunk: " + head);
            }
            String[] words = head.substring(0, newline).split(" ");
            TermIndex chunkAt = TermIndex.valueOf(Long.parseLong(words[0]), Long.parseLong(words[1]));
            if (at != null && !at.equals(chunkAt)) {
                throw new IOException("the snapshot changed from " + at + " to " + chunkAt + " while it was read");
            }
            at = chunkAt;
            size = Long.parseLong(words[2]);
            ByteString bytes = answer.substring(newline + 1);
            if (bytes.isEmpty() && text.size() < size) {
                throw new IOException("the snapshot at " + at + " ended at byte " + text.size() + " of " + size);
            }
            bytes.writeTo(text);
        } while (text.size() < size);
        return Map.entry(at, text.toString(StandardCharsets.UTF_8));
    }

    /**
     * The leader's log starts after this node's log ends (it was away while the leader purged, or it rejoins after
     * losing its data): it installs the leader's latest snapshot, on a thread of its own (Ratis asks again until it is
     * done, and again after a failure); Ratis then has it applied ({@link #reinitialize}).
     */
    @Override
    public CompletableFuture<TermIndex> notifyInstallSnapshotFromLeader(RoleInfoProto roleInfo,
                                                                       TermIndex firstTermIndexInLog) {
        return LeaderSnapshots.inBackground(roleInfo, "metadata",
                leader -> install(leader, firstTermIndexInLog));
    }

    /**
     * @return the snapshot installed, or null if nothing is missing (this node's log holds the leader's first entry,
     *     or the leader holds its whole log): Ratis then sends the log
     */
    private TermIndex install(RaftPeerId leader, TermIndex firstInLog) throws IOException {
        if (firstInLog.getIndex() == 0
                || firstInLog.equals(server.getDivision(getGroupId()).getRaftLog()
                        .getTermIndex(firstInLog.getIndex()))) {
            // As for a partition: Ratis asks a member being added to install first, whatever its log holds.
            return null;
        }
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties())
                .setRaftGroup(RaftGroup.valueOf(getGroupId(), peers.apply(leader))).setLeaderId(leader)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(
                        20, TimeDuration.valueOf(200, TimeUnit.MILLISECONDS))).build()) {
            var snapshot = fetchSnapshot(query -> {
                // A stale read, as a partition's install reads (LeaderSnapshots): a snapshot is committed.
                RaftClientReply reply = client.io().sendStaleRead(Message.valueOf(query), 0, leader);
                if (!reply.isSuccess()) {
                    throw new IOException("the metadata leader's snapshot could not be read: "
                            + reply.getException());
                }
                return reply.getMessage().getContent();
            }, SNAPSHOT_CHUNK_BYTES);
            if (snapshot == null) {
                throw new IOException("the metadata leader has no snapshot yet");
            }
            TermIndex snapshotAt = snapshot.getKey();
            String text = snapshot.getValue();
            parseSnapshot(text);
            if (snapshotAt.getIndex() + 1 < firstInLog.getIndex()) {
                throw new IOException("the metadata leader's snapshot at " + snapshotAt + " does not reach its log's"
                        + " first entry " + firstInLog);
            }
            Path path = snapshots.getSnapshotFile(snapshotAt.getTerm(), snapshotAt.getIndex()).toPath();
            DurableFile.write(path, text);
            snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), snapshotAt));
            LOG.info("metadata: installed the snapshot at {} from node {}", snapshotAt, ClusterNode.nodeId(leader));
            return snapshotAt;
        }
    }

    /** Before a snapshot from the leader is applied. */
    @Override
    public void pause() {
        if (getLifeCycleState() == LifeCycle.State.RUNNING) {
            getLifeCycle().transition(LifeCycle.State.PAUSING);
            getLifeCycle().transition(LifeCycle.State.PAUSED);
        }
    }

    /** After a snapshot from the leader was installed: its commands are applied over what this node had. */
    @Override
    public void reinitialize() throws IOException {
        SingleFileSnapshotInfo latest = snapshots.loadLatestSnapshot();
        if (latest != null) {
            Snapshot snapshot = readSnapshot(latest.getFile().getPath());
            applyStartSnapshot();
            applySnapshot(snapshot);
            setLastAppliedTermIndex(latest.getTermIndex());
        }
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }
}
