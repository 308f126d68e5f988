package io.sluice.store.internal.recovery;

import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.function.Consumer;
import java.util.zip.CRC32C;

/**
 * The frame of the store's small files of entries (the topic registry, the log starts): little-endian, a header of
 * magic (4 bytes), version (2), reserved (2) and entry count (4), the entries, then the CRC32C of every byte before
 * it (4). Written whole and replaced atomically.
 */
final class SealedFile {

    /** Bytes of the header and the CRC together. */
    static final int FRAME_BYTES = 16;

    private SealedFile() {
    }

    /**
     * A file's contents.
     *
     * @param version the file's version
     * @param count the entries it says it holds
     * @param entries its entries' bytes, from position 0 to their end (little-endian)
     */
    record Contents(short version, int count, ByteBuffer entries) {
    }

    /**
     * @return the contents of a file's bytes
     * @throws IllegalStateException if they are not a whole file of this magic and a version from 1 to
     *     {@code maxVersion}
     */
    static Contents open(byte[] bytes, int magic, short maxVersion) {
        if (bytes.length < FRAME_BYTES) {
            throw new IllegalStateException("a file of " + bytes.length + " bytes is shorter than a header");
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        short version = buffer.getShort(4);
        if (buffer.getInt(bytes.length - 4) != (int) crc.getValue() || buffer.getInt(0) != magic || version < 1
                || version > maxVersion) {
            throw new IllegalStateException("bad magic, version or checksum");
        }
        ByteBuffer entries = buffer.position(12).limit(bytes.length - 4).slice().order(ByteOrder.LITTLE_ENDIAN);
        return new Contents(version, buffer.getInt(8), entries);
    }

    /**
     * Writes a file of {@code count} entries, {@code entriesBytes} of them, and replaces {@code name} in
     * {@code directory} with it atomically.
     *
     * @param entries writes the entries, exactly {@code entriesBytes}
     * @throws AtomicFile.UncertainReplaceException if saving failed at or after the rename
     */
    static void save(FileIO io, Path directory, String name, int magic, short version, int count, int entriesBytes,
                     Consumer<ByteBuffer> entries) throws IOException {
        int size = FRAME_BYTES + entriesBytes;
        ByteBuffer buffer = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(magic).putShort(version).putShort((short) 0).putInt(count);
        entries.accept(buffer);
        if (buffer.position() != size - 4) {
            throw new IllegalStateException("entries of " + (buffer.position() - 12) + " bytes, not " + entriesBytes);
        }
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, size - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, name, buffer);
    }
}
