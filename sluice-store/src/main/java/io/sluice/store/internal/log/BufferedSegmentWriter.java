package io.sluice.store.internal.log;

import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.concurrent.ConcurrentLinkedDeque;

/**
 * {@link io.sluice.store.WritePath#WRITE_BUFFER} and {@link io.sluice.store.WritePath#DIRECT}: records are
 * encoded into pooled off-heap pages; the flusher commits them to the segment file with positional writes of
 * whole runs of records. Appends never touch a mapping, so they take neither first-touch nor write-protect
 * faults, and the kernel sees few large writes instead of many small ones. Until a page is committed, readers
 * are served from the page itself.
 *
 * <p>On the DIRECT path every write is whole aligned blocks with {@code O_DIRECT}. A page therefore starts
 * at the block boundary at or before its first record, holding a copy of the block's earlier bytes (from the
 * page before it, or from the file after a restart), and a commit that ends inside a block writes that block
 * padded with zeros from a scratch block; the next commit rewrites it with more records in it.
 *
 * <p>{@link #reserve}, {@link #complete} and {@link #seal} belong to the log writer; {@link #commit} to the
 * flusher (or the closing thread once the flusher has stopped); {@link #pin} to readers.
 */
final class BufferedSegmentWriter implements SegmentWriter {

    private static final int BLOCK = StoreConfig.DIRECT_BLOCK_BYTES;

    /** Commits what was appended so far (the log's commit), freeing committed pages that no reader pins. */
    @FunctionalInterface
    interface Committer {
        void commitAppended() throws IOException;
    }

    private final WriteBufferPool pool;
    private final Committer committer;
    private final long pageWaitMillis;
    private final boolean direct;
    private final Arena scratchArena;
    /** DIRECT: the partial tail block of a commit, zero-padded. */
    private final MemorySegment scratch;
    /** Lent pages in log order; the writer appends, the flusher removes from the head. */
    private final ConcurrentLinkedDeque<WriteBufferPool.Page> live = new ConcurrentLinkedDeque<>();
    private WriteBufferPool.Page current;

    /**
     * @param pool the pages
     * @param committer commits appended bytes when the pool is empty, so the appender never waits for the
     *     flusher (nor for a scheduler that runs nothing until it returns)
     * @param pageWaitMillis how long to wait for a page that readers pin before failing the append
     * @param direct write whole aligned blocks with O_DIRECT
     */
    BufferedSegmentWriter(WriteBufferPool pool, Committer committer, long pageWaitMillis, boolean direct) {
        this.pool = pool;
        this.committer = committer;
        this.pageWaitMillis = pageWaitMillis;
        this.direct = direct;
        this.scratchArena = direct ? Arena.ofShared() : null;
        this.scratch = direct ? scratchArena.allocate(BLOCK, BLOCK) : null;
    }

    @Override
    public MemorySegment reserve(Segment segment, long position, int size) throws IOException {
        WriteBufferPool.Page page = current;
        if (page == null || page.segment != segment || position + size > page.start + page.capacity()) {
            // Seal the full page before anything can fail, so the flusher commits it and moves past it whatever
            // happens next: an unsealed page would stop every later commit.
            if (page != null) {
                page.sealedAt = page.written;
                current = null;
            }
            long start = direct ? position - Math.floorMod(position - segment.base(), BLOCK) : position;
            WriteBufferPool.Page fresh = takePage((int) Math.min(pool.pageBytes(), segment.size()), segment, start,
                    position);
            if (start < position) {
                try {
                    copyBlockHead(fresh, page, segment, start, position);
                } catch (IOException | RuntimeException e) {
                    fresh.retire();
                    throw e;
                }
            }
            live.addLast(fresh);
            current = fresh;
            page = fresh;
        }
        return page.memory.asSlice(position - page.start, size);
    }

