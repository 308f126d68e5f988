package io.sluice.store.internal.index;

import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Every index of the store: the queue indexes, found under {@code index/<topic>/<queueId>/}, and the key
 * index. Lookups are lock-free; creation happens under the append lock (or during recovery). Thread-safe.
 */
public final class QueueIndexes implements AutoCloseable {

    private final Path root;
    private final FileIO fileIO;
    private final int entriesPerFile;
    private final Map<String, Map<Integer, QueueIndex>> topics = new ConcurrentHashMap<>();
    private final KeyIndex keys;

    private QueueIndexes(Path root, FileIO fileIO, int entriesPerFile, KeyIndex keys) {
        this.root = root;
        this.fileIO = fileIO;
        this.entriesPerFile = entriesPerFile;
        this.keys = keys;
    }

    /**
     * Opens every queue index found under {@code root}, and the key index in {@code keyRoot}.
     *
     * @param root the queue indexes' directory
     * @param keyRoot the key index's directory
     * @param fileIO the file seam
     * @param entriesPerFile entries per new queue-index file
     * @param keySlotsPerFile slots per new key-index file
     * @param keyEntriesPerFile entries per new key-index file
     * @throws IndexDamagedException if an index is damaged beyond its tail
     */
    public static QueueIndexes open(Path root, Path keyRoot, FileIO fileIO, int entriesPerFile, int keySlotsPerFile,
                                    int keyEntriesPerFile) throws IOException {
        FileTree.createDirectories(fileIO, root);
        QueueIndexes indexes = new QueueIndexes(root, fileIO, entriesPerFile,
                KeyIndex.open(keyRoot, fileIO, keySlotsPerFile, keyEntriesPerFile));
        try {
            indexes.openQueues();
        } catch (IOException | RuntimeException e) {
            try {
                indexes.close();
            } catch (IOException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
        return indexes;
    }

    private void openQueues() throws IOException {
        QueueIndexes indexes = this;
        {
            for (Path topicDir : fileIO.list(root)) {
                if (!fileIO.isDirectory(topicDir)) {
                    continue;
                }
                {
                    for (Path queueDir : fileIO.list(topicDir)) {
                        if (!fileIO.isDirectory(queueDir)) {
                            continue;
                        }
                        String name = queueDir.getFileName().toString();
                        if (!name.chars().allMatch(Character::isDigit) || name.isEmpty() || name.length() > 10) {
                            continue;
                        }
                        String topic = topicDir.getFileName().toString();
                        int queueId = Integer.parseInt(name);
                        indexes.topics.computeIfAbsent(topic, t -> new ConcurrentHashMap<>())
                                .put(queueId, QueueIndex.open(topic, queueId, queueDir, fileIO, entriesPerFile));
                    }
                }
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

    /** Writer: the queue's index, created if new. */
    public QueueIndex getOrCreate(String topic, int queueId) throws IOException {
        QueueIndex index = get(topic, queueId);
        if (index != null) {
            return index;
        }
        Path directory = root.resolve(topic).resolve(Integer.toString(queueId));
        index = QueueIndex.open(topic, queueId, directory, fileIO, entriesPerFile);
        fileIO.syncDirectory(directory.getParent());
        fileIO.syncDirectory(root);
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

    /** @return every queue index */
    public List<QueueIndex> all() {
        List<QueueIndex> all = new ArrayList<>();
        topics.values().forEach(queues -> all.addAll(queues.values()));
        return all;
    }

    /** Forces every index that changed since its last force. */
    public void forceDirty() throws IOException {
        keys.forceIfDirty();
        for (Collection<QueueIndex> queues : topics.values().stream().map(Map::values).toList()) {
            for (QueueIndex index : queues) {
                index.forceIfDirty();
            }
        }
    }

    @Override
    public void close() throws IOException {
        IOException failure = null;
        for (QueueIndex index : all()) {
            try {
                index.close();
            } catch (IOException e) {
                failure = e;
            }
        }
        topics.clear();
        try {
            keys.close();
        } catch (IOException e) {
            failure = e;
        }
        if (failure != null) {
            throw failure;
        }
    }
}
