package io.sluice.cluster;

import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import io.sluice.cluster.ratis.RaftLogTail;
import io.sluice.store.AppendResult;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;
import java.util.function.Function;
import java.util.function.LongConsumer;
import java.util.zip.CRC32C;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftClientRequest;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftGroupMemberId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.protocol.exceptions.StateMachineException;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.SnapshotRetentionPolicy;
import org.apache.ratis.statemachine.StateMachine;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.apache.ratis.statemachine.impl.SimpleStateMachineStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.apache.ratis.util.LifeCycle;
import org.apache.ratis.util.TimeDuration;
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
 * to elect a leader, cuts its log back to what its store holds ({@link RaftLogTail}).
 *
 * <h2>High watermark</h2>
 * A batch is committed once Raft commits its entry; {@link #applyTransaction} (in log order) moves the high watermark
 * to its end. Consumers read below it only.
 *
 * <h2>Snapshots</h2>
 * The state up to a log index is the partition's batches up to the high watermark there, which the store already
 * holds: a snapshot ({@link #takeSnapshot}) forces the store ({@link Store#sync}) and then records the index, its term
 * and that offset in a small file, so Ratis may purge the log below it. A replica whose log ends before the leader's
 * first entry (it was away long, or its data were wiped) is told to install a snapshot
 * ({@link #notifyInstallSnapshotFromLeader}): it asks the leader for its latest snapshot, cuts its own store back to
 * what it knows committed, copies the leader's batches from there up to the snapshot's offset through read-only
 * queries on the group ({@link #query}), forces them, records the snapshot, and the log goes on from there.
 */
public final class PartitionStateMachine extends BaseStateMachine implements StateMachine.DataApi {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionStateMachine.class);

    private final Store store;
    private final String topic;
    private final int partition;
    private final boolean force;
    private final LongConsumer onCommit;
    private final Function<RaftPeerId, RaftPeer> peers;
    private final BiConsumer<PartitionStateMachine, Throwable> onLogFailed;
    private final NodeHooks hooks;
    private final ClusterNode.PartitionId id;
    private final Object lock = new Object();
    private final SnapshotStorage snapshots = new SnapshotStorage();
    /** A snapshot: the log index (and term) it covers up to, and the offset that index's batches end at. */
    private record SnapshotMark(TermIndex at, long end) {
    }

    /** The latest snapshot, published as one value (index and offset together); null without one. */
    private volatile SnapshotMark latest;
    /** The end of the batches copied by an install that did not finish (they are committed; the next resumes). */
    private volatile long copiedEnd;
    private final java.util.concurrent.atomic.AtomicInteger installed = new java.util.concurrent.atomic.AtomicInteger();
    private RaftServer server;
    private RaftGroupId groupId;
    /** The offset after the last batch written to this replica's log; -1 until the store agrees with the log. */
    private volatile long logEnd = -1;
    private volatile long highWatermark;
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
    /** Leader: the futures of batches submitted through this node, by call id, until stored or refused. */
    private final Map<Long, CompletableFuture<Long>> submitted = new ConcurrentHashMap<>();

    /**
     * @param store the node's store; the topic must exist in it with layout BATCHES and the partition as a queue
     * @param topic the topic
     * @param partition the partition (the store's queue id)
     * @param force force each batch to the device before its entry is written (SYNC flush)
     * @param onCommit told the new high watermark each time it moves, and when the leader changes
     * @param peers the member of the partition's group with a node's peer id (its Raft address)
     * @param onLogFailed told, on Ratis's log thread (it must not block), of this machine and why its log could
     *     not be written: a batch the store refused (a full disk) or a Raft log write that failed; the log takes
     *     nothing more until the group is started again
     * @param hooks where a test reaches into this node ({@link NodeHooks#NONE} in production)
     */
    PartitionStateMachine(Store store, String topic, int partition, boolean force, LongConsumer onCommit,
                          Function<RaftPeerId, RaftPeer> peers, BiConsumer<PartitionStateMachine, Throwable> onLogFailed,
                          NodeHooks hooks) {
        this.store = store;
        this.topic = topic;
        this.partition = partition;
        this.force = force;
        this.onCommit = onCommit;
        this.peers = peers;
        this.onLogFailed = onLogFailed;
        this.hooks = hooks;
        this.id = new ClusterNode.PartitionId(topic, partition);
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
            // Ratis loads the log once this returns; a segment the snapshot covers must be closed by then.
            Path current = storage.getStorageDir().getCurrentDir().toPath();
            OpenSegmentBelowSnapshot.closeIfBelow(current, snapshot == null ? -1 : snapshot.getIndex(),
                    OpenSegmentBelowSnapshot.maxEntryBytes(raftServer), topic + "-" + partition);
            // Until the log is read (the first write after the start), retention keeps the whole partition.
            store.holdRetention(RETENTION_HOLDER, topic, partition, 0);
            checkStoreHoldsLog(current, OpenSegmentBelowSnapshot.maxEntryBytes(raftServer));
        }, IOException.class);
    }

    /**
     * As the group starts, before Ratis loads its log: a store that lacks batches the log names (a power cut under
     * ASYNC) is reported at once ({@code onLogFailed}), so that the node takes the replica out before it votes or
     * leads, rather than at its first write or its first client. Without this, each replica of a partition whose
     * replicas all lost batches found it only when a leader or a client reached it, one after the other.
     */
    private void checkStoreHoldsLog(Path logDirectory, int maxEntryBytes) throws IOException {
        SnapshotMark mark = latest;
        long stored = store.nextOffset(topic, partition);
        RaftLogTail.Held held = RaftLogTail.held(logDirectory, maxEntryBytes, stored,
                mark == null ? -1 : mark.at().getIndex(), mark == null ? 0 : mark.end(),
                data -> EntryHeader.decode(data).end());
        if (held != null && held.isShort()) {
            onLogFailed.accept(this, new LostBatchesException("the store of " + topic + "-" + partition
                    + " ends at offset " + stored + " but the Raft log names batches up to offset " + held.namedEnd()
                    + " (entries " + (held.wholeIndex() + 1) + " to " + held.lastIndex() + "): " + LOST_WHY));
        }
    }

    /** Why a replica's store lacks batches its log names, and what becomes of it. */
    static final String LOST_WHY = "this replica lost batches (a power cut under ASYNC, whose store forces less often"
            + " than Ratis its log); it is rebuilt from the other replicas, or, where they cannot elect a leader"
            + " without it, its log is cut back to what its store holds";

    /** @return the index of the latest snapshot, or -1 without one */
    long snapshotIndex() {
        SnapshotMark mark = latest;
        return mark == null ? -1 : mark.at().getIndex();
    }

    /** @return the offset the latest snapshot's batches end at, 0 without one */
    long snapshotEnd() {
        SnapshotMark mark = latest;
        return mark == null ? 0 : mark.end();
    }

    /**
     * The log start and snapshot the retention hold was last read from: a hold read from an older start or snapshot
     * is lower, so one that lost a race with a newer read only keeps more until the next.
     */
    private volatile long heldFromIndex = -1;
    private volatile SnapshotMark heldWith;

    /** Who holds the store's retention back on a partition: the batches its Raft log still names. */
    static final String RETENTION_HOLDER = "raft-log";

    /**
     * Holds the store's retention from the first batch the Raft log names: a leader reads those batches back to send
     * its entries to a replica behind it, and the store's retention does not know about Raft. Batches below, which
     * the log no longer names, are covered by the latest snapshot and go to a replica by a copy, which starts at the
     * leader's first stored offset. Set at a start's first write, at each snapshot (before Ratis purges the log below
     * it) and every few seconds by the node ({@link ClusterNode}): read before a purge, it keeps more than needed,
     * never less. Nothing is held above the latest snapshot's end: after an install the log may still hold the tail of
     * a leader of an earlier term, whose batches lie past it.
     */
    void holdRetentionAtLog() {
        long first = -1;
        long start;
        SnapshotMark mark = latest;
        try {
            RaftLog log = server.getDivision(groupId).getRaftLog();
            start = Math.max(log.getStartIndex(), 0);
            if (start == heldFromIndex && mark == heldWith) {
                // Neither the log's start nor the snapshot moved: the hold stands, and no segment of a log purged
                // long ago is read back from disk every few seconds.
                return;
            }
            for (long i = start; i < log.getNextIndex() && first < 0; i++) {
                LogEntryProto entry = log.get(i);
                if (entry != null && entry.hasStateMachineLogEntry()) {
                    first = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData()).baseOffset();
                }
            }
        } catch (IOException | RuntimeException e) {
            // The group is closing, or its log is: the hold stays where it is.
            LOG.debug("{}-{}: reading the Raft log for the retention hold failed; the hold stays: {}", topic,
                    partition, e.toString());
            return;
        }
        long snapshotEnd = mark == null ? 0 : mark.end();
        first = first < 0 ? snapshotEnd : mark == null ? first : Math.min(first, snapshotEnd);
        try {
            store.holdRetention(RETENTION_HOLDER, topic, partition, first);
            heldFromIndex = start;
            heldWith = mark;
        } catch (RuntimeException e) {
            LOG.debug("{}-{}: the retention hold could not be set: {}", topic, partition, e.toString());
        }
    }

    @Override
    public SimpleStateMachineStorage getStateMachineStorage() {
        return snapshots;
    }

    /**
     * The store lacks batches the Raft log names: the replica's log claims entries whose batches are gone, and it can
     * be neither a follower that appends after them nor a leader that serves them. It goes back to its group empty.
     */
    static final class LostBatchesException extends IllegalStateException {

        private static final long serialVersionUID = 1L;

        LostBatchesException(String message) {
            super(message);
        }
    }

    /**
     * Ratis's snapshot storage lists its directory each time it is asked for the latest snapshot while it knows
     * none, and a follower asks at each append it takes: until a partition's first snapshot (its first
     * {@code snapshotEveryEntries} entries) every append opened and read that directory, 3.7% of the brokers' CPU
     * under a steady producer (docs/benchmarks.md). This one lists it when the group starts and when told to load
     * again ({@link #reinitialize}); every snapshot after that is one this machine wrote, which it is told of
     * ({@link #updateLatestSnapshot}).
     */
    static final class SnapshotStorage extends SimpleStateMachineStorage {

        private final java.util.concurrent.atomic.AtomicReference<SingleFileSnapshotInfo> known =
                new java.util.concurrent.atomic.AtomicReference<>();
        /** The directory was listed since the group started: no snapshot known means none. */
        private volatile boolean listed;
        private volatile Path directory;

        @Override
        public void init(RaftStorage storage) throws IOException {
            super.init(storage);
            directory = storage.getStorageDir().getStateMachineDir().toPath();
            loadLatestSnapshot();
        }

        @Override
        public SingleFileSnapshotInfo getLatestSnapshot() {
            SingleFileSnapshotInfo latest = known.get();
            return latest != null || listed ? latest : loadLatestSnapshot();
        }

        @Override
        public SingleFileSnapshotInfo loadLatestSnapshot() {
            SingleFileSnapshotInfo found = super.loadLatestSnapshot();
            // Ratis's listing logs a failure and finds nothing: only a listing that worked is taken for the answer.
            Path dir = directory;
            if (dir != null) {
                listed = readable(dir);
            }
            return found == null ? known.get() : keep(found);
        }

        private static boolean readable(Path directory) {
            try (DirectoryStream<Path> files = Files.newDirectoryStream(directory)) {
                files.forEach(file -> { });
                return true;
            } catch (IOException | java.nio.file.DirectoryIteratorException e) {
                return false;
            }
        }

        @Override
        public SingleFileSnapshotInfo updateLatestSnapshot(SingleFileSnapshotInfo info) {
            return keep(super.updateLatestSnapshot(info));
        }

        private SingleFileSnapshotInfo keep(SingleFileSnapshotInfo info) {
            if (info == null) {
                return known.get();
            }
            return known.accumulateAndGet(info, (previous, next) -> previous == null
                    || next.getIndex() > previous.getIndex() ? next : previous);
        }

        /**
         * Keeps the latest snapshots the policy names and deletes older ones. Ratis's counts only snapshots with an MD5
         * file beside them, which a partition's (a few bytes, with their own CRC32C) do not have: it deleted none, and
         * every 100,000 entries left one more file in the directory.
         */
        @Override
        public void cleanupOldSnapshots(SnapshotRetentionPolicy policy) throws IOException {
            int retained = policy == null ? SnapshotRetentionPolicy.DEFAULT_ALL_SNAPSHOTS_RETAINED
                    : policy.getNumSnapshotsRetained();
            Path dir = directory;
            if (retained <= 0 || dir == null) {
                return;
            }
            java.util.TreeMap<Long, Path> byIndex = new java.util.TreeMap<>(java.util.Comparator.reverseOrder());
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
                for (Path file : files) {
                    java.util.regex.Matcher name = SNAPSHOT_REGEX.matcher(file.getFileName().toString());
                    if (name.matches()) {
                        byIndex.put(Long.parseLong(name.group(2)), file);
                    }
                }
            }
            SingleFileSnapshotInfo latest = known.get();
            int seen = 0;
            for (Map.Entry<Long, Path> snapshot : byIndex.entrySet()) {
                if (++seen > retained && (latest == null || snapshot.getKey() < latest.getIndex())) {
                    Files.deleteIfExists(snapshot.getValue());
                }
            }
        }
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
        long end = readSnapshot(snapshot.getFile().getPath());
        synchronized (lock) {
            latest = new SnapshotMark(snapshot.getTermIndex(), end);
            highWatermark = end;
            // The store is made to agree with the log (which now starts after the snapshot) at the next write.
            logEnd = -1;
        }
        setLastAppliedTermIndex(snapshot.getTermIndex());
        onCommit.accept(end);
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
        try {
            store.sync();
        } catch (RuntimeException e) {
            throw new IOException("the store of " + topic + "-" + partition + " could not be forced for a snapshot at "
                    + last + ": " + e.getMessage(), e);
        }
        saveSnapshot(last, end);
        holdRetentionAtLog();
        return last.getIndex();
    }

    /** The snapshot file: the offset, with a CRC32C; written aside, forced, then renamed into place. */
    private void saveSnapshot(TermIndex at, long end) throws IOException {
        Path path = snapshots.getSnapshotFile(at.getTerm(), at.getIndex()).toPath();
        DurableFile.write(FileIO.DEFAULT, path, path.resolveSibling("partition-snapshot.tmp"), snapshotText(end));
        snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), at));
        latest = new SnapshotMark(at, end);
    }

    private static String snapshotText(long end) {
        String body = "offset.end=" + end + "\n";
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return body + "crc32c=" + Long.toHexString(crc.getValue()) + "\n";
    }

    private long readSnapshot(Path path) throws IOException {
        String text = Files.readString(path, StandardCharsets.US_ASCII);
        int newline = text.indexOf('\n');
        long end = newline < 0 || !text.startsWith("offset.end=") ? -1
                : parseEnd(text.substring("offset.end=".length(), newline));
        if (end < 0 || !text.equals(snapshotText(end))) {
            throw new IOException("the snapshot file " + path + " of " + topic + "-" + partition + " is damaged");
        }
        return end;
    }

    private static long parseEnd(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /** @return the offset below which every batch is committed */
    public long highWatermark() {
        return highWatermark;
    }

    /** How many installs leaders' notices began on this replica since it started. */
    private final java.util.concurrent.atomic.AtomicInteger installNotices =
            new java.util.concurrent.atomic.AtomicInteger();

    /** @return how many installs leaders' notices began on this replica since it started */
    int installNotices() {
        return installNotices.get();
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
     * Leader: checks the batches and gives them the next offsets. The request's message is one batch or several, one
     * after the other; the transaction's context completes with the first one's base offset once this replica stored
     * them all (acks=1).
     */
    @Override
    public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
        ByteString data = request.getMessage().getContent();
        TransactionContext.Builder builder = TransactionContext.newBuilder().setStateMachine(this)
                .setClientRequest(request);
        int[][] batches;
        try {
            batches = split(data);
        } catch (IllegalArgumentException e) {
            TransactionContext refused = builder.build();
            refused.setException(e);
            return refused;
        }
        settle();
        EntryHeader header;
        synchronized (lock) {
            header = new EntryHeader(logEnd, batches[0], batches[1]);
        }
        return builder.setLogData(header.encode()).setStateMachineData(data)
                .setStateMachineContext(stored(request.getCallId())).build();
    }

    /**
     * @return the offset counts and sizes of the record batches in {@code data}, one after the other
     * @throws IllegalArgumentException naming the first batch this partition does not take
     */
    static int[][] split(ByteString data) {
        ByteBuffer all = data.asReadOnlyByteBuffer();
        int at = all.position();
        int[] counts = new int[4];
        int[] sizes = new int[4];
        int n = 0;
        while (at < all.limit() || n == 0) {
            int left = all.limit() - at;
            // A batch's size is its batchLength (the int after its 8-byte baseOffset) plus those 12 bytes.
            long size = left < 12 ? left : 12L + all.getInt(at + 8);
            String problem = size < 12 || size > left ? "batch " + n + " at byte " + (at - all.position()) + " of "
                    + data.size() + " claims " + size + " bytes, " + left + " are left"
                    : KafkaBatch.problem(MemorySegment.ofBuffer(all.slice(at, (int) size)));
            if (problem != null) {
                throw new IllegalArgumentException("not a record batch this partition takes: " + problem);
            }
            if (n == counts.length) {
                counts = Arrays.copyOf(counts, n * 2);
                sizes = Arrays.copyOf(sizes, n * 2);
            }
            counts[n] = KafkaBatch.offsetCount(MemorySegment.ofBuffer(all.slice(at, (int) size)));
            sizes[n] = (int) size;
            n++;
            at += (int) size;
        }
        return new int[][] {Arrays.copyOf(counts, n), Arrays.copyOf(sizes, n)};
    }

    /**
     * @return the future of the batch submitted with {@code callId} through this node: it completes with the batch's
     *     base offset once this replica stored it
     */
    CompletableFuture<Long> stored(long callId) {
        CompletableFuture<Long> future = submitted.computeIfAbsent(callId, id -> new CompletableFuture<>());
        future.whenComplete((offset, failure) -> submitted.remove(callId));
        return future;
    }

    /** In log order, under the log's lock: the batch's offset must still follow the log's last batch. */
    @Override
    public TransactionContext preAppendTransaction(TransactionContext trx) throws IOException {
        EntryHeader header = EntryHeader.decode(trx.getStateMachineLogEntry().getLogData());
        synchronized (lock) {
            if (header.baseOffset() != logEnd) {
                throw new StateMachineException("a batch of " + topic + "-" + partition + " was given offset "
                        + header.baseOffset() + " but the log's batches end at " + logEnd
                        + " (batches submitted concurrently); send it again");
            }
        }
        return trx;
    }

    @Override
    public TransactionContext cancelTransaction(TransactionContext trx) throws IOException {
        if (trx.getStateMachineContext() instanceof CompletableFuture<?> appended) {
            appended.completeExceptionally(trx.getException() != null ? trx.getException()
                    : new IllegalStateException("the batch was not appended to the log"));
        }
        return trx;
    }

    /** Every replica, in log order, as the entry is written to its log: its batches go to the store. */
    @Override
    @SuppressWarnings("unchecked")
    public CompletableFuture<?> write(LogEntryProto entry, TransactionContext context) {
        EntryHeader header;
        CompletableFuture<?>[] appends;
        try {
            header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
            ByteString data = entry.getStateMachineLogEntry().getStateMachineEntry().getStateMachineData();
            agree(entry.getIndex());
            synchronized (lock) {
                if (header.baseOffset() != logEnd || header.size() != data.size()) {
                    throw new IllegalStateException("entry " + entry.getIndex() + " of " + topic + "-" + partition
                            + " holds batches of " + data.size() + " bytes for offset " + header.baseOffset()
                            + " but this replica's batches end at " + logEnd + " (header: " + header + ")");
                }
                ByteBuffer all = data.asReadOnlyByteBuffer();
                int at = all.position();
                long offset = header.baseOffset();
                appends = new CompletableFuture<?>[header.batches()];
                for (int i = 0; i < header.batches(); i++) {
                    long expected = offset;
                    String batch = "batch " + i + " of entry " + entry.getIndex();
                    appends[i] = store.appendOpaqueToDeclared(topic, partition,
                            MemorySegment.ofBuffer(all.slice(at, header.size(i))), header.count(i), force)
                            .thenAccept(result -> {
                                if (result.firstQueueOffset() != expected) {
                                    throw new IllegalStateException("the store put " + batch + " at offset "
                                            + result.firstQueueOffset() + ", not " + expected);
                                }
                            });
                    at += header.size(i);
                    offset += header.count(i);
                }
                logEnd = header.end();
            }
        } catch (RuntimeException | IOException e) {
            LOG.error("{}-{}: cannot store the batches of log entry {}: {}", topic, partition, entry.getIndex(),
                    e.toString());
            return CompletableFuture.failedFuture(e);
        }
        CompletableFuture<?> delayed = hooks.storeDelay(id);
        CompletableFuture<Void> stored = delayed == null ? CompletableFuture.allOf(appends)
                : CompletableFuture.allOf(CompletableFuture.allOf(appends), delayed);
        long index = entry.getIndex();
        storing.put(index, stored);
        stored.whenComplete((result, failure) -> storing.remove(index, stored));
        // Only an entry this leader started has its future as context (a follower's context is Ratis's own).
        CompletableFuture<Long> appended = context != null
                && context.getStateMachineContext() instanceof CompletableFuture<?> f ? (CompletableFuture<Long>) f : null;
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
                throw new IllegalStateException(failure);
            }
            return result;
        });
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
            EntryHeader header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
            try (ReadResult read = store.read(topic, partition, header.baseOffset(), header.batches(),
                    header.size())) {
                byte[] batches = new byte[header.size()];
                int at = 0;
                long offset = header.baseOffset();
                for (int i = 0; i < header.batches(); i++) {
                    StoredMessage message = read.messages().size() > i ? read.messages().get(i) : null;
                    if (message == null && offset >= store.nextOffset(topic, partition)) {
                        throw new LostBatchesException("the store of " + topic + "-" + partition + " ends at offset "
                                + store.nextOffset(topic, partition) + " but log entry " + entry.getIndex()
                                + " names batches from offset " + offset + ": " + LOST_WHY);
                    }
                    if (message == null || message.queueOffset() != offset || message.opaqueCount() != header.count(i)
                            || message.body().byteSize() != header.size(i)) {
                        throw new IllegalStateException("the store of " + topic + "-" + partition + " has no batch of "
                                + header.count(i) + " offsets at offset " + offset + " for log entry "
                                + entry.getIndex() + " (" + read.status() + ")");
                    }
                    MemorySegment.copy(message.body(), 0, MemorySegment.ofArray(batches), at, header.size(i));
                    at += header.size(i);
                    offset += header.count(i);
                }
                return CompletableFuture.completedFuture(UnsafeByteOperations.unsafeWrap(batches));
            }
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Raft cut the log from {@code index} on: the store keeps the batches of the entries before it only. */
    @Override
    public CompletableFuture<Void> truncate(long index) {
        try {
            long cut = batchesEndBefore(index);
            sending.keySet().removeIf(kept -> kept >= index);
            synchronized (lock) {
                cutStoreTo(cut, "Raft truncated its log at index " + index);
                logEnd = cut;
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException | IOException e) {
            LOG.error("{}-{}: cannot truncate at log index {}: {}", topic, partition, index, e.toString());
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

    @Override
    public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
        LogEntryProto entry = trx.getLogEntry();
        EntryHeader header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
        if (header.end() > highWatermark) {
            highWatermark = header.end();
        }
        updateLastAppliedTermIndex(TermIndex.valueOf(entry));
        sending.remove(entry.getIndex());
        onCommit.accept(header.end());
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(
                Long.toString(header.baseOffset()))));
    }

    /** The most a read-only query returns of the batches a replica installing a snapshot copies. */
    static final int COPY_CHUNK_BYTES = 1 << 20;

    /**
     * Read-only queries, answered by the leader for a replica installing its snapshot: {@code snapshot} gives the
     * latest snapshot's term, index and offset ({@code none} without one); {@code first} gives the first offset the
     * store holds; {@code read <from> <until>} gives the
     * stored batches from offset {@code from} on, below {@code until}, at most about {@link #COPY_CHUNK_BYTES},
     * one after the other.
     */
    @Override
    public CompletableFuture<Message> query(Message request) {
        String[] words = request.getContent().toStringUtf8().split(" ");
        try {
            if (words.length == 1 && words[0].equals("snapshot")) {
                SnapshotMark mark = latest;
                return CompletableFuture.completedFuture(Message.valueOf(mark == null ? "none"
                        : mark.at().getTerm() + " " + mark.at().getIndex() + " " + mark.end()));
            }
            if (words.length == 1 && words[0].equals("first")) {
                return CompletableFuture.completedFuture(Message.valueOf(Long.toString(
                        store.minOffset(topic, partition))));
            }
            if (words.length == 3 && words[0].equals("read")) {
                return CompletableFuture.completedFuture(Message.valueOf(readBatches(Long.parseLong(words[1]),
                        Long.parseLong(words[2]))));
            }
            throw new IllegalArgumentException("unknown query '" + request.getContent().toStringUtf8() + "'");
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private ByteString readBatches(long from, long until) {
        long first = store.minOffset(topic, partition);
        if (from < first) {
            throw new IllegalStateException("the store of " + topic + "-" + partition + " starts at offset " + first
                    + " (retention removed what came before), not " + from + ": a replica cannot copy it from here");
        }
        ByteString.Output out = ByteString.newOutput();
        try (ReadResult read = store.read(topic, partition, from, 1000, COPY_CHUNK_BYTES)) {
            for (StoredMessage message : read.messages()) {
                if (message.queueOffset() >= until) {
                    break;
                }
                byte[] batch = message.bodyBytes();
                out.write(batch, 0, batch.length);
            }
        }
        return out.toByteString();
    }

    /**
     * The leader's log starts after this replica's log ends: it installs the leader's latest snapshot, on a thread
     * of its own (Ratis asks again until it is done, and again after a failure).
     */
    @Override
    public CompletableFuture<TermIndex> notifyInstallSnapshotFromLeader(RoleInfoProto roleInfo,
                                                                       TermIndex firstTermIndexInLog) {
        installNotices.incrementAndGet();
        return installInBackground(roleInfo, topic + "-" + partition,
                leader -> install(leader, firstTermIndexInLog));
    }

    /** Installs a snapshot from the leader a notice names. */
    @FunctionalInterface
    interface Install {
        /** @return the snapshot installed, or null if nothing is missing */
        TermIndex from(RaftPeerId leader) throws IOException;
    }

    /**
     * Runs an install of the snapshot of the leader {@code roleInfo} names on a thread of its own (Ratis asks again
     * until it is done, and again after a failure).
     *
     * @param what the group's name, for the thread and the log
     */
    static CompletableFuture<TermIndex> installInBackground(RoleInfoProto roleInfo, String what, Install install) {
        if (!roleInfo.getFollowerInfo().hasLeaderInfo()) {
            return CompletableFuture.failedFuture(new IOException("no leader named to install a snapshot from"));
        }
        RaftPeerId leader = RaftPeerId.valueOf(roleInfo.getFollowerInfo().getLeaderInfo().getId().getId());
        CompletableFuture<TermIndex> installed = new CompletableFuture<>();
        Thread.ofVirtual().name("install-" + what).start(() -> {
            try {
                installed.complete(install.from(leader));
            } catch (IOException | RuntimeException e) {
                Throwable cause = e;
                while (cause.getCause() != null && cause.getCause() != cause) {
                    cause = cause.getCause();
                }
                LOG.warn("{}: installing the snapshot of leader {} failed (it is tried again): {}{}", what, leader,
                        e, cause == e ? "" : ", caused by " + cause);
                installed.completeExceptionally(e);
            }
        });
        return installed;
    }

    /**
     * @return the snapshot installed, or null if nothing is missing (this replica's log holds the leader's first
     *     entry, or the leader has no snapshot and its whole log): Ratis then sends the log
     */
    private TermIndex install(RaftPeerId leader, TermIndex firstInLog) throws IOException {
        if (firstInLog.getIndex() == 0
                || firstInLog.equals(server.getDivision(groupId).getRaftLog().getTermIndex(firstInLog.getIndex()))) {
            // Ratis asks every member being added to install a snapshot first, whatever its log holds: the leader
            // holds its whole log, or this replica's log holds the leader's first entry, so the leader's log gives
            // it the rest (its own data are kept). A log that reaches that index with another entry there (the tail
            // of a leader of an earlier term) is not enough: the leader has no entry before its first to find where
            // the two agree, so it installs.
            LOG.info("{}-{}: the leader's log from its first entry {} follows this replica's: nothing to install",
                    topic, partition, firstInLog);
            return null;
        }
        // A member rejoining with an empty group does not know the others yet: the leader is looked up by its id.
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties())
                .setRaftGroup(RaftGroup.valueOf(groupId, peers.apply(leader))).setLeaderId(leader)
                .setClientId(ClientId.randomId()).setRetryPolicy(RetryPolicies.retryUpToMaximumCountWithFixedSleep(
                        20, TimeDuration.valueOf(200, TimeUnit.MILLISECONDS))).build()) {
            String[] answer = ask(client, leader, "snapshot").toStringUtf8().split(" ");
            if (answer.length != 3) {
                throw new IOException("the leader of " + topic + "-" + partition + " has no snapshot yet");
            }
            TermIndex at = TermIndex.valueOf(Long.parseLong(answer[0]), Long.parseLong(answer[1]));
            long end = Long.parseLong(answer[2]);
            long leaderStart = Math.min(leaderFirstOffset(client, leader), end);
            if (at.getIndex() + 1 < firstInLog.getIndex()) {
                throw new IOException("the leader's snapshot at " + at + " does not reach its log's first entry "
                        + firstInLog);
            }
            // What this replica holds past what it knows committed (or copied before) may differ from the
            // leader's: cut it.
            long from = Math.min(store.nextOffset(topic, partition), Math.max(highWatermark, Math.min(copiedEnd,
                    end)));
            if (from < leaderStart || from < store.minOffset(topic, partition)) {
                // The leader's retention removed the batches from there (or this replica's own retention removed
                // what it holds below): the queue starts again empty where the copy can start, as a Kafka follower
                // starts at its leader's log start offset.
                long start = Math.max(from, leaderStart);
                LOG.info("{}-{}: the copy from leader {} starts at offset {} (its first stored; this replica held"
                        + " offsets {} to {}): the queue is emptied and starts there", topic, partition,
                        ClusterNode.nodeId(leader), start, store.minOffset(topic, partition),
                        store.nextOffset(topic, partition) - 1);
                store.emptyQueueAt(topic, partition, start);
                from = start;
            } else if (store.nextOffset(topic, partition) > from) {
                store.truncateQueue(topic, partition, from);
            }
            long copied = 0;
            while (from < end) {
                ByteString batches = ask(client, leader, "read " + from + " " + end);
                if (batches.isEmpty()) {
                    throw new IOException("the leader of " + topic + "-" + partition + " returned no batch at offset "
                            + from + " below its snapshot's " + end);
                }
                from = appendCopied(batches, from);
                copiedEnd = from;
                copied += batches.size();
            }
            store.sync();
            saveSnapshot(at, end);
            installed.incrementAndGet();
            LOG.info("{}-{}: installed the snapshot at {} from node {}: batches up to offset {} ({} bytes copied)",
                    topic, partition, at, ClusterNode.nodeId(leader), end, copied);
            hooks.afterInstall(id);
            return at;
        }
    }

    /** @return the leader's first stored offset; 0 from a leader of an earlier version, which does not say */
    private long leaderFirstOffset(RaftClient client, RaftPeerId leader) throws IOException {
        try {
            return Long.parseLong(ask(client, leader, "first").toStringUtf8());
        } catch (IOException e) {
            if (String.valueOf(e.getMessage()).contains("unknown query")) {
                return 0;
            }
            throw e;
        }
    }

    /**
     * A query to the leader the install notice named. A stale read (from the leader's applied state, whatever its
     * role now), not a linearizable one: Ratis answers those only from a leader that committed an entry of its term,
     * and a leader whose only reachable follower is this replica cannot commit until this replica has installed (the
     * two waited on each other for good). What is read is committed everywhere: a snapshot, and batches below its end.
     */
    private static ByteString ask(RaftClient client, RaftPeerId leader, String query) throws IOException {
        RaftClientReply reply = client.io().sendStaleRead(Message.valueOf(query), 0, leader);
        if (!reply.isSuccess()) {
            throw new IOException("query '" + query + "' failed: " + reply.getException());
        }
        return reply.getMessage().getContent();
    }

    /** Appends the copied batches, each at the offset it has; @return the offset after the last */
    private long appendCopied(ByteString batches, long from) throws IOException {
        ByteBuffer all = batches.asReadOnlyByteBuffer().order(java.nio.ByteOrder.BIG_ENDIAN);
        int at = all.position();
        long next = from;
        Map<Long, CompletableFuture<AppendResult>> appended = new java.util.LinkedHashMap<>();
        while (at < all.limit()) {
            long base = all.getLong(at);
            int size = 12 + all.getInt(at + 8);
            MemorySegment batch = MemorySegment.ofBuffer(all.slice(at, size));
            if (base != next || KafkaBatch.problem(batch) != null) {
                throw new IOException("a copied batch of " + topic + "-" + partition + " at offset " + base
                        + " does not follow offset " + next + " or is no batch: "
                        + KafkaBatch.problem(batch));
            }
            int count = KafkaBatch.offsetCount(batch);
            appended.put(base, store.appendOpaqueToDeclared(topic, partition, batch, count, false));
            next = base + count;
            at += size;
        }
        for (Map.Entry<Long, CompletableFuture<AppendResult>> append : appended.entrySet()) {
            long offset = append.getValue().join().firstQueueOffset();
            if (offset != append.getKey()) {
                throw new IOException("the store put a copied batch of " + topic + "-" + partition + " at offset "
                        + offset + ", not " + append.getKey());
            }
        }
        return next;
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
        long end = batchesEndBefore(index);
        synchronized (lock) {
            if (logEnd < 0) {
                cutStoreTo(end, "its batches past the Raft log's last were stored by writes whose entries never"
                        + " reached the log");
                logEnd = end;
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
            agree(nextIndex());
        }
    }

    private void cutStoreTo(long end, String why) {
        // The writer's end, forced or not: under SYNC a reader sees only what was forced.
        long stored = store.nextOffset(topic, partition);
        if (stored < end) {
            throw new LostBatchesException("the store of " + topic + "-" + partition + " ends at offset " + stored
                    + " but the Raft log names batches up to offset " + end + ": " + LOST_WHY);
        }
        long first = store.minOffset(topic, partition);
        if (end < first) {
            if (end > 0) {
                throw new LostBatchesException("the store of " + topic + "-" + partition + " starts at offset " + first
                        + ", past the batches the Raft log names (up to offset " + end + "): a copy from a leader"
                        + " stopped before its snapshot was recorded; it is rebuilt from the other replicas");
            }
            // The log names no batch: the store holds none, from offset 0 (it held the tail of a copy cut short, or
            // what its retention left).
            LOG.info("{}-{}: emptying the store (offsets {} to {}): the Raft log names no batch", topic, partition,
                    first, stored - 1);
            store.emptyQueueAt(topic, partition, 0);
            return;
        }
        if (stored > end) {
            LOG.info("{}-{}: cutting the store from offset {} to {}: {}", topic, partition, stored, end, why);
            store.truncateQueue(topic, partition, end);
        }
    }

    /**
     * @return the end of the last batch among the log's entries below {@code index} (0 if none); entries up to the
     *     latest snapshot's index count as the snapshot's (after an install the log may still hold entries of its own
     *     there, the tail of a leader of an earlier term, that the snapshot replaced)
     */
    private long batchesEndBefore(long index) throws IOException {
        RaftLog log = server.getDivision(groupId).getRaftLog();
        long start = Math.max(log.getStartIndex(), 0);
        SnapshotMark mark = latest;
        long above = mark == null ? start : Math.max(start, mark.at().getIndex() + 1);
        for (long i = index - 1; i >= above; i--) {
            LogEntryProto entry = log.get(i);
            if (entry != null && entry.hasStateMachineLogEntry()) {
                return EntryHeader.decode(entry.getStateMachineLogEntry().getLogData()).end();
            }
        }
        // No batch entry in the log below the index and above the snapshot: the entries before are in the snapshot.
        if (mark != null && mark.at().getIndex() >= start - 1 && mark.at().getIndex() < index) {
            return mark.end();
        }
        if (log.getStartIndex() > 0) {
            throw new IllegalStateException("the Raft log of " + topic + "-" + partition + " starts at index "
                    + log.getStartIndex() + " with no batch entry below " + index + ": its earlier entries are gone");
        }
        return 0;
    }

    private long nextIndex() throws IOException {
        return server.getDivision(groupId).getRaftLog().getNextIndex();
    }
}
