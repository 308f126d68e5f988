package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Direct buffers for positional reads: of segments no longer mapped, and of records larger than the
 * calibrated crossover. Buffers up to {@link #POOLED_BYTES} are pooled (at most {@link #MAX_POOLED}); a
 * larger read gets a buffer of its own, freed when released. Thread-safe.
 */
final class ReadBuffers implements AutoCloseable {

    static final int POOLED_BYTES = 64 * 1024;
    static final int MAX_POOLED = 256;

    private final Arena arena = Arena.ofShared();
    private final ConcurrentLinkedQueue<Buffer> free = new ConcurrentLinkedQueue<>();
    private final AtomicInteger allocated = new AtomicInteger();

    /** A buffer lent to a reader; releasing it returns it to the pool (or frees it). */
    final class Buffer implements Pin {
        private final MemorySegment memory;
        private final Arena own;

        private Buffer(MemorySegment memory, Arena own) {
            this.memory = memory;
            this.own = own;
        }

        MemorySegment memory() {
            return memory;
        }

        @Override
        public void release() {
            if (own != null) {
                own.close();
            } else {
                free.add(this);
            }
        }
    }

    /** @return a buffer of at least {@code length} bytes */
    Buffer take(int length) {
        if (length <= POOLED_BYTES) {
            Buffer buffer = free.poll();
            if (buffer != null) {
                return buffer;
            }
            if (allocated.incrementAndGet() <= MAX_POOLED) {
                return new Buffer(arena.allocate(POOLED_BYTES, 4096), null);
            }
            allocated.decrementAndGet();
        }
        Arena own = Arena.ofShared();
        return new Buffer(own.allocate(length, 4096), own);
    }

    @Override
    public void close() {
        free.clear();
        arena.close();
    }
}