    /**
     * A page of at least {@code wanted} bytes: from a free block, else after committing everything appended
     * (committed pages give their blocks back unless readers hold them), else after waiting up to
     * {@code pageWaitMillis} for readers to let one go.
     *
     * @throws WriteBufferExhaustedException if readers hold every page for longer; nothing was written
     */
    private WriteBufferPool.Page takePage(int wanted, Segment segment, long start, long position) throws IOException {
        WriteBufferPool.Page page = pool.lend(wanted, segment, start, position);
        if (page != null) {
            return page;
        }
        committer.commitAppended();
        page = pool.lend(wanted, segment, start, position);
        if (page != null) {
            return page;
        }
        page = pool.awaitLend(wanted, segment, start, position, pageWaitMillis);
        if (page == null) {
            throw new WriteBufferExhaustedException("every write buffer page is pinned by open read results (waited "
                    + pageWaitMillis + " ms); close read results sooner or add pages (writeBufferCount)");
        }
        return page;
    }

    /** DIRECT: fills [start, position) of a new page with the bytes already before it in its first block. */
    private static void copyBlockHead(WriteBufferPool.Page fresh, WriteBufferPool.Page previous, Segment segment,
                                      long start, long position) throws IOException {
        int length = (int) (position - start);
        // The sealed page may be committed and given back meanwhile (its bytes are then in the file): hold it.
        if (previous != null && previous.segment == segment && previous.start <= start
                && previous.written == position && previous.tryRetain()) {
            try {
                MemorySegment.copy(previous.memory, start - previous.start, fresh.memory, 0, length);
                return;
            } finally {
                previous.release();
            }
        }
        // After a restart, or once the page before was given back: the block's earlier bytes are committed
        // records in the file.
        ByteBuffer head = fresh.memory.asSlice(0, length).asByteBuffer();
        long at = start - segment.base();
        while (head.hasRemaining()) {
            int n = segment.file().read(head, at + head.position());
            if (n < 0) {
                throw new IOException("segment " + segment + " ends before its write position " + position);
            }
        }
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
                if (direct) {
                    commitDirect(page, end);
                } else {
                    MemorySegment bytes = page.memory.asSlice(page.committed - page.start, end - page.committed);
                    page.segment.file().writeFully(bytes.asByteBuffer(), page.committed - page.segment.base());
                }
                page.committed = end;
            }
            if (sealedAt >= 0 && page.committed == written) {
                live.remove(page);
                page.committedAll();
                continue;
            }
            committedTo = page.committed;
            break;
        }
        return committedTo;
    }

    /** DIRECT: writes the blocks holding [page.committed, end), the last one zero-padded if partial. */
    private void commitDirect(WriteBufferPool.Page page, long end) throws IOException {
        long base = page.segment.base();
        long from = page.committed - Math.floorMod(page.committed - base, BLOCK);
        long fullEnd = end - Math.floorMod(end - base, BLOCK);
        if (fullEnd > from) {
            page.segment.file().writeDirect(page.memory.asSlice(from - page.start, fullEnd - from), from - base);
        }
        if (end > fullEnd) {
            int tail = (int) (end - fullEnd);
            MemorySegment.copy(page.memory, fullEnd - page.start, scratch, 0, tail);
            scratch.asSlice(tail).fill((byte) 0);
            page.segment.file().writeDirect(scratch, fullEnd - base);
        }
    }

    @Override
    public long uncommittedBytes(long writePosition) {
        WriteBufferPool.Page head = live.peekFirst();
        return head == null ? 0 : writePosition - head.committed;
    }

    @Override
    public WriteBufferPool.Pinned pin(long position, long length) {
        for (WriteBufferPool.Page page : live) {
            if (position < page.start || position + length > page.written) {
                continue;
            }
            if (!page.tryRetain()) {
                return null; // committed and given back meanwhile: the bytes are in the file
            }
            return new WriteBufferPool.Pinned(page.memory.asSlice(position - page.start, length).asReadOnly(), page);
        }
        return null;
    }

    @Override
    public void close() {
        live.clear();
        current = null;
        if (scratchArena != null) {
            scratchArena.close();
        }
    }
}
