package io.sluice.store.internal.log;

import io.sluice.store.KafkaBatch;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * The layout of a batch log's records ({@code TopicLayout.BATCHES}): each is one Kafka record batch (v2, laid out
 * in {@link KafkaBatch}), stored
 * as its producer sent it except its first 8 bytes ({@code baseOffset}), which the store sets to the batch's
 * first queue offset. Batches lie back to back; nothing of the store's own sits between them. The store reads
 * only what it needs to append, check and recover them, all big-endian:
 * <pre>
 *  offset size field
 *   0     8    baseOffset: the first queue offset (set by the store; not covered by the CRC)
 *   8     4    batchLength: bytes after this field
 *  16     1    magic, 2
 *  17     4    CRC32C of bytes [21, 12 + batchLength)
 *  23     4    lastOffsetDelta: the batch covers baseOffset .. baseOffset + lastOffsetDelta
 *  35     8    maxTimestamp, epoch ms
 * </pre>
 * The rest (attributes, producer id and epoch, sequence, records) is covered by the CRC and left alone. A segment
 * still ends with the store's filler record ({@link RecordFormat#encodeFiller}) when the next batch does not fit;
 * its own position check tells it apart from a batch.
 *
 * <p>A batch carries no log position, so stale bytes are kept out by other means: a batch must continue its
 * queue (its baseOffset is the offset after the previous batch), segments are created zero-filled, and recovery
 * erases and forces what lies past a cut before anything is appended (docs/format.md, "Batch logs").
 */
public final class BatchFormat {

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    // The fields the store reads, as KafkaBatch lays the header out.
    /** Bytes before and including batchLength, which batchLength does not count. */
    public static final int LOG_OVERHEAD = KafkaBatch.LOG_OVERHEAD;
    static final int LENGTH_OFFSET = KafkaBatch.BATCH_LENGTH;
    public static final int MAGIC_OFFSET = KafkaBatch.MAGIC;
    static final int CRC_OFFSET = KafkaBatch.CRC;
    static final int CRC_START = KafkaBatch.CRC_START;
    static final int LAST_OFFSET_DELTA_OFFSET = KafkaBatch.LAST_OFFSET_DELTA;
    static final int MAX_TIMESTAMP_OFFSET = KafkaBatch.MAX_TIMESTAMP;
    static final int RECORDS_COUNT_OFFSET = KafkaBatch.RECORDS_COUNT;
    /** The smallest batch: its header, with no record. */
    public static final int HEADER_BYTES = KafkaBatch.HEADER_BYTES;
    /** Bytes a reader needs to check a batch against its index entry ({@link #matchesEntry}). */
    public static final int CHECK_BYTES = LAST_OFFSET_DELTA_OFFSET + 4;
    public static final byte MAGIC = KafkaBatch.MAGIC_V2;

    private BatchFormat() {
    }

    /**
     * Checks the frame of a batch about to be appended; its CRC32C is checked on the store's own copy
     * ({@link #checksumMatches}), which is what recovery will read.
     *
     * @param body the batch as sent (its baseOffset is not looked at)
     * @param count the offsets the caller says it covers
     * @return what is wrong with it, or null if the store can copy it in
     */
    public static String problem(MemorySegment body, int count) {
        String problem = headerProblem(body);
        if (problem != null) {
            return problem;
        }
        if (body.byteSize() == HEADER_BYTES) {
            return "it holds no record";
        }
        if ((long) body.get(INT, LAST_OFFSET_DELTA_OFFSET) + 1 != count) {
            return "its lastOffsetDelta (" + body.get(INT, LAST_OFFSET_DELTA_OFFSET) + ") does not cover " + count
                    + " offsets";
        }
        return null;
    }

    /** @return what is wrong with a batch's size, batchLength or magic, or null */
    public static String headerProblem(MemorySegment body) {
        long size = body.byteSize();
        if (size < HEADER_BYTES) {
            return "a batch of " + size + " bytes is shorter than a record batch header (" + HEADER_BYTES + ")";
        }
        if (body.get(INT, LENGTH_OFFSET) != size - LOG_OVERHEAD) {
            return "its batchLength (" + body.get(INT, LENGTH_OFFSET) + ") does not match its size (" + size
                    + " bytes, batchLength " + (size - LOG_OVERHEAD) + ")";
        }
        if (body.get(ValueLayout.JAVA_BYTE, MAGIC_OFFSET) != MAGIC) {
            return "its magic is " + body.get(ValueLayout.JAVA_BYTE, MAGIC_OFFSET) + ", not 2";
        }
        return null;
    }

    /** @return true if the batch's CRC32C matches its bytes from its attributes on */
    public static boolean checksumMatches(MemorySegment batch) {
        return batch.get(INT, CRC_OFFSET) == RecordFormat.checksum(batch, CRC_START, batch.byteSize() - CRC_START);
    }

    /** Copies {@code body} into {@code target} (its size) and sets its baseOffset. */
    public static void encode(MemorySegment target, long firstQueueOffset, MemorySegment body) {
        MemorySegment.copy(body, 0, target, 0, body.byteSize());
        target.set(LONG, 0, firstQueueOffset);
    }

