package io.sluice.sim;

import io.sluice.store.io.StoreFile;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;

/**
 * An open file of a {@link SimFileSystem}: every call is an operation of the file system (a power cut may fall on
 * it) and runs under its lock; reads, writes and mappings go to the file's volatile image, and {@link #force()}
 * copies it to the durable one.
 */
final class SimFile implements StoreFile {

    private static final MemorySegment ZEROS = MemorySegment.ofArray(new byte[SimFileSystem.PAGE_BYTES]);

    private final SimFileSystem fs;
    private final FileNode node;
    private final Path path;
    private final boolean readOnly;
    private boolean closed;

    SimFile(SimFileSystem fs, FileNode node, Path path, boolean readOnly) {
        this.fs = fs;
        this.node = node;
        this.path = path;
        this.readOnly = readOnly;
    }

    private void check(boolean writing) throws IOException {
        fs.operation();
        if (closed) {
            throw new IOException(path + " is closed");
        }
        if (writing && readOnly) {
            throw new IOException(path + " is open for reading only");
        }
    }

    @Override
    public Path path() {
        return path;
    }

    @Override
    public long size() throws IOException {
        synchronized (fs.lock) {
            check(false);
            return node.size;
        }
    }

    @Override
    public void allocate(long size, boolean zeroFill) throws IOException {
        synchronized (fs.lock) {
            check(true);
            if (size > node.size) {
                fs.grow(node, size);
                node.data.asSlice(node.size, size - node.size).fill((byte) 0);
                fs.counters.bytesWritten += zeroFill ? size - node.size : 0;
                node.size = size;
            }
        }
    }

    @Override
    public void writeFully(ByteBuffer source, long position) throws IOException {
        synchronized (fs.lock) {
            check(true);
            write(MemorySegment.ofBuffer(source), position);
            source.position(source.limit());
        }
    }

    @Override
    public void writeDirect(MemorySegment source, long position) throws IOException {
        StoreFile.requireDirectAlignment(source, position);
        synchronized (fs.lock) {
            check(true);
            write(source, position);
        }
    }

    private void write(MemorySegment source, long position) throws IOException {
        long end = position + source.byteSize();
        if (end > node.size) {
            fs.grow(node, end);
            if (position > node.size) {
                node.data.asSlice(node.size, position - node.size).fill((byte) 0);
            }
            node.size = end;
        }
        MemorySegment.copy(source, 0, node.data, position, source.byteSize());
        fs.counters.bytesWritten += source.byteSize();
    }

    @Override
    public void zeroRange(long offset, long length) throws IOException {
        synchronized (fs.lock) {
            check(true);
            long end = Math.min(offset + length, node.size);
            if (end > offset) {
                node.data.asSlice(offset, end - offset).fill((byte) 0);
                fs.counters.bytesWritten += end - offset;
            }
        }
    }

    /**
     * The most a file system may skip: the start of the first page holding a non-zero byte (a real one may
     * answer earlier, for pages of zeros it wrote), so a store is tested against the answer that lets it
     * skip the most.
     */
    @Override
    public long nextData(long offset) throws IOException {
        synchronized (fs.lock) {
            check(false);
            for (long page = offset / SimFileSystem.PAGE_BYTES * SimFileSystem.PAGE_BYTES; page < node.size;
                     page += SimFileSystem.PAGE_BYTES) {
                long from = Math.max(page, offset);
                long to = Math.min(page + SimFileSystem.PAGE_BYTES, node.size);
                MemorySegment bytes = node.data.asSlice(from, to - from);
                if (bytes.mismatch(ZEROS.asSlice(0, to - from)) >= 0) {
                    return from;
                }
            }
            return -1;
        }
    }

    @Override
    public int read(ByteBuffer target, long position) throws IOException {
        synchronized (fs.lock) {
            check(false);
            if (position >= node.size) {
                return -1;
            }
            int length = (int) Math.min(target.remaining(), node.size - position);
            MemorySegment.copy(node.data, position, MemorySegment.ofBuffer(target), 0, length);
            target.position(target.position() + length);
            return length;
        }
    }

    @Override
    public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
        ByteBuffer bytes;
        synchronized (fs.lock) {
            check(false);
            if (position + count > node.size) {
                throw new EOFException(path + " ends at " + node.size + ", before " + (position + count));
            }
            bytes = ByteBuffer.allocate(Math.toIntExact(count));
            MemorySegment.copy(node.data, position, MemorySegment.ofBuffer(bytes), 0, count);
        }
        while (bytes.hasRemaining()) {
            target.write(bytes);
        }
    }

    @Override
    public boolean startWriteback(long offset, long length) throws IOException {
        synchronized (fs.lock) {
            check(false);
            return true;
        }
    }

    @Override
    public void force() throws IOException {
        synchronized (fs.lock) {
            check(false);
            node.makeDurable();
            fs.counters.forces++;
            fs.counters.forcedFiles.add(path.toString());
        }
    }

    // "restricted": the view is given the caller's arena as its scope, so a store that uses a mapping after
    // closing its arena fails as it would on a real unmapped region; the memory itself stays the file system's.
    @SuppressWarnings("restricted")
    @Override
    public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
        synchronized (fs.lock) {
            check(mode == FileChannel.MapMode.READ_WRITE);
            if (offset < 0 || size < 0 || offset + size > node.size) {
                throw new IOException("mapping [" + offset + ", " + (offset + size) + ") of " + path + " lies past"
                        + " its end (" + node.size + " bytes)");
            }
            node.mappings++;
            MemorySegment view = node.data.asSlice(offset, size).reinterpret(arena, unmapped -> {
                synchronized (fs.lock) {
                    node.mappings--;
                }
            });
            return mode == FileChannel.MapMode.READ_WRITE ? view : view.asReadOnly();
        }
    }

    @Override
    public void truncate(long size) throws IOException {
        synchronized (fs.lock) {
            check(true);
            if (size > node.size) {
                fs.grow(node, size);
                node.data.asSlice(node.size, size - node.size).fill((byte) 0);
            }
            node.size = size;
        }
    }

    @Override
    public void close() {
        synchronized (fs.lock) {
            closed = true;
        }
    }
}
