package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;

/**
 * How one write path moves encoded records into segment files. Called by the single log writer (under the
 * append lock) except {@link #commit}, which the flusher calls, and {@link #pin}, which readers call.
 */
interface SegmentWriter extends AutoCloseable {

    /**
     * @return memory of exactly {@code size} bytes to encode the record at {@code position} into
     * @throws IOException if memory cannot be had (e.g. the write buffer pool stayed exhausted)
     */
    MemorySegment reserve(Segment segment, long position, int size) throws IOException;

    /** The record reserved at {@code position} is encoded; make it part of the segment. */
    void complete(Segment segment, long position, MemorySegment record) throws IOException;

    /** The segment is full: nothing more will be written below {@code segmentEnd}. */
    void seal(long segmentEnd);

    /**
     * Writes buffered bytes below {@code upTo} to their files.
     *
     * @return the log position up to which every byte has reached its file
     */
    long commit(long upTo) throws IOException;

    /** @return bytes reserved but not yet committed (0 for paths that write through) */
    long uncommittedBytes(long writePosition);

    /**
     * Pins the buffered bytes of [position, position + length) if they are still only in a buffer.
     *
     * @return a pinned view, or null if the range must be read from the segment file
     */
    WriteBufferPool.Pinned pin(long position, long length);

    @Override
    void close();
}
