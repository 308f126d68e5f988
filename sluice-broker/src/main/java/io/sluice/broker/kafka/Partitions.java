package io.sluice.broker.kafka;

import io.sluice.store.Store;
import io.sluice.store.TopicDeletedException;
import org.apache.kafka.common.protocol.Errors;

/** A topic's partition count as the protocol asks it: no such topic, or a name the store refuses, has none. */
final class Partitions {

    private Partitions() {
    }

    /** @return the topic's declared partitions; 0 if it does not exist or its name is not a valid one (or null) */
    static int count(Store store, String topic) {
        if (topic == null) {
            return 0;
        }
        try {
            return store.queueCount(topic);
        } catch (IllegalArgumentException e) {
            return 0;
        }
    }

    /**
     * @return the error for a read of a partition that failed: UNKNOWN_TOPIC_OR_PARTITION if its topic was deleted
     *     under the read (the client refreshes its metadata), else KAFKA_STORAGE_ERROR
     */
    static Errors readError(RuntimeException e) {
        return e instanceof TopicDeletedException ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.KAFKA_STORAGE_ERROR;
    }
}
