package io.sluice.store.io;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.atomic.AtomicReferenceArray;

/**
 * Native buffers that carry a heap buffer's bytes to and from the C library's {@code pread} and {@code pwrite}
 * (which take native memory only), kept between calls: a read into a heap buffer (a TLS connection's gathering
 * buffer takes file bytes this way) would otherwise allocate, zero and free native memory as large as the read each
 * time. A few buffers of {@link #BYTES} are kept, taken by one caller at a time, which moves a larger request a piece
 * of that size at a time; a caller that finds every kept buffer taken gets one of its own for that call.
 */
final class BounceBuffers {

    /** The size of a kept buffer: the most one pread or pwrite through it moves. */
    static final int BYTES = 128 * 1024;
    /** How many buffers are kept at most (one per thread that reads or writes heap buffers at the same time). */
    private static final int KEPT = 8;

    private static final AtomicReferenceArray<MemorySegment> KEPT_BUFFERS = new AtomicReferenceArray<>(KEPT);

    private BounceBuffers() {
    }

    /**
     * A kept buffer of {@link #BYTES}, or a new one when none is free; give it back with {@link #give} when done.
     *
     * @return a native segment of {@link #BYTES}, used by the caller alone until given back
     */
    static MemorySegment take() {
        for (int i = 0; i < KEPT; i++) {
            MemorySegment buffer = KEPT_BUFFERS.getAndSet(i, null);
            if (buffer != null) {
                return buffer;
            }
        }
        // Freed by the collector once unreachable, if no slot takes it back.
        return Arena.ofAuto().allocate(BYTES, 4096);
    }

    /** @param buffer a buffer from {@link #take}, no longer used by the caller */
    static void give(MemorySegment buffer) {
        for (int i = 0; i < KEPT; i++) {
            if (KEPT_BUFFERS.compareAndSet(i, null, buffer)) {
                return;
            }
        }
    }
}
