package io.sluice.store.internal.cache;

import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One cached, immutable log range [start, end) in off-heap memory. A page object serves one range for its
 * whole life: eviction retires it (no pins left, none allowed again) and only then is its memory reused,
 * under a new page object. So a reader that pins a page knows the memory still holds the page's range.
 */
final class CachePage implements Pin {

    private static final int RETIRED = -1;

    final long start;
    /** The log position of the memory's first byte: at or before {@code start}. */
    final long base;
    final long end;
    final MemorySegment memory;
    private final AtomicInteger pins = new AtomicInteger();
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

    /** @return true if pinned; false if the page was retired (the caller treats it as a miss) */
    boolean tryPin() {
        for (int current = pins.get(); current != RETIRED; current = pins.get()) {
            if (pins.compareAndSet(current, current + 1)) {
                return true;
            }
        }
        return false;
    }

    @Override
    public void release() {
        pins.decrementAndGet();
    }

    /** @return true if no reader holds the page, which is now retired for good */
    boolean tryRetire() {
        return pins.compareAndSet(0, RETIRED);
    }

    boolean pinned() {
        return pins.get() > 0;
    }

    /** @return the bytes of [position, position + length), which must lie inside the page */
    MemorySegment slice(long position, long length) {
        return memory.asSlice(position - base, length);
    }

    long bytes() {
        return end - start;
    }
}
