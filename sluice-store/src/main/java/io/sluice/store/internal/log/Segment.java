package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit-log segment file: a fixed-size file named by the 20-digit log position of its first byte,
 * mapped whole with FFM. The mapping is read-write on the MMAP path (appends are encoded straight into it)
 * and read-only otherwise (appends arrive through the file; reads still come from the mapping, which the
 * page cache keeps coherent). Closing the segment unmaps it at once by closing its arena.
 *
 * <h2>Life cycle</h2>
 * The log holds one reference; every reader view holds another ({@link #retain()}, released through the
 * {@link Pin}). Retention {@linkplain #retire(Runnable) retires} a segment: the log drops its reference, and the
 * last release unmaps the segment, closes and deletes the file. So a reader never touches an unmapped
 * segment, and a retired segment's blocks are freed as soon as its last reader lets go. {@link #close()}
 * (store shutdown) unmaps at once; readers must not use views after the store is closed.
 *
 * <p>Thread-safe for one writer and many readers.
 */
public final class Segment implements AutoCloseable, Pin {

    private static final Logger LOG = LoggerFactory.getLogger(Segment.class);

    private final FileIO io;
    private final long base;
    private final long size;
    private final StoreFile file;
    private final Arena arena;
    private final MemorySegment mapping;
    /** The log's reference plus one per reader view; at zero the segment is released for good. */
    private final AtomicInteger references = new AtomicInteger(1);
    private final AtomicBoolean closed = new AtomicBoolean();
    private volatile boolean deleteOnRelease;
    private volatile Runnable onDeleted;
    /** Readers holding views of the mapping, plus {@link #UNMAPPING} once the mapping is to go. */
    private final AtomicLong mappingPins = new AtomicLong();
    private final AtomicBoolean unmapped = new AtomicBoolean();
    /** Releases a mapped view: the mapping hold, then the segment reference. One per segment, no allocation. */
    private final Pin mappedViewPin = () -> {
        unpinMapping();
        release();
    };

    private static final long UNMAPPING = 1L << 62;

    private Segment(FileIO io, long base, long size, StoreFile file, Arena arena, MemorySegment mapping) {
        this.io = io;
        this.base = base;
        this.size = size;
        this.file = file;
        this.arena = arena;
        this.mapping = mapping;
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
        return mapping;
    }

    /** @return the mapped bytes of the log range [position, position + length) */
    public MemorySegment slice(long position, long length) {
        return mapping.asSlice(position - base, length);
    }

    /**
     * Takes a reader's reference.
     *
     * @return false if the segment was retired and released already (the caller must not read it)
     */
    public boolean retain() {
        for (int current = references.get(); current > 0; current = references.get()) {
            if (references.compareAndSet(current, current + 1)) {
                return true;
            }
        }
        return false;
    }

    /** Drops a reader's reference; the last one of a retired segment unmaps and deletes it. */
    @Override
    public void release() {
        if (references.decrementAndGet() == 0 && deleteOnRelease) {
            try {
                close();
                io.delete(file.path());
                Runnable deleted = onDeleted;
                if (deleted != null) {
                    deleted.run();
                }
            } catch (IOException e) {
                LOG.warn("deleting retired segment {} failed: {}", file.path(), e.toString());
            }
        }
    }

    /**
     * Retention: drops the log's reference. The file is unmapped and deleted now if no reader holds the
     * segment, else when the last one lets go.
     */
    public void retire(Runnable whenDeleted) {
        onDeleted = whenDeleted;
        deleteOnRelease = true;
        release();
    }

    /** @return true once the segment is unmapped */
    public boolean isClosed() {
        return closed.get();
    }

    /**
     * Takes a reader's hold on the mapping (the caller already holds a reference, see {@link #retain()}).
     *
     * @return the mapping, or null if it was unmapped (read the file positionally instead)
     */
    public MemorySegment pinMapping() {
        for (long state = mappingPins.get(); (state & UNMAPPING) == 0; state = mappingPins.get()) {
            if (mappingPins.compareAndSet(state, state + 1)) {
                return mapping;
            }
        }
        return null;
    }

    /** Drops a hold from {@link #pinMapping()}; the last one after {@link #unmap()} unmaps. */
    public void unpinMapping() {
        if (mappingPins.decrementAndGet() == UNMAPPING) {
            closeMapping();
        }
    }

    /** @return the pin that releases a view taken with {@link #retain()} and {@link #pinMapping()} */
    public Pin mappedViewPin() {
        return mappedViewPin;
    }

    /**
     * Unmaps the segment as soon as no reader holds a view of the mapping; from now on readers read the file
     * positionally. The file stays open. Idempotent.
     */
    public void unmap() {
        long before = mappingPins.getAndUpdate(state -> state | UNMAPPING);
        if (before == 0) {
            closeMapping();
        }
    }

    /** @return true until {@link #unmap()} was asked for */
    public boolean mapped() {
        return (mappingPins.get() & UNMAPPING) == 0;
    }

    private void closeMapping() {
        if (unmapped.compareAndSet(false, true)) {
            arena.close();
        }
    }

    /** Unmaps and closes the file now. Idempotent. */
    @Override
    public void close() throws IOException {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        try {
            closeMapping();
        } finally {
            file.close();
        }
    }

    @Override
    public String toString() {
        return file.path().toString();
    }
}
