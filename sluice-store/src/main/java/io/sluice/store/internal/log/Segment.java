package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import io.sluice.store.internal.cache.RefCounted;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit-log segment file: a fixed-size file named by the 20-digit log position of its first byte,
 * mapped whole with FFM. The mapping is read-write on the MMAP path (appends are encoded straight into it)
 * and read-only otherwise (appends arrive through the file; reads still come from the mapping, which the
 * page cache keeps coherent). Closing the segment unmaps it at once by closing its arena.
 *
 * <h2>Life cycle</h2>
 * Two {@link RefCounted} lifetimes. The segment's own (the file): the log holds one reference, every reader
 * another ({@link #tryRetain()}); retention {@linkplain #retire(Runnable) retires} it, and the last release
 * unmaps it, closes and deletes the file. The mapping's: a reader that reads through the mapping also holds it
 * ({@link #pinMapping()}); leaving the mapping window {@linkplain #unmap() retires} the mapping, which is unmapped
 * when its last reader lets go, while the file stays open for positional reads. So a reader never touches an
 * unmapped segment, and a retired segment's blocks are freed as soon as its last reader lets go.
 * {@link #close()} (store shutdown) unmaps at once; readers must not use views after the store is closed.
 *
 * <p>Thread-safe for one writer and many readers.
 */
public final class Segment extends RefCounted implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Segment.class);

    private final FileIO io;
    private final long base;
    private final long size;
    private final StoreFile file;
    private final Mapping mapping;
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile Runnable onDeleted;
    /** Guarded by this: set once the file is no longer this segment's to delete ({@link #abandon()}). */
    private boolean abandoned;
    /** Releases a mapped view: the mapping hold, then the segment reference. One per segment, no allocation. */
    private final Pin mappedViewPin = () -> {
        unpinMapping();
        release();
    };

    /** The whole file mapped; freed (unmapped) once retired and let go by every reader. */
    private static final class Mapping extends RefCounted {
        private final Arena arena;
        private final MemorySegment memory;
        private final AtomicBoolean unmapped = new AtomicBoolean();

        Mapping(Arena arena, MemorySegment memory) {
            this.arena = arena;
            this.memory = memory;
        }

        @Override
        protected void free() {
            if (unmapped.compareAndSet(false, true)) {
                arena.close();
            }
        }
    }

    private Segment(FileIO io, long base, long size, StoreFile file, Arena arena, MemorySegment mapping) {
        this.io = io;
        this.base = base;
        this.size = size;
        this.file = file;
        this.mapping = new Mapping(arena, mapping);
    }

    /** @return the file name for a segment starting at {@code base} */
    public static String fileName(long base) {
        return String.format("%020d", base);
    }

    /**
     * Creates (or re-creates over a leftover) a segment file, reserves its blocks and maps it.
     *
     * @throws IOException on an I/O error; ENOSPC leaves no file behind
     */
    public static Segment create(FileIO io, Path directory, long base, long size, SegmentAllocation allocation,
                                 boolean writable) throws IOException {
        Path path = directory.resolve(fileName(base));
        StoreFile file = io.open(path, FileIO.OpenMode.CREATE);
        try {
            if (file.size() > size) {
                file.truncate(size);
            }
            file.allocate(size, allocation == SegmentAllocation.ZERO_FILL);
            // The size and the reserved blocks first, then the name: a segment that exists after a power cut has
            // its full size, so the log's positions past it stay where they were.
            file.force();
            io.syncDirectory(directory);
            return map(io, base, size, file, writable);
        } catch (IOException | RuntimeException e) {
            file.close();
            io.delete(path);
            throw e;
        }
    }

    /**
     * Opens and maps an existing segment file; its size is the file's size.
     *
     * @param writable map it read-write (the MMAP path)
     * @param readOnly open the file for reading only (a store opened to be read); implies a read-only mapping
     */
    public static Segment open(FileIO io, Path path, long base, boolean writable, boolean readOnly)
            throws IOException {
        StoreFile file = io.open(path, readOnly ? FileIO.OpenMode.READ_ONLY : FileIO.OpenMode.READ_WRITE);
        try {
            return map(io, base, file.size(), file, writable && !readOnly);
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    private static Segment map(FileIO io, long base, long size, StoreFile file, boolean writable)
            throws IOException {
        Arena arena = Arena.ofShared();
        try {
            FileChannel.MapMode mode = writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY;
            MemorySegment mapping = file.map(mode, 0, size, arena);
            return new Segment(io, base, size, file, arena, mapping);
        } catch (IOException | RuntimeException e) {
            arena.close();
            throw e;
        }
    }

    /** @return log position of the first byte */
    public long base() {
        return base;
    }

    /** @return log position after the last byte */
    public long end() {
        return base + size;
    }

    /** @return the size in bytes */
    public long size() {
        return size;
    }

    /** @return the file */
    public StoreFile file() {
        return file;
    }

    /**
     * @return the whole mapping, for code that runs while nothing can unmap it: recovery, the writer of the
     *     active segment, warm-up of a new segment
     */
    public MemorySegment mapping() {
        return mapping.memory;
    }

    /** @return the mapped bytes of the log range [position, position + length) */
    public MemorySegment slice(long position, long length) {
        return mapping.memory.asSlice(position - base, length);
    }

    /** The last reference of a retired segment is gone: unmap, close and delete the file, unless abandoned. */
    @Override
    protected void free() {
        try {
            close();
            synchronized (this) {
                if (abandoned) {
                    return;
                }
                io.delete(file.path());
            }
            Runnable deleted = onDeleted;
            if (deleted != null) {
                deleted.run();
            }
        } catch (IOException e) {
            LOG.warn("deleting retired segment {} failed: {}", file.path(), e.toString());
        }
    }

    /**
     * The log was deleted with its directory: from now on the last release only unmaps and closes. Its path may
     * name another log's file by then (a topic created again starts at position 0 too).
     */
    public synchronized void abandon() {
        abandoned = true;
    }

    /** @return true once the segment's file is no longer its to delete: compaction replaced it, or its log went */
    public synchronized boolean isAbandoned() {
        return abandoned;
    }

    /**
     * Retention: drops the log's reference. The file is unmapped and deleted now if no reader holds the
     * segment, else when the last one lets go.
     *
     * @param whenDeleted told once the file is deleted
     */
    public void retire(Runnable whenDeleted) {
        onDeleted = whenDeleted;
        retire();
    }

    /** @return true once the segment is unmapped and its file closed */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Takes a reader's hold on the mapping (the caller already holds a reference, see {@link #tryRetain()}).
     *
     * @return the mapping, or null if it was unmapped (read the file positionally instead)
     */
    public MemorySegment pinMapping() {
        return mapping.tryRetain() ? mapping.memory : null;
    }

    /** Drops a hold from {@link #pinMapping()}; the last one after {@link #unmap()} unmaps. */
    public void unpinMapping() {
        mapping.release();
    }

    /** @return the pin that releases a view taken with {@link #tryRetain()} and {@link #pinMapping()} */
    public Pin mappedViewPin() {
        return mappedViewPin;
    }

    /**
     * Unmaps the segment as soon as no reader holds a view of the mapping; from now on readers read the file
     * positionally. The file stays open. Idempotent.
     */
    public void unmap() {
        mapping.retire();
    }

    /** @return true until {@link #unmap()} was asked for */
    public boolean mapped() {
        return !mapping.isRetired();
    }

    /** Unmaps and closes the file now. Idempotent. */
    @Override
    public void close() throws IOException {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            mapping.free();
        } finally {
            file.close();
        }
    }

    @Override
    public String toString() {
        return file.path().toString();
    }
}
