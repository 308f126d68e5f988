package io.sluice.store.internal.log;

import io.sluice.store.SegmentAllocation;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * One commit-log segment file: a fixed-size file named by the 20-digit log position of its first byte,
 * mapped whole with FFM. The mapping is read-write on the MMAP path (appends are encoded straight into it)
 * and read-only otherwise (appends arrive through the file; reads still come from the mapping, which the
 * page cache keeps coherent). Closing the segment unmaps it at once by closing its arena.
 *
 * <p>Thread-safe for one writer and many readers; {@link #close()} must not race with accesses the store
 * still allows.
 */
public final class Segment implements AutoCloseable {

    private final long base;
    private final long size;
    private final StoreFile file;
    private final Arena arena;
    private final MemorySegment mapping;

    private Segment(long base, long size, StoreFile file, Arena arena, MemorySegment mapping) {
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
        StoreFile file = io.open(path, true);
        try {
            if (file.size() > size) {
                file.truncate(size);
            }
            file.allocate(size, allocation == SegmentAllocation.ZERO_FILL);
            io.syncDirectory(directory);
            return map(base, size, file, writable);
        } catch (IOException | RuntimeException e) {
            file.close();
            Files.deleteIfExists(path);
            throw e;
        }
    }

    /** Opens and maps an existing segment file; its size is the file's size. */
    public static Segment open(FileIO io, Path path, long base, boolean writable) throws IOException {
        StoreFile file = io.open(path, false);
        try {
            return map(base, file.size(), file, writable);
        } catch (IOException | RuntimeException e) {
            file.close();
            throw e;
        }
    }

    private static Segment map(long base, long size, StoreFile file, boolean writable) throws IOException {
        Arena arena = Arena.ofShared();
        try {
            FileChannel.MapMode mode = writable ? FileChannel.MapMode.READ_WRITE : FileChannel.MapMode.READ_ONLY;
            MemorySegment mapping = file.map(mode, 0, size, arena);
            return new Segment(base, size, file, arena, mapping);
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

    /** @return the whole mapping */
    public MemorySegment mapping() {
        return mapping;
    }

    /** @return the mapped bytes of the log range [position, position + length) */
    public MemorySegment slice(long position, long length) {
        return mapping.asSlice(position - base, length);
    }

    /** Unmaps and closes the file. */
    @Override
    public void close() throws IOException {
        try {
            arena.close();
        } finally {
            file.close();
        }
    }

    @Override
    public String toString() {
        return file.path().toString();
    }
}
