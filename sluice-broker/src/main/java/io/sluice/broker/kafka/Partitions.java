package io.sluice.broker.kafka;

import io.sluice.store.Store;

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
}