    /**
     * Checks the batch at {@code offset} of {@code data} (one segment's bytes from its start).
     *
     * @param expectedFirst the queue offset the batch must start at, or -1 to take any
     * @return the batch's size if valid, else -1
     */
    public static long validate(MemorySegment data, long offset, long expectedFirst) {
        long remaining = data.byteSize() - offset;
        if (remaining < HEADER_BYTES) {
            return -1;
        }
        long size = (long) data.get(INT, offset + LENGTH_OFFSET) + LOG_OVERHEAD;
        long first = data.get(LONG, offset);
        long count = data.get(INT, offset + LAST_OFFSET_DELTA_OFFSET) + 1L;
        // What an append accepts, no more: at least one offset and at most one per byte (any number for a gap, which
        // holds no record), offsets that do not overflow.
        if (size < HEADER_BYTES || size > remaining || data.get(ValueLayout.JAVA_BYTE, offset + MAGIC_OFFSET) != MAGIC
                || first < 0 || (expectedFirst >= 0 && first != expectedFirst)
                || count < 1 || (count > size && !isGap(data, offset, size)) || first > Long.MAX_VALUE - count
                || data.get(INT, offset + CRC_OFFSET) != RecordFormat.checksum(data, offset + CRC_START,
                        size - CRC_START)) {
            return -1;
        }
        return size;
    }

    /**
     * @param batch the batch's first {@link #CHECK_BYTES} bytes at least
     * @return true if it is the batch an index entry names: its size, first offset and offset count
     */
    public static boolean matchesEntry(MemorySegment batch, long size, long firstQueueOffset, int count) {
        return batch.byteSize() >= CHECK_BYTES && size >= HEADER_BYTES
                && batch.get(INT, LENGTH_OFFSET) + (long) LOG_OVERHEAD == size
                && batch.get(ValueLayout.JAVA_BYTE, MAGIC_OFFSET) == MAGIC
                && batch.get(LONG, 0) == firstQueueOffset
                && batch.get(INT, LAST_OFFSET_DELTA_OFFSET) + 1L == count;
    }

    /**
     * @return true if the batch at {@code offset} of {@code data}, {@code size} bytes, is a gap: a header with no
     *     record, which compaction leaves where the batches of a run of offsets were all removed
     */
    public static boolean isGap(MemorySegment data, long offset, long size) {
        return size == HEADER_BYTES && data.get(INT, offset + RECORDS_COUNT_OFFSET) == 0;
    }

    /** @return true if {@code batch} (its first {@link #HEADER_BYTES} bytes at least) is a gap ({@link #isGap}) */
    public static boolean isGap(MemorySegment batch) {
        return batch.byteSize() >= HEADER_BYTES && isGap(batch, 0, batch.get(INT, LENGTH_OFFSET) + (long) LOG_OVERHEAD);
    }

    /**
     * Writes a gap into {@code target} ({@link #HEADER_BYTES} bytes): a valid record batch (v2) of no record that
     * covers the offsets {@code first} .. {@code first + count - 1}. Readers of the store skip it; were one sent, a
     * Kafka client would skip it too, as it skips the empty batches Kafka's own cleaner keeps.
     *
     * @param maxTimestamp the latest timestamp of the batches it stands for
     * @param leaderEpoch the partition leader epoch of the last of them
     */
    public static void encodeGap(MemorySegment target, long first, int count, long maxTimestamp, int leaderEpoch) {
        if (count < 1) {
            throw new IllegalArgumentException("a gap covers at least one offset, not " + count);
        }
        target.asSlice(0, HEADER_BYTES).fill((byte) 0);
        target.set(LONG, 0, first);
        target.set(INT, LENGTH_OFFSET, HEADER_BYTES - LOG_OVERHEAD);
        target.set(INT, KafkaBatch.PARTITION_LEADER_EPOCH, leaderEpoch);
        target.set(ValueLayout.JAVA_BYTE, MAGIC_OFFSET, MAGIC);
        target.set(INT, LAST_OFFSET_DELTA_OFFSET, count - 1);
        target.set(LONG, KafkaBatch.BASE_TIMESTAMP, maxTimestamp);
        target.set(LONG, MAX_TIMESTAMP_OFFSET, maxTimestamp);
        target.set(LONG, KafkaBatch.PRODUCER_ID, -1L);
        target.set(SHORT, KafkaBatch.PRODUCER_EPOCH, (short) -1);
        target.set(INT, KafkaBatch.BASE_SEQUENCE, -1);
        target.set(INT, RECORDS_COUNT_OFFSET, 0);
        target.set(INT, CRC_OFFSET, RecordFormat.checksum(target, CRC_START, HEADER_BYTES - CRC_START));
    }

    /** @return the batch's partition leader epoch */
    public static int leaderEpoch(MemorySegment batch) {
        return batch.get(INT, KafkaBatch.PARTITION_LEADER_EPOCH);
    }

    /** @return the batch's first queue offset */
    public static long firstOffset(MemorySegment batch) {
        return batch.get(LONG, 0);
    }

    /** @return the queue offsets the batch covers */
    public static int offsetCount(MemorySegment batch) {
        return batch.get(INT, LAST_OFFSET_DELTA_OFFSET) + 1;
    }

    /** @return the batch's max timestamp as its producer set it */
    public static long maxTimestamp(MemorySegment batch) {
        return batch.get(LONG, MAX_TIMESTAMP_OFFSET);
    }
}
