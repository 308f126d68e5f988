package io.sluice.store;

import io.sluice.store.internal.log.BatchFormat;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.zip.CRC32C;

/**
 * Builds an uncompressed Kafka record batch (v2) of values with no keys or headers: what a BATCHES topic
 * ({@link TopicLayout#BATCHES}) takes from an embedder that is not a Kafka producer, and what Kafka consumers read
 * back. Its baseOffset is left 0: the store sets it as it appends.
 */
public final class KafkaBatch {

    private KafkaBatch() {
    }

    /**
     * Checks a batch as a BATCHES topic's append will, before it is handed on (a replicated log must refuse a batch
     * before it is in the log, not when each replica appends it).
     *
     * @param batch the batch as sent (its baseOffset is not looked at)
     * @return what is wrong with it, or null if a BATCHES topic takes it
     */
    public static String problem(MemorySegment batch) {
        if (batch.byteSize() < BatchFormat.HEADER_BYTES) {
            return "a batch of " + batch.byteSize() + " bytes is shorter than a record batch header ("
                    + BatchFormat.HEADER_BYTES + ")";
        }
        int count = BatchFormat.offsetCount(batch);
        if (count < 1 || count > batch.byteSize()) {
            return "its lastOffsetDelta (" + (count - 1) + ") is not one offset or more, at most one per byte";
        }
        String problem = BatchFormat.problem(batch, count);
        if (problem != null) {
            return problem;
        }
        return BatchFormat.checksumMatches(batch) ? null : "its CRC32C does not match its bytes";
    }

    /** @return the offsets a batch covers (its lastOffsetDelta + 1); check it with {@link #problem} first */
    public static int offsetCount(MemorySegment batch) {
        return BatchFormat.offsetCount(batch);
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
