package io.sluice.store;

import io.sluice.store.internal.log.BatchFormat;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * A Kafka record batch (v2), checked once: the layout of its header, the check every batch passes on its way into a
 * BATCHES topic ({@link TopicLayout#BATCHES}), and the checked value that is passed on from there, so that no layer
 * after the first checks it again (one CRC32C pass per batch on the node that takes it from a producer). Also builds
 * an uncompressed batch of values with no keys or headers: what a BATCHES topic takes from an embedder that is not a
 * Kafka producer, and what Kafka consumers read back. Its baseOffset is left 0: the store sets it as it appends.
 *
 * <p>The header, big-endian (the offsets below are this class's constants):
 * <pre>
 *  offset size field
 *   0     8    baseOffset: the first offset (set by the store; not covered by the CRC)
 *   8     4    batchLength: bytes after this field
 *  12     4    partitionLeaderEpoch (not covered by the CRC)
 *  16     1    magic, 2
 *  17     4    CRC32C of bytes [21, 12 + batchLength)
 *  21     2    attributes: bits 0-2 the compression codec, bit 4 transactional, bit 5 control
 *  23     4    lastOffsetDelta: the batch covers baseOffset .. baseOffset + lastOffsetDelta
 *  27     8    baseTimestamp, epoch ms
 *  35     8    maxTimestamp, epoch ms
 *  43     8    producerId, -1 for none
 *  51     2    producerEpoch
 *  53     4    baseSequence
 *  57     4    recordsCount
 *  61          records
 * </pre>
 *
 * <p>A checked batch is a view of bytes its maker leaves alone from then on, but for the partitionLeaderEpoch, which
 * the CRC does not cover ({@link #setPartitionLeaderEpoch}).
 */
public final class KafkaBatch {

    public static final int BASE_OFFSET = 0;
    public static final int BATCH_LENGTH = 8;
    public static final int PARTITION_LEADER_EPOCH = 12;
    public static final int MAGIC = 16;
    public static final int CRC = 17;
    public static final int ATTRIBUTES = 21;
    public static final int LAST_OFFSET_DELTA = 23;
    public static final int BASE_TIMESTAMP = 27;
    public static final int MAX_TIMESTAMP = 35;
    public static final int PRODUCER_ID = 43;
    public static final int PRODUCER_EPOCH = 51;
    public static final int BASE_SEQUENCE = 53;
    public static final int RECORDS_COUNT = 57;
    /** The header's size: where the records start, and the smallest batch. */
    public static final int HEADER_BYTES = 61;
    /** Bytes before and including batchLength, which batchLength does not count. */
    public static final int LOG_OVERHEAD = 12;
    /** Where the bytes the CRC covers start (the attributes). */
    public static final int CRC_START = ATTRIBUTES;
    /** The only magic a batch may have. */
    public static final byte MAGIC_V2 = 2;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private final MemorySegment bytes;
    private final int offsetCount;

    private KafkaBatch(MemorySegment bytes, int offsetCount) {
        this.bytes = bytes;
        this.offsetCount = offsetCount;
    }

    /** A batch a BATCHES topic does not take, and whether its CRC32C is what is wrong. */
    public static final class InvalidBatchException extends IllegalArgumentException {
        private static final long serialVersionUID = 1L;
        private final boolean checksum;

        InvalidBatchException(String message, boolean checksum) {
            super(message);
            this.checksum = checksum;
        }

        /** @return true if the batch's frame is whole and its CRC32C does not match its bytes */
        public boolean checksum() {
            return checksum;
        }
    }

    /**
     * Checks a batch as a BATCHES topic takes it: its size, batchLength and magic, then its CRC32C, then its offsets
     * (the order of Kafka's broker, which answers a bad CRC before it reads the fields the CRC covers).
     *
     * @param batch the batch as sent (its baseOffset is not looked at); the caller leaves its bytes alone from now on
     *     but for the partitionLeaderEpoch
     * @return the checked batch, a view of {@code batch}
     * @throws InvalidBatchException naming what is wrong
     */
    public static KafkaBatch check(MemorySegment batch) {
        String problem = headerProblem(batch);
        if (problem != null) {
            throw new InvalidBatchException(problem, false);
        }
        if (!BatchFormat.checksumMatches(batch)) {
            throw new InvalidBatchException("its CRC32C does not match its bytes", true);
        }
        problem = offsetsProblem(batch);
        if (problem != null) {
            throw new InvalidBatchException(problem, false);
        }
        return new KafkaBatch(batch, offsetCount(batch));
    }

    /**
     * Checks a batch as {@link #check} does, before it is handed on (a replicated log must refuse a batch before it
     * is in the log, not when each replica appends it).
     *
     * @param batch the batch as sent (its baseOffset is not looked at)
     * @return what is wrong with it, or null if a BATCHES topic takes it
     */
    public static String problem(MemorySegment batch) {
        try {
            check(batch);
            return null;
        } catch (InvalidBatchException e) {
            return e.getMessage();
        }
    }

    /** @return what is wrong with the batch's size, batchLength or magic, or null */
    private static String headerProblem(MemorySegment batch) {
        return BatchFormat.headerProblem(batch);
    }

    /** @return what is wrong with the offsets the batch covers (one or more, at most one per byte), or null */
    private static String offsetsProblem(MemorySegment batch) {
        long count = batch.get(INT, LAST_OFFSET_DELTA) + 1L;
        if (count < 1 || count > batch.byteSize()) {
            return "its lastOffsetDelta (" + (count - 1) + ") is not one offset or more, at most one per byte";
        }
        return null;
    }

    /** @return the offsets a batch covers (its lastOffsetDelta + 1); check it with {@link #problem} first */
    public static int offsetCount(MemorySegment batch) {
        return batch.get(INT, LAST_OFFSET_DELTA) + 1;
    }

    /**
     * @return the batch's bytes, a read-only view: a checked batch is trusted as it is, so nothing but
     *     {@link #setPartitionLeaderEpoch} changes it (the store sets the baseOffset in its own copy)
     */
    public MemorySegment bytes() {
        return bytes.asReadOnly();
    }

    /** @return the batch's size in bytes */
    public int size() {
        return (int) bytes.byteSize();
    }

    /** @return the offsets the batch covers */
    public int offsetCount() {
        return offsetCount;
    }

    /** @return the producer id, -1 if the batch has none */
    public long producerId() {
        return bytes.get(LONG, PRODUCER_ID);
    }

    /** @return the producer's epoch */
    public short producerEpoch() {
        return bytes.get(SHORT, PRODUCER_EPOCH);
    }

    /** @return the sequence of the batch's first record */
    public int baseSequence() {
        return bytes.get(INT, BASE_SEQUENCE);
    }

    /**
     * @return the sequence of the batch's last record (sequences wrap from Integer.MAX_VALUE to 0), -1 if the batch
     *     has no sequence (its baseSequence is -1)
     */
    public int lastSequence() {
        int base = baseSequence();
        return base == -1 ? -1 : lastSequence(base, offsetCount - 1);
    }

    /** @return the sequence {@code delta} records after {@code base}, wrapping as Kafka's do */
    public static int lastSequence(int base, int delta) {
        long last = (long) base + delta;
        return last > Integer.MAX_VALUE ? (int) (last - Integer.MAX_VALUE - 1) : (int) last;
    }

    /** @return the batch's max timestamp as its producer set it */
    public long maxTimestamp() {
        return bytes.get(LONG, MAX_TIMESTAMP);
    }

    /** Sets the partitionLeaderEpoch, which the CRC does not cover: the batch stays checked. */
    public void setPartitionLeaderEpoch(int epoch) {
        bytes.set(INT, PARTITION_LEADER_EPOCH, epoch);
    }

    /** @return the same checked batch in a heap array of its own, which the caller may hand on and keep */
    public KafkaBatch copy() {
        byte[] copy = new byte[size()];
        MemorySegment.copy(bytes, 0, MemorySegment.ofArray(copy), 0, copy.length);
        return new KafkaBatch(MemorySegment.ofArray(copy), offsetCount);
    }

    /** @return the batch's bytes as a read-only buffer (big-endian, position 0, limit its size), a view */
    public ByteBuffer buffer() {
        return bytes.asReadOnly().asByteBuffer().order(ByteOrder.BIG_ENDIAN);
    }

    /**
     * @param timestamp every record's timestamp, epoch ms (the batch's base and max timestamp)
     * @param values the records' values, one or more
     * @return the batch's bytes
     */
    public static byte[] of(long timestamp, List<byte[]> values) {
        if (values.isEmpty()) {
            throw new IllegalArgumentException("a record batch holds one record or more");
        }
        ByteArrayOutputStream records = new ByteArrayOutputStream();
        for (int i = 0; i < values.size(); i++) {
            byte[] value = values.get(i);
            ByteArrayOutputStream record = new ByteArrayOutputStream();
            record.write(0); // attributes
            writeVarlong(record, 0); // timestamp delta
            writeVarlong(record, i); // offset delta
            writeVarlong(record, -1); // no key
            writeVarlong(record, value.length);
            record.writeBytes(value);
            writeVarlong(record, 0); // no headers
            writeVarlong(records, record.size());
            records.writeBytes(record.toByteArray());
        }
        int size = 61 + records.size();
        ByteBuffer batch = ByteBuffer.allocate(size);
        batch.putLong(0); // baseOffset: set by the store
        batch.putInt(size - 12); // batchLength
        batch.putInt(0); // partitionLeaderEpoch
        batch.put((byte) 2); // magic
        batch.putInt(0); // CRC32C, below
        batch.putShort((short) 0); // attributes: no compression, CreateTime
        batch.putInt(values.size() - 1); // lastOffsetDelta
        batch.putLong(timestamp); // baseTimestamp
        batch.putLong(timestamp); // maxTimestamp
        batch.putLong(-1); // producerId: none
        batch.putShort((short) -1); // producerEpoch
        batch.putInt(-1); // baseSequence
        batch.putInt(values.size()); // records count
        batch.put(records.toByteArray());
        CRC32C crc = new CRC32C();
        crc.update(batch.array(), 21, size - 21);
        batch.putInt(17, (int) crc.getValue());
        return batch.array();
    }

    /** Zig-zag varint, as Kafka's records encode their fields. */
    private static void writeVarlong(ByteArrayOutputStream out, long value) {
        long v = (value << 1) ^ (value >> 63);
        while ((v & ~0x7FL) != 0) {
            out.write((int) ((v & 0x7F) | 0x80));
            v >>>= 7;
        }
        out.write((int) v);
    }
}
