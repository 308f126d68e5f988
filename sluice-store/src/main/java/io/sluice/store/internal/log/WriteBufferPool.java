package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import io.sluice.store.internal.cache.ReadCache;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A bounded pool of off-heap pages for the WRITE_BUFFER and DIRECT paths (RocketMQ's transient store pool, JMQ4's
 * write buffer). The shared log's pool is allocated and touched once, up front, so appends never take a page
 * fault. A log of its own (one of perhaps thousands of queues) allocates a page only when it needs one, no larger
 * than its active segment: a new queue's log, with a 64 KiB segment, holds one 64 KiB page; pages grow with
 * the segments up to {@code pageBytes}.
 *
 * <p>A page is lent to the writer, covers a contiguous log range inside one segment, and goes back to the
 * pool once its bytes are committed to the file and no reader pins it. Readers pin a page with
 * {@link Page#tryPin}; the pin fails on a page that has been retired, and the page's generation tells a
 * reader that the page it found was reused for another range in the meantime.
 *
 * <p>Thread-safe.
 */
public final class WriteBufferPool implements AutoCloseable {

    private static final int RETIRED = -1;

    /** Full-size pages' memory; a smaller page has an arena of its own, freed when the page grows. */
    private final Arena arena = Arena.ofShared();
    private final ArrayBlockingQueue<Page> free;
    private final int pageBytes;
    private final int pageCount;
    /** Every page allocated so far (lazy pools allocate up to {@code pageCount}). */
    private final List<Page> pages = new CopyOnWriteArrayList<>();
    /** Adopts fully committed pages (exchanging their memory), or null without a read cache. */
    private final ReadCache cache;

    /**
     * @param pageBytes bytes per (full-size) page
     * @param pageCount pages at most
     * @param cache the read cache that adopts committed pages, or null
     * @param eager allocate every page now, full size; else each when first needed
     */
    public WriteBufferPool(int pageBytes, int pageCount, ReadCache cache, boolean eager) {
        this.pageBytes = pageBytes;
        this.pageCount = pageCount;
        this.cache = cache;
        this.free = new ArrayBlockingQueue<>(pageCount);
        if (eager) {
            for (int i = 0; i < pageCount; i++) {
                free.add(allocate(pageBytes));
            }
        }
    }

    private Page allocate(int bytes) {
        Arena own = bytes == pageBytes ? null : Arena.ofShared();
        MemorySegment memory = (own != null ? own : arena).allocate(bytes, 4096);
        memory.fill((byte) 0);
        Page page = new Page(memory, own);
        pages.add(page);
        return page;
    }

    /** @return {@code page}, grown to {@code wanted} bytes if smaller (its old memory freed) */
    private Page fit(Page page, int wanted) {
        if (page == null || page.capacity() >= wanted) {
            return page;
        }
        // Smaller than full size, so never adopted by the cache: its memory is its own arena's.
        Arena old = page.own;
        Arena own = wanted == pageBytes ? null : Arena.ofShared();
        MemorySegment memory = (own != null ? own : arena).allocate(wanted, 4096);
        memory.fill((byte) 0);
        page.memory = memory;
        page.own = own;
        old.close();
        return page;
    }

    /** @return bytes per page */
    public int pageBytes() {
        return pageBytes;
    }

    /** @return memory held by the pages allocated so far */
    public long allocatedBytes() {
        long total = 0;
        for (Page page : pages) {
            total += page.memory.byteSize();
        }
        return total;
    }

    /** @return pages currently free */
    public int freePages() {
        return free.size();
    }

    /**
     * @param wanted the page size wanted (at most {@code pageBytes}): a log's active segment may be smaller
     * @return a free page of at least {@code wanted} bytes, or null if none is free and no more may be allocated
     */
    Page poll(int wanted) {
        Page page = free.poll();
        if (page == null) {
            synchronized (pages) {
                if (pages.size() < pageCount) {
                    return allocate(wanted);
                }
            }
            return null;
        }
        return fit(page, wanted);
    }

    /**
     * Waits up to {@code timeoutMillis} for a page to come free (a reader releasing its pin).
     *
     * @return the page, or null if none came free in time
     * @throws IOException if interrupted
     */
    Page await(int wanted, long timeoutMillis) throws IOException {
        if (timeoutMillis <= 0) {
            return fit(free.poll(), wanted);
        }
        try {
            return fit(free.poll(timeoutMillis, TimeUnit.MILLISECONDS), wanted);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for a write buffer page", e);
        }
    }

    @Override
    public void close() {
        arena.close();
        for (Page page : pages) {
            if (page.own != null) {
                page.own.close();
            }
        }
    }

    /** One page of the pool. */
    final class Page {
        /** Exchanged with the read cache's memory when the cache adopts the page's bytes (while retired). */
        volatile MemorySegment memory;
        /** The arena of a page smaller than full size (never adopted by the cache), else null. */
        Arena own;
        /** Set by the flusher when every byte of the page is committed: the cache may adopt it. */
        volatile boolean fullyCommitted;
        /** Bumped each time the page is lent out, so readers can tell reuse apart. */
        volatile long generation;
        volatile long start;
        /** Log position of the page's first record (after {@code start} on DIRECT, when the page repeats a head). */
        volatile long firstRecord;
        /** Log position after the last byte written into the page. */
        volatile long written;
        /** Log position where the page's range ends once sealed (its written end, or its segment's end). */
        volatile long sealedAt = -1;
        /** Flusher-owned: log position up to which the page's bytes are in the file. */
        long committed;
        Segment segment;
        private final AtomicInteger pins = new AtomicInteger(RETIRED);
        private volatile boolean retiring;

        private Page(MemorySegment memory, Arena own) {
            this.memory = memory;
            this.own = own;
        }

        /**
         * Lends the page out: its memory maps the log from {@code start}; records go in from {@code position}
         * (later than {@code start} only on the DIRECT path, whose pages begin on a block boundary).
         */
        void lend(Segment target, long start, long position) {
            firstRecord = position;
            segment = target;
            this.start = start;
            written = position;
            committed = position;
            sealedAt = -1;
            retiring = false;
            fullyCommitted = false;
            generation = generation + 1;
            pins.set(0);
        }

        int capacity() {
            return (int) memory.byteSize();
        }

        boolean tryPin() {
            int current;
            do {
                current = pins.get();
                if (current == RETIRED) {
                    return false;
                }
            } while (!pins.compareAndSet(current, current + 1));
            return true;
        }

        void unpin() {
            if (pins.decrementAndGet() == 0 && retiring) {
                tryReturn();
            }
        }

        /** The page's bytes are all committed: return it to the pool once no reader pins it. */
        void retire() {
            retiring = true;
            tryReturn();
        }

        private void tryReturn() {
            if (pins.compareAndSet(0, RETIRED)) {
                segment = null;
                if (cache != null && fullyCommitted) {
                    memory = cache.adopt(start, firstRecord, written, memory);
                }
                free.add(this);
            }
        }
    }

    /**
     * A pinned view of buffered bytes; closing it releases the pin.
     *
     * @param bytes the bytes
     * @param page the page they live in
     */
    public record Pinned(MemorySegment bytes, Page page) implements Pin {
        @Override
        public void release() {
            page.unpin();
        }
    }
}
