package io.sluice.cluster;

import io.sluice.broker.ProducerHistory;
import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.LongConsumer;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.StateMachineException;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.StateMachine;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.util.LifeCycle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One replica of one partition: the Raft group's state machine, keeping each produced Kafka record batch in the
 * partition's queue of a BATCHES topic of the node's {@link Store}, and only each entry's {@link EntryHeader} in the
 * Raft log (Ratis's {@link StateMachine.DataApi}: a batch is written once per replica). An entry carries one batch
 * or several.
 *
 * <h2>Offsets</h2>
 * The leader gives an entry's batches their offsets as it starts the transaction: the end of its log's batches, then
 * each after the one before. Callers submit one entry of a partition at a time (Ratis appends a submitted entry
 * before the submit returns), and {@link #preAppendTransaction} checks, in log order, that the offset still follows
 * the log's last batch, so the offsets in the log are dense and in log order. Every replica appends the batches to
 * its store as the entry is written to its log ({@link #write}), in log order, and checks that its store assigns
 * each the offset the entry names.
 *
 * <h2>Where the log ends</h2>
 * Ratis truncates a follower's uncommitted tail when it differs from the leader's; {@link #truncate} cuts the store
 * back to the end of the last batch kept ({@link Store#truncateQueue}). At the first write after a start, the store
 * is made to agree with the Raft log: batches past the log's last batch entry (stored by a write whose entry never
 * reached the log before a crash) are cut; a store that lacks batches the log names (it lost them in a power cut) is
 * refused with a {@link LostBatchesException} (as the group starts, the log's last segments are read for that
 * already), and the node rebuilds the replica from the others, or, where too many replicas lost batches for the others
 * to elect a leader, cuts its log back to what its store holds ({@link ShortReplicas}).
 *
 * <h2>High watermark</h2>
 * A batch is committed once Raft commits its entry; {@link #applyTransaction} (in log order) moves the high watermark
 * to its end. Consumers read below it only.
 *
 * <h2>Log start</h2>
 * Kafka's DeleteRecords moves the partition's log start through the log: the leader appends an entry naming no batch
 * ({@link EntryHeader#logStart(long, long)}), and every replica moves its log start as it applies it, at the same place
 * of the log; a snapshot records the log start at its index. Clients read nothing below it. A replica's store keeps
 * the batches below it that the Raft log still names, since a replica behind is sent them as entries; the store's own
 * first offset follows it as far as the retention hold lets it ({@link RetentionHold}).
 *
 * <h2>Snapshots</h2>
 * The state up to a log index is the partition's batches up to the high watermark there, which the store already
 * holds: a snapshot ({@link #takeSnapshot}) forces the store ({@link Store#sync}) and then records the index, its term
 * and that offset in a small file, so Ratis may purge the log below it. A replica whose log ends before the leader's
 * first entry (it was away long, or its data were wiped) is told to install a snapshot
 * ({@link #notifyInstallSnapshotFromLeader}): it asks the leader for its latest snapshot, cuts its own store back to
 * what it knows committed, copies the leader's batches from there up to the snapshot's offset through read-only
 * queries on the group ({@link #query}), forces them, records the snapshot, and the log goes on from there
 * ({@link PartitionInstall}).
 *
 * <p>This class holds what Ratis calls and the state those calls share (where the log's batches end, the high
 * watermark, the latest snapshot, the batches in flight); reading and cutting the store ({@link PartitionStore}),
 * the snapshot file ({@link PartitionSnapshot}), the install ({@link PartitionInstall}) and the retention hold
 * ({@link RetentionHold}) are classes of their own.
 */
public final class PartitionStateMachine extends BaseStateMachine implements StateMachine.DataApi {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionStateMachine.class);

    private final Store store;
    private final String topic;
    private final int partition;
    private final ClusterNode.PartitionId id;
    private final LongConsumer onCommit;
    private final BiConsumer<PartitionStateMachine, Throwable> onLogFailed;
    private final NodeHooks hooks;
    private final PartitionStore batches;
    private final RetentionHold retention;
    private final PartitionInstall install;
    private final Object lock = new Object();
    private final SnapshotStorage snapshots = new SnapshotStorage();
    /** The latest snapshot, published as one value (index and offset together); null without one. */
    private volatile PartitionSnapshot latest;
    /** The end of the batches copied by an install that did not finish (they are committed; the next resumes). */
    private volatile long copiedEnd;
    private final AtomicInteger installed = new AtomicInteger();
    /** How many installs leaders' notices began on this replica since it started. */
    private final AtomicInteger installNotices = new AtomicInteger();
    private RaftServer server;
    private RaftGroupId groupId;
    /** The offset after the last batch written to this replica's log; -1 until the store agrees with the log. */
    private volatile long logEnd = -1;
    private volatile long highWatermark;
    /**
     * The partition's log start as this replica applied it (Kafka's DeleteRecords): clients read nothing below it,
     * though the store may still hold batches below it for a replica behind. Never lowered by an entry.
     */
    private volatile long logStart;
    /**
     * Batches being stored, by log index: under SYNC the store shows a batch to readers once it is forced, and a
     * follower may need it before that.
     */
    private final Map<Long, CompletableFuture<Void>> storing = new ConcurrentHashMap<>();
    /**
     * Leader: the batches of the entries it started, by log index, until applied (or cut): what it sends its
     * followers, from memory. Ratis keeps no entry's data in its log cache when the state machine caches it
     * ({@code setCachingEnabled}); an entry not here is read back from the store.
     */
    private final Map<Long, ByteString> sending = new ConcurrentHashMap<>();
    /** Leader: the batches submitted through this node, until stored or refused. */
    private final Submissions submitted = new Submissions();
    /** The producers of this replica's log as it wrote the entries' batches. */
    private final ReplicaProducers producers;

    /**
     * @param store the node's store; the topic must exist in it with layout BATCHES and the partition as a queue
     * @param topic the topic
     * @param partition the partition (the store's queue id)
     * @param onCommit told the new high watermark each time it moves, and when the leader changes
     * @param leaders opens a client of the partition's group asking its leader (an install asks it for its batches)
     * @param onLogFailed told, on Ratis's log thread (it must not block), of this machine and why its log could
     *     not be written: a batch the store refused (a full disk) or a Raft log write that failed; the log takes
     *     nothing more until the group is started again
     * @param hooks where a test reaches into this node ({@link NodeHooks#NONE} in production)
     */
    PartitionStateMachine(Store store, String topic, int partition, LongConsumer onCommit,
                          LeaderSnapshots.LeaderClients leaders,
                          BiConsumer<PartitionStateMachine, Throwable> onLogFailed,
                          NodeHooks hooks) {
        this.store = store;
        this.topic = topic;
        this.partition = partition;
        this.id = new ClusterNode.PartitionId(topic, partition);
        this.onCommit = onCommit;
        this.onLogFailed = onLogFailed;
        this.hooks = hooks;
        this.batches = new PartitionStore(store, id);
        this.retention = new RetentionHold(store, id);
        this.install = new PartitionInstall(store, batches, id, leaders, new Installing());
        this.producers = new ReplicaProducers(store, batches, id);
    }

    @Override
    public void initialize(RaftServer raftServer, RaftGroupId raftGroupId, RaftStorage storage) throws IOException {
        getLifeCycle().startAndTransition(() -> {
            super.initialize(raftServer, raftGroupId, storage);
            this.server = raftServer;
            this.groupId = raftGroupId;
            snapshots.init(storage);
            SingleFileSnapshotInfo snapshot = snapshots.getLatestSnapshot();
            load(snapshot);
            producers.open(storage.getStorageDir().getStateMachineDir().toPath());
            // Ratis loads the log once this returns; a segment the snapshot covers must be closed by then.
            Path current = storage.getStorageDir().getCurrentDir().toPath();
            int maxEntryBytes = OpenSegmentBelowSnapshot.maxEntryBytes(raftServer);
            OpenSegmentBelowSnapshot.closeIfBelow(current, snapshot == null ? -1 : snapshot.getIndex(),
                    maxEntryBytes, id.toString());
            // Until the log is read (the first write after the start), retention keeps the whole partition.
            retention.holdWhole();
            // A store short of the log's batches is reported at once, before the replica votes or leads.
            LostBatchesException lost = batches.lostBelowLog(current, maxEntryBytes, latest);
            if (lost != null) {
                onLogFailed.accept(this, lost);
            }
        }, IOException.class);
    }

    /** @return the latest snapshot, or null without one */
    PartitionSnapshot latestSnapshot() {
        return latest;
    }

    /** Moves the store's retention hold to the first batch the Raft log names ({@link RetentionHold}). */
    void holdRetentionAtLog() {
        RaftLog log;
        try {
            log = server.getDivision(groupId).getRaftLog();
        } catch (IOException | RuntimeException e) {
            // The group is closing: the hold stays where it is.
            LOG.debug("{}: the Raft log for the retention hold is gone; the hold stays: {}", id, e.toString());
            return;
        }
        retention.holdAtLog(log, latest);
    }

    /**
     * Raises the store's first offset to the log start, as far as the retention hold lets it
     * ({@link RetentionHold#deleteBelow}); the store is forced first. Nothing once the group left the server (its topic
     * deleted): the store's partition of that name may be another topic's by then.
     */
    void deleteBelowLogStart() {
        try {
            server.getDivision(groupId);
        } catch (IOException | RuntimeException gone) {
            return;
        }
        retention.deleteBelow(logStart);
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return snapshots;
    }

    /** Before a snapshot from the leader is loaded. */
    @Override
    public void pause() {
        getLifeCycle().transition(LifeCycle.State.PAUSING);
        getLifeCycle().transition(LifeCycle.State.PAUSED);
    }

    /** After a snapshot from the leader was installed: the state is the snapshot's. */
    @Override
    public void reinitialize() throws IOException {
        load(snapshots.loadLatestSnapshot());
        if (getLifeCycleState() == LifeCycle.State.PAUSED) {
            getLifeCycle().transition(LifeCycle.State.STARTING);
            getLifeCycle().transition(LifeCycle.State.RUNNING);
        }
    }

    /** The state of a snapshot: applied up to its index, committed up to its offset. */
    private void load(SingleFileSnapshotInfo snapshot) throws IOException {
        if (snapshot == null) {
            return;
        }
        PartitionSnapshot read = PartitionSnapshot.read(snapshot, id);
        synchronized (lock) {
            latest = read;
            highWatermark = read.end();
            logStart = read.logStart();
            // The store is made to agree with the log (which now starts after the snapshot) at the next write, and the
            // producers are rebuilt from it then.
            logEnd = -1;
            producers.drop();
        }
        setLastAppliedTermIndex(snapshot.getTermIndex());
        onCommit.accept(read.end());
    }

    /**
     * Every so many entries (Ratis decides): the store is forced, so that every batch up to the high watermark is
     * kept across a power cut, and only then the snapshot names the index, which lets Ratis purge the log below it.
     */
    @Override
    public long takeSnapshot() throws IOException {
        TermIndex last = getLastAppliedTermIndex();
        if (last == null || last.getIndex() < 0) {
            return RaftLog.INVALID_LOG_INDEX;
        }
        long end = highWatermark;
        long start = logStart;
        try {
            store.sync();
        } catch (RuntimeException e) {
            throw new IOException("the store of " + id + " could not be forced for a snapshot at " + last + ": "
                    + e.getMessage(), e);
        }
        latest = PartitionSnapshot.write(snapshots, last, end, start);
        holdRetentionAtLog();
        return last.getIndex();
    }

    /** @return the offset below which every batch is committed */
    public long highWatermark() {
        return highWatermark;
    }

    /** @return the partition's log start as this replica applied it: records below it are deleted for clients */
    public long logStart() {
        return logStart;
    }

    /** @return how many installs leaders' notices began on this replica since it started */
    int installNotices() {
        return installNotices.get();
    }

    /**
     * @return the producers of this replica's log, kept as it writes each entry's batches; rebuilt from the store at
     *     the first write after a start, and where next asked for after a cut of the log's tail or an install; null
     *     while the store does not show every batch the log wrote (the Kafka layer then reads the log back itself)
     */
    ProducerHistory producerHistory() {
        synchronized (lock) {
            return producers.history(logEnd);
        }
    }

    /** A clean close keeps the producers of this replica's log ({@link ReplicaProducers#keep}). */
    @Override
    public void close() throws IOException {
        try {
            synchronized (lock) {
                producers.keep(logEnd);
            }
        } finally {
            super.close();
        }
    }

    /** @return how many times this replica rebuilt its producers from its store since it started (an empty one too) */
    int producerRebuilds() {
        return producers.rebuilds();
    }

    /** @return how many snapshots this replica installed from a leader since it started */
    int snapshotsInstalled() {
        return installed.get();
    }

    /** @return the partition's topic */
    public String topic() {
        return topic;
    }

    /** @return the partition */
    public int partition() {
        return partition;
    }

    /**
     * Leader: gives the batches the next offsets. The request's message is one batch or several, one after the other:
     * those this node submitted were checked as the broker took them and are not parsed again; a request from another
     * client's batches are checked here ({@link PartitionStore#split}). The transaction's context completes with the
     * first one's base offset once this replica stored them all (acks=1). A request for a log start entry
     * ({@link EntryHeader#logStartRequest}) makes one, after the log's batches.
     */
    @Override
    public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
        ByteString data = request.getMessage().getContent();
        TransactionContext.Builder builder = TransactionContext.newBuilder().setStateMachine(this)
                .setClientRequest(request);
        long askedStart = EntryHeader.requestedLogStart(data);
        if (askedStart >= 0) {
            return startLogStart(builder, askedStart);
        }
        Submissions.Submission own = submitted.of(request);
        int[][] sizes;
        try {
            sizes = own.batches() != null ? PartitionStore.sizes(own.batches()) : PartitionStore.split(data);
        } catch (IllegalArgumentException e) {
            TransactionContext refused = builder.build();
            refused.setException(e);
            return refused;
        }
        settle();
        EntryHeader header;
        synchronized (lock) {
            header = new EntryHeader(logEnd, sizes[0], sizes[1]);
        }
        return builder.setLogData(header.encode()).setStateMachineData(data).setStateMachineContext(own).build();
    }

    /**
     * A log start entry, after the log's batches: no state-machine data, so Ratis neither hands it to {@link #write} nor
     * asks {@link #read} for it; refused if it would start the log past its batches.
     */
    private TransactionContext startLogStart(TransactionContext.Builder builder, long asked) throws IOException {
        settle();
        EntryHeader header;
        try {
            synchronized (lock) {
                header = EntryHeader.logStart(logEnd, asked);
            }
        } catch (IllegalArgumentException e) {
            TransactionContext refused = builder.build();
            refused.setException(e);
            return refused;
        }
        return builder.setLogData(header.encode()).build();
    }

    /** @see Submissions#submitting */
    CompletableFuture<Long> submitting(long callId, ClientId client, List<KafkaBatch> batches) {
        return submitted.submitting(callId, client, batches);
    }

    /**
     * In log order, under the log's lock: the batch's offset (or where a log start entry takes the batches to end)
     * must still follow the log's last batch, and the leader
     * epoch this node's batches were given as they were submitted must be the term the entry is appended in. Ratis
     * calls this under the server's lock, where the term cannot change, just before it gives the entry its term; a
     * batch submitted in a term this node lost and won again since would otherwise sit after batches of the terms
     * between, and the epochs along the log, which OffsetForLeaderEpoch bisects, would not always grow.
     */
    @Override
    public TransactionContext preAppendTransaction(TransactionContext trx) throws IOException {
        EntryHeader header = EntryHeader.decode(trx.getStateMachineLogEntry().getLogData());
        synchronized (lock) {
            if (header.baseOffset() != logEnd) {
                throw new StateMachineException("a batch of " + id + " was given offset " + header.baseOffset()
                        + " but the log's batches end at " + logEnd + " (batches submitted concurrently); send it"
                        + " again");
            }
        }
        if (trx.getStateMachineContext() instanceof Submissions.Submission own && own.batches() != null
                && !own.batches().isEmpty()) {
            long term = server.getDivision(groupId).getInfo().getCurrentTerm();
            int epoch = own.batches().getFirst().bytes().get(ValueLayout.JAVA_INT_UNALIGNED
                    .withOrder(ByteOrder.BIG_ENDIAN), KafkaBatch.PARTITION_LEADER_EPOCH);
            if (epoch != (int) Math.min(Integer.MAX_VALUE, term)) {
                throw new StateMachineException("a batch of " + id + " was given leader epoch " + epoch
                        + " but its entry is appended in term " + term + "; send it again");
            }
        }
        return trx;
    }

    @Override
    public TransactionContext cancelTransaction(TransactionContext trx) throws IOException {
        if (trx.getStateMachineContext() instanceof Submissions.Submission submission) {
            submission.stored().completeExceptionally(trx.getException() != null ? trx.getException()
                    : new IllegalStateException("the batch was not appended to the log"));
        }
        return trx;
    }

    /** Every replica, in log order, as the entry is written to its log: its batches go to the store. */
    @Override
    public CompletableFuture<?> write(LogEntryProto entry, TransactionContext context) {
        EntryHeader header;
        CompletableFuture<?>[] appends;
        // Only an entry this leader started has its submission as context (a follower's context is Ratis's own).
        Submissions.Submission submission = context != null
                && context.getStateMachineContext() instanceof Submissions.Submission s ? s : null;
        try {
            header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
            agree(entry.getIndex());
            appends = storeBatches(entry, header, submission == null ? null : submission.batches());
        } catch (RuntimeException | IOException e) {
            LOG.error("{}: cannot store the batches of log entry {}: {}", id, entry.getIndex(), e.toString());
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<?> delayed = hooks.storeDelay(id);
        CompletableFuture<Void> stored = delayed == null ? CompletableFuture.allOf(appends)
                : CompletableFuture.allOf(CompletableFuture.allOf(appends), delayed);
        long index = entry.getIndex();
        storing.put(index, stored);
        stored.whenComplete((result, failure) -> storing.remove(index, stored));
        CompletableFuture<Long> appended = submission == null ? null : submission.stored();
        if (appended != null) {
            sending.put(index, entry.getStateMachineLogEntry().getStateMachineEntry().getStateMachineData());
        }
        return stored.handle((result, failure) -> {
            if (appended != null) {
                if (failure == null) {
                    appended.complete(header.baseOffset());
                } else {
                    appended.completeExceptionally(failure);
                }
            }
            if (failure != null) {
                // The producers noted a batch the store may not hold: they are rebuilt from it where next asked for.
                synchronized (lock) {
                    producers.drop();
                }
                throw new IllegalStateException(failure);
            }
            return result;
        });
    }

    /**
     * Appends an entry's batches to the store ({@link PartitionStore#appendEntry}) if they follow the log's last, and
     * notes them in the producers' history.
     *
     * @param checked the entry's batches as this leader submitted them, or null
     * @return the appends' futures
     */
    private CompletableFuture<?>[] storeBatches(LogEntryProto entry, EntryHeader header, List<KafkaBatch> checked) {
        ByteString data = entry.getStateMachineLogEntry().getStateMachineEntry().getStateMachineData();
        synchronized (lock) {
            if (header.baseOffset() != logEnd || header.size() != data.size()) {
                throw new IllegalStateException("entry " + entry.getIndex() + " of " + id + " holds batches of "
                        + data.size() + " bytes for offset " + header.baseOffset() + " but this replica's batches end"
                        + " at " + logEnd + " (header: " + header + ")");
            }
            CompletableFuture<?>[] appends = batches.appendEntry(entry.getIndex(), header, data, checked,
                    producers.current());
            logEnd = header.end();
            return appends;
        }
    }

    /** Leader: the batches of an entry a follower needs. */
    @Override
    public CompletableFuture<ByteString> read(LogEntryProto entry, TransactionContext context) {
        ByteString kept = sending.get(entry.getIndex());
        if (kept != null) {
            return CompletableFuture.completedFuture(kept);
        }
        CompletableFuture<Void> pending = storing.get(entry.getIndex());
        if (pending != null) {
            return pending.thenCompose(stored -> readStored(entry));
        }
        return readStored(entry);
    }

    private CompletableFuture<ByteString> readStored(LogEntryProto entry) {
        try {
            return CompletableFuture.completedFuture(batches.readEntry(entry));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Raft cut the log from {@code index} on: the store keeps the batches of the entries before it only, and the
     * producers are rebuilt from it where next asked for.
     */
    @Override
    public CompletableFuture<Void> truncate(long index) {
        try {
            long cut = batches.batchesEndBefore(raftLog(), latest, index);
            sending.keySet().removeIf(kept -> kept >= index);
            synchronized (lock) {
                batches.cutTo(cut, "Raft truncated its log at index " + index);
                logEnd = cut;
                producers.drop();
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException | IOException e) {
            LOG.error("{}: cannot truncate at log index {}: {}", id, index, e.toString());
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void notifyLogFailed(Throwable cause, LogEntryProto failedEntry) {
        onLogFailed.accept(this, cause);
    }

    /** A new leader (or none): fetches waiting on this partition look again, and find who leads now. */
    @Override
    public void notifyLeaderChanged(RaftGroupMemberId groupMemberId, RaftPeerId newLeaderId) {
        onCommit.accept(highWatermark);
    }

    /**
     * This replica, elected, committed its term's first entry and takes appends now: a produce waiting for that
     * (held rather than refused while the leader was not ready) goes on.
     */
    @Override
    public void notifyLeaderReady() {
        onCommit.accept(highWatermark);
    }

    /**
     * In log order, once committed: a batch entry moves the high watermark to its end and is answered with its base
     * offset; a log start entry moves the log start (never down) and is answered with the log start after it.
     */
    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        EntryHeader header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
        if (header.end() > highWatermark) {
            highWatermark = header.end();
        }
        long answer = header.baseOffset();
        if (header.logStart() >= 0) {
            logStart = Math.max(logStart, header.logStart());
            answer = logStart;
        }
        updateLastAppliedTermIndex(TermIndex.valueOf(entry));
        sending.remove(entry.getIndex());
        onCommit.accept(header.end());
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(Long.toString(answer))));
    }

    /** Read-only queries, answered by the leader for a replica installing its snapshot ({@link PartitionInstall}). */
    @Override
    public CompletableFuture<Message> query(Message request) {
        return install.answer(request, latest);
    }

    /**
     * The leader's log starts after this replica's log ends: it installs the leader's latest snapshot
     * ({@link PartitionInstall}), on a thread of its own (Ratis asks again until it is done, and again after a failure).
     */
    @Override
    public CompletableFuture<TermIndex> notifyInstallSnapshotFromLeader(RoleInfoProto roleInfo,
                                                                       TermIndex firstTermIndexInLog) {
        installNotices.incrementAndGet();
        return LeaderSnapshots.inBackground(roleInfo, id.toString(), leader -> {
            TermIndex at = install.from(leader, firstTermIndexInLog);
            if (at != null) {
                hooks.afterInstall(id);
            }
            return at;
        });
    }

    /** This replica as its install sees it. */
    private final class Installing implements PartitionInstall.Replica {

        @Override
        public RaftGroupId groupId() {
            return groupId;
        }

        @Override
        public RaftLog log() throws IOException {
            return raftLog();
        }

        @Override
        public long highWatermark() {
            return highWatermark;
        }

        @Override
        public long copiedEnd() {
            return copiedEnd;
        }

        @Override
        public void copied(long end) {
            copiedEnd = end;
        }

        @Override
        public void installed(TermIndex at, long end, long logStart) throws IOException {
            latest = PartitionSnapshot.write(snapshots, at, end, logStart);
            installed.incrementAndGet();
        }
    }

    /**
     * Once after a start, before the first batch is written or given an offset: the store holds exactly the batches
     * of the log's entries below {@code index}. The Raft log is read before this machine's lock is taken (its
     * callers that hold the log's lock take this one after it, never the other way round).
     */
    private void agree(long index) throws IOException {
        if (logEnd >= 0) {
            return;
        }
        long end = batches.batchesEndBefore(raftLog(), latest, index);
        synchronized (lock) {
            if (logEnd < 0) {
                batches.cutTo(end, "its batches past the Raft log's last were stored by writes whose entries never"
                        + " reached the log");
                logEnd = end;
                // Kept from here on as entries are written, so that this replica, elected, reads nothing back.
                producers.agreed(end);
            }
        }
        holdRetentionAtLog();
    }

    /**
     * Leader, before it serves: the store agrees with the Raft log, so that nothing read back from the store (an
     * idempotent producer's state) comes from batches the log does not have.
     */
    void settle() throws IOException {
        if (logEnd < 0) {
            agree(raftLog().getNextIndex());
        }
    }

    private RaftLog raftLog() throws IOException {
        return server.getDivision(groupId).getRaftLog();
    }
}
