package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import io.sluice.store.internal.cache.ReadCache;
import io.sluice.store.internal.cache.RefCounted;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

/**
 * A bounded pool of off-heap memory blocks for the WRITE_BUFFER and DIRECT paths (RocketMQ's transient store
 * pool, JMQ4's write buffer). The shared log's pool is allocated and touched once, up front, so appends never
 * take a page fault. A log of its own (one of perhaps thousands of queues) allocates a block only when it needs
 * one, no larger than its active segment: a new queue's log, with a 64 KiB segment, holds one 64 KiB block;
 * blocks grow with the segments up to {@code pageBytes}.
 *
 * <p>A block is lent to the writer as a {@link Page}, which covers a contiguous log range inside one segment.
 * A page is {@link RefCounted}: readers retain it while they read its bytes; the writer retires it once every
 * byte is committed to the file, and the last release hands the block back (the read cache may adopt its
 * bytes first, exchanging memory). A page object is never lent twice: a reader that retains a page it found
 * knows the memory holds that page's range.
 *
 * <p>Thread-safe.
 */
public final class WriteBufferPool implements AutoCloseable {

    /** Full-size blocks' memory; a smaller block has an arena of its own, freed when the block grows. */
    private final Arena arena = Arena.ofShared();
    private final ArrayBlockingQueue<Block> free;
    private final int pageBytes;
    private final int pageCount;
    /** Every block allocated so far (lazy pools allocate up to {@code pageCount}). */
    private final List<Block> blocks = new CopyOnWriteArrayList<>();
    /** Adopts fully committed pages (exchanging their memory), or null without a read cache. */
    private final ReadCache cache;

    /**
     * @param pageBytes bytes per (full-size) page
     * @param pageCount pages at most
     * @param cache the read cache that adopts committed pages, or null
     * @param eager allocate every block now, full size; else each when first needed
     */
    public WriteBufferPool(int pageBytes, int pageCount, ReadCache cache, boolean eager) {
        this.pageBytes = pageBytes;
        this.pageCount = pageCount;
        this.cache = cache;
        this.free = new ArrayBlockingQueue<>(pageCount);
        if (eager) {
            for (int i = 0; i < pageCount; i++) {
                free.add(allocate(pageBytes));
            }
        }
    }

    /** Pool memory: exchanged with the read cache's when the cache adopts a page's bytes (while free). */
    private static final class Block {
        volatile MemorySegment memory;
        /** The arena of a block smaller than full size (never adopted by the cache), else null. */
        Arena own;

        Block(MemorySegment memory, Arena own) {
            this.memory = memory;
            this.own = own;
        }
    }

    private Block allocate(int bytes) {
        Arena own = bytes == pageBytes ? null : Arena.ofShared();
        MemorySegment memory = (own != null ? own : arena).allocate(bytes, 4096);
        memory.fill((byte) 0);
        Block block = new Block(memory, own);
        blocks.add(block);
        return block;
    }

    /** @return {@code block}, grown to {@code wanted} bytes if smaller (its old memory freed) */
    private Block fit(Block block, int wanted) {
        if (block == null || block.memory.byteSize() >= wanted) {
            return block;
        }
        // Smaller than full size, so never adopted by the cache: its memory is its own arena's.
        Arena old = block.own;
        Arena own = wanted == pageBytes ? null : Arena.ofShared();
        MemorySegment memory = (own != null ? own : arena).allocate(wanted, 4096);
        memory.fill((byte) 0);
        block.memory = memory;
        block.own = own;
        old.close();
        return block;
    }

    /** @return bytes per page */
    public int pageBytes() {
        return pageBytes;
    }

    /** @return memory held by the blocks allocated so far */
    public long allocatedBytes() {
        long total = 0;
        for (Block block : blocks) {
            total += block.memory.byteSize();
        }
        return total;
    }

    /**
     * Lends a free block as a page covering the log from {@code start}, whose records go in from {@code position}
     * (later than {@code start} only on the DIRECT path, whose pages begin on a block boundary).
     *
     * @param wanted the page size wanted (at most {@code pageBytes}): a log's active segment may be smaller
     * @return the page, of at least {@code wanted} bytes, or null if no block is free and no more may be
     *     allocated
     */
    Page lend(int wanted, Segment segment, long start, long position) {
        Block block = free.poll();
        if (block == null) {
            synchronized (blocks) {
                if (blocks.size() < pageCount) {
                    block = allocate(wanted);
                }
            }
            if (block == null) {
                return null;
            }
        }
        return new Page(fit(block, wanted), segment, start, position);
    }

    /**
     * As {@link #lend}, waiting up to {@code timeoutMillis} for a block to come free (a reader releasing a page).
     *
     * @return the page, or null if no block came free in time
     * @throws IOException if interrupted
     */
    Page awaitLend(int wanted, Segment segment, long start, long position, long timeoutMillis) throws IOException {
        Block block;
        try {
            block = timeoutMillis <= 0 ? free.poll() : free.poll(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted while waiting for a write buffer page", e);
        }
        return block == null ? null : new Page(fit(block, wanted), segment, start, position);
    }

    @Override
    public void close() {
        arena.close();
        for (Block block : blocks) {
            if (block.own != null) {
                block.own.close();
            }
        }
    }

    /**
     * One loan of a block: the log range from {@code start} in one segment. The writer fills it and seals it; the
     * committer writes its bytes to the file and retires it; readers retain it while they read it.
     */
    final class Page extends RefCounted {
        private final Block block;
        final MemorySegment memory;
        final Segment segment;
        final long start;
        /** Log position of the page's first record (after {@code start} on DIRECT, when the page repeats a head). */
        final long firstRecord;
        /** Log position after the last byte written into the page. */
        volatile long written;
        /** Log position where the page's range ends once sealed (its written end, or its segment's end). */
        volatile long sealedAt = -1;
        /** Committer-owned: log position up to which the page's bytes are in the file. */
        long committed;
        /** Set by the committer when every byte of the page is in the file: the cache may adopt it. */
        private volatile boolean fullyCommitted;

        private Page(Block block, Segment segment, long start, long position) {
            this.block = block;
            this.memory = block.memory;
            this.segment = segment;
            this.start = start;
            this.firstRecord = position;
            this.written = position;
            this.committed = position;
        }

        int capacity() {
            return (int) memory.byteSize();
        }

        /** Committer: every byte is in the file; the block goes back once no reader holds the page. */
        void committedAll() {
            fullyCommitted = true;
            retire();
        }

        /** The last reference is gone: the cache may adopt the bytes; the block goes back to the pool. */
        @Override
        protected void free() {
            if (cache != null && fullyCommitted) {
                block.memory = cache.adopt(start, firstRecord, written, memory);
            }
            WriteBufferPool.this.free.add(block);
        }
    }

    /**
     * A view of buffered bytes, holding their page; releasing it releases the page.
     *
     * @param bytes the bytes
     * @param page the page they live in
     */
    public record Pinned(MemorySegment bytes, Page page) implements Pin {
        @Override
        public void release() {
            page.release();
        }
    }
}
