package io.sluice.cluster;

import io.sluice.broker.ProducerHistory;
import io.sluice.cluster.ratis.RaftLogTail;
import io.sluice.store.AppendResult;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.server.raftlog.RaftLog;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.UnsafeByteOperations;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica's partition in the node's store, as its Raft log sees it: the batches an entry names read back for a
 * follower, a chunk read for a replica copying a snapshot and appended where it is copied to, and the store made to
 * agree with the log (cut back to the log's batches, or found short of them: {@link LostBatchesException}).
 * Thread-safe as the store is; the state machine decides when each is called.
 */
final class PartitionStore {

    private static final ValueLayout.OfLong MAX_TIMESTAMP = ValueLayout.JAVA_LONG_UNALIGNED
            .withOrder(ByteOrder.BIG_ENDIAN);
    private static final Logger LOG = LoggerFactory.getLogger(PartitionStore.class);

    /** The most a read-only query returns of the batches a replica installing a snapshot copies. */
    static final int COPY_CHUNK_BYTES = 1 << 20;

    private final Store store;
    private final String topic;
    private final int partition;
    private final ClusterNode.PartitionId id;

    /**
     * @param store the node's store; the topic must exist in it with layout BATCHES and the partition as a queue
     * @param id the partition
     */
    PartitionStore(Store store, ClusterNode.PartitionId id) {
        this.store = store;
        this.topic = id.topic();
        this.partition = id.partition();
        this.id = id;
    }

    /**
     * @return the offset counts and sizes of the record batches in {@code data}, one after the other
     * @throws IllegalArgumentException naming the first batch a partition does not take
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
     * Appends an entry's batches to the store, per the store's flush mode, each checked to land at the offset the
     * entry names, and notes each in the producers' history. A follower's store checks each batch's CRC32C as it
     * copies it in; the leader's batches were checked as the broker took them ({@code checked}), the same bytes the
     * entry holds, and are not again.
     *
     * @param index the entry's log index
     * @param data the entry's batches, one after the other
     * @param checked the entry's batches as this leader submitted them, or null
     * @param producers the producers' history to note the batches in, or null
     * @return the appends' futures
     */
    CompletableFuture<?>[] appendEntry(long index, EntryHeader header, ByteString data, List<KafkaBatch> checked,
                                       ProducerHistory producers) {
        ByteBuffer all = data.asReadOnlyByteBuffer();
        int at = all.position();
        long offset = header.baseOffset();
        boolean trusted = checked != null && checked.size() == header.batches();
        CompletableFuture<?>[] appends = new CompletableFuture<?>[header.batches()];
        for (int i = 0; i < header.batches(); i++) {
            long expected = offset;
            String batch = "batch " + i + " of entry " + index;
            MemorySegment bytes = trusted && checked.get(i).size() == header.size(i) ? null
                    : MemorySegment.ofBuffer(all.slice(at, header.size(i)));
            CompletableFuture<AppendResult> append = bytes == null
                    ? store.appendKafkaBatch(topic, partition, checked.get(i), Durability.FLUSH_MODE)
                    : store.appendOpaqueToDeclared(topic, partition, bytes, header.count(i), Durability.FLUSH_MODE);
            if (producers != null && !append.isCompletedExceptionally()) {
                producers.stored(bytes == null ? checked.get(i).bytes() : bytes, expected);
            }
            appends[i] = append.thenAccept(result -> {
                if (result.firstQueueOffset() != expected) {
                    throw new IllegalStateException("the store put " + batch + " at offset "
                            + result.firstQueueOffset() + ", not " + expected);
                }
            });
            at += header.size(i);
            offset += header.count(i);
        }
        return appends;
    }

    /**
     * @return the idempotent producers the store's batches below {@code end} show (its last
     *     {@link ProducerHistory#REBUILD_OFFSETS} offsets read back), or null if the store does not show them all yet
     */
    ProducerHistory readProducers(long end) {
        if (store.maxOffset(topic, partition) < end) {
            return null;
        }
        long first = store.minOffset(topic, partition);
        return first >= end ? new ProducerHistory()
                : ProducerHistory.readBack((offset, max, bytes) -> store.read(topic, partition, offset, max, bytes),
                        first, end);
    }

    /** @return the offset counts and sizes of batches checked already, one after the other */
    static int[][] sizes(List<KafkaBatch> batches) {
        int[] counts = new int[batches.size()];
        int[] sizes = new int[batches.size()];
        for (int i = 0; i < counts.length; i++) {
            counts[i] = batches.get(i).offsetCount();
            sizes[i] = batches.get(i).size();
        }
        return new int[][] {counts, sizes};
    }

    /**
     * @return the batches a log entry names, read back from the store, one after the other
     * @throws LostBatchesException if the store ends before them
     * @throws IllegalStateException if the store holds other batches there
     */
    ByteString readEntry(LogEntryProto entry) {
        EntryHeader header = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData());
        try (ReadResult read = store.read(topic, partition, header.baseOffset(), header.batches(), header.size())) {
            byte[] batches = new byte[header.size()];
            int at = 0;
            long offset = header.baseOffset();
            for (int i = 0; i < header.batches(); i++) {
                StoredMessage message = read.messages().size() > i ? read.messages().get(i) : null;
                if (message == null && offset >= store.nextOffset(topic, partition)) {
                    throw new LostBatchesException("the store of " + id + " ends at offset "
                            + store.nextOffset(topic, partition) + " but log entry " + entry.getIndex()
                            + " names batches from offset " + offset + ": " + LostBatchesException.WHY);
                }
                if (message == null || message.queueOffset() != offset || message.opaqueCount() != header.count(i)
                        || message.body().byteSize() != header.size(i)) {
                    throw new IllegalStateException("the store of " + id + " has no batch of " + header.count(i)
                            + " offsets at offset " + offset + " for log entry " + entry.getIndex() + " ("
                            + read.status() + ")");
                }
                MemorySegment.copy(message.body(), 0, MemorySegment.ofArray(batches), at, header.size(i));
                at += header.size(i);
                offset += header.count(i);
            }
            return UnsafeByteOperations.unsafeWrap(batches);
        }
    }

    /**
     * @return the stored batches from offset {@code from} on, below {@code until}, at most about
     *     {@link #COPY_CHUNK_BYTES}, one after the other
     * @throws IllegalStateException if the store starts past {@code from} (retention removed it)
     */
    ByteString readChunk(long from, long until) {
        long first = store.minOffset(topic, partition);
        if (from < first) {
            throw new IllegalStateException("the store of " + id + " starts at offset " + first
                    + " (retention removed what came before), not " + from + ": a replica cannot copy it from here");
        }
        ByteString.Output out = ByteString.newOutput();
        try (ReadResult read = store.read(topic, partition, from, 1000, COPY_CHUNK_BYTES)) {
            if (read.status() != ReadResult.Status.FOUND) {
                // Retention moved the start meanwhile, or the store ends before: not a gap, which a found read with
                // no batch below the end is (the installing replica fills one where it gets no batch).
                throw new IllegalStateException("the store of " + id + " has no batch to copy at offset " + from
                        + " (" + read.status() + ")");
            }
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
     * Appends batches copied from a leader, each at the offset it has, unforced.
     *
     * @param batches the chunk, as {@link #readChunk} reads it
     * @param from the offset its first batch must have
     * @return the offset after the last
     * @throws IOException if a batch does not follow the one before, or the store puts it elsewhere
     */
    long appendCopied(ByteString batches, long from) throws IOException {
        ByteBuffer all = batches.asReadOnlyByteBuffer().order(ByteOrder.BIG_ENDIAN);
        int at = all.position();
        long next = from;
        Map<Long, CompletableFuture<AppendResult>> appended = new LinkedHashMap<>();
        while (at < all.limit()) {
            long base = all.getLong(at);
            int size = 12 + all.getInt(at + 8);
            MemorySegment batch = MemorySegment.ofBuffer(all.slice(at, size));
            if (base < next || KafkaBatch.problem(batch) != null) {
                throw new IOException("a copied batch of " + id + " at offset " + base + " does not follow offset "
                        + next + " or is no batch: " + KafkaBatch.problem(batch));
            }
            if (base > next) {
                // The leader's compaction dropped the batches between: the copy holds the same gap.
                appendGap(appended, next, base, batch.get(MAX_TIMESTAMP, KafkaBatch.MAX_TIMESTAMP));
            }
            int count = KafkaBatch.offsetCount(batch);
            appended.put(base, store.appendOpaqueToDeclared(topic, partition, batch, count, Durability.FLUSH_MODE));
            next = base + count;
            at += size;
        }
        checkPlaced(appended);
        return next;
    }

    /**
     * Appends a gap over the offsets {@code from} to {@code to} (exclusive), where a compacted leader holds no batch.
     *
     * @return the offset after it, {@code to}
     */
    long appendGap(long from, long to, long timestamp) throws IOException {
        Map<Long, CompletableFuture<AppendResult>> appended = new LinkedHashMap<>();
        appendGap(appended, from, to, timestamp);
        checkPlaced(appended);
        return to;
    }

    private void appendGap(Map<Long, CompletableFuture<AppendResult>> appended, long from, long to, long timestamp) {
        for (long at = from; at < to; ) {
            int count = (int) Math.min(to - at, Integer.MAX_VALUE);
            appended.put(at, store.appendGap(topic, partition, count, timestamp, Durability.FLUSH_MODE));
            at += count;
        }
    }

    private void checkPlaced(Map<Long, CompletableFuture<AppendResult>> appended) throws IOException {
        for (Map.Entry<Long, CompletableFuture<AppendResult>> append : appended.entrySet()) {
            long offset = append.getValue().join().firstQueueOffset();
            if (offset != append.getKey()) {
                throw new IOException("the store put a copied batch of " + id + " at offset " + offset + ", not "
                        + append.getKey());
            }
        }
    }

    /**
     * As the group starts, before Ratis loads its log: whether the store lacks batches the log names (a power cut
     * under ASYNC). The node then takes the replica out before it votes or leads, rather than at its first write or
     * its first client; without this, each replica of a partition whose replicas all lost batches found it only when a
     * leader or a client reached it, one after the other.
     *
     * @param logDirectory the group's segment files
     * @param maxEntryBytes the largest entry Ratis reads
     * @param latest the replica's latest snapshot, or null
     * @return what the store lacks, or null if it holds every batch the log names
     */
    LostBatchesException lostBelowLog(Path logDirectory, int maxEntryBytes, PartitionSnapshot latest)
            throws IOException {
        long stored = store.nextOffset(topic, partition);
        RaftLogTail.Held held = RaftLogTail.held(logDirectory, maxEntryBytes, stored,
                latest == null ? -1 : latest.index(), latest == null ? 0 : latest.end(),
                data -> EntryHeader.decode(data).end());
        if (held == null || !held.isShort()) {
            return null;
        }
        return new LostBatchesException("the store of " + id + " ends at offset " + stored + " but the Raft log names"
                + " batches up to offset " + held.namedEnd() + " (entries " + (held.wholeIndex() + 1) + " to "
                + held.lastIndex() + "): " + LostBatchesException.WHY);
    }

    /**
     * Cuts the store back to {@code end}, the end of the batches the log names.
     *
     * @param why why the store holds more, for the log line
     * @throws LostBatchesException if the store ends before {@code end}, or starts past it (a copy cut short)
     */
    void cutTo(long end, String why) {
        // The writer's end, forced or not: under SYNC a reader sees only what was forced.
        long stored = store.nextOffset(topic, partition);
        if (stored < end) {
            throw new LostBatchesException("the store of " + id + " ends at offset " + stored
                    + " but the Raft log names batches up to offset " + end + ": " + LostBatchesException.WHY);
        }
        long first = store.minOffset(topic, partition);
        if (end < first) {
            if (end > 0) {
                throw new LostBatchesException("the store of " + id + " starts at offset " + first
                        + ", past the batches the Raft log names (up to offset " + end + "): a copy from a leader"
                        + " stopped before its snapshot was recorded; it is rebuilt from the other replicas");
            }
            // The log names no batch: the store holds none, from offset 0 (it held the tail of a copy cut short, or
            // what its retention left).
            LOG.info("{}: emptying the store (offsets {} to {}): the Raft log names no batch", id, first, stored - 1);
            store.emptyQueueAt(topic, partition, 0);
            return;
        }
        if (stored > end) {
            LOG.info("{}: cutting the store from offset {} to {}: {}", id, stored, end, why);
            store.truncateQueue(topic, partition, end);
        }
    }

    /**
     * @return the end of the last batch among the log's entries below {@code index} (0 if none); entries up to the
     *     latest snapshot's index count as the snapshot's (after an install the log may still hold entries of its own
     *     there, the tail of a leader of an earlier term, that the snapshot replaced)
     * @param log the replica's Raft log
     * @param latest its latest snapshot, or null
     * @param index the first entry not counted
     */
    long batchesEndBefore(RaftLog log, PartitionSnapshot latest, long index) throws IOException {
        long start = Math.max(log.getStartIndex(), 0);
        long above = latest == null ? start : Math.max(start, latest.index() + 1);
        for (long i = index - 1; i >= above; i--) {
            LogEntryProto entry = log.get(i);
            if (entry != null && entry.hasStateMachineLogEntry()) {
                return EntryHeader.decode(entry.getStateMachineLogEntry().getLogData()).end();
            }
        }
        // No batch entry in the log below the index and above the snapshot: the entries before are in the snapshot.
        if (latest != null && latest.index() >= start - 1 && latest.index() < index) {
            return latest.end();
        }
        if (log.getStartIndex() > 0) {
            throw new IllegalStateException("the Raft log of " + id + " starts at index " + log.getStartIndex()
                    + " with no batch entry below " + index + ": its earlier entries are gone");
        }
        return 0;
    }
}
