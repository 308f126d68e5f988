package io.sluice.bench.io;

import io.sluice.bench.lab.Progress;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.SplittableRandom;
import java.util.zip.CRC32C;

/** Makes seeded pseudo-random data files and checksums files, for experiments that verify what they copied. */
public final class DataFiles {

    private static final int BLOCK_BYTES = 1 << 20;

    private DataFiles() {
    }

    /**
     * Writes {@code size} seeded pseudo-random bytes to a new {@code file} and syncs it.
     *
     * @return the CRC32C of the whole file
     */
    public static long create(Path file, long size, long seed, Progress progress) throws IOException {
        SplittableRandom random = new SplittableRandom(seed);
        CRC32C crc = new CRC32C();
        ByteBuffer block = ByteBuffer.allocateDirect(BLOCK_BYTES);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.CREATE_NEW, StandardOpenOption.WRITE)) {
            for (long written = 0; written < size; ) {
                int length = (int) Math.min(BLOCK_BYTES, size - written);
                block.clear().limit(length);
                while (block.remaining() >= Long.BYTES) {
                    block.putLong(random.nextLong());
                }
                while (block.hasRemaining()) {
                    block.put((byte) random.nextInt());
                }
                block.flip();
                crc.update(block.duplicate());
                while (block.hasRemaining()) {
                    written += channel.write(block);
                }
                progress.step(length);
            }
            channel.force(true);
        }
        return crc.getValue();
    }

    /** @return the CRC32C of the first {@code length} bytes of {@code file} */
    public static long crc(Path file, long length) throws IOException {
        CRC32C crc = new CRC32C();
        ByteBuffer block = ByteBuffer.allocateDirect(BLOCK_BYTES);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long position = 0;
            while (position < length) {
                block.clear().limit((int) Math.min(BLOCK_BYTES, length - position));
                int read = channel.read(block, position);
                if (read < 0) {
                    break;
                }
                position += read;
                block.flip();
                crc.update(block);
            }
        }
        return crc.getValue();
    }

    /** Reads the whole file once, so it is in the page cache. */
    public static void warm(Path file) throws IOException {
        ByteBuffer block = ByteBuffer.allocateDirect(BLOCK_BYTES);
        try (FileChannel channel = FileChannel.open(file, StandardOpenOption.READ)) {
            long position = 0;
            int read;
            while ((read = channel.read(block.clear(), position)) > 0) {
                position += read;
            }
        }
    }
}
