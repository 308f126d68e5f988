package io.sluice.store.internal.recovery;

import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The checkpoint file: how far the log was forced and how far the queue indexes were forced when it was
 * written. Replaced atomically: temp file, fsync, rename, directory fsync. Little-endian:
 *
 * <pre>
 * offset size field
 *   0     4   magic               0x534C4350 ("SLCP")
 *   4     2   version             1
 *   6     2   reserved            0
 *   8     8   flushedLogPosition  log bytes below it were forced
 *  16     8   indexedLogPosition  index entries of records below it were forced
 *  24     8   writtenMillis       when the checkpoint was written
 *  32     4   crc                 CRC32C of bytes [0, 32)
 * </pre>
 *
 * @param flushedLogPosition log bytes below it were forced
 * @param indexedLogPosition index entries for records below it were forced
 * @param writtenMillis when it was written
 */
public record Checkpoint(long flushedLogPosition, long indexedLogPosition, long writtenMillis) {

    /** The checkpoint's file name. */
    public static final String FILE_NAME = "checkpoint";
    static final int MAGIC = 0x534C4350;
    static final short VERSION = 1;
    static final int BYTES = 36;

    /** @return the checkpoint in {@code directory}, or null if it is missing or fails its checksum */
    public static Checkpoint read(FileIO io, Path directory) throws IOException {
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return null;
        }
        byte[] bytes = FileTree.readAll(io, path);
        if (bytes.length != BYTES) {
            return null;
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, BYTES - 4);
        if (buffer.getInt(0) != MAGIC || buffer.getShort(4) != VERSION || buffer.getInt(32) != (int) crc.getValue()) {
            return null;
        }
        return new Checkpoint(buffer.getLong(8), buffer.getLong(16), buffer.getLong(24));
    }

    /** Writes this checkpoint atomically into {@code directory}. */
    public void write(FileIO io, Path directory) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putShort(VERSION).putShort((short) 0)
                .putLong(flushedLogPosition).putLong(indexedLogPosition).putLong(writtenMillis);
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, BYTES - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, FILE_NAME, buffer);
    }
}
