package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The topics the store knows by more than their messages: every topic with a log of its own (its layout), every
 * topic created with a declared queue count (Kafka's partition count), and each topic's configs (name to value, as
 * the caller gave them). Topics absent from it are shared and undeclared. The file {@code topics} is replaced
 * atomically on each change; it is small and written rarely. Little-endian:
 * <pre>
 * offset size field
 *   0     4   magic    0x534C5450 ("SLTP")
 *   4     2   version  3 (versions 1, without the queue count, and 2, without configs, are read too)
 *   6     2   reserved 0
 *   8     4   count
 *  12     -   entries  count times: u16 topic length, topic (ASCII), u8 layout (0 SHARED, 1 TOPIC, 2 QUEUE,
 *                      3 BATCHES), u32 declared queue count (0: not declared; absent in version 1), then from version
 *                      3: u16 config count, and that many times u16 name length, name (UTF-8), u32 value length,
 *                      value (UTF-8)
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
    static final short VERSION = 3;

    /**
     * What the registry records of one topic.
     *
     * @param layout where its messages live
     * @param queues its declared queue count; 0 when not declared
     * @param configs its configs, sorted by name (a copy)
     */
    public record Entry(TopicLayout layout, int queues, Map<String, String> configs) {
        /** Copies the configs. */
        public Entry {
            configs = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(configs));
        }
    }

    private final Map<String, Entry> entries = new ConcurrentHashMap<>();

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
            SealedFile.Contents contents = SealedFile.open(bytes, MAGIC, VERSION);
            short version = contents.version();
            ByteBuffer buffer = contents.entries();
            int count = contents.count();
            for (int i = 0; i < count; i++) {
                byte[] topic = new byte[Short.toUnsignedInt(buffer.getShort())];
                buffer.get(topic);
                int code = buffer.get();
                TopicLayout layout = switch (code) {
                    case 0 -> TopicLayout.SHARED;
                    case 1 -> TopicLayout.TOPIC;
                    case 2 -> TopicLayout.QUEUE;
                    case 3 -> TopicLayout.BATCHES;
                    default -> throw new IllegalStateException("unknown layout code " + code);
                };
                int queues = version >= 2 ? buffer.getInt() : 0;
                if (queues < 0 || layout == TopicLayout.SHARED && queues == 0) {
                    throw new IllegalStateException("a queue count of " + queues + " for a " + layout + " topic");
                }
                Map<String, String> configs = new TreeMap<>();
                int configCount = version >= 3 ? Short.toUnsignedInt(buffer.getShort()) : 0;
                for (int c = 0; c < configCount; c++) {
                    byte[] name = new byte[Short.toUnsignedInt(buffer.getShort())];
                    buffer.get(name);
                    byte[] value = new byte[buffer.getInt()];
                    buffer.get(value);
                    configs.put(new String(name, StandardCharsets.UTF_8), new String(value, StandardCharsets.UTF_8));
                }
                registry.entries.put(new String(topic, StandardCharsets.US_ASCII), new Entry(layout, queues, configs));
            }
        } catch (RuntimeException e) {
            throw new StoreCorruptedException("topic registry " + path + " is damaged (" + e.getMessage()
                    + "): it says which topics have logs of their own, so the store cannot open without it", path, -1);
        }
        return registry;
    }

    private static final Entry UNREGISTERED = new Entry(TopicLayout.SHARED, 0, Map.of());

    /** @return what the registry records of the topic: SHARED with no declared count unless registered */
    public Entry entry(String topic) {
        return entries.getOrDefault(topic, UNREGISTERED);
    }

    /** @return the topic's layout: SHARED unless registered otherwise */
    public TopicLayout layout(String topic) {
        return entry(topic).layout();
    }

    /** @return the topic's declared queue count; 0 when none was declared */
    public int queues(String topic) {
        return entry(topic).queues();
    }

    /** @return every topic with a log of its own, sorted */
    public Map<String, TopicLayout> ownLogs() {
        Map<String, TopicLayout> own = new TreeMap<>();
        entries.forEach((topic, entry) -> {
            if (entry.layout() != TopicLayout.SHARED) {
                own.put(topic, entry.layout());
            }
        });
        return own;
    }

    /** @return every topic with a declared queue count, and that count, sorted */
    public Map<String, Integer> declared() {
        Map<String, Integer> declared = new TreeMap<>();
        entries.forEach((topic, entry) -> {
            if (entry.queues() > 0) {
                declared.put(topic, entry.queues());
            }
        });
        return declared;
    }

    /** @return the topic's configs, sorted by name; empty when none were set */
    public Map<String, String> configs(String topic) {
        return entry(topic).configs();
    }

    /**
     * Records a topic's layout, declared queue count and configs and saves the registry atomically. In force
     * (visible to {@link #layout}, {@link #queues} and {@link #configs}) only once saved.
     *
     * @param queues the declared queue count, 0 for none (then the layout must not be SHARED)
     * @throws IllegalArgumentException for a bad queue count, or configs that do not fit the format
     */
    public void register(FileIO io, Path directory, String topic, TopicLayout layout, int queues,
                         Map<String, String> configs) throws IOException {
        if (queues < 0 || layout == TopicLayout.SHARED && queues == 0) {
            throw new IllegalArgumentException("a " + layout + " topic is registered with a queue count of at least 1,"
                    + " was " + queues);
        }
        checkConfigs(configs);
        Entry entry = new Entry(layout, queues, configs);
        Map<String, Entry> next = new TreeMap<>(entries);
        next.put(topic, entry);
        try {
            save(io, directory, next);
        } catch (AtomicFile.UncertainReplaceException e) {
            throw new UncertainSaveException(e.getMessage(), e);
        }
        // In force only now that it is durable: no append is routed by a layout a crash could take back.
        entries.put(topic, entry);
    }

    /** The most configs a topic has, and the longest name, in UTF-8 bytes (the format's u16 fields). */
    static final int MAX_CONFIGS = 0xFFFF;

    private static void checkConfigs(Map<String, String> configs) {
        if (configs.size() > MAX_CONFIGS) {
            throw new IllegalArgumentException("a topic has at most " + MAX_CONFIGS + " configs, was given "
                    + configs.size());
        }
        configs.forEach((name, value) -> {
            if (name == null || value == null || name.getBytes(StandardCharsets.UTF_8).length > 0xFFFF) {
                throw new IllegalArgumentException("a config needs a name of at most 65535 bytes and a value, was "
                        + name + "=" + value);
            }
        });
    }

    /**
     * Forgets a topic and saves the registry atomically: from then on, it holds no log of its own and no declared
     * queue count. Forgotten in memory only once saved.
     *
     * @return false if the registry did not record the topic (nothing saved)
     */
    public boolean unregister(FileIO io, Path directory, String topic) throws IOException {
        if (!entries.containsKey(topic)) {
            return false;
        }
        Map<String, Entry> next = new TreeMap<>(entries);
        next.remove(topic);
        try {
            save(io, directory, next);
        } catch (AtomicFile.UncertainReplaceException e) {
            throw new UncertainSaveException(e.getMessage(), e);
        }
        entries.remove(topic);
        return true;
    }

    /** Saving failed at or after the rename: the registry on disk may or may not hold the new topic. */
    public static final class UncertainSaveException extends IOException {
        private static final long serialVersionUID = 1L;

        UncertainSaveException(String message, IOException cause) {
            super(message, cause);
        }
    }

    private static void save(FileIO io, Path directory, Map<String, Entry> snapshot) throws IOException {
        int bytes = 0;
        for (Map.Entry<String, Entry> topic : snapshot.entrySet()) {
            bytes += 2 + topic.getKey().length() + 1 + 4 + 2;
            for (Map.Entry<String, String> config : topic.getValue().configs().entrySet()) {
                bytes += 2 + config.getKey().getBytes(StandardCharsets.UTF_8).length
                        + 4 + config.getValue().getBytes(StandardCharsets.UTF_8).length;
            }
        }
        SealedFile.save(io, directory, FILE_NAME, MAGIC, VERSION, snapshot.size(), bytes, buffer -> snapshot
                .forEach((topic, entry) -> {
                    byte[] name = topic.getBytes(StandardCharsets.US_ASCII);
                    buffer.putShort((short) name.length).put(name).put((byte) switch (entry.layout()) {
                        case SHARED -> 0;
                        case TOPIC -> 1;
                        case QUEUE -> 2;
                        case BATCHES -> 3;
                    }).putInt(entry.queues()).putShort((short) entry.configs().size());
                    entry.configs().forEach((configName, value) -> {
                        byte[] nameBytes = configName.getBytes(StandardCharsets.UTF_8);
                        byte[] valueBytes = value.getBytes(StandardCharsets.UTF_8);
                        buffer.putShort((short) nameBytes.length).put(nameBytes).putInt(valueBytes.length)
                                .put(valueBytes);
                    });
                }));
    }
}
