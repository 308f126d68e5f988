package io.sluice.store.io;

import io.sluice.store.internal.io.NativeIO;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link FileIO} over {@link FileChannel}, with {@code fallocate} through FFM where it is available. */
final class DefaultFileIO implements FileIO {

    private static final Logger LOG = LoggerFactory.getLogger(DefaultFileIO.class);
    private static final int ZERO_CHUNK_BYTES = 1 << 20;

    @Override
    public StoreFile open(Path path, boolean create) throws IOException {
        FileChannel channel = create
                ? FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE, StandardOpenOption.CREATE)
                : FileChannel.open(path, StandardOpenOption.READ, StandardOpenOption.WRITE);
        return new ChannelFile(path, channel);
    }

    @Override
    public void syncDirectory(Path directory) throws IOException {
        try (FileChannel dir = FileChannel.open(directory, StandardOpenOption.READ)) {
            dir.force(true);
        }
    }

    private record ChannelFile(Path path, FileChannel channel) implements StoreFile {

        @Override
        public long size() throws IOException {
            return channel.size();
        }

        @Override
        public void allocate(long size, boolean zeroFill) throws IOException {
            if (!zeroFill && NativeIO.fallocate(path, size)) {
                return;
            }
            zeroFill(size);
        }

        private void zeroFill(long size) throws IOException {
            ByteBuffer zeros = ByteBuffer.allocateDirect(ZERO_CHUNK_BYTES);
            long position = channel.size();
            while (position < size) {
                zeros.clear().limit((int) Math.min(ZERO_CHUNK_BYTES, size - position));
                writeFully(zeros, position);
                position += zeros.limit();
            }
            LOG.debug("zero-filled {} to {} bytes", path, size);
        }

        @Override
        public void writeFully(ByteBuffer source, long position) throws IOException {
            long at = position;
            while (source.hasRemaining()) {
                at += channel.write(source, at);
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
        public void truncate(long size) throws IOException {
            channel.truncate(size);
        }

        @Override
        public void close() throws IOException {
            channel.close();
        }
    }
}
