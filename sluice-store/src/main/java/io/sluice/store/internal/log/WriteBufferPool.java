package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import io.sluice.store.internal.cache.ReadCache;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A fixed pool of off-heap pages for the WRITE_BUFFER path (RocketMQ's transient store pool, JMQ4's write
 * buffer). Pages are allocated and touched once, up front, so appends never take a page fault.
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

    private final Arena arena = Arena.ofShared();
    private final ArrayBlockingQueue<Page> free;
    private final int pageBytes;
    /** Adopts fully committed pages (exchanging their memory), or null without a read cache. */
    private final ReadCache cache;

    /**
     * @param pageBytes bytes per page
     * @param pageCount pages
     * @param cache the read cache that adopts committed pages, or null
     */
    public WriteBufferPool(int pageBytes, int pageCount, ReadCache cache) {
        this.pageBytes = pageBytes;
        this.cache = cache;
        this.free = new ArrayBlockingQueue<>(pageCount);
        for (int i = 0; i < pageCount; i++) {
            MemorySegment memory = arena.allocate(pageBytes, 4096);
            memory.fill((byte) 0);
            free.add(new Page(memory));
        }
    }

    /** @return bytes per page */
    public int pageBytes() {
        return pageBytes;
    }

    /** @return pages currently free */
    public int freePages() {
        return free.size();
    }

    /** @return a free page, or null if none is free now */
    Page poll() {
        return free.poll();
    }

    /**
     * Waits up to {@code timeoutMillis} for a page to come free (a reader releasing its pin).
     *
     * @return the page, or null if none came free in time
     * @throws IOException if interrupted
     */
    Page await(long timeoutMillis) throws IOException {
        if (timeoutMillis <= 0) {
            return free.poll();
        }
        try {
            return free.poll(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for a write buffer page", e);
        }
    }

    @Override
    public void close() {
        arena.close();
    }

    /** One page of the pool. */
    final class Page {
        /** Exchanged with the read cache's memory when the cache adopts the page's bytes (while retired). */
        volatile MemorySegment memory;
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

        private Page(MemorySegment memory) {
            this.memory = memory;
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
