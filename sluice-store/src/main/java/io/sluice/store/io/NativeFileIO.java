package io.sluice.store.io;

import io.sluice.store.internal.io.Libc;
import io.sluice.store.internal.io.NativeIO;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The default {@link FileIO} on Linux: files are read, written, forced, sized and mapped with the C library's
 * calls on a descriptor ({@link Libc}), so that
 * <ul>
 * <li>every failure carries its {@code errno} ({@link StoreIOException}), and a full disk is told from a failing
 *     one by number, in any locale;</li>
 * <li>an interrupt of a caller's thread affects only that call: the calls do not react to interrupts, and the one
 *     place a {@link FileChannel} is still used, {@code sendfile} in {@link StoreFile#transferTo}, has a channel
 *     of its own that is reopened if an interrupted caller closed it.</li>
 * </ul>
 * Listing, existence, disk space and process locks go through the JDK, as in {@link ChannelFileIO}.
 */
final class NativeFileIO extends ChannelFileIO {

    private static final Logger LOG = LoggerFactory.getLogger(NativeFileIO.class);
    private static final long ZERO_CHUNK_BYTES = 1 << 20;
    private static final long ZERO_FORCE_BYTES = 64L << 20;
    /** One megabyte of zeros, for zero-filling and for erasing where fallocate cannot. */
    private static final MemorySegment ZEROS = Arena.global().allocate(ZERO_CHUNK_BYTES, 4096);
    private static final AtomicBoolean FALLOCATE_WARNED = new AtomicBoolean();
    private static final AtomicBoolean DIRECT_WARNED = new AtomicBoolean();

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        int flags = switch (mode) {
            case READ_ONLY -> Libc.O_RDONLY;
            case READ_WRITE -> Libc.O_RDWR;
            case CREATE -> Libc.O_RDWR | Libc.O_CREAT;
        };
        try {
            return new NativeFile(path, Libc.open(path, flags), mode == OpenMode.READ_ONLY);
        } catch (StoreIOException e) {
            throw e.errno() == Libc.ENOENT ? new NoSuchFileException(path.toString()) : e;
        }
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        int fd = Libc.open(directory, Libc.O_RDONLY | Libc.O_DIRECTORY);
        try {
            Libc.sync(fd, true, directory);
        } finally {
            Libc.close(fd);
        }
    }

    @Override
    public boolean syncFileSystem(Path path) throws IOException {
        int fd = Libc.open(path, Libc.O_RDONLY);
        try {
            Libc.syncfs(fd, path);
        } finally {
            Libc.close(fd);
        }
        return true;
    }

    @Override
    public FileSystemSync openFileSystemSync(Path path) throws IOException {
        int fd = Libc.open(path, Libc.O_RDONLY);
        return new FileSystemSync() {
            private boolean closed;

            @Override
            public synchronized void sync() throws IOException {
                if (closed) {
                    throw new IOException("the sync handle of " + path + " is closed");
                }
                Libc.syncfs(fd, path);
            }

            @Override
            public synchronized void close() throws IOException {
                if (!closed) {
                    closed = true;
                    Libc.close(fd);
                }
            }
        };
    }

    @Override
    public boolean createDirectory(Path directory) throws IOException {
        if (Libc.mkdir(directory)) {
            return true;
        }
        if (!isDirectory(directory)) {
            throw new FileAlreadyExistsException(directory.toString());
        }
        return false;
    }

    @Override
    public boolean delete(Path path) throws IOException {
        return Libc.remove(path);
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        Libc.rename(source, target);
    }

    /** An open file: a descriptor, a second one for O_DIRECT writes, and a channel for transfers. */
    private static final class NativeFile implements StoreFile {

        private static final int NOT_OPENED = -2;
        private static final int REFUSED = -1;

        private final Path path;
        private final int fd;
        private final boolean readOnly;
        private final AtomicBoolean closed = new AtomicBoolean();
        private volatile int directFd = NOT_OPENED;
        private volatile FileChannel transfers;

        NativeFile(Path path, int fd, boolean readOnly) {
            this.path = path;
            this.fd = fd;
            this.readOnly = readOnly;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public long size() throws IOException {
            return Libc.size(fd, path);
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            long current = size();
            if (size <= current) {
                return;
            }
            if (!zeroFill) {
                if (Libc.fallocate(fd, 0, 0, size, path)) {
                    return;
                }
                if (FALLOCATE_WARNED.compareAndSet(false, true)) {
                    LOG.warn("fallocate is not supported for {}; writing zeros instead (warned once)", path);
                }
            }
            zeroFill(current, size);
        }

        /**
         * Writes zeros over [from, to) through the page cache, forcing every 64 MiB: the zeroed pages stay cached
         * (later partial writes need no read), and preparing a segment never leaves a dirty backlog that would
         * stall the forces of appends running meanwhile. The final force puts the zeros on the device: later
         * fdatasyncs then overwrite written blocks and need no extent conversion.
         */
        private void zeroFill(long from, long to) throws IOException {
            long unforced = 0;
            for (long at = from; at < to; at += ZERO_CHUNK_BYTES) {
                long length = Math.min(ZERO_CHUNK_BYTES, to - at);
                Libc.pwriteFully(fd, ZEROS.asSlice(0, length), at, path);
                unforced += length;
                if (unforced >= ZERO_FORCE_BYTES) {
                    Libc.sync(fd, false, path);
                    unforced = 0;
                }
            }
            Libc.sync(fd, false, path);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            int length = source.remaining();
            if (source.isDirect()) {
                Libc.pwriteFully(fd, MemorySegment.ofBuffer(source), position, path);
            } else {
                // Through a kept native buffer, a piece of its size at a time.
                MemorySegment from = MemorySegment.ofBuffer(source);
                MemorySegment bounce = BounceBuffers.take();
                try {
                    for (long done = 0; done < length; ) {
                        long piece = Math.min(BounceBuffers.BYTES, length - done);
                        MemorySegment.copy(from, done, bounce, 0, piece);
                        Libc.pwriteFully(fd, bounce.asSlice(0, piece), position + done, path);
                        done += piece;
                    }
                } finally {
                    BounceBuffers.give(bounce);
                }
            }
            source.position(source.limit());
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            StoreFile.requireDirectAlignment(source, position);
            int direct = directDescriptor();
            Libc.pwriteFully(direct == REFUSED ? fd : direct, source, position, path);
        }

        private int directDescriptor() throws IOException {
            int direct = directFd;
            if (direct != NOT_OPENED) {
                return direct;
            }
            synchronized (this) {
                if (directFd == NOT_OPENED) {
                    try {
                        directFd = Libc.open(path, Libc.O_RDWR | Libc.O_DIRECT);
                    } catch (StoreIOException e) {
                        if (e.errno() != Libc.EINVAL) {
                            throw e;
                        }
                        if (DIRECT_WARNED.compareAndSet(false, true)) {
                            LOG.warn("O_DIRECT refused for {} ({}); the DIRECT path writes through the page cache",
                                    path, e.getMessage());
                        }
                        directFd = REFUSED;
                    }
                }
                return directFd;
            }
        }

        @Override
        public long nextData(long offset) throws IOException {
            return Libc.seekData(fd, offset, path);
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            long end = Math.min(offset + length, size());
            if (end <= offset) {
                return;
            }
            if (Libc.fallocate(fd, Libc.FALLOC_FL_ZERO_RANGE | Libc.FALLOC_FL_KEEP_SIZE, offset, end - offset, path)) {
                return;
            }
            for (long at = offset; at < end; at += ZERO_CHUNK_BYTES) {
                Libc.pwriteFully(fd, ZEROS.asSlice(0, Math.min(ZERO_CHUNK_BYTES, end - at)), at, path);
            }
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            int length = target.remaining();
            if (length == 0) {
                return 0;
            }
            long n;
            if (target.isDirect()) {
                n = Libc.pread(fd, MemorySegment.ofBuffer(target), position, path);
            } else {
                // Through a kept native buffer, a piece of its size at a time, until the target is full or the file
                // gives less than asked (as one pread into the target would).
                MemorySegment into = MemorySegment.ofBuffer(target);
                MemorySegment bounce = BounceBuffers.take();
                try {
                    n = 0;
                    while (n < length) {
                        long asked = Math.min(BounceBuffers.BYTES, length - n);
                        long got = Libc.pread(fd, bounce.asSlice(0, asked), position + n, path);
                        MemorySegment.copy(bounce, 0, into, n, got);
                        n += got;
                        if (got < asked) {
                            break;
                        }
                    }
                } finally {
                    BounceBuffers.give(bounce);
                }
            }
            if (n == 0) {
                return -1;
            }
            target.position(target.position() + (int) n);
            return (int) n;
        }

        /**
         * {@code sendfile} through a channel of this file's own. An interrupted caller closes it (the JDK's rule
         * for interruptible channels) and gets the interrupt; any other transfer caught by that close, and every
         * later one, reopens it and goes on.
         */
        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            long at = position;
            long end = position + count;
            int reopened = 0;
            while (at < end) {
                FileChannel channel = transferChannel();
                try {
                    long sent = channel.transferTo(at, end - at, target);
                    if (sent == 0 && at >= size()) {
                        throw new EOFException(path + " ends at " + size() + ", before " + end);
                    }
                    at += sent;
                } catch (ClosedByInterruptException e) {
                    dropTransferChannel(channel);
                    throw e;
                } catch (AsynchronousCloseException e) {
                    dropTransferChannel(channel);
                    if (Thread.currentThread().isInterrupted() || closed.get() || ++reopened > 3) {
                        throw e;
                    }
                } catch (ClosedChannelException e) {
                    dropTransferChannel(channel);
                    if (closed.get() || ++reopened > 3) {
                        throw e;
                    }
                }
            }
        }

        private FileChannel transferChannel() throws IOException {
            FileChannel channel = transfers;
            if (channel != null && channel.isOpen()) {
                return channel;
            }
            synchronized (this) {
                if (closed.get()) {
                    throw new ClosedChannelException();
                }
                if (transfers == null || !transfers.isOpen()) {
                    // Through this file's own descriptor, not its name: the name may be another file's by now (a
                    // compacted segment's copy renamed over it), and a transfer must read the file it holds.
                    transfers = FileChannel.open(Path.of("/proc/self/fd/" + fd), StandardOpenOption.READ);
                }
                return transfers;
            }
        }

        private synchronized void dropTransferChannel(FileChannel channel) {
            if (transfers == channel) {
                transfers = null;
            }
            try {
                channel.close();
            } catch (IOException e) {
                LOG.debug("closing a transfer channel of {}: {}", path, e.toString());
            }
        }

        @Override
        public boolean startWriteback(long offset, long length) {
            return NativeIO.syncFileRange(fd, offset, length);
        }

        @Override
        public void force() throws IOException {
            Libc.sync(fd, false, path);
        }

        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            boolean writable = mode == FileChannel.MapMode.READ_WRITE;
            if (writable && readOnly) {
                throw new IOException(path + " is open for reading only: it cannot be mapped for writing");
            }
            MemorySegment mapping = Libc.mmap(fd, offset, size, writable, arena, path);
            return writable ? mapping : mapping.asReadOnly();
        }

        @Override
        public void truncate(long size) throws IOException {
            Libc.ftruncate(fd, size, path);
        }

        @Override
        public void close() throws IOException {
            if (!closed.compareAndSet(false, true)) {
                return;
            }
            FileChannel channel;
            synchronized (this) {
                channel = transfers;
                transfers = null;
                if (directFd >= 0) {
                    Libc.close(directFd);
                }
                directFd = REFUSED;
            }
            try {
                if (channel != null) {
                    channel.close();
                }
            } finally {
                Libc.close(fd);
            }
        }
    }
}
