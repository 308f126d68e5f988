package io.sluice.store;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A {@link io.sluice.store.io.FileIO} over {@link io.sluice.store.io.FileIO#DEFAULT} that calls a test's hook
 * before each operation, so a test can fail, or pause, one chosen operation on one chosen file (only through
 * the public file seam: {@code FileIO} and {@link StoreFile}). Reports a chosen disk use when told to.
 * Thread-safe.
 */
final class HookedFileIO extends ForwardingFileIO {

    /** The operations a hook sees. */
    enum Op {
        OPEN, ALLOCATE, WRITE, WRITE_DIRECT, ZERO_RANGE, READ, TRANSFER, FORCE, TRUNCATE, SYNC_DIRECTORY,
        SYNC_FILE_SYSTEM, CREATE_DIRECTORY, DELETE, RENAME
    }

    /** Runs before an operation; may throw to fail it, or block to pause it. */
    @FunctionalInterface
    interface Hook {
        void before(Op op, Path path) throws IOException;
    }

    private volatile Hook hook = (op, path) -> { };

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
    StoreFile wrap(StoreFile opened) {
        return new Hooked(opened);
    }

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        hook.before(Op.OPEN, path);
        return super.open(path, mode);
    }

    @Override
    public boolean createDirectory(Path directory) throws IOException {
        hook.before(Op.CREATE_DIRECTORY, directory);
        return super.createDirectory(directory);
    }

    @Override
    public boolean delete(Path path) throws IOException {
        hook.before(Op.DELETE, path);
        return super.delete(path);
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        hook.before(Op.RENAME, target);
        super.rename(source, target);
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        hook.before(Op.SYNC_DIRECTORY, directory);
        super.syncDirectory(directory);
    }

    /** Where {@link #syncFileSystem} answers false (a seam that cannot sync a file system), else null. */
    private volatile Boolean fileSystemSyncs;

    /** Makes {@link #syncFileSystem} answer false, as a seam that cannot sync a file system does. */
    HookedFileIO withoutFileSystemSyncs() {
        fileSystemSyncs = Boolean.FALSE;
        return this;
    }

    @Override
    public boolean syncFileSystem(Path path) throws IOException {
        hook.before(Op.SYNC_FILE_SYSTEM, path);
        return fileSystemSyncs == null ? super.syncFileSystem(path) : fileSystemSyncs;
    }

    @Override
    public FileSystemSync openFileSystemSync(Path path) throws IOException {
        return fileSystemSyncs == null ? super.openFileSystemSync(path) : null;
    }

    private final class Hooked extends ForwardingFile {

        Hooked(StoreFile delegate) {
            super(delegate);
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            hook.before(Op.ALLOCATE, path());
            super.allocate(size, zeroFill);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            hook.before(Op.WRITE, path());
            super.writeFully(source, position);
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            hook.before(Op.WRITE_DIRECT, path());
            super.writeDirect(source, position);
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            hook.before(Op.ZERO_RANGE, path());
            super.zeroRange(offset, length);
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            hook.before(Op.READ, path());
            return super.read(target, position);
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            hook.before(Op.TRANSFER, path());
            super.transferTo(position, count, target);
        }

        @Override
        public void force() throws IOException {
            hook.before(Op.FORCE, path());
            super.force();
        }

        @Override
        public void truncate(long size) throws IOException {
            hook.before(Op.TRUNCATE, path());
            super.truncate(size);
        }
    }
}
