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
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The topics the store knows by more than their messages: every topic with a log of its own (its layout), every
 * topic created with a declared queue count (Kafka's partition count), each topic's configs (name to value, as
 * the caller gave them) and its id (Kafka's topic id, 16 bytes the caller chose, if it gave one). Topics absent from it
 * are shared and undeclared. The file {@code topics} is replaced atomically on each change; it is small and written
 * rarely. Little-endian:
 * <pre>
 * offset size field
 *   0     4   magic    0x534C5450 ("SLTP")
 *   4     2   version  4 (versions 1, without the queue count, 2, without configs, and 3, without ids, are read too)
 *   6     2   reserved 0
 *   8     4   count
 *  12     -   entries  count times: u16 topic length, topic (ASCII), u8 layout (0 SHARED, 1 TOPIC, 2 QUEUE,
 *                      3 BATCHES), u32 declared queue count (0: not declared; absent in version 1), then from version
 *                      4: i64 and i64 the id's most and least significant halves (both 0: no id), then from version
 *                      3: u16 config count, and that many times u16 name length, name (UTF-8), u32 value length,
 *                      value (UTF-8)
 *   -     4   crc      CRC32C of every byte before it
 * </pre>
 * A topic of a file written before ids were kept (versions 1 to 3) has none until one is given ({@link #identify}).
 * Unlike consumer positions, the registry decides where data is, so a damaged file refuses the open.
 *
 * <p>Thread-safe; changes are made under the caller's lock.
 */
public final class TopicRegistry {

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "topics";
    static final int MAGIC = 0x534C5450;
    static final short VERSION = 4;
    /** The first version that keeps topic ids. */
    private static final short IDS_VERSION = 4;
    /** The id no topic has: what the file holds for a topic without one. */
    private static final UUID NO_ID = new UUID(0, 0);

    /**
     * What the registry records of one topic.
     *
     * @param layout where its messages live
     * @param queues its declared queue count; 0 when not declared
     * @param configs its configs, sorted by name (a copy)
     * @param id its id, or null if it has none
     */
    public record Entry(TopicLayout layout, int queues, Map<String, String> configs, UUID id) {
        /** Copies the configs; an id is never the zero UUID (what the file holds for none). */
        public Entry {
            configs = java.util.Collections.unmodifiableSortedMap(new TreeMap<>(configs));
            if (NO_ID.equals(id)) {
                throw new IllegalArgumentException("a topic id cannot be the zero UUID, which stands for none");
            }
        }

        /** An entry without an id. */
        public Entry(TopicLayout layout, int queues, Map<String, String> configs) {
            this(layout, queues, configs, null);
        }

        /** @return this entry with another id */
        public Entry withId(UUID other) {
            return new Entry(layout, queues, configs, other);
        }
    }

    private final Map<String, Entry> entries = new ConcurrentHashMap<>();
    /** The topic of each id, for the entries that have one. */
    private final Map<UUID, String> byId = new ConcurrentHashMap<>();

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
                UUID id = version >= IDS_VERSION ? new UUID(buffer.getLong(), buffer.getLong()) : NO_ID;
                Map<String, String> configs = new TreeMap<>();
                int configCount = version >= 3 ? Short.toUnsignedInt(buffer.getShort()) : 0;
                for (int c = 0; c < configCount; c++) {
                    byte[] name = new byte[Short.toUnsignedInt(buffer.getShort())];
                    buffer.get(name);
                    byte[] value = new byte[buffer.getInt()];
                    buffer.get(value);
                    configs.put(new String(name, StandardCharsets.UTF_8), new String(value, StandardCharsets.UTF_8));
                }
                String name = new String(topic, StandardCharsets.US_ASCII);
                Entry entry = new Entry(layout, queues, configs, NO_ID.equals(id) ? null : id);
                if (entry.id() != null && registry.byId.putIfAbsent(entry.id(), name) != null) {
                    throw new IllegalStateException("topics " + registry.byId.get(entry.id()) + " and " + name
                            + " have the same id " + entry.id());
                }
                registry.entries.put(name, entry);
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

    /** @return the topic's id, or null if it has none (or is not registered) */
    public UUID id(String topic) {
        return entry(topic).id();
    }

    /** @return the topic whose id this is, or null if none has it */
    public String topicOf(UUID id) {
        return id == null ? null : byId.get(id);
    }

    /** @return the id of every topic that has one, by topic, sorted */
    public Map<String, UUID> ids() {
        Map<String, UUID> ids = new TreeMap<>();
        entries.forEach((topic, entry) -> {
            if (entry.id() != null) {
                ids.put(topic, entry.id());
            }
        });
        return ids;
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
        register(io, directory, topic, new Entry(layout, queues, configs, id(topic)));
    }

    /**
     * Records a topic's entry (its layout, declared queue count, configs and id) and saves the registry atomically, as
     * {@link #register(FileIO, Path, String, TopicLayout, int, Map)}.
     *
     * @throws IllegalArgumentException for a bad queue count, configs that do not fit the format, or an id another
     *     topic has
     */
    public void register(FileIO io, Path directory, String topic, Entry entry) throws IOException {
        if (entry.queues() < 0 || entry.layout() == TopicLayout.SHARED && entry.queues() == 0) {
            throw new IllegalArgumentException("a " + entry.layout() + " topic is registered with a queue count of at"
                    + " least 1, was " + entry.queues());
        }
        checkConfigs(entry.configs());
        checkIdFree(topic, entry.id());
        Map<String, Entry> next = new TreeMap<>(entries);
        next.put(topic, entry);
        saveOrFlag(io, directory, next);
        // In force only now that it is durable: no append is routed by a layout a crash could take back.
        put(topic, entry);
    }

    /**
     * Gives registered topics that have no id the ids given, in one atomic save: what a store from before ids needs
     * once, so that each of its topics is named by the same id from then on. A topic that has the id given already is
     * left as it is.
     *
     * @param ids the id of each topic, by topic
     * @throws IllegalArgumentException if a topic is not registered, has another id, or an id is another topic's or
     *     given twice; nothing is saved then
     */
    public void identify(FileIO io, Path directory, Map<String, UUID> ids) throws IOException {
        Map<String, Entry> next = new TreeMap<>(entries);
        Map<UUID, String> given = new HashMap<>();
        boolean changed = false;
        for (Map.Entry<String, UUID> topic : ids.entrySet()) {
            Entry entry = entries.get(topic.getKey());
            UUID id = topic.getValue();
            if (entry == null) {
                throw new IllegalArgumentException("topic " + topic.getKey() + " is not registered, so it cannot be"
                        + " given an id");
            }
            if (given.put(id, topic.getKey()) != null) {
                throw new IllegalArgumentException("the id " + id + " is given to topics " + given.get(id) + " and "
                        + topic.getKey());
            }
            if (id.equals(entry.id())) {
                continue;
            }
            if (entry.id() != null) {
                throw new IllegalArgumentException("topic " + topic.getKey() + " has the id " + entry.id()
                        + " already, not " + id);
            }
            checkIdFree(topic.getKey(), id);
            next.put(topic.getKey(), entry.withId(id));
            changed = true;
        }
        if (!changed) {
            return;
        }
        saveOrFlag(io, directory, next);
        next.forEach((topic, entry) -> {
            if (ids.containsKey(topic)) {
                put(topic, entry);
            }
        });
    }

    private void checkIdFree(String topic, UUID id) {
        String holder = topicOf(id);
        if (holder != null && !holder.equals(topic)) {
            throw new IllegalArgumentException("the id " + id + " is topic " + holder + "'s, so topic " + topic
                    + " cannot have it");
        }
    }

    /** Puts a saved entry in force, with its id. */
    private void put(String topic, Entry entry) {
        Entry before = entries.put(topic, entry);
        if (before != null && before.id() != null && !before.id().equals(entry.id())) {
            byId.remove(before.id(), topic);
        }
        if (entry.id() != null) {
            byId.put(entry.id(), topic);
        }
    }

    private static void saveOrFlag(FileIO io, Path directory, Map<String, Entry> next) throws IOException {
        try {
            save(io, directory, next);
        } catch (AtomicFile.UncertainReplaceException e) {
            throw new UncertainSaveException(e.getMessage(), e);
        }
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
        saveOrFlag(io, directory, next);
        Entry gone = entries.remove(topic);
        if (gone != null && gone.id() != null) {
            byId.remove(gone.id(), topic);
        }
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
            bytes += 2 + topic.getKey().length() + 1 + 4 + 16 + 2;
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
                    }).putInt(entry.queues());
                    UUID id = entry.id() == null ? NO_ID : entry.id();
                    buffer.putLong(id.getMostSignificantBits()).putLong(id.getLeastSignificantBits())
                            .putShort((short) entry.configs().size());
                    entry.configs().forEach((configName, value) -> {
                        byte[] nameBytes = configName.getBytes(StandardCharsets.UTF_8);
                        byte[] valueBytes = value.getBytes(StandardCharsets.UTF_8);
                        buffer.putShort((short) nameBytes.length).put(nameBytes).putInt(valueBytes.length)
                                .put(valueBytes);
                    });
                }));
    }
}
