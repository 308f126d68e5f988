package io.sluice.store.internal.cache;

import io.sluice.store.CacheStats;
import io.sluice.store.internal.task.TaskGate;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.Executor;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The tail-aware read cache of JMQ4 (docs/store.md, "Read cache"): a bounded set of off-heap pages of
 * the log, each an immutable range.
 *
 * <h2>Where pages come from</h2>
 * A write-buffer page whose bytes are all committed is <em>adopted</em>: its memory becomes a cache page
 * and the pool gets other memory in exchange (a free cache page's, or an evicted one's), so the freshest
 * data is cached without a copy. On the DIRECT path, whose data is not in the page cache, a miss
 * <em>loads</em> a page from the file, and a read that reaches the end of a hot page <em>prefetches</em>
 * the next range on a background thread.
 *
 * <h2>Eviction</h2>
 * A page is hot if read in the last {@code hotWindowMillis}. The victim is the cold page farthest from the
 * tail (lowest log position), else the hot page farthest from the tail. A consumer replaying old data thus
 * recycles its own pages and never pushes out the tail that current consumers read, which an LRU would
 * (the {@link Eviction#LRU} policy exists to show that).
 *
 * <p>Thread-safe. Lookups are lock-free; changes to the set of pages take the cache's lock; loads read
 * the file under a separate lock, one at a time.
 */
public final class ReadCache implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(ReadCache.class);
    private static final long BLOCK = 4096;

    /** How a victim is chosen. */
    public enum Eviction {
        /** Cold before hot, and within each the page farthest from the tail: the store's policy. */
        TAIL_AWARE,
        /** Least recently read first: for comparison only. */
        LRU
    }

    /** Reads log bytes from the file into a page. */
    @FunctionalInterface
    public interface Loader {
        /**
         * @param position the log position of the first byte
         * @param target where to put {@code target.byteSize()} bytes
         * @throws IOException on an I/O error
         */
        void load(long position, MemorySegment target) throws IOException;
    }

    private final int pageBytes;
    private final int capacityPages;
    private final long hotWindowMillis;
    private final InstantSource clock;
    private final Eviction eviction;
    private final Arena arena = Arena.ofShared();
    private final ConcurrentSkipListMap<Long, CachePage> pages = new ConcurrentSkipListMap<>();
    /** Memory of retired pages, ready for reuse. */
    private final List<MemorySegment> spare = new ArrayList<>();
    private final Object loadLock = new Object();
    /** Guarded by this: counts {@link #invalidate} calls, so a load that overlapped one keeps nothing. */
    private long invalidations;
    /** Guarded by this: the log ranges compaction replaced, start to end, merged; no page of them is adopted. */
    private final java.util.TreeMap<Long, Long> replacedRanges = new java.util.TreeMap<>();
    /** Runs prefetches (the store's scheduler), or null for none. */
    private final Executor prefetcher;
    /** Prefetches run inside it; close waits for them. */
    private final TaskGate prefetching = new TaskGate();
    private int allocatedPages;
    /** The store-wide memory this cache's pages are taken from. */
    private final MemoryBudget budget;
    private volatile long minPosition;
    private volatile boolean closed;

    private final LongAdder hits = new LongAdder();
    private final LongAdder misses = new LongAdder();
    private final LongAdder loads = new LongAdder();
    private final LongAdder prefetches = new LongAdder();
    private final LongAdder adoptions = new LongAdder();
    private final LongAdder evictions = new LongAdder();

    /**
     * @param capacityBytes the cache's memory; at least one page
     * @param pageBytes bytes per page (the write buffer's page size, so memory can be exchanged)
     * @param hotWindowMillis pages read within this window are hot
     * @param clock the clock that times accesses
     * @param eviction the policy
     * @param prefetcher runs prefetches of the next range (when misses load), or null for none
     */
    public ReadCache(long capacityBytes, int pageBytes, long hotWindowMillis, InstantSource clock, Eviction eviction,
                     Executor prefetcher) {
        this(capacityBytes, pageBytes, hotWindowMillis, clock, eviction, prefetcher, MemoryBudget.unlimited());
    }

    /**
     * @param capacityBytes the most memory this cache holds; at least one page
     * @param pageBytes bytes per page (the write buffer's page size, so memory can be exchanged)
     * @param hotWindowMillis pages read within this window are hot
     * @param clock the clock that times accesses
     * @param eviction the policy
     * @param prefetcher runs prefetches of the next range (when misses load), or null for none
     * @param budget memory shared with other caches: a page is allocated only if the budget has room for it (else
     *     the cache evicts one of its own pages, or goes without)
     */
    public ReadCache(long capacityBytes, int pageBytes, long hotWindowMillis, InstantSource clock, Eviction eviction,
                     Executor prefetcher, MemoryBudget budget) {
        this.budget = budget;
        if (capacityBytes < pageBytes) {
            throw new IllegalArgumentException("cacheBytes (" + capacityBytes + ") must be at least one page ("
                    + pageBytes + " bytes)");
        }
        this.pageBytes = pageBytes;
        this.capacityPages = (int) Math.min(Integer.MAX_VALUE, capacityBytes / pageBytes);
        this.hotWindowMillis = hotWindowMillis;
        this.clock = clock;
        this.eviction = eviction;
        this.prefetcher = prefetcher;
    }

    /**
     * A view of [position, position + length) if one page holds all of it.
     *
     * @param loader reads the file when a hot page's end is reached (prefetch), or null for no prefetch
     * @param readableEnd bytes below this position may be prefetched
     * @return the cached bytes, pinned (release the page through the returned pin), or null on a miss
     */
    public Hit read(long position, int length, Loader loader, long readableEnd) {
        Map.Entry<Long, CachePage> entry = pages.floorEntry(position);
        if (entry != null) {
            CachePage page = entry.getValue();
            if (position + length <= page.end && page.tryRetain()) {
                long now = clock.millis();
                boolean wasHot = now - page.lastAccessMillis < hotWindowMillis;
                page.lastAccessMillis = now;
                hits.increment();
                if (wasHot && position + length == page.end && loader != null) {
                    maybePrefetch(page.end, loader, readableEnd);
                }
                return new Hit(page.slice(position, length), page);
            }
        }
        return null;
    }

    /** A cache hit: the bytes, and the pin to release when done with them. */
    public record Hit(MemorySegment bytes, Pin pin) {
    }

    /** Counts a read the cache could not serve. */
    public void countMiss() {
        misses.increment();
    }

    /** Counts a read served from a write-buffer page: the head of the cache, in JMQ4's terms. */
    public void countWriteBufferHit() {
        hits.increment();
    }

    /**
     * Adopts a write-buffer page whose bytes [start, end) are all committed.
     *
     * @param base the log position of the memory's first byte (before {@code start} on DIRECT, whose pages begin
     *     at a block boundary and repeat the previous page's last bytes there)
     * @return the memory the write buffer should use from now on: other memory if the page was adopted,
     *     {@code memory} itself if not (cache full of pinned pages, an overlapping page, or nothing useful)
     */
    public MemorySegment adopt(long base, long start, long end, MemorySegment memory) {
        if (closed || end <= start || end <= minPosition || memory.byteSize() != pageBytes) {
            return memory;
        }
        synchronized (this) {
            if (overlaps(start, end) || replaced(start, end)) {
                // An overlapping page, or a write-buffer page of log bytes compaction has replaced since (a reader
                // held it through the swap): its bytes are not the log's any more.
                return memory;
            }
            MemorySegment replacement = takeMemory();
            if (replacement == null) {
                return memory;
            }
            pages.put(start, new CachePage(base, start, end, memory, clock.millis()));
            adoptions.increment();
            return replacement;
        }
    }

    /**
     * On a miss, loads the page around [position, position + length) from the file, unless the
     * neighbouring pages leave no room for a page holding all of it.
     *
     * @param rangeEnd bytes below this position can be loaded (the end of the segment and of committed data)
     * @return the bytes, pinned, or null if not cached (read them elsewhere)
     */
    public Hit load(long position, int length, long rangeEnd, Loader loader) throws IOException {
        CachePage page = loadPage(position, position + length, rangeEnd, loader);
        if (page == null || !page.tryRetain()) {
            return null;
        }
        return new Hit(page.slice(position, length), page);
    }

    private CachePage loadPage(long position, long needEnd, long rangeEnd, Loader loader) throws IOException {
        synchronized (loadLock) {
            Map.Entry<Long, CachePage> existing = pages.floorEntry(position);
            if (existing != null && needEnd <= existing.getValue().end) {
                return existing.getValue();
            }
            long start = position - Math.floorMod(position, BLOCK);
            long end = Math.min(start + pageBytes, rangeEnd);
            MemorySegment memory;
            long invalidated;
            synchronized (this) {
                invalidated = invalidations;
                Map.Entry<Long, CachePage> below = pages.lowerEntry(position + 1);
                if (below != null && below.getValue().end > start) {
                    start = below.getValue().end;
                }
                Map.Entry<Long, CachePage> above = pages.higherEntry(position);
                if (above != null && above.getKey() < end) {
                    end = above.getKey();
                }
                if (start > position || end < needEnd || closed) {
                    return null;
                }
                memory = takeMemory();
                if (memory == null) {
                    return null;
                }
            }
            try {
                loader.load(start, memory.asSlice(0, end - start));
            } catch (IOException | RuntimeException e) {
                synchronized (this) {
                    spare.add(memory);
                }
                throw e;
            }
            CachePage page = new CachePage(start, end, memory, clock.millis());
            synchronized (this) {
                if (closed) {
                    return null;
                }
                if (overlaps(start, end) || invalidations != invalidated) {
                    // A write-buffer page covering part of the range was adopted while the file was read, or
                    // compaction replaced log bytes meanwhile (perhaps these).
                    spare.add(memory);
                    return null;
                }
                pages.put(start, page);
            }
            loads.increment();
            return page;
        }
    }

    private void maybePrefetch(long position, Loader loader, long readableEnd) {
        if (prefetcher == null || position >= readableEnd || pages.containsKey(position) || closed) {
            return;
        }
        prefetcher.execute(() -> {
            if (!prefetching.enter()) {
                return;
            }
            try {
                if (!pages.containsKey(position)
                        && loadPage(position, Math.min(position + 1, readableEnd), readableEnd, loader) != null) {
                    prefetches.increment();
                }
            } catch (IOException | RuntimeException e) {
                LOG.debug("prefetch at log position {} failed: {}", position, e.toString());
            } finally {
                prefetching.exit();
            }
        });
    }

    /** Under the lock: whether [start, end) overlaps a range compaction replaced. */
    private boolean replaced(long start, long end) {
        Map.Entry<Long, Long> below = replacedRanges.lowerEntry(end);
        return below != null && below.getValue() > start;
    }

    private boolean overlaps(long start, long end) {
        Map.Entry<Long, CachePage> below = pages.lowerEntry(end);
        return below != null && below.getValue().end > start;
    }

    /** Under the lock: memory for a new page, from spare, a fresh allocation, or an evicted page. */
    private MemorySegment takeMemory() {
        if (!spare.isEmpty()) {
            return spare.removeLast();
        }
        if (allocatedPages < capacityPages && budget.tryTake(pageBytes)) {
            allocatedPages++;
            return arena.allocate(pageBytes, BLOCK);
        }
        CachePage victim = victim();
        if (victim == null) {
            return null;
        }
        pages.remove(victim.start, victim);
        evictions.increment();
        return victim.memory;
    }

    /** Under the lock: retires and returns the page the policy evicts, or null if every page is pinned. */
    private CachePage victim() {
        long now = clock.millis();
        CachePage chosen = null;
        for (CachePage page : pages.values()) {
            if (page.isHeld()) {
                continue;
            }
            if (eviction == Eviction.LRU) {
                if (chosen == null || page.lastAccessMillis < chosen.lastAccessMillis) {
                    chosen = page;
                }
                continue;
            }
            // Ascending log order: the first cold page is the cold one farthest from the tail.
            if (now - page.lastAccessMillis >= hotWindowMillis) {
                chosen = page;
                break;
            }
            if (chosen == null) {
                chosen = page;
            }
        }
        if (chosen != null && !chosen.retireIfUnused()) {
            return null; // pinned since it was looked at; the caller goes without
        }
        return chosen;
    }

    /**
     * Compaction replaced the log bytes [from, to): forgets every page that overlaps them, pinned or not (a reader
     * holding one goes on reading what it chose; the memory is reused once it lets go), and a load that read the
     * file before this call does not put its page in.
     */
    public synchronized void invalidate(long from, long to) {
        invalidations++;
        // Kept merged with the ranges it touches: compaction replaces whole segments, so they stay few.
        long mergedFrom = from;
        long mergedTo = to;
        Map.Entry<Long, Long> before = replacedRanges.floorEntry(from);
        if (before != null && before.getValue() >= from) {
            mergedFrom = before.getKey();
            mergedTo = Math.max(mergedTo, before.getValue());
        }
        for (Map.Entry<Long, Long> after : List.copyOf(replacedRanges.subMap(mergedFrom, true, mergedTo, true)
                .entrySet())) {
            mergedTo = Math.max(mergedTo, after.getValue());
            replacedRanges.remove(after.getKey());
        }
        replacedRanges.put(mergedFrom, mergedTo);
        Map.Entry<Long, CachePage> floor = pages.floorEntry(from);
        long first = floor != null ? floor.getKey() : from;
        for (CachePage page : List.copyOf(pages.subMap(first, true, to, false).values())) {
            if (page.end > from && page.start < to) {
                pages.remove(page.start, page);
                MemorySegment memory = page.memory;
                page.retireThen(() -> {
                    synchronized (this) {
                        spare.add(memory);
                    }
                });
            }
        }
    }

    /** Retention: forgets pages wholly below {@code position}; their memory is reused once unpinned. */
    public synchronized void dropBelow(long position) {
        minPosition = position;
        for (CachePage page : List.copyOf(pages.headMap(position).values())) {
            if (page.end <= position && page.retireIfUnused()) {
                pages.remove(page.start, page);
                spare.add(page.memory);
            }
        }
    }

    /** @return counters and sizes */
    public CacheStats stats() {
        long cached = 0;
        for (CachePage page : pages.values()) {
            cached += page.bytes();
        }
        return new CacheStats((long) capacityPages * pageBytes, cached, pages.size(), hits.sum(), misses.sum(),
                loads.sum(), prefetches.sum(), adoptions.sum(), evictions.sum());
    }

    /** Frees the memory. Call after every reader is done, with the write buffer closed too. */
    @Override
    public void close() {
        prefetching.closeAndAwait();
        synchronized (this) {
            closed = true;
            pages.clear();
            spare.clear();
        }
        arena.close();
        budget.give((long) allocatedPages * pageBytes);
    }
}
