package io.sluice.broker;

import java.util.Map;
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
     * @param listener told (topic, partition) when a partition gets records readable, its high watermark moves or
     *     its leader changes, so that fetches waiting for data look again; (topic, -1) when a topic went
     */
    void onChange(BiConsumer<String, Integer> listener);

    /**
     * The broker stopped serving (no request is served any more; the store is still open): what the partitions keep
     * across a clean restart is written now.
     */
    default void close() {
    }
}
