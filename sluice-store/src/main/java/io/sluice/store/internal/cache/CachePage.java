package io.sluice.store.internal.cache;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One cached, immutable log range [start, end) in off-heap memory. A page object serves one range for its
 * whole life: readers retain it ({@link RefCounted}); eviction retires it only when no reader holds it, and only
 * then is its memory reused, under a new page object. So a reader that holds a page knows the memory still holds
 * the page's range.
 */
final class CachePage extends RefCounted {

    final long start;
    /** The log position of the memory's first byte: at or before {@code start}. */
    final long base;
    final long end;
    final MemorySegment memory;
    /** Clock millis of the last read served from the page. */
    volatile long lastAccessMillis;

    CachePage(long start, long end, MemorySegment memory, long nowMillis) {
        this(start, start, end, memory, nowMillis);
    }

    /**
     * A page whose memory holds the log from {@code base}, serving [start, end): a DIRECT write-buffer page begins
     * at the block boundary before its first record, and its head repeats the previous page's last bytes.
     */
    CachePage(long base, long start, long end, MemorySegment memory, long nowMillis) {
        this.base = base;
        this.start = start;
        this.end = end;
        this.memory = memory;
        this.lastAccessMillis = nowMillis;
    }

    /** Set when the cache drops the page while a reader holds it: gives the memory back once the reader is done. */
    private volatile Runnable whenFreed;

    /** The cache takes the memory back itself when it evicts the page, or when told by {@link #whenFreed}. */
    @Override
    protected void free() {
        Runnable then = whenFreed;
        if (then != null) {
            then.run();
        }
    }

    /** Retires the page; {@code then} runs once its last reader lets go (at once if none holds it). */
    void retireThen(Runnable then) {
        whenFreed = then;
        retire();
    }

    /** @return the bytes of [position, position + length), which must lie inside the page */
    MemorySegment slice(long position, long length) {
        return memory.asSlice(position - base, length);
    }

    long bytes() {
        return end - start;
    }
}
