package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.RefCounted;
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
    /** Pooled memory, each block {@link #POOLED_BYTES}. */
    private final ConcurrentLinkedQueue<MemorySegment> free = new ConcurrentLinkedQueue<>();
    private final AtomicInteger allocated = new AtomicInteger();

    /**
     * A buffer lent to one reader, who holds its only reference: releasing it frees it, returning its memory to
     * the pool (or, for a large one, freeing its arena). A new object per loan, as {@link RefCounted} requires.
     */
    final class Buffer extends RefCounted {
        private final MemorySegment memory;
        private final Arena own;

        private Buffer(MemorySegment memory, Arena own) {
            this.memory = memory;
            this.own = own;
            handOver();
        }

        MemorySegment memory() {
            return memory;
        }

        @Override
        protected void free() {
            if (own != null) {
                own.close();
            } else {
                ReadBuffers.this.free.add(memory);
            }
        }
    }

    /** @return a buffer of at least {@code length} bytes; release it once */
    Buffer take(int length) {
        if (length <= POOLED_BYTES) {
            MemorySegment memory = free.poll();
            if (memory != null) {
                return new Buffer(memory, null);
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
