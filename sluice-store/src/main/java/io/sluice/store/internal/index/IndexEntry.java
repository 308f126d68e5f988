package io.sluice.store.internal.index;

/**
 * One decoded queue-index entry (its check word already matched).
 *
 * @param logPosition position of the record
 * @param storeTimestamp the record's store time
 * @param recordSize the record's size
 * @param messageCount messages in the record
 * @param indexInRecord this message's place in the record
 */
public record IndexEntry(long logPosition, long storeTimestamp, int recordSize, int messageCount,
                         int indexInRecord) {

    /** @return the log position after the record */
    public long recordEnd() {
        return logPosition + recordSize;
    }
}
