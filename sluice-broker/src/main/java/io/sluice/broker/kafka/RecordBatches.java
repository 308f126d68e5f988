package io.sluice.broker.kafka;

import java.io.IOException;
import java.io.InputStream;
import io.sluice.store.KafkaBatch;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.CorruptRecordException;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;

/**
 * Checks of the record batches (magic 2) a producer sends, before anything is stored, and reads of the header
 * fields of batches already stored; the batch layout is the store's {@link KafkaBatch}.
 */
final class RecordBatches {

    private RecordBatches() {
    }

    /**
     * A batch that passed every check: the store's checked value (its CRC32C computed once, here) and its codec.
     *
     * @param batch the checked batch, a view of the request's bytes
     * @param compression its codec
     * @param firstRecordTimestamp the earliest timestamp of its records
     * @param lastRecordTimestamp the latest timestamp of its records
     * @param keyless whether one of its records has no key
     * @param transactional whether it is a transaction's batch (bit 4 of its attributes)
     */
    record Checked(KafkaBatch batch, CompressionType compression, long firstRecordTimestamp, long lastRecordTimestamp,
                   boolean keyless, boolean transactional) {
    }

    /** Bits 0-2 of the attributes: the compression codec's id. */
    private static final int COMPRESSION_MASK = 0x07;

    /**
     * The least a compressed batch may decompress to, whatever the largest batch taken: 64 MiB. A batch refused for
     * decompressing to more gets MESSAGE_TOO_LARGE, which a Kafka producer answers by splitting it.
     */
    static final long MIN_DECOMPRESSED_BOUND_BYTES = 64L << 20;

