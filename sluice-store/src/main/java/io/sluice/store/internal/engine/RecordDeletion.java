package io.sluice.store.internal.engine;

import io.sluice.store.StoreException;
import io.sluice.store.internal.io.AtomicFile;
import java.io.IOException;

/**
 * Records deleted on request ({@code Store.deleteRecords}, Kafka's DeleteRecords): a queue's first offset raised,
 * recorded in the store's {@code log-starts} file (docs/format.md) and forced before the call returns, then applied
 * to the queue's index. Retention deletes the segments wholly below it later.
 *
 * <p>Thread-safe: changes hold the log-creation lock, as the topic registry's do.
 */
public final class RecordDeletion {

    private final Logs logs;

    RecordDeletion(Logs logs) {
        this.logs = logs;
    }

    /** Raises a queue's first offset ({@code Store.deleteRecords}); @return the queue's first offset after */
    public long deleteBefore(String topic, int queueId, long offset) {
        Names.checkTopic(topic);
        if (queueId < 0) {
            throw new IllegalArgumentException("queue id must be 0 or more, was " + queueId);
        }
        logs.checkWritable();
        synchronized (logs.ownLock()) {
            LogStore log = logs.useForReading(topic, queueId);
            try {
                return deleteBefore(log, topic, queueId, offset);
            } finally {
                logs.release(log);
            }
        }
    }

    private long deleteBefore(LogStore log, String topic, int queueId, long offset) {
        long next = log.nextOffset(topic, queueId);
        if (offset < 0 || offset > next) {
            throw new IllegalArgumentException("queue " + topic + "-" + queueId + " holds offsets up to " + next
                    + "; records can be deleted below an offset from 0 to it, not below " + offset);
        }
        long first = log.readLong(reader -> reader.minOffset(topic, queueId));
        if (offset <= first) {
            return first;
        }
        try {
            logs.logStarts().raise(logs.config().fileIO(), logs.root(), topic, queueId, offset);
        } catch (AtomicFile.UncertainReplaceException e) {
            // The file may or may not say so now: the queue must not be appended to as if it did not.
            logs.stopWriting("saving the log starts failed after their rename: " + e.getMessage());
            throw new StoreException("cannot delete the records of " + topic + "-" + queueId + " below " + offset
                    + ": " + e.getMessage() + "; the store is now read-only", e);
        } catch (IOException e) {
            throw new StoreException("cannot delete the records of " + topic + "-" + queueId + " below " + offset
                    + ": " + e.getMessage(), e);
        }
        log.raiseStart(topic, queueId, offset);
        return log.readLong(reader -> reader.minOffset(topic, queueId));
    }
}
