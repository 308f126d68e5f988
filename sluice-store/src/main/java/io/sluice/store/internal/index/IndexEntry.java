package io.sluice.store.internal.index;

/**
 * One decoded queue-index entry.
 *
 * @param logPosition position of the record
 * @param storeTimestamp the record's store time
 * @param recordSize the record's size; 0 for an empty entry
 * @param messageCount messages in the record
 * @param indexInRecord this message's place in the record
 * @param tagHash the tag's hash
 */
public record IndexEntry(long logPosition, long storeTimestamp, int recordSize, int messageCount,
                         int indexInRecord, int tagHash) {

    /** @return true if the entry was never written */
    public boolean isEmpty() {
        return recordSize == 0;
    }

    /** @return the log position after the record */
    public long recordEnd() {
        return logPosition + recordSize;
    }
}
