package io.sluice.store;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.StoreFile;
import io.sluice.store.io.StoreIOException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A {@link io.sluice.store.io.FileIO} that injects faults: EIO on the n-th write or force, ENOSPC on
 * allocation or writes while the "disk" is full. Counts start when armed. Thread-safe.
 */
final class FaultyFileIO extends ForwardingFileIO {

    final AtomicLong writes = new AtomicLong();
    final AtomicLong forces = new AtomicLong();
    volatile long failWriteAt = -1;
    final AtomicBoolean diskFull = new AtomicBoolean();
    /** {@code startWriteback} calls on segment files, and the furthest file offset they covered. */
    final AtomicLong writebackCalls = new AtomicLong();
    final AtomicLong writebackFurthest = new AtomicLong();
    /** Every directory sync, as "thread name|directory". */
    final Queue<String> directorySyncs = new ConcurrentLinkedQueue<>();

    /** Fails the n-th write from now (1 = the next) with EIO. */
    void failWriteAfter(long n) {
        failWriteAt = writes.get() + n;
    }

    /** The file whose next force fails with EIO, or null. */
    volatile java.nio.file.Path failNextForceOf;

    /**
     * Fails the next force of one file with EIO, whatever other files (a segment prepared ahead, say) are forced
     * meanwhile.
     */
    void failNextForceOf(java.nio.file.Path file) {
        failNextForceOf = file.toAbsolutePath();
    }

    /** Reports a filesystem of 1,000,000 bytes, {@code usedRatio} of it in use. */
    void reportDiskUse(double usedRatio) {
        long free = Math.round(1_000_000 * (1 - usedRatio));
        reportedSpace = new DiskSpace(1_000_000, free, free);
    }

    @Override
    StoreFile wrap(StoreFile opened) {
        return new Faulty(opened);
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        directorySyncs.add(Thread.currentThread().getName() + "|" + directory);
        super.syncDirectory(directory);
    }

    private StoreIOException noSpace(String doing, Path path) {
        return new StoreIOException("No space left on device (injected) " + doing + " " + path, StoreIOException.ENOSPC);
    }

    private final class Faulty extends ForwardingFile {

        Faulty(StoreFile delegate) {
            super(delegate);
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            if (diskFull.get()) {
                throw noSpace("allocating", path());
            }
            super.allocate(size, zeroFill);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            long n = writes.incrementAndGet();
            if (n == failWriteAt) {
                throw new IOException("Input/output error (injected) on write #" + n + " to " + path());
            }
            if (diskFull.get()) {
                throw noSpace("writing", path());
            }
            super.writeFully(source, position);
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            long n = writes.incrementAndGet();
            if (n == failWriteAt) {
                throw new IOException("Input/output error (injected) on direct write #" + n + " to " + path());
            }
            if (diskFull.get()) {
                throw noSpace("writing", path());
            }
            super.writeDirect(source, position);
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            writebackCalls.incrementAndGet();
            writebackFurthest.accumulateAndGet(offset + length, Math::max);
            return super.startWriteback(offset, length);
        }

        @Override
        public void force() throws IOException {
            long n = forces.incrementAndGet();
            java.nio.file.Path target = failNextForceOf;
            if (target != null && target.equals(path().toAbsolutePath())) {
                failNextForceOf = null;
                throw new IOException("Input/output error (injected) on force #" + n + " of " + path());
            }
            super.force();
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            if (diskFull.get()) {
                throw noSpace("zeroing", path());
            }
            super.zeroRange(offset, length);
        }
    }
}
