package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.TopicLayout;
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
import java.util.concurrent.ConcurrentHashMap;
import java.util.zip.CRC32C;

/**
 * The layout of every topic that does not live in the shared log. Topics absent from it are shared. The
 * file {@code topics} is replaced atomically when a topic is created with a layout of its own; it is small
 * and written rarely. Little-endian:
 * <pre>
 * offset size field
 *   0     4   magic    0x534C5450 ("SLTP")
 *   4     2   version  1
 *   6     2   reserved 0
 *   8     4   count
 *  12     -   entries  count times: u16 topic length, topic (ASCII), u8 layout (1 TOPIC, 2 QUEUE)
 *   -     4   crc      CRC32C of every byte before it
 * </pre>
 * Unlike consumer positions, the registry decides where data is, so a damaged file refuses the open.
 *
 * <p>Thread-safe; changes are made under the caller's lock.
 */
public final class TopicRegistry {

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "topics";
    static final int MAGIC = 0x534C5450;
    static final short VERSION = 1;

    private final Map<String, TopicLayout> layouts = new ConcurrentHashMap<>();

    private TopicRegistry() {
    }

    /** @return the registry in {@code directory}; empty if there is no file */
    public static TopicRegistry load(FileIO io, Path directory) throws IOException {
        TopicRegistry registry = new TopicRegistry();
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return registry;
        }
        byte[] bytes = FileTree.readAll(io, path);
        try {
            ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
            CRC32C crc = new CRC32C();
            crc.update(bytes, 0, bytes.length - 4);
            if (bytes.length < 16 || buffer.getInt(bytes.length - 4) != (int) crc.getValue()
                    || buffer.getInt(0) != MAGIC || buffer.getShort(4) != VERSION) {
                throw new IllegalStateException("bad magic, version or checksum");
            }
            int count = buffer.getInt(8);
            buffer.position(12).limit(bytes.length - 4);
            for (int i = 0; i < count; i++) {
                byte[] topic = new byte[Short.toUnsignedInt(buffer.getShort())];
                buffer.get(topic);
                int layout = buffer.get();
                registry.layouts.put(new String(topic, StandardCharsets.US_ASCII), switch (layout) {
                    case 1 -> TopicLayout.TOPIC;
                    case 2 -> TopicLayout.QUEUE;
                    default -> throw new IllegalStateException("unknown layout code " + layout);
                });
            }
        } catch (RuntimeException e) {
            throw new StoreCorruptedException("topic registry " + path + " is damaged (" + e.getMessage()
                    + "): it says which topics have logs of their own, so the store cannot open without it", path, -1);
        }
        return registry;
    }

    /** @return the topic's layout: SHARED unless registered otherwise */
    public TopicLayout layout(String topic) {
        return layouts.getOrDefault(topic, TopicLayout.SHARED);
    }

    /** @return every topic with a log of its own, sorted */
    public Map<String, TopicLayout> ownLogs() {
        return new TreeMap<>(layouts);
    }

    /** Registers a topic with a log of its own and saves the registry atomically. */
    public void register(FileIO io, Path directory, String topic, TopicLayout layout) throws IOException {
        if (layout == TopicLayout.SHARED) {
            throw new IllegalArgumentException("shared topics are not registered");
        }
        Map<String, TopicLayout> next = new TreeMap<>(layouts);
        next.put(topic, layout);
        try {
            save(io, directory, next);
        } catch (AtomicFile.UncertainReplaceException e) {
            throw new UncertainSaveException(e.getMessage(), e);
        }
        // In force only now that it is durable: no append is routed by a layout a crash could take back.
        layouts.put(topic, layout);
    }

    /** Saving failed at or after the rename: the registry on disk may or may not hold the new topic. */
    public static final class UncertainSaveException extends IOException {
        private static final long serialVersionUID = 1L;

        UncertainSaveException(String message, IOException cause) {
            super(message, cause);
        }
    }

    private static void save(FileIO io, Path directory, Map<String, TopicLayout> snapshot) throws IOException {
        int size = 12 + 4;
        for (String topic : snapshot.keySet()) {
            size += 2 + topic.length() + 1;
        }
        ByteBuffer buffer = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putShort(VERSION).putShort((short) 0).putInt(snapshot.size());
        snapshot.forEach((topic, layout) -> {
            byte[] name = topic.getBytes(StandardCharsets.US_ASCII);
            buffer.putShort((short) name.length).put(name).put((byte) (layout == TopicLayout.TOPIC ? 1 : 2));
        });
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, size - 4);
        buffer.putInt((int) crc.getValue()).flip();
        AtomicFile.replace(io, directory, FILE_NAME, buffer);
    }
}
