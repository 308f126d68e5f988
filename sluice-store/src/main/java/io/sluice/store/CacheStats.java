package io.sluice.store;

/**
 * The read cache's state (docs/store.md, "Read cache").
 *
 * @param capacityBytes the cache's memory
 * @param cachedBytes log bytes in cached pages now
 * @param pages cached pages now
 * @param hits reads served from memory: a cached page, or a write-buffer page not yet committed
 * @param misses reads of committed data that no cached page held
 * @param loads pages read from the file on a miss (DIRECT path)
 * @param prefetches pages read ahead after a read reached a hot page's end (DIRECT path)
 * @param adoptions committed write-buffer pages turned into cache pages without a copy
 * @param evictions pages evicted to make room
 */
public record CacheStats(long capacityBytes, long cachedBytes, int pages, long hits, long misses, long loads,
                         long prefetches, long adoptions, long evictions) {

    /** @return hits / (hits + misses), or 0 before any read */
    public double hitRate() {
        long total = hits + misses;
        return total == 0 ? 0 : (double) hits / total;
    }
}
