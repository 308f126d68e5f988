package io.sluice.sim;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * A file of a {@link SimFileSystem}: a volatile image (the page cache: what reads, writes and mappings see) and a
 * durable image (the device). Used under the file system's lock.
 */
final class FileNode extends SimNode {
    Arena arena;
    MemorySegment data;
    long size;
    byte[] durable = new byte[0];
    long durableSize;
    int mappings;
    /** Set between a power cut and {@link #materialize}. */
    byte[] pending;

    /**
     * Gives the file room for {@code bytes} (its memory moves unless mapped; a mapped file cannot grow).
     *
     * @param arenas the file system's arenas, which the grown memory's joins and the old one leaves
     */
    void allocate(List<Arena> arenas, long bytes) {
        long capacity = data == null ? 0 : data.byteSize();
        if (bytes <= capacity && data != null) {
            return;
        }
        if (mappings > 0) {
            throw new IllegalStateException("the simulated file system cannot grow a mapped file");
        }
        Arena grown = Arena.ofShared();
        long newCapacity = Math.max(bytes, Math.min(capacity * 2, capacity + (64L << 20)));
        MemorySegment memory = grown.allocate(Math.max(newCapacity, 1), 4096);
        if (data != null) {
            MemorySegment.copy(data, 0, memory, 0, size);
            arenas.remove(arena);
            arena.close();
        }
        arena = grown;
        data = memory;
        arenas.add(grown);
    }

    /** Gives a file that came through a power cut its memory: volatile and durable images equal. */
    void materialize(List<Arena> arenas) {
        byte[] content = pending;
        pending = null;
        durable = content;
        durableSize = content.length;
        size = content.length;
        allocate(arenas, content.length);
        MemorySegment.copy(content, 0, data, ValueLayout.JAVA_BYTE, 0, content.length);
    }

    /** A force: the volatile image, and the size, become the durable ones. */
    void makeDurable() {
        byte[] image = new byte[Math.toIntExact(size)];
        if (image.length > 0) {
            MemorySegment.copy(data, ValueLayout.JAVA_BYTE, 0, image, 0, image.length);
        }
        durable = image;
        durableSize = size;
    }

    /** @return the byte at {@code at} as the running process sees it (0 past the end) */
    byte volatileByte(long at) {
        return at < size ? data.get(ValueLayout.JAVA_BYTE, at) : 0;
    }

    /** @return the byte at {@code at} as the device holds it (0 past the durable end) */
    byte durableByte(long at) {
        return at < durableSize ? durable[(int) at] : 0;
    }
}
