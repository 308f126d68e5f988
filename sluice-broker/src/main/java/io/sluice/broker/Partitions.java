package io.sluice.broker;

import java.util.Map;
import java.util.UUID;
import java.util.function.BiConsumer;

/**
 * The partitions a broker serves, by topic: what the Kafka layer looks partitions up in. Thread-safe.
 */
public interface Partitions {

    /** @return the partition, or null if there is no such topic or partition (or the name is not a valid one) */
    Partition partition(String topic, int index);

    /** @return the topic's partition count; 0 if it does not exist, or its name is not a valid one (or null) */
    int count(String topic);

    /** @return {@code topic}'s queue count in {@code store}: 0 if it has none, or its name is not one (or null) */
    static int countIn(io.sluice.store.Store store, String topic) {
        if (topic == null) {
            return 0;
        }
        try {
            return store.queueCount(topic);
        } catch (IllegalArgumentException e) {
            return 0; // not a name the store takes
        }
    }

    /** @return every topic with its partition count, by name */
    Map<String, Integer> topics();

    /**
     * @return the topic's id ({@link TopicIds}), or null if it has none yet (a topic from before ids, in a cluster whose
     *     controller has not given it one), does not exist, or its name is not a valid one (or null)
     */
    UUID topicId(String topic);

    /**
     * The topic's id for an answer that hands ids to clients (Metadata, DescribeTopicPartitions, CreateTopics): a broker
     * alone gives a topic declared without one (through the store's API while it runs) its id now, durably, since a
     * client told the zero id would name the topic by it in Produce 13. Other answers ask {@link #topicId}, which never
     * writes.
     *
     * @return the topic's id, or null as {@link #topicId} says
     */
    default UUID identify(String topic) {
        return topicId(topic);
    }

    /** @return the topic whose id this is, or null if no topic this broker serves has it (or {@code id} is null) */
    String topicNamed(UUID id);

    /** @return {@code topic}'s id in {@code store}: null if it has none, or its name is not one (or null) */
    static UUID idIn(io.sluice.store.Store store, String topic) {
        if (topic == null) {
            return null;
        }
        try {
            return store.topicId(topic);
        } catch (IllegalArgumentException e) {
            return null; // not a name the store takes
        }
    }

    /**
     * @param listener told (topic, partition) when a partition gets records readable, its high watermark moves or
     *     its leader changes, so that fetches waiting for data look again; (topic, -1) when a topic went
     */
    void onChange(BiConsumer<String, Integer> listener);

    /**
     * Where this broker keeps its replicas, as DescribeLogDirs reports them (kafka-log-dirs).
     *
     * @param directory the store's directory, the one log directory
     * @param sizes the bytes each hosted partition's log holds, by topic then partition (partitions whose log the store
     *     shares with others are not listed)
     * @param totalBytes the size of the directory's file system
     * @param usableBytes the bytes free for this broker there
     */
    record LogDirectory(String directory, Map<String, Map<Integer, Long>> sizes, long totalBytes, long usableBytes) {
    }

    /** @return this broker's log directory and what it holds, or null if it keeps none (a test double) */
    default LogDirectory logDirectory() {
        return null;
    }

    /** @return the log directory of {@code store}: the sizes of its partitions with logs of their own */
    static LogDirectory logDirectoryOf(io.sluice.store.Store store) {
        Map<String, Map<Integer, Long>> sizes = new java.util.TreeMap<>();
        store.ownLogStatuses().forEach((name, status) -> {
            int slash = name.lastIndexOf('/');
            if (slash > 0) {
                try {
                    int partition = Integer.parseInt(name.substring(slash + 1));
                    sizes.computeIfAbsent(name.substring(0, slash), t -> new java.util.TreeMap<>()).put(partition,
                            Math.max(0, status.writePosition() - status.minLogPosition()));
                } catch (NumberFormatException e) {
                    // a topic's own log, not a partition's
                }
            }
        });
        long total = -1;
        long usable = -1;
        try {
            java.nio.file.FileStore fileStore = java.nio.file.Files.getFileStore(store.directory());
            total = fileStore.getTotalSpace();
            usable = fileStore.getUsableSpace();
        } catch (java.io.IOException e) {
            // unknown: -1, as Kafka reports a size it cannot read
        }
        return new LogDirectory(store.directory().toAbsolutePath().toString(), sizes, total, usable);
    }

    /**
     * The broker stopped serving (no request is served any more; the store is still open): what the partitions keep
     * across a clean restart is written now.
     */
    default void close() {
    }
}
