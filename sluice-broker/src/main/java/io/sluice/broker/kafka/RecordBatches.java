package io.sluice.broker.kafka;

import java.nio.ByteBuffer;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * Checks of the record batches (magic 2) a producer sends, before anything is stored, and reads of the header
 * fields of batches already stored. Batch layout (big-endian): baseOffset int64 @0, batchLength int32 @8,
 * partitionLeaderEpoch int32 @12, magic int8 @16, crc uint32 @17 (CRC32C of bytes 21..end), attributes int16 @21,
 * lastOffsetDelta int32 @23, baseTimestamp int64 @27, maxTimestamp int64 @35, producerId int64 @43,
 * producerEpoch int16 @51, baseSequence int32 @53, recordsCount int32 @57, records @61.
 */
final class RecordBatches {

    static final int PRODUCER_ID_OFFSET = 43;
    static final int PRODUCER_EPOCH_OFFSET = 51;
    static final int BASE_SEQUENCE_OFFSET = 53;
    static final int LAST_OFFSET_DELTA_OFFSET = 23;
    static final int RECORDS_COUNT_OFFSET = 57;
    static final int HEADER_BYTES = 61;

    private RecordBatches() {
    }

    /**
     * Checks the records of one partition of a Produce request (v3+): exactly one batch of magic 2, whole, with a
     * matching CRC32C, no transaction or control marker, a record count that agrees with its offsets and, when not
     * compressed, with the records it holds.
     *
     * @return the batch
     * @throws CorruptRecordException for a damaged batch (CORRUPT_MESSAGE)
     * @throws InvalidRecordException for a batch this broker does not take (INVALID_RECORD)
     */
    static MutableRecordBatch check(MemoryRecords records) {
        MutableRecordBatch only = null;
        long covered = 0;
        try {
            for (MutableRecordBatch batch : records.batches()) {
                if (only != null) {
                    throw new InvalidRecordException("a Produce request carries exactly one record batch per partition");
                }
                only = batch;
                covered += batch.sizeInBytes();
            }
        } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            // Kafka's batch iterator trusts the length field in its limit arithmetic: a length near 2^31 overflows.
            throw new CorruptRecordException("the batch's length field is not a length: " + e.getMessage());
        }
        if (only == null || covered != records.sizeInBytes()) {
            throw new CorruptRecordException("the partition's records are not one whole record batch ("
                    + records.sizeInBytes() + " bytes, " + covered + " in whole batches)");
        }
        if (only.magic() != RecordBatch.MAGIC_VALUE_V2) {
            throw new InvalidRecordException("record batches of magic " + only.magic() + " are not taken; magic 2 is");
        }
        only.ensureValid();
        if (only.isTransactional() || only.isControlBatch()) {
            throw new InvalidRecordException("transactions are not supported by this broker");
        }
        Integer count = only.countOrNull();
        ByteBuffer bytes = records.buffer();
        int lastOffsetDelta = bytes.getInt(bytes.position() + LAST_OFFSET_DELTA_OFFSET);
        if (count == null || count < 1 || lastOffsetDelta != count - 1) {
            throw new CorruptRecordException("the batch claims " + count + " records but its offsets span "
                    + (lastOffsetDelta + 1L));
        }
        if (only.compressionType() == CompressionType.NONE) {
            checkRecordLengths(bytes, count);
        }
        return only;
    }

    /** Walks the records' length prefixes: exactly {@code count} records must fill the batch. */
    private static void checkRecordLengths(ByteBuffer batch, int count) {
        int end = batch.position() + batch.remaining();
        int at = batch.position() + HEADER_BYTES;
        for (int i = 0; i < count; i++) {
            if (at >= end) {
                throw new CorruptRecordException("the batch claims " + count + " records but holds " + i);
            }
            long value = 0;
            int shift = 0;
            int b;
            do {
                if (at >= end || shift > 28) {
                    throw new CorruptRecordException("a record length of the batch is malformed");
                }
                b = batch.get(at++) & 0xFF;
                value |= (long) (b & 0x7F) << shift;
                shift += 7;
            } while ((b & 0x80) != 0);
            long length = (value >>> 1) ^ -(value & 1);
            if (length < 0 || length > end - at) {
                throw new CorruptRecordException("record " + i + " of the batch claims " + length + " bytes");
            }
            at += (int) length;
        }
        if (at != end) {
            throw new CorruptRecordException("the batch holds " + (end - at) + " bytes past its " + count + " records");
        }
    }

    /** @return the producer id of a stored batch (its bytes from baseOffset on) */
    static long producerId(ByteBuffer batch) {
        return batch.getLong(batch.position() + PRODUCER_ID_OFFSET);
    }

    static short producerEpoch(ByteBuffer batch) {
        return batch.getShort(batch.position() + PRODUCER_EPOCH_OFFSET);
    }

    static int baseSequence(ByteBuffer batch) {
        return batch.getInt(batch.position() + BASE_SEQUENCE_OFFSET);
    }

    static int lastOffsetDelta(ByteBuffer batch) {
        return batch.getInt(batch.position() + LAST_OFFSET_DELTA_OFFSET);
    }

    /** @return the sequence of the last record of a batch whose first has {@code base}, wrapping as Kafka does */
    static int lastSequence(int base, int lastOffsetDelta) {
        long last = (long) base + lastOffsetDelta;
        return (int) (last > Integer.MAX_VALUE ? last - Integer.MAX_VALUE - 1 : last);
    }
}
