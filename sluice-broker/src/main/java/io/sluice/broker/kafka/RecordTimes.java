package io.sluice.broker.kafka;

import io.sluice.broker.Partition;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import java.nio.ByteBuffer;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;

/**
 * ListOffsets by time, on the records' own timestamps (the producers' CreateTime, or a store message's born time)
 * as Kafka answers it, not on the store's append times: a back-filled record keeps the time its producer gave it.
 *
 * <p>A lookup by time starts where the store's time index puts the target (the first record appended at or after
 * it): a record created before it was appended cannot have a timestamp at or past the target before that point.
 * From there it reads batch headers forward, and opens (decompresses) only the batch whose largest timestamp
 * reaches the target. A record whose producer's clock ran ahead of the broker's may therefore be passed over when
 * it lies before that point. The largest timestamp is found by reading every batch header of the partition.
 */
final class RecordTimes {

    /** Messages and bytes read per step. */
    private static final int STEP_MESSAGES = 1_000;
    private static final long STEP_BYTES = 8L << 20;

    /** A record: its offset and its timestamp. */
    record Found(long offset, long timestamp) {
    }

    private RecordTimes() {
    }

    /** @return the first record (by offset) whose timestamp is at or after {@code target}, or null if none is */
    static Found firstAtOrAfter(Partition partition, long target) {
        long end = partition.logEndOffset();
        long offset = Math.max(partition.logStartOffset(), partition.offsetForTimestamp(target));
        while (offset < end) {
            try (ReadResult read = partition.read(offset, STEP_MESSAGES, STEP_BYTES)) {
                if (read.status() != ReadResult.Status.FOUND) {
                    return null;
                }
                for (StoredMessage message : read.messages()) {
                    Found found = firstIn(message, offset, target);
                    if (found != null) {
                        return found;
                    }
                }
                offset = read.nextOffset();
            }
        }
        return null;
    }

    /** @return the first record (by offset) with the partition's largest timestamp, or null if it is empty */
    static Found largest(Partition partition) {
        long end = partition.logEndOffset();
        long offset = partition.logStartOffset();
        long largest = Long.MIN_VALUE;
        long holder = -1;
        while (offset < end) {
            try (ReadResult read = partition.read(offset, STEP_MESSAGES, STEP_BYTES)) {
                if (read.status() != ReadResult.Status.FOUND) {
                    break;
                }
                for (StoredMessage message : read.messages()) {
                    long max = message.opaque() ? RecordBatches.maxTimestamp(message.bodyBuffer())
                            : message.bornTimestamp();
                    if (max > largest) {
                        largest = max;
                        holder = message.queueOffset();
                    }
                }
                offset = read.nextOffset();
            }
        }
        if (holder < 0) {
            return null;
        }
        // The record itself, inside the batch that holds the largest timestamp.
        try (ReadResult read = partition.read(holder, 1, 1)) {
            return read.messages().isEmpty() ? null : firstIn(read.messages().getFirst(), holder, largest);
        }
    }

    /**
     * @return the first record of a stored message or batch at or past offset {@code from} with a timestamp at or
     *     after {@code target}, or null
     */
    private static Found firstIn(StoredMessage message, long from, long target) {
        if (!message.opaque()) {
            return message.queueOffset() >= from && message.bornTimestamp() >= target
                    ? new Found(message.queueOffset(), message.bornTimestamp()) : null;
        }
        ByteBuffer bytes = message.bodyBuffer();
        if (RecordBatches.maxTimestamp(bytes) < target) {
            return null;
        }
        for (MutableRecordBatch batch : MemoryRecords.readableRecords(bytes.slice()).batches()) {
            boolean appendTime = batch.timestampType() == TimestampType.LOG_APPEND_TIME;
            for (Record record : batch) {
                long timestamp = appendTime ? batch.maxTimestamp() : record.timestamp();
                if (record.offset() >= from && timestamp >= target) {
                    return new Found(record.offset(), timestamp);
                }
            }
        }
        return null;
    }
}
