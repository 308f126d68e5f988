package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

/**
 * {@link io.sluice.store.WritePath#CHANNEL}: each record is encoded into one reusable direct buffer and
 * written with a positional {@code FileChannel.write}. One system call per append call, no mapping writes,
 * so no write-protect faults; but small appends pay the call's fixed cost each time.
 */
final class ChannelSegmentWriter implements SegmentWriter {

    private final Arena arena = Arena.ofShared();
    private MemorySegment scratch;

    ChannelSegmentWriter(int initialBytes) {
        scratch = arena.allocate(initialBytes, 4096);
    }

    @Override
    public MemorySegment reserve(Segment segment, long position, int size) {
        if (scratch.byteSize() < size) {
            scratch = arena.allocate(Math.max(size, scratch.byteSize() * 2), 4096);
        }
        return scratch.asSlice(0, size);
    }

    @Override
    public void complete(Segment segment, long position, MemorySegment record) throws IOException {
        segment.file().writeFully(record.asByteBuffer(), position - segment.base());
    }

    @Override
    public void seal(long segmentEnd) {
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
        arena.close();
    }
}
