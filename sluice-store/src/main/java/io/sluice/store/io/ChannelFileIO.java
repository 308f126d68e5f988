package io.sluice.store.io;

import io.sluice.store.internal.io.NativeIO;
import java.io.Closeable;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.channels.FileLock;
import java.nio.channels.OverlappingFileLockException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.OpenOption;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * {@link FileIO} over {@link FileChannel}, with {@code fallocate} through FFM where it is available: the fallback
 * where the C library cannot be linked ({@link NativeFileIO} is the default on Linux). FileChannel reports no
 * error number, and an interrupted caller closes a channel for every thread that shares it.
 */
class ChannelFileIO implements FileIO {

    private static final Logger LOG = LoggerFactory.getLogger(ChannelFileIO.class);

    /** @return {@link NativeFileIO} where the C library's calls could be linked, else a ChannelFileIO */
    static FileIO platformDefault() {
        if (io.sluice.store.internal.io.Libc.AVAILABLE) {
            return new NativeFileIO();
        }
        LOG.warn("native file calls are unavailable on this platform: files go through FileChannel, whose errors carry"
                + " no error number and which an interrupted caller closes for every thread");
        return new ChannelFileIO();
    }
    private static final int ZERO_CHUNK_BYTES = 1 << 20;
    private static final long ZERO_FORCE_BYTES = 64L << 20;
    /**
     * {@code com.sun.nio.file.ExtendedOpenOption.DIRECT}, looked up by name: jdk.unsupported exports it for
     * this use, but javac flags any compile-time reference as proprietary API. Null where it is missing.
     */
    private static final OpenOption DIRECT_OPTION = directOption();
    private static final int NO_DESCRIPTOR = -2;

