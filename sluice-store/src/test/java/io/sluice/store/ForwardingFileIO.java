package io.sluice.store;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.Closeable;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.List;

/**
 * A {@link FileIO} that passes every call to {@link FileIO#DEFAULT}, and wraps every file it opens in a
 * {@link ForwardingFile}: test seams ({@code FaultyFileIO}, {@code HookedFileIO}) override only the calls they
 * change. Reports a chosen disk use when told to.
 */
abstract class ForwardingFileIO implements FileIO {

    /** When set, what {@link #diskSpace} reports instead of the real filesystem. */
    volatile DiskSpace reportedSpace;

    /** @return {@code opened}, wrapped as the seam wants (a subclass of {@link ForwardingFile}) */
    abstract StoreFile wrap(StoreFile opened);

    @Override
    public StoreFile open(Path path, OpenMode mode) throws IOException {
        return wrap(DEFAULT.open(path, mode));
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        DEFAULT.syncDirectory(directory);
    }

    @Override
    public boolean syncFileSystem(Path path) throws IOException {
        return DEFAULT.syncFileSystem(path);
    }

    /** A handle whose syncs are this seam's {@link #syncFileSystem} (so a subclass's hooks see them). */
    @Override
    public FileSystemSync openFileSystemSync(Path path) throws IOException {
        return new FileSystemSync() {
            @Override
            public void sync() throws IOException {
                if (!syncFileSystem(path)) {
                    throw new IOException("this seam cannot sync a file system");
                }
            }

            @Override
            public void close() {
            }
        };
    }

    @Override
    public DiskSpace diskSpace(Path path) throws IOException {
        DiskSpace space = reportedSpace;
        return space != null ? space : DEFAULT.diskSpace(path);
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
    public List<Path> list(Path directory) throws IOException {
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
    public Closeable tryLock(Path path) throws IOException {
        return DEFAULT.tryLock(path);
    }

    /** A file that passes every call to the file it wraps. */
    static class ForwardingFile implements StoreFile {
        final StoreFile delegate;

        ForwardingFile(StoreFile delegate) {
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
            delegate.allocate(size, zeroFill);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            delegate.writeFully(source, position);
        }

        @Override
        public void writeDirect(MemorySegment source, long position) throws IOException {
            delegate.writeDirect(source, position);
        }

        @Override
        public int read(ByteBuffer target, long position) throws IOException {
            return delegate.read(target, position);
        }

        @Override
        public void transferTo(long position, long count, WritableByteChannel target) throws IOException {
            delegate.transferTo(position, count, target);
        }

        @Override
        public boolean startWriteback(long offset, long length) throws IOException {
            return delegate.startWriteback(offset, length);
        }

        @Override
        public void force() throws IOException {
            delegate.force();
        }

        @Override
        public void zeroRange(long offset, long length) throws IOException {
            delegate.zeroRange(offset, length);
        }

        @Override
        public long nextData(long offset) throws IOException {
            return delegate.nextData(offset);
        }

        @Override
        public MemorySegment map(FileChannel.MapMode mode, long offset, long size, Arena arena) throws IOException {
            return delegate.map(mode, offset, size, arena);
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
