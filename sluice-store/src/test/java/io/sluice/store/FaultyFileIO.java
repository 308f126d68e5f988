package io.sluice.store;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link FileIO} that injects faults: EIO on the n-th write or force, ENOSPC on allocation or writes while
 * the "disk" is full. Counts start when armed. Thread-safe.
 */
final class FaultyFileIO implements FileIO {

    final AtomicLong writes = new AtomicLong();
    final AtomicLong forces = new AtomicLong();
    volatile long failWriteAt = -1;
    volatile long failForceAt = -1;
    final AtomicBoolean diskFull = new AtomicBoolean();
    /** {@code startWriteback} calls on segment files, and the furthest file offset they covered. */
    final AtomicLong writebackCalls = new AtomicLong();
    final AtomicLong writebackFurthest = new AtomicLong();
    /** When set, what {@link #diskSpace} reports instead of the real filesystem. */
    volatile DiskSpace reportedSpace;

    /** Fails the n-th write from now (1 = the next) with EIO. */
    void failWriteAfter(long n) {
        failWriteAt = writes.get() + n;
    }

    /** Fails the n-th force from now (1 = the next) with EIO. */
    void failForceAfter(long n) {
        failForceAt = forces.get() + n;
    }

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        return new Faulty(DEFAULT.open(path, mode));
    }

    @Override
    public boolean exists(Path path) throws IOException {
        return DEFAULT.exists(path);
    }

    @Override
    public boolean isDirectory(Path path) throws IOException {
        return DEFAULT.isDirectory(path);
    }

    @Override
    public java.util.List<Path> list(Path directory) throws IOException {
        return DEFAULT.list(directory);
    }

    @Override
    public boolean createDirectory(Path directory) throws IOException {
        return DEFAULT.createDirectory(directory);
    }

    @Override
    public boolean delete(Path path) throws IOException {
        return DEFAULT.delete(path);
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        DEFAULT.rename(source, target);
    }

    @Override
    public java.io.Closeable tryLock(Path path) throws IOException {
        return DEFAULT.tryLock(path);
    }

    /** Every directory sync, as "thread name|directory". */
    final java.util.Queue<String> directorySyncs = new java.util.concurrent.ConcurrentLinkedQueue<>();

    @Override
    public void syncDirectory(Path directory) throws IOException {
        directorySyncs.add(Thread.currentThread().getName() + "|" + directory);
        DEFAULT.syncDirectory(directory);
    }

    /** Reports a filesystem of 1,000,000 bytes, {@code usedRatio} of it in use. */
    void reportDiskUse(double usedRatio) {
        long free = Math.round(1_000_000 * (1 - usedRatio));
        reportedSpace = new DiskSpace(1_000_000, free, free);
    }

    @Override
    public DiskSpace diskSpace(Path path) throws IOException {
        DiskSpace space = reportedSpace;
        return space != null ? space : DEFAULT.diskSpace(path);
    }

    private final class Faulty implements StoreFile {
        private final StoreFile delegate;

        Faulty(StoreFile delegate) {
            this.delegate = delegate;
        }

        @Override
        public Path path() {
            return delegate.path();
        }

        @Override
        public long size() throws IOException {
            return delegate.size();
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            if (diskFull.get()) {
                throw new io.sluice.store.io.StoreIOException("No space left on device (injected) allocating " + path(),
                        io.sluice.store.io.StoreIOException.ENOSPC);
            }
            delegate.allocate(size, zeroFill);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            long n = writes.incrementAndGet();
            if (n == failWriteAt) {
                throw new IOException("Input/output error (injected) on write #" + n + " to " + path());
            }
            if (diskFull.get()) {
                throw new io.sluice.store.io.StoreIOException("No space left on device (injected) writing " + path(),
                        io.sluice.store.io.StoreIOException.ENOSPC);
            }
            delegate.writeFully(source, position);
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            long n = writes.incrementAndGet();
            if (n == failWriteAt) {
                throw new IOException("Input/output error (injected) on direct write #" + n + " to " + path());
            }
            if (diskFull.get()) {
                throw new io.sluice.store.io.StoreIOException("No space left on device (injected) writing " + path(),
                        io.sluice.store.io.StoreIOException.ENOSPC);
            }
            delegate.writeDirect(source, position);
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            return delegate.read(target, position);
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            writebackCalls.incrementAndGet();
            writebackFurthest.accumulateAndGet(offset + length, Math::max);
            return delegate.startWriteback(offset, length);
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            delegate.transferTo(position, count, target);
        }

        @Override
        public void force() throws IOException {
            long n = forces.incrementAndGet();
            if (n == failForceAt) {
                throw new IOException("Input/output error (injected) on force #" + n + " of " + path());
            }
            delegate.force();
        }

        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            return delegate.map(mode, offset, size, arena);
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            if (diskFull.get()) {
                throw new io.sluice.store.io.StoreIOException("No space left on device (injected) zeroing " + path(),
                        io.sluice.store.io.StoreIOException.ENOSPC);
            }
            delegate.zeroRange(offset, length);
        }

        @Override
        public long nextData(long offset) throws IOException {
            return delegate.nextData(offset);
        }

        @Override
        public void truncate(long size) throws IOException {
            delegate.truncate(size);
        }

        @Override
        public void close() throws IOException {
            delegate.close();
        }
    }
}