    private static OpenOption directOption() {
        try {
            return (OpenOption) Class.forName("com.sun.nio.file.ExtendedOpenOption").getField("DIRECT").get(null);
        } catch (ReflectiveOperationException | RuntimeException e) {
            return null;
        }
    }

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        FileChannel channel = switch (mode) {
            case READ_ONLY -> FileChannel.open(path, StandardOpenOption.READ);
            case READ_WRITE -> FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
            case CREATE -> FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE,
                    StandardOpenOption.CREATE);
        };
        return new ChannelFile(path, channel);
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }

    @Override
    public DiskSpace diskSpace(Path path) throws IOException {
        FileStore store = Files.getFileStore(path);
        return new DiskSpace(store.getTotalSpace(), store.getUnallocatedSpace(), store.getUsableSpace());
    }

    @Override
    public boolean exists(Path path) {
        return Files.exists(path, LinkOption.NOFOLLOW_LINKS);
    }

    @Override
    public boolean isDirectory(Path path) {
        return Files.isDirectory(path);
    }

    @Override
    public List<Path> list(Path directory) throws IOException {
        try (Stream<Path> entries = Files.list(directory)) {
            return entries.sorted(Comparator.comparing(p -> p.getFileName().toString())).toList();
        }
    }

    @Override
    public boolean createDirectory(Path directory) throws IOException {
        try {
            Files.createDirectory(directory);
            return true;
        } catch (FileAlreadyExistsException e) {
            if (!Files.isDirectory(directory)) {
                throw e;
            }
            return false;
        }
    }

    @Override
    public boolean delete(Path path) throws IOException {
        return Files.deleteIfExists(path);
    }

    @Override
    public void rename(Path source, Path target) throws IOException {
        Files.move(source, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    @Override
    public Closeable tryLock(Path path) throws IOException {
        FileChannel channel = FileChannel.open(path, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
        FileLock lock;
        try {
            lock = channel.tryLock();
        } catch (OverlappingFileLockException e) {
            lock = null;
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
        if (lock == null) {
            channel.close();
            return null;
        }
        FileLock held = lock;
        return () -> {
            try {
                held.release();
            } finally {
                channel.close();
            }
        };
    }

    private static final class ChannelFile implements StoreFile {

        private static final AtomicBoolean DIRECT_WARNED = new AtomicBoolean();

        private final Path path;
        private final FileChannel channel;
        /** Opened on the first direct write; {@code channel} itself where O_DIRECT is refused. */
        private volatile FileChannel direct;
        /** A native descriptor of the file for {@code sync_file_range}, opened on first use. */
        private volatile int nativeDescriptor = NO_DESCRIPTOR;

        ChannelFile(Path path, FileChannel channel) {
            this.path = path;
            this.channel = channel;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public long size() throws IOException {
            return channel.size();
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            if (!zeroFill && NativeIO.fallocate(path, size)) {
                return;
            }
            try {
                zeroFill(size);
            } catch (IOException e) {
                throw withErrno(e, size - channel.size());
            }
        }

        /**
         * Writes zeros from the current end to {@code size} through the page cache, forcing every
         * {@link #ZERO_FORCE_BYTES}. Through the cache, because the zeroed pages stay cached and later partial
         * writes into them need no read from disk (zeros written with O_DIRECT measured 4x slower SYNC
         * appends on the CHANNEL path for that reason). Forced as it goes, so preparing a segment never
         * builds a backlog of dirty pages that would stall the forces of appends running meanwhile. The
         * final force puts the zeros on the device: later fdatasyncs then overwrite written blocks and need
         * no extent conversion, which is the point of zero-filling.
         */
        private void zeroFill(long size) throws IOException {
            ByteBuffer zeros = ByteBuffer.allocateDirect(ZERO_CHUNK_BYTES);
            long position = channel.size();
            long unforced = 0;
            while (position < size) {
                zeros.clear().limit((int) Math.min(ZERO_CHUNK_BYTES, size - position));
                writeFully(zeros, position);
                position += zeros.limit();
                unforced += zeros.limit();
                if (unforced >= ZERO_FORCE_BYTES) {
                    channel.force(false);
                    unforced = 0;
                }
            }
            channel.force(false);
            LOG.debug("zero-filled {} to {} bytes", path, size);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            int length = source.remaining();
            try {
                writeFully(source, position, channel);
            } catch (IOException e) {
                throw withErrno(e, length);
            }
        }

        /**
         * FileChannel reports no error number: a write that fails while the filesystem has less room than it
         * needed is taken for ENOSPC.
         */
        private IOException withErrno(IOException failure, long needed) {
            if (failure instanceof StoreIOException) {
                return failure;
            }
            try {
                if (Files.getFileStore(path).getUsableSpace() < Math.max(needed, 4096)) {
                    StoreIOException full = new StoreIOException("No space left on device: " + path + ": "
                            + failure.getMessage(), StoreIOException.ENOSPC);
                    full.initCause(failure);
                    return full;
                }
            } catch (IOException | RuntimeException e) {
                failure.addSuppressed(e);
            }
            return failure;
        }

        private static void writeFully(ByteBuffer source, long position, FileChannel target) throws IOException {
            long at = position;
            while (source.hasRemaining()) {
                at += target.write(source, at);
            }
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            int fd = nativeDescriptor;
            if (fd == NO_DESCRIPTOR) {
                synchronized (this) {
                    if (nativeDescriptor == NO_DESCRIPTOR) {
                        nativeDescriptor = NativeIO.open(path);
                    }
                    fd = nativeDescriptor;
                }
            }
            return NativeIO.syncFileRange(fd, offset, length);
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            long at = position;
            long end = position + count;
            while (at < end) {
                long sent = channel.transferTo(at, end - at, target);
                if (sent == 0 && at >= channel.size()) {
                    throw new EOFException(path + " ends at " + channel.size() + ", before " + end);
                }
                at += sent;
            }
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            StoreFile.requireDirectAlignment(source, position);
            writeFully(source.asByteBuffer(), position, directChannel());
        }

        private FileChannel directChannel() throws IOException {
            FileChannel open = direct;
            if (open != null) {
                return open;
            }
            synchronized (this) {
                if (direct == null) {
                    try {
                        if (DIRECT_OPTION == null) {
                            throw new UnsupportedOperationException("this JDK has no ExtendedOpenOption.DIRECT");
                        }
                        direct = FileChannel.open(path, StandardOpenOption.WRITE, DIRECT_OPTION);
                    } catch (IOException | UnsupportedOperationException e) {
                        if (DIRECT_WARNED.compareAndSet(false, true)) {
                            LOG.warn("O_DIRECT refused for {} ({}); the DIRECT path writes through the page cache",
                                    path, e.toString());
                        }
                        direct = channel;
                    }
                }
                return direct;
            }
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            return channel.read(target, position);
        }

        @Override
        public void force() throws IOException {
            channel.force(false);
        }

        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            return channel.map(mode, offset, size, arena);
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            if (length <= 0 || NativeIO.zeroRange(path, offset, length)) {
                return;
            }
            ByteBuffer zeros = ByteBuffer.allocateDirect((int) Math.min(ZERO_CHUNK_BYTES, length));
            for (long at = offset; at < offset + length; at += zeros.limit()) {
                zeros.clear().limit((int) Math.min(zeros.capacity(), offset + length - at));
                writeFully(zeros, at);
            }
        }

        @Override
        public void truncate(long size) throws IOException {
            channel.truncate(size);
        }

        @Override
        public void close() throws IOException {
            FileChannel open = direct;
            synchronized (this) {
                NativeIO.close(nativeDescriptor);
                nativeDescriptor = NO_DESCRIPTOR;
            }
            try {
                if (open != null && open != channel) {
                    open.close();
                }
            } finally {
                channel.close();
            }
        }
    }
}
