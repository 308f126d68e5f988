package io.sluice.store.internal.log;

import io.sluice.store.WarmUp;
import io.sluice.store.internal.io.NativeIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Applies {@link WarmUp} to segments: pre-touching new ones, read advice, and locking the active one. Every
 * native step falls back or is skipped where the kernel refuses it (logged once by {@link NativeIO}).
 */
final class SegmentWarmer {

    private static final long PAGE_BYTES = 4096;

    private final WarmUp warmUp;
    private final boolean writableMappings;

    SegmentWarmer(WarmUp warmUp, boolean writableMappings) {
        this.warmUp = warmUp;
        this.writableMappings = writableMappings;
    }

    /** Background, on a new segment before appends reach it: faults its pages in per {@link WarmUp#preTouch()}. */
    void preTouch(Segment segment) throws IOException {
        if (!writableMappings) {
            return;
        }
        MemorySegment mapping = segment.mapping();
        switch (warmUp.preTouch()) {
            case NONE -> { }
            case READ -> {
                if (!NativeIO.madvise(mapping, NativeIO.MADV_POPULATE_READ)) {
                    touch(mapping, false);
                }
            }
            case WRITE -> {
                if (!NativeIO.madvise(mapping, NativeIO.MADV_POPULATE_WRITE)) {
                    touch(mapping, true);
                }
                // Populating writable dirties every page; write the zeros back now, in the background, so the
                // first force after the roll does not have the whole segment to write.
                segment.file().force();
            }
        }
    }

    /** Reads (or rewrites) one byte per page: the portable way to fault pages in. */
    static void touch(MemorySegment mapping, boolean write) {
        long sum = 0;
        for (long at = 0; at < mapping.byteSize(); at += PAGE_BYTES) {
            byte value = mapping.get(ValueLayout.JAVA_BYTE, at);
            if (write) {
                mapping.set(ValueLayout.JAVA_BYTE, at, value);
            }
            sum += value;
        }
        if (sum == Long.MIN_VALUE) {
            throw new AssertionError("unreachable: keeps the reads from being optimised away");
        }
    }

    /** At open, on the active segment: advise the written part will be read, and lock the segment if asked. */
    void openActive(Segment segment, long writePosition) {
        if (warmUp.adviseReads() && writePosition > segment.base()) {
            NativeIO.madvise(segment.mapping().asSlice(0, pageAlignedLength(writePosition - segment.base())),
                    NativeIO.MADV_WILLNEED);
        }
        if (warmUp.lockActiveSegment()) {
            NativeIO.mlock(segment.mapping());
        }
    }

    /** On a sealed segment (at open, or when the log rolls past it): unlock it and advise sequential reads. */
    void sealed(Segment segment, boolean wasActive) {
        if (wasActive && warmUp.lockActiveSegment()) {
            NativeIO.munlock(segment.mapping());
        }
        if (warmUp.adviseReads()) {
            MemorySegment mapping = segment.pinMapping();
            if (mapping != null) {
                try {
                    NativeIO.madvise(mapping, NativeIO.MADV_SEQUENTIAL);
                } finally {
                    segment.unpinMapping();
                }
            }
        }
    }

    /** When a segment becomes the active one. */
    void activated(Segment segment) {
        if (warmUp.lockActiveSegment()) {
            NativeIO.mlock(segment.mapping());
        }
    }

    private static long pageAlignedLength(long length) {
        return (length + PAGE_BYTES - 1) / PAGE_BYTES * PAGE_BYTES;
    }
}
