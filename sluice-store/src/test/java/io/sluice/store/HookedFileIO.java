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
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A {@link FileIO} over {@link FileIO#DEFAULT} that calls a test's hook before each operation, so a test can
 * fail, or pause, one chosen operation on one chosen file (only through the public file seam: {@link FileIO}
 * and {@link StoreFile}). Reports a chosen disk use when told to. Thread-safe.
 */
final class HookedFileIO implements FileIO {

    /** The operations a hook sees. */
    enum Op {
        OPEN, ALLOCATE, WRITE, WRITE_DIRECT, ZERO_RANGE, READ, TRANSFER, FORCE, TRUNCATE, SYNC_DIRECTORY,
        CREATE_DIRECTORY, DELETE, RENAME
    }

    /** Runs before an operation; may throw to fail it, or block to pause it. */
    @FunctionalInterface
    interface Hook {
        void before(Op op, Path path) throws IOException;
    }

    private volatile Hook hook = (op, path) -> { };
    /** When set, what {@link #diskSpace} reports instead of the real filesystem. */
    volatile DiskSpace reportedSpace;

    HookedFileIO hook(Hook newHook) {
        this.hook = newHook;
        return this;
    }

    /** Reports a filesystem of 1,000,000,000 bytes, {@code usedRatio} of it in use. */
    HookedFileIO reportDiskUse(double usedRatio) {
        long free = Math.round(1_000_000_000L * (1 - usedRatio));
        reportedSpace = new DiskSpace(1_000_000_000L, free, free);
        return this;
    }

    /** @return true if {@code path} is a commit-log segment file (in a {@code log} directory) */
    static boolean isSegment(Path path) {
        Path parent = path.getParent();
        return parent != null && parent.getFileName().toString().equals("log")
                && path.getFileName().toString().matches("\\d{20}");
    }

    /** Waits for a latch, up to 60 s, so that a test gone wrong never leaves a store thread stuck for good. */
    static void awaitBounded(CountDownLatch latch) {
        try {
            if (!latch.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("test latch not released within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for a test latch", e);
        }
    }

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        hook.before(Op.OPEN, path);
        return new Hooked(DEFAULT.open(path, mode));
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
        hook.before(Op.CREATE_DIRECTORY, directory);
        return DEFAULT.createDirectory(directory);
    }

    @Override
    public boolean delete(Path path) throws IOException {
        hook.before(Op.DELETE, path);
        return DEFAULT.delete(path);
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        hook.before(Op.RENAME, target);
        DEFAULT.rename(source, target);
    }

    @Override
    public java.io.Closeable tryLock(Path path) throws IOException {
        return DEFAULT.tryLock(path);
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        hook.before(Op.SYNC_DIRECTORY, directory);
        DEFAULT.syncDirectory(directory);
    }

    @Override
    public DiskSpace diskSpace(Path path) throws IOException {
        DiskSpace space = reportedSpace;
        return space != null ? space : DEFAULT.diskSpace(path);
    }

    private final class Hooked implements StoreFile {
        private final StoreFile delegate;

        Hooked(StoreFile delegate) {
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
            hook.before(Op.ALLOCATE, path());
            delegate.allocate(size, zeroFill);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            hook.before(Op.WRITE, path());
            delegate.writeFully(source, position);
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            hook.before(Op.WRITE_DIRECT, path());
            delegate.writeDirect(source, position);
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            hook.before(Op.ZERO_RANGE, path());
            delegate.zeroRange(offset, length);
        }

        @Override
        public long nextData(long offset) throws IOException {
            return delegate.nextData(offset);
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            hook.before(Op.READ, path());
            return delegate.read(target, position);
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            hook.before(Op.TRANSFER, path());
            delegate.transferTo(position, count, target);
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            return delegate.startWriteback(offset, length);
        }

        @Override
        public void force() throws IOException {
            hook.before(Op.FORCE, path());
            delegate.force();
        }

        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            return delegate.map(mode, offset, size, arena);
        }

        @Override
        public void truncate(long size) throws IOException {
            hook.before(Op.TRUNCATE, path());
            delegate.truncate(size);
        }

        @Override
        public void close() throws IOException {
            delegate.close();
        }
    }
}