    /**
     * Checks the records of one partition of a Produce request (v3+) in the order Kafka's broker does, answering
     * each fault with Kafka's error: exactly one whole batch of magic 2 ({@code INVALID_RECORD}), not larger than
     * {@code maxBatchBytes} ({@code MESSAGE_TOO_LARGE}, before anything is decompressed), with a matching CRC32C
     * ({@code CORRUPT_MESSAGE}; {@link KafkaBatch#check}, the batch's one CRC pass on this broker) and a known codec,
     * not a control batch, a record count that agrees with its offsets, and each record well formed
     * ({@link RecordWalker}; a compressed batch decompressed with a bound of the larger of {@code maxBatchBytes} and
     * {@link #MIN_DECOMPRESSED_BOUND_BYTES}).
     *
     * @param walker walks the records; one per thread
     * @return the batch, checked
     * @throws BatchRefusedException naming the error to answer
     */
    static Checked check(MemoryRecords records, int maxBatchBytes, RecordWalker walker) {
        MutableRecordBatch only = onlyBatch(records);
        if (only.magic() != RecordBatch.MAGIC_VALUE_V2) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, "record batches of magic " + only.magic()
                    + " are not taken; magic 2 is");
        }
        if (only.sizeInBytes() > maxBatchBytes) {
            throw new BatchRefusedException(Errors.MESSAGE_TOO_LARGE, "a batch of " + only.sizeInBytes()
                    + " bytes is over the largest taken (" + maxBatchBytes + ")");
        }
        ByteBuffer bytes = records.buffer();
        KafkaBatch checked;
        try {
            checked = KafkaBatch.check(MemorySegment.ofBuffer(bytes));
        } catch (KafkaBatch.InvalidBatchException e) {
            // Kafka's broker finds a batch shorter than its header, or one whose CRC does not match, corrupt; what the
            // CRC covers is read only after it matched, its codec first (an unknown one: UNKNOWN_SERVER_ERROR).
            boolean corrupt = e.checksum() || bytes.remaining() < KafkaBatch.HEADER_BYTES;
            if (!corrupt) {
                compression(bytes);
            }
            throw new BatchRefusedException(corrupt ? Errors.CORRUPT_MESSAGE : Errors.INVALID_RECORD,
                    "the batch: " + e.getMessage());
        }
        CompressionType compression = compression(bytes);
        if (only.isControlBatch()) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, "clients may not write control batches");
        }
        int count = bytes.getInt(bytes.position() + KafkaBatch.RECORDS_COUNT);
        int lastOffsetDelta = bytes.getInt(bytes.position() + KafkaBatch.LAST_OFFSET_DELTA);
        if (count < 1 || lastOffsetDelta != count - 1) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, "the batch claims " + count
                    + " records but its offsets span " + (lastOffsetDelta + 1L));
        }
        ByteBuffer recordBytes = bytes.duplicate().position(bytes.position() + KafkaBatch.HEADER_BYTES);
        if (compression == CompressionType.NONE) {
            walker.walk(recordBytes, count);
        } else {
            InputStream decompressed;
            try {
                decompressed = Compression.of(compression).build().wrapForInput(recordBytes, RecordBatch.MAGIC_VALUE_V2,
                        BufferSupplier.NO_CACHING);
            } catch (RuntimeException e) {
                throw new BatchRefusedException(Errors.INVALID_RECORD, "the batch's compressed records cannot be read: "
                        + e);
            }
            try (decompressed) {
                walker.walk(decompressed, count, Math.max(maxBatchBytes, MIN_DECOMPRESSED_BOUND_BYTES));
            } catch (IOException e) {
                throw new BatchRefusedException(Errors.INVALID_RECORD, "the batch's compressed records cannot be read: "
                        + e);
            }
        }
        long base = bytes.getLong(bytes.position() + KafkaBatch.BASE_TIMESTAMP);
        return new Checked(checked, compression, base + walker.minTimestampDelta(), base + walker.maxTimestampDelta(),
                walker.keyless(), only.isTransactional());
    }

    /** Bit 3 of the attributes: the batch's timestamp type, set for LogAppendTime. */
    private static final int LOG_APPEND_TIME_FLAG = 0x08;

    /**
     * Stamps a checked batch with the broker's time, as Kafka's broker does for a topic whose message.timestamp.type is
     * LogAppendTime: a copy whose timestamp type is LogAppendTime and whose max timestamp is {@code now} (every record's
     * time, for the clients that read it), its CRC32C computed again.
     *
     * @return the stamped copy, checked
     */
    static Checked stampLogAppendTime(Checked checked, long now) {
        ByteBuffer source = checked.batch().buffer();
        ByteBuffer copy = ByteBuffer.allocate(source.remaining());
        copy.put(source.duplicate()).flip();
        copy.putShort(KafkaBatch.ATTRIBUTES, (short) (copy.getShort(KafkaBatch.ATTRIBUTES) | LOG_APPEND_TIME_FLAG));
        copy.putLong(KafkaBatch.MAX_TIMESTAMP, now);
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(copy.duplicate().position(KafkaBatch.CRC_START));
        copy.putInt(KafkaBatch.CRC, (int) crc.getValue());
        return new Checked(KafkaBatch.check(MemorySegment.ofBuffer(copy)), checked.compression(), now, now,
                checked.keyless(), checked.transactional());
    }

    /** @return the one batch the records hold, whole */
    private static MutableRecordBatch onlyBatch(MemoryRecords records) {
        MutableRecordBatch only = null;
        long covered = 0;
        try {
            for (MutableRecordBatch batch : records.batches()) {
                if (only != null) {
                    throw new BatchRefusedException(Errors.INVALID_RECORD,
                            "a Produce request carries exactly one record batch per partition");
                }
                only = batch;
                covered += batch.sizeInBytes();
            }
        } catch (IllegalArgumentException | IndexOutOfBoundsException e) {
            // Kafka's batch iterator trusts the length field in its limit arithmetic: a length near 2^31 overflows,
            // and Kafka's broker answers the same fault with UNKNOWN_SERVER_ERROR.
            throw new BatchRefusedException(Errors.UNKNOWN_SERVER_ERROR, "the batch's length field is not a length: "
                    + e.getMessage());
        } catch (CorruptRecordException e) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, e.getMessage());
        }
        if (only == null || covered != records.sizeInBytes()) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, "the partition's records are not one whole record"
                    + " batch (" + records.sizeInBytes() + " bytes, " + covered + " in whole batches)");
        }
        return only;
    }

    /**
     * @return the batch's codec
     * @throws BatchRefusedException for an id no codec has (UNKNOWN_SERVER_ERROR, as Kafka's broker answers)
     */
    private static CompressionType compression(ByteBuffer batch) {
        int id = batch.getShort(batch.position() + KafkaBatch.ATTRIBUTES) & COMPRESSION_MASK;
        for (CompressionType type : CompressionType.values()) {
            if (type.id == id) {
                return type;
            }
        }
        throw new BatchRefusedException(Errors.UNKNOWN_SERVER_ERROR, "unknown compression type id " + id);
    }

    /** @return the producer id of a stored batch (its bytes from baseOffset on) */
    static long producerId(ByteBuffer batch) {
        return batch.getLong(batch.position() + KafkaBatch.PRODUCER_ID);
    }

    static short producerEpoch(ByteBuffer batch) {
        return batch.getShort(batch.position() + KafkaBatch.PRODUCER_EPOCH);
    }

    static int baseSequence(ByteBuffer batch) {
        return batch.getInt(batch.position() + KafkaBatch.BASE_SEQUENCE);
    }

    static int lastOffsetDelta(ByteBuffer batch) {
        return batch.getInt(batch.position() + KafkaBatch.LAST_OFFSET_DELTA);
    }

    /** @return the largest record timestamp of a stored batch (for LogAppendTime batches, the append time) */
    static long maxTimestamp(ByteBuffer batch) {
        return batch.getLong(batch.position() + KafkaBatch.MAX_TIMESTAMP);
    }
}
