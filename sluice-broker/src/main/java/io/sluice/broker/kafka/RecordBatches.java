package io.sluice.broker.kafka;

import java.nio.ByteBuffer;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;
import org.apache.kafka.common.utils.CloseableIterator;

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
    static final int MAX_TIMESTAMP_OFFSET = 35;
    static final int RECORDS_COUNT_OFFSET = 57;
    static final int HEADER_BYTES = 61;

    private RecordBatches() {
    }

    /**
     * Checks the records of one partition of a Produce request (v3+): exactly one batch of magic 2, whole, with a
     * matching CRC32C, no transaction or control marker, a record count that agrees with its offsets and with the
     * records it holds, each of them well formed (compressed ones decompressed to be counted).
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
            checkRecords(bytes, count);
        } else {
            checkCompressedRecords(only, count);
        }
        return only;
    }

    /**
     * Decompresses a compressed batch (keys and values skipped) and checks it holds exactly {@code count} records
     * with offset deltas 0..count-1, as Kafka's broker does before it takes one: a batch with a forged count would
     * otherwise claim offsets it has no records for, and consumers would fail on it.
     */
    private static void checkCompressedRecords(MutableRecordBatch batch, int count) {
        int seen = 0;
        try (CloseableIterator<Record> records = batch.skipKeyValueIterator(BufferSupplier.NO_CACHING)) {
            while (records.hasNext()) {
                Record record = records.next();
                if (record.offset() - batch.baseOffset() != seen) {
                    throw new CorruptRecordException("record " + seen + " of the batch has offset delta "
                            + (record.offset() - batch.baseOffset()));
                }
                seen++;
            }
        } catch (CorruptRecordException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new CorruptRecordException("the batch's compressed records cannot be read: " + e.getMessage());
        }
        if (seen != count) {
            throw new CorruptRecordException("the batch claims " + count + " records but holds " + seen);
        }
    }

    /**
     * Parses every record of an uncompressed batch without copying: its length, attributes, timestamp delta, offset
     * delta (which must be its index), key, value and headers must exactly fill it, and exactly {@code count}
     * records must fill the batch. Kafka's consumer refuses a batch that fails any of these.
     */
    private static void checkRecords(ByteBuffer batch, int count) {
        int end = batch.position() + batch.remaining();
        Cursor at = new Cursor(batch, batch.position() + HEADER_BYTES, end);
        for (int i = 0; i < count; i++) {
            if (at.position >= end) {
                throw new CorruptRecordException("the batch claims " + count + " records but holds " + i);
            }
            long length = at.varlong();
            if (length < 1 || length > end - at.position) {
                throw new CorruptRecordException("record " + i + " of the batch claims " + length + " bytes");
            }
            Cursor record = new Cursor(batch, at.position, at.position + (int) length);
            record.skip(1); // attributes
            record.varlong(); // timestamp delta
            if (record.varlong() != i) {
                throw new CorruptRecordException("record " + i + " of the batch has another offset delta");
            }
            record.skipBytes(true); // key
            record.skipBytes(true); // value
            long headers = record.varlong();
            if (headers < 0 || headers > length) {
                throw new CorruptRecordException("record " + i + " of the batch claims " + headers + " headers");
            }
            for (long h = 0; h < headers; h++) {
                record.skipBytes(false); // header key
                record.skipBytes(true); // header value
            }
            if (record.position != record.end) {
                throw new CorruptRecordException("record " + i + " of the batch is not filled by its fields");
            }
            at.position = record.end;
        }
        if (at.position != end) {
            throw new CorruptRecordException("the batch holds " + (end - at.position) + " bytes past its " + count
                    + " records");
        }
    }

    /** Reads Kafka's zig-zag varints and length-prefixed fields within bounds; any overrun is a corrupt batch. */
    private static final class Cursor {
        private final ByteBuffer buffer;
        int position;
        final int end;

        Cursor(ByteBuffer buffer, int position, int end) {
            this.buffer = buffer;
            this.position = position;
            this.end = end;
        }

        long varlong() {
            long value = 0;
            int shift = 0;
            int b;
            do {
                if (position >= end || shift > 63) {
                    throw new CorruptRecordException("a varint of the batch is malformed");
                }
                b = buffer.get(position++) & 0xFF;
                value |= (long) (b & 0x7F) << shift;
                shift += 7;
            } while ((b & 0x80) != 0);
            return (value >>> 1) ^ -(value & 1);
        }

        void skip(int bytes) {
            if (bytes < 0 || bytes > end - position) {
                throw new CorruptRecordException("a field of the batch runs past its record");
            }
            position += bytes;
        }

        /** Skips a varint length and that many bytes; -1 (null) allowed if {@code nullable}. */
        void skipBytes(boolean nullable) {
            long length = varlong();
            if (length == -1 && nullable) {
                return;
            }
            if (length < 0 || length > end - position) {
                throw new CorruptRecordException("a field of the batch claims " + length + " bytes");
            }
            position += (int) length;
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

    /** @return the largest record timestamp of a stored batch (for LogAppendTime batches, the append time) */
    static long maxTimestamp(ByteBuffer batch) {
        return batch.getLong(batch.position() + MAX_TIMESTAMP_OFFSET);
    }

    /** @return the sequence of the last record of a batch whose first has {@code base}, wrapping as Kafka does */
    static int lastSequence(int base, int lastOffsetDelta) {
        long last = (long) base + lastOffsetDelta;
        return (int) (last > Integer.MAX_VALUE ? last - Integer.MAX_VALUE - 1 : last);
    }
}
