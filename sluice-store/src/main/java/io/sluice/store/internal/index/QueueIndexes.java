package io.sluice.store.internal.index;

import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every index of one log: the queue indexes, found under {@code index/<topic>/<queueId>/}, and the key index.
 * Lookups are lock-free; creation happens under the append lock (or during recovery). Thread-safe.
 */
public final class QueueIndexes implements AutoCloseable {

    private final Path root;
    private final FileIO io;
    private final IndexGeometry geometry;
    private final DurabilityLedger ledger;
    private final boolean readOnly;
    private final Map<String, Map<Integer, QueueIndex>> topics = new ConcurrentHashMap<>();
    private final KeyIndex keys;

    private QueueIndexes(Path root, FileIO io, IndexGeometry geometry, DurabilityLedger ledger, boolean readOnly,
                         KeyIndex keys) {
        this.root = root;
        this.io = io;
        this.geometry = geometry;
        this.ledger = ledger;
        this.readOnly = readOnly;
        this.keys = keys;
    }

    /**
     * Opens every queue index found under {@code root}, and the key index in {@code keyRoot}.
     *
     * @throws IndexDamagedException if an index's files are not a contiguous run
     */
    public static QueueIndexes open(Path root, Path keyRoot, FileIO io, IndexGeometry geometry, KeyGeometry keyGeometry,
                                    DurabilityLedger ledger, boolean readOnly) throws IOException {
        QueueIndexes indexes = new QueueIndexes(root, io, geometry, ledger, readOnly,
                KeyIndex.open(keyRoot, io, keyGeometry, ledger, readOnly));
        try {
            indexes.openQueues();
        } catch (IOException | RuntimeException e) {
            indexes.close();
            throw e;
        }
        return indexes;
    }

    private void openQueues() throws IOException {
        if (!io.isDirectory(root)) {
            return;
        }
        for (Path topicDirectory : io.list(root)) {
            if (!io.isDirectory(topicDirectory)) {
                continue;
            }
            String topic = topicDirectory.getFileName().toString();
            for (Path queueDirectory : io.list(topicDirectory)) {
                String name = queueDirectory.getFileName().toString();
                if (name.isEmpty() || name.length() > 10 || !name.chars().allMatch(Character::isDigit)
                        || !io.isDirectory(queueDirectory)) {
                    continue;
                }
                int queueId = Integer.parseInt(name);
                topics.computeIfAbsent(topic, t -> new ConcurrentHashMap<>()).put(queueId,
                        QueueIndex.open(topic, queueId, queueDirectory, io, geometry, ledger, readOnly));
            }
        }
    }

    /** @return the key index */
    public KeyIndex keys() {
        return keys;
    }

    /** @return the queue's index, or null if the queue has never been written */
    public QueueIndex get(String topic, int queueId) {
        Map<Integer, QueueIndex> queues = topics.get(topic);
        return queues == null ? null : queues.get(queueId);
    }

    /**
     * Writer: the queue's index, created if new. Its directory is created with the first file; the ledger
     * forces the new names before the checkpoint claims anything in them.
     */
    public QueueIndex getOrCreate(String topic, int queueId) throws IOException {
        QueueIndex index = get(topic, queueId);
        if (index != null) {
            return index;
        }
        Path directory = root.resolve(topic).resolve(Integer.toString(queueId));
        index = QueueIndex.open(topic, queueId, directory, io, geometry, ledger, readOnly);
        topics.computeIfAbsent(topic, t -> new ConcurrentHashMap<>()).put(queueId, index);
        return index;
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        return new TreeSet<>(topics.keySet());
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        Map<Integer, QueueIndex> queues = topics.get(topic);
        return queues == null ? Set.of() : new TreeSet<>(queues.keySet());
    }

    /** @return every queue index, by topic then queue id */
    public List<QueueIndex> all() {
        List<QueueIndex> all = new ArrayList<>();
        new TreeMap<>(topics).values().forEach(queues -> all.addAll(new TreeMap<>(queues).values()));
        return all;
    }

    /** @return the geometry new index files follow */
    public IndexGeometry geometry() {
        return geometry;
    }

    @Override
    public void close() {
        for (QueueIndex index : all()) {
            index.close();
        }
        topics.clear();
        keys.close();
    }
}
