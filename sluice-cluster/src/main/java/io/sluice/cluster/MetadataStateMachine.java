package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import io.sluice.cluster.MetadataCommands.Offsets;
import io.sluice.cluster.MetadataCommands.Topic;
import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeerId;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The cluster's metadata, replicated on every node by a Raft group of its own: the topics, each partition's
 * replicas, the consumer groups' committed offsets, the nodes that took part. Every node applies the same commands
 * ({@link MetadataCommands}) in the same order to its {@link MetadataState} and acts on them (create the topic in its
 * store, host the Raft groups of its replicas). The Raft log is the record: a node that starts again applies its latest
 * snapshot ({@link #takeSnapshot}: the commands that rebuild the state, {@link MetadataSnapshot}), then replays the log
 * after it.
 *
 * <p>This class holds what Ratis calls: the apply, the snapshots, an install from the leader, the read-only queries
 * (a snapshot's chunks, and whether this node's replica of a partition is short).
 */
final class MetadataStateMachine extends BaseStateMachine {

    private static final Logger LOG = LoggerFactory.getLogger(MetadataStateMachine.class);

    private final MetadataState state;
    private final LeaderSnapshots.LeaderClients leaders;
    /** The snapshots of the group's current start (a group removed and added again starts with a directory anew). */
    private volatile SnapshotStorage snapshots = new SnapshotStorage();
    /** The snapshot this node started from, read at its start and not applied yet ({@link #applyStartSnapshot}). */
    private volatile MetadataSnapshot startSnapshot;
    /** The index of {@link #startSnapshot}'s last entry. */
    private volatile long startSnapshotIndex;
    private final Object snapshotLock = new Object();
    private volatile RaftServer server;
    /** The group started here before (it is started again when a rejoin adds it again). */
    private volatile boolean started;
    /** Answers {@code short <topic> <partition>} for this node's replica of the partition. */
    private volatile Function<ClusterNode.PartitionId, String> replicaQueries = partition -> "whole";

    /**
     * @param onTopic told of each topic, with the log index of its creation, as this node applies it (and again as
     *     it replays its log)
     * @param onPartitions told of each topic that gained partitions, as this node applies it (and again as it replays
     *     its log)
     * @param onOffsets told of each group's offsets commit as this node applies it
     * @param onForget told of each group (store name) whose offsets the cluster forgets, as this node applies it
     * @param keepGroups told, before a snapshot's commands are applied, of the groups that have offsets in it, each with
     *     its partitions ({@link MetadataState})
     * @param onConfigs told of each topic whose configs changed, as this node applies the change
     * @param onId told of each topic created before ids that was given one, as this node applies it
     * @param onDeleted told of each topic deleted, as this node applies the deletion ({@link MetadataState})
     * @param onBarrier told of each barrier as this node applies it
     * @param leaders opens a client of the group asking a leader (a node installing a snapshot asks the leader for
     *     it)
     */
    MetadataStateMachine(BiConsumer<Topic, Long> onTopic, MetadataState.PartitionsAdded onPartitions,
                         Consumer<Offsets> onOffsets, Consumer<String> onForget,
                         Consumer<Map<String, Set<ClusterNode.PartitionId>>> keepGroups, Consumer<Topic> onConfigs,
                         Consumer<Topic> onId, Consumer<Topic> onDeleted, Consumer<MetadataCommands.Barrier> onBarrier,
                         LeaderSnapshots.LeaderClients leaders) {
        this.state = new MetadataState(onTopic, onPartitions, onOffsets, onForget, keepGroups, onConfigs, onId,
                onDeleted, onBarrier);
        this.leaders = leaders;
    }

    /** @return what this node applied */
    MetadataState state() {
        return state;
    }

    /** @return the index of the last log entry this node applied, -1 before any */
    long applied() {
        TermIndex last = getLastAppliedTermIndex();
        return last == null ? -1 : last.getIndex();
    }

    /**
     * Has this node's metadata member answer the read-only query {@code short <topic> <partition>} (any member
     * answers it, leader or not, from this node's own state; a stale read): whether this node's replica of the
     * partition lost batches its Raft log names and stays out of its group ({@code short <index>}, the last entry its
     * store holds whole) or not ({@code whole}).
     */
    void answerShortQueries(Function<ClusterNode.PartitionId, String> answer) {
        replicaQueries = answer;
    }

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        applyStartSnapshot();
        LogEntryProto entry = trx.getLogEntry();
        String answer = state.apply(entry.getStateMachineLogEntry().getLogData().toString(StandardCharsets.UTF_8),
                entry.getTerm(), entry.getIndex());
        updateLastAppliedTermIndex(TermIndex.valueOf(entry));
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(answer)));
    }

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
            startSnapshot = MetadataSnapshot.read(latest.getFile().getPath());
            startSnapshotIndex = latest.getIndex();
            setLastAppliedTermIndex(latest.getTermIndex());
            LOG.info("metadata: starting from the snapshot at {}", latest.getTermIndex());
        } else if (started) {
            // Added again, empty (a rejoin): its log is applied from its start again. Ratis refuses an applied index
            // that goes back (and reads it, unchecked, when it adds a group), and a forget is decided on the indexes
            // of this log's commits.
            setLastAppliedTermIndex(TermIndex.INITIAL_VALUE);
            state.restartLog();
        }
        // Ratis loads the log once this returns; a segment the (readable) snapshot covers must be closed by then.
        OpenSegmentBelowSnapshot.closeIfBelow(storage.getStorageDir().getCurrentDir().toPath(),
                latest == null ? -1 : latest.getIndex(), OpenSegmentBelowSnapshot.maxEntryBytes(raftServer),
                "metadata");
        started = true;
    }

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
            MetadataSnapshot snapshot = startSnapshot;
            if (snapshot != null) {
                try {
                    state.applySnapshot(snapshot, startSnapshotIndex);
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
     * latest commit, as commands a node applies in order when it starts from the snapshot ({@link MetadataSnapshot}).
     */
    @Override
    public long takeSnapshot() throws IOException {
        applyStartSnapshot();
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return RaftLog.INVALID_LOG_INDEX;
        }
        Path path = snapshots.getSnapshotFile(last.getTerm(), last.getIndex()).toPath();
        DurableFile.write(path, state.snapshot().text());
        snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), last));
        return last.getIndex();
    }

    /**
     * Read-only queries: {@code snapshot <term> <index> <from> <max>}, a chunk of a snapshot for a node installing it
     * ({@link MetadataSnapshot#chunk}); and {@code short <topic> <partition>} ({@link #answerShortQueries}).
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
            return CompletableFuture.completedFuture(Message.valueOf(MetadataSnapshot.chunk(snapshots, words)));
        } catch (IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The leader's log starts after this node's log ends (it was away while the leader purged, or it rejoins after
     * losing its data): it installs the leader's latest snapshot, on a thread of its own (Ratis asks again until it is
     * done, and again after a failure); Ratis then has it applied ({@link #reinitialize}).
     */
    @Override
    public CompletableFuture<TermIndex> notifyInstallSnapshotFromLeader(RoleInfoProto roleInfo,
                                                                       TermIndex firstTermIndexInLog) {
        return LeaderSnapshots.inBackground(roleInfo, "metadata", leader -> install(leader, firstTermIndexInLog));
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
        try (RaftClient client = leaders.open(getGroupId(), leader)) {
            var snapshot = MetadataSnapshot.fetch(query -> {
                // A stale read, as a partition's install reads (LeaderSnapshots): a snapshot is committed.
                RaftClientReply reply = client.io().sendStaleRead(Message.valueOf(query), 0, leader);
                if (!reply.isSuccess()) {
                    throw new IOException("the metadata leader's snapshot could not be read: "
                            + reply.getException());
                }
                return reply.getMessage().getContent();
            }, MetadataSnapshot.CHUNK_BYTES);
            if (snapshot == null) {
                throw new IOException("the metadata leader has no snapshot yet");
            }
            TermIndex snapshotAt = snapshot.getKey();
            String text = snapshot.getValue();
            MetadataSnapshot.parse(text);
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
            MetadataSnapshot snapshot = MetadataSnapshot.read(latest.getFile().getPath());
            applyStartSnapshot();
            state.applySnapshot(snapshot, latest.getIndex());
            setLastAppliedTermIndex(latest.getTermIndex());
        }
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }
}
