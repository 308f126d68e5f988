package io.sluice.store;

/**
 * A snapshot of the store's state and positions.
 *
 * @param state open, read-only or closed
 * @param reason why the store is read-only, or null
 * @param writePosition the log position after the last appended record
 * @param committedPosition the log position up to which bytes have reached the file (equals the write
 *     position except on {@link WritePath#WRITE_BUFFER})
 * @param flushedPosition the log position up to which the log has been forced to disk
 * @param minLogPosition the first log position still stored
 * @param segmentCount how many commit-log segment files exist
 * @param writePath the write path in use
 * @param flushMode the flush mode in use
 * @param consumerPositions registered consumer positions (group, topic, queue)
 * @param appendsRefused true while disk use is above the retention policy's hard ratio
 * @param lastRetention the last retention pass's report, or null if none ran since open
 * @param cache the read cache's counters, or null without a cache (MMAP, CHANNEL, or cacheBytes 0)
 * @param mappedBytes bytes of segment files mapped now
 * @param writeBufferBytes memory held by write-buffer pages (WRITE_BUFFER and DIRECT; 0 elsewhere)
 */
public record StoreStatus(State state, String reason, long writePosition, long committedPosition,
                          long flushedPosition, long minLogPosition, int segmentCount, WritePath writePath,
                          FlushMode flushMode, int consumerPositions, boolean appendsRefused,
                          RetentionReport lastRetention, CacheStats cache, long mappedBytes,
                          long writeBufferBytes) {

    /** The store's life cycle. */
    public enum State {
        /** Accepting appends and reads. */
        OPEN,
        /** A force or write failed: reads work, appends fail; see {@link #reason()}. */
        READ_ONLY,
        /** Closed. */
        CLOSED
    }
}
