package io.sluice.store;

/**
 * What an acknowledged append was given.
 *
 * @param firstQueueOffset the queue offset of the first (or only) message appended
 * @param messageCount how many messages the append covered (consecutive queue offsets)
 * @param logPosition the commit-log position of the record holding them
 * @param recordBytes the size of that record in the log
 * @param storeTimestamp the store time, in epoch milliseconds, stamped on the record
 */
public record AppendResult(long firstQueueOffset, int messageCount, long logPosition, int recordBytes,
                           long storeTimestamp) {
    /** @return the queue offset after the last message appended */
    public long nextQueueOffset() {
        return firstQueueOffset + messageCount;
    }
}
