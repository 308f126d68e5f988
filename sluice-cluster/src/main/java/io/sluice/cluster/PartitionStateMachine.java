package io.sluice.cluster;

import io.sluice.store.AppendResult;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongConsumer;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
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
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One replica of one partition: the Raft group's state machine, keeping each produced Kafka record batch in the
 * partition's queue of a BATCHES topic of the node's {@link Store}, and only the batch's {@link EntryHeader} in the
 * Raft log (Ratis's {@link StateMachine.DataApi}: a batch is written once per replica).
 *
 * <h2>Offsets</h2>
 * The leader gives a batch its base offset as it starts the transaction: the end of its log's batches. Callers
 * submit one batch of a partition at a time (Ratis appends a submitted entry before the submit returns), and
 * {@link #preAppendTransaction} checks, in log order, that the offset still follows the log's last batch, so the
 * offsets in the log are dense and in log order. Every replica appends the batch to its store as the entry is
 * written to its log ({@link #write}), in log order, and checks that its store assigns the same offset.
 *
 * <h2>Where the log ends</h2>
 * Ratis truncates a follower's uncommitted tail when it differs from the leader's; {@link #truncate} cuts the store
 * back to the end of the last batch kept ({@link Store#truncateQueue}). At the first write after a start, the store
 * is made to agree with the Raft log: batches past the log's last batch entry (stored by a write whose entry never
 * reached the log before a crash) are cut; a store that lacks batches the log names is refused.
 *
 * <h2>High watermark</h2>
 * A batch is committed once Raft commits its entry; {@link #applyTransaction} (in log order) moves the high watermark
 * to its end. Consumers read below it only.
 */
public final class PartitionStateMachine extends BaseStateMachine implements StateMachine.DataApi {

    private static final Logger LOG = LoggerFactory.getLogger(PartitionStateMachine.class);

    private final Store store;
    private final String topic;
    private final int partition;
    private final boolean force;
    private final LongConsumer onCommit;
    private final Object lock = new Object();
    private RaftServer server;
    private RaftGroupId groupId;
    /** The offset after the last batch written to this replica's log; -1 until the store agrees with the log. */
    private volatile long logEnd = -1;
    private volatile long highWatermark;
    /**
     * Batches being stored, by log index: under SYNC the store shows a batch to readers once it is forced, and a
     * follower may need it before that.
     */
    private final Map<Long, CompletableFuture<AppendResult>> storing = new ConcurrentHashMap<>();
    /** Leader: the futures of batches submitted through this node, by call id, until stored or refused. */
    private final Map<Long, CompletableFuture<Long>> submitted = new ConcurrentHashMap<>();

    /**
     * @param store the node's store; the topic must exist in it with layout BATCHES and the partition as a queue
     * @param topic the topic
     * @param partition the partition (the store's queue id)
     * @param force force each batch to the device before its entry is written (SYNC flush)
     * @param onCommit told the new high watermark each time it moves, and when the leader changes
     */
    public PartitionStateMachine(Store store, String topic, int partition, boolean force, LongConsumer onCommit) {
        this.store = store;
        this.topic = topic;
        this.partition = partition;
        this.force = force;
        this.onCommit = onCommit;
    }

    @Override
    public void initialize(RaftServer raftServer, RaftGroupId raftGroupId, RaftStorage storage) throws IOException {
        super.initialize(raftServer, raftGroupId, storage);
        this.server = raftServer;
        this.groupId = raftGroupId;
    }

    /** @return the offset below which every batch is committed */
    public long highWatermark() {
        return highWatermark;
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
     * Leader: checks the batch and gives it the next offset. The request's message is the batch; the transaction's
     * context completes with its base offset once this replica stored it (acks=1).
     */
    @Override
    public TransactionContext startTransaction(RaftClientRequest request) throws IOException {
        ByteString data = request.getMessage().getContent();
        MemorySegment batch = MemorySegment.ofBuffer(data.asReadOnlyByteBuffer());
        TransactionContext.Builder builder = TransactionContext.newBuilder().setStateMachine(this)
                .setClientRequest(request);
        String problem = KafkaBatch.problem(batch);
        if (problem != null) {
            TransactionContext refused = builder.build();
            refused.setException(new IllegalArgumentException("not a record batch this partition takes: " + problem));
            return refused;
        }
        agree(nextIndex());
        EntryHeader header;
        synchronized (lock) {
            header = new EntryHeader(logEnd, KafkaBatch.offsetCount(batch), data.size());
        }
        return builder.setLogData(header.encode()).setStateMachineData(data)
                .setStateMachineContext(stored(request.getCallId())).build();
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

    /** Every replica, in log order, as the entry is written to its log: the batch goes to the store. */
    @Override
    @SuppressWarnings("unchecked")
    public CompletableFuture<?> write(LogEntryProto entry, TransactionContext context) {
        EntryHeader header;
        CompletableFuture<AppendResult> stored;
        try {
            header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
            ByteString data = entry.getStateMachineLogEntry().getStateMachineEntry().getStateMachineData();
            agree(entry.getIndex());
            synchronized (lock) {
                if (header.baseOffset() != logEnd || header.size() != data.size()) {
                    throw new IllegalStateException("entry " + entry.getIndex() + " of " + topic + "-" + partition
                            + " holds a batch of " + data.size() + " bytes for offset " + header.baseOffset()
                            + " but this replica's batches end at " + logEnd + " (header: " + header + ")");
                }
                stored = store.appendOpaqueToDeclared(topic, partition,
                        MemorySegment.ofBuffer(data.asReadOnlyByteBuffer()), header.count(), force);
                logEnd = header.end();
            }
        } catch (RuntimeException | IOException e) {
            LOG.error("{}-{}: cannot store the batch of log entry {}: {}", topic, partition, entry.getIndex(),
                    e.toString());
            return CompletableFuture.failedFuture(e);
        }
        long index = entry.getIndex();
        storing.put(index, stored);
        CompletableFuture<AppendResult> mine = stored;
        stored.whenComplete((result, failure) -> storing.remove(index, mine));
        CompletableFuture<Long> appended = context != null
                && context.getStateMachineContext() instanceof CompletableFuture<?> f ? (CompletableFuture<Long>) f : null;
        return stored.handle((result, failure) -> {
            if (failure == null && result.firstQueueOffset() != header.baseOffset()) {
                failure = new IllegalStateException("the store put the batch of entry " + entry.getIndex() + " at offset "
                        + result.firstQueueOffset() + ", not " + header.baseOffset());
            }
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

    /** Leader: the batch of an entry a follower needs and the log's cache no longer holds. */
    @Override
    public CompletableFuture<ByteString> read(LogEntryProto entry, TransactionContext context) {
        CompletableFuture<AppendResult> pending = storing.get(entry.getIndex());
        if (pending != null) {
            return pending.thenCompose(stored -> readStored(entry));
        }
        return readStored(entry);
    }

    private CompletableFuture<ByteString> readStored(LogEntryProto entry) {
        try {
            EntryHeader header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
            try (ReadResult read = store.read(topic, partition, header.baseOffset(), 1, 1)) {
                StoredMessage message = read.messages().isEmpty() ? null : read.messages().getFirst();
                if (message == null || message.queueOffset() != header.baseOffset()
                        || message.opaqueCount() != header.count() || message.body().byteSize() != header.size()) {
                    throw new IllegalStateException("the store of " + topic + "-" + partition + " has no batch of "
                            + header.count() + " offsets at offset " + header.baseOffset() + " for log entry "
                            + entry.getIndex() + " (" + read.status() + ")");
                }
                return CompletableFuture.completedFuture(UnsafeByteOperations.unsafeWrap(message.bodyBytes()));
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
        onCommit.accept(header.end());
        return CompletableFuture.completedFuture(Message.valueOf(ByteString.copyFromUtf8(
                Long.toString(header.baseOffset()))));
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
    }

    /**
     * Leader, before it serves: the store agrees with the Raft log, so that nothing read back from the store (an
     * idempotent producer's state) comes from batches the log does not have.
     */
    void settle() throws IOException {
        agree(nextIndex());
    }

    private void cutStoreTo(long end, String why) {
        // The writer's end, forced or not: under SYNC a reader sees only what was forced.
        long stored = store.nextOffset(topic, partition);
        if (stored < end) {
            throw new IllegalStateException("the store of " + topic + "-" + partition + " ends at offset " + stored
                    + " but the Raft log names batches up to offset " + end + ": this replica lost data (a power"
                    + " cut without forced writes?); remove its data so that it is rebuilt from the leader");
        }
        if (stored > end) {
            LOG.info("{}-{}: cutting the store from offset {} to {}: {}", topic, partition, stored, end, why);
            store.truncateQueue(topic, partition, end);
        }
    }

    /** @return the end of the last batch among the log's entries below {@code index} (0 if none) */
    private long batchesEndBefore(long index) throws IOException {
        RaftLog log = server.getDivision(groupId).getRaftLog();
        for (long i = index - 1; i >= Math.max(log.getStartIndex(), 0); i--) {
            LogEntryProto entry = log.get(i);
            if (entry != null && entry.hasStateMachineLogEntry()) {
                return EntryHeader.decode(entry.getStateMachineLogEntry().getLogData()).end();
            }
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
