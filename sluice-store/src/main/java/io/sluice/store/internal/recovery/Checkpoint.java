package io.sluice.store.internal.recovery;

import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The store's checkpoint: for every log, its <em>durable position</em> and its <em>start</em>. Everything a log
 * holds below its durable position was forced before the checkpoint was written: the log's bytes, the queue-
 * and key-index entries of its records, and the directory entries of every file holding them (see
 * {@code DurabilityLedger}). Nothing else is claimed. The start is the log's first position after retention:
 * a segment wholly below it that a power cut brought back (its deletion not yet durable) is deleted again at
 * open, and index files are deleted only once a checkpoint records the start they were trimmed to, so a
 * segment never comes back without the index entries that lead to it. Replaced atomically: temp file, fsync,
 * rename, directory fsync. Little-endian:
 *
 * <pre>
 * offset size field
 *   0     4   magic           0x534C4350 ("SLCP")
 *   4     2   version         2
 *   6     2   reserved        0
 *   8     8   writtenMillis   when it was written
 *  16     4   count           logs listed
 *  20     -   entries         count times: u16 name length, name (ASCII), i64 durable position, i64 start
 *   -     4   crc             CRC32C of every byte before it
 * </pre>
 * A log's name is "" for the shared log, {@code <topic>} for a TOPIC log and {@code <topic>/<queueId>} for a
 * QUEUE log. A log absent from the checkpoint has nothing durable claimed.
 *
 * @param logs each log's positions, by name
 * @param writtenMillis when it was written
 */
public record Checkpoint(Map<String, Log> logs, long writtenMillis) {

    /**
     * One log's positions.
     *
     * @param durablePosition everything below it was forced
     * @param start the log's first position after retention
     */
    public record Log(long durablePosition, long start) {
    }

    /** The checkpoint's file name. */
    public static final String FILE_NAME = "checkpoint";
    static final int MAGIC = 0x534C4350;
    static final short VERSION = 2;
    private static final int HEADER_BYTES = 20;

    /** Copies the map. */
    public Checkpoint {
        logs = Map.copyOf(logs);
    }

    /** @return the log's positions, or null if the checkpoint does not list it */
    public Log log(String name) {
        return logs.get(name);
    }

    /**
     * @return the checkpoint in {@code directory}, or null if it is missing or fails its checks (a state a power
     *     cut cannot leave, since it is replaced atomically)
     */
    public static Checkpoint read(FileIO io, Path directory) throws IOException {
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return null;
        }
        byte[] bytes = FileTree.readAll(io, path);
        if (bytes.length < HEADER_BYTES + 4) {
            return null;
        }
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, bytes.length - 4);
        if (buffer.getInt(0) != MAGIC || buffer.getShort(4) != VERSION
                || buffer.getInt(bytes.length - 4) != (int) crc.getValue()) {
            return null;
        }
        long written = buffer.getLong(8);
        int count = buffer.getInt(16);
        Map<String, Log> positions = new TreeMap<>();
        buffer.position(HEADER_BYTES).limit(bytes.length - 4);
        try {
            for (int i = 0; i < count; i++) {
                byte[] name = new byte[Short.toUnsignedInt(buffer.getShort())];
                buffer.get(name);
                positions.put(new String(name, StandardCharsets.US_ASCII), new Log(buffer.getLong(), buffer.getLong()));
            }
        } catch (RuntimeException e) {
            return null;
        }
        return new Checkpoint(positions, written);
    }

    /** Writes this checkpoint atomically into {@code directory}. */
    public void write(FileIO io, Path directory) throws IOException {
        Map<String, Log> sorted = new TreeMap<>(logs);
        int size = HEADER_BYTES + 4;
        for (String name : sorted.keySet()) {
            size += 2 + name.length() + 16;
        }
        ByteBuffer buffer = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putShort(VERSION).putShort((short) 0).putLong(writtenMillis).putInt(sorted.size());
        sorted.forEach((name, log) -> {
            byte[] bytes = name.getBytes(StandardCharsets.US_ASCII);
            buffer.putShort((short) bytes.length).put(bytes).putLong(log.durablePosition()).putLong(log.start());
        });
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, size - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, FILE_NAME, buffer);
    }
}
