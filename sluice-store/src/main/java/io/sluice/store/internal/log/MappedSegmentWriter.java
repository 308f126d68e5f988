package io.sluice.store.internal.log;

import java.lang.foreign.MemorySegment;

/** {@link io.sluice.store.WritePath#MMAP}: records are encoded straight into the segment's mapping. */
final class MappedSegmentWriter implements SegmentWriter {

    @Override
    public MemorySegment reserve(Segment segment, long position, int size) {
        return segment.slice(position, size);
    }

    @Override
    public void complete(Segment segment, long position, MemorySegment record) {
        // Already in place.
    }

    @Override
    public void seal(long segmentEnd) {
        // Nothing buffered.
    }

    @Override
    public long commit(long upTo) {
        return upTo;
    }

    @Override
    public long uncommittedBytes(long writePosition) {
        return 0;
    }

    @Override
    public WriteBufferPool.Pinned pin(long position, long length) {
        return null;
    }

    @Override
    public void close() {
    }
}
