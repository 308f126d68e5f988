package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * {@link io.sluice.store.WritePath#WRITE_BUFFER}: records are encoded into pooled off-heap pages; the flusher
 * commits them to the segment file with positional writes of whole runs of records. Appends never touch a
 * mapping, so they take neither first-touch nor write-protect faults, and the kernel sees few large writes
 * instead of many small ones. Until a page is committed, readers are served from the page itself.
 *
 * <p>{@link #reserve}, {@link #complete} and {@link #seal} belong to the log writer; {@link #commit} to the
 * flusher; {@link #pin} to readers.
 */
final class BufferedSegmentWriter implements SegmentWriter {

    private static final long PAGE_WAIT_MILLIS = 30_000;

    private final WriteBufferPool pool;
    private final Runnable commitNudge;
    /** Lent pages in log order; the writer appends, the flusher removes from the head. */
    private final ConcurrentLinkedDeque<WriteBufferPool.Page> live = new ConcurrentLinkedDeque<>();
    private WriteBufferPool.Page current;

    BufferedSegmentWriter(WriteBufferPool pool, Runnable commitNudge) {
        this.pool = pool;
        this.commitNudge = commitNudge;
    }

    @Override
    public MemorySegment reserve(Segment segment, long position, int size) throws IOException {
        WriteBufferPool.Page page = current;
        if (page == null || page.segment != segment || position + size > page.start + page.capacity()) {
            if (page != null) {
                page.sealedAt = page.written;
            }
            current = null;
            page = pool.take(PAGE_WAIT_MILLIS, commitNudge);
            page.lend(segment, position);
            live.addLast(page);
            current = page;
        }
        return page.memory.asSlice(position - page.start, size);
    }

    @Override
    public void complete(Segment segment, long position, MemorySegment record) {
        current.written = position + record.byteSize();
    }

    @Override
    public void seal(long segmentEnd) {
        if (current != null) {
            current.sealedAt = segmentEnd;
            current = null;
        }
    }

    @Override
    public long commit(long upTo) throws IOException {
        long committedTo = upTo;
        for (WriteBufferPool.Page page : live) {
            long sealedAt = page.sealedAt;
            long written = page.written;
            long end = Math.min(written, upTo);
            if (end > page.committed) {
                MemorySegment bytes = page.memory.asSlice(page.committed - page.start, end - page.committed);
                page.segment.file().writeFully(bytes.asByteBuffer(), page.committed - page.segment.base());
                page.committed = end;
            }
            if (sealedAt >= 0 && page.committed == written) {
                live.remove(page);
                page.retire();
                continue;
            }
            committedTo = page.committed;
            break;
        }
        return committedTo;
    }

    @Override
    public long uncommittedBytes(long writePosition) {
        WriteBufferPool.Page head = live.peekFirst();
        return head == null ? 0 : writePosition - head.committed;
    }

    @Override
    public WriteBufferPool.Pinned pin(long position, long length) {
        for (WriteBufferPool.Page page : live) {
            long generation = page.generation;
            long start = page.start;
            if (position < start || position + length > page.written) {
                continue;
            }
            if (!page.tryPin()) {
                return null;
            }
            if (page.generation != generation || page.start != start) {
                page.unpin();
                return null;
            }
            return new WriteBufferPool.Pinned(page.memory.asSlice(position - start, length).asReadOnly(), page);
        }
        return null;
    }

    @Override
    public void close() {
        live.clear();
        current = null;
    }
}
