package io.sluice.broker;

import io.sluice.store.Store;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;

/**
 * Topic ids (KIP-516): chosen at random when a topic is created, as Kafka's controller chooses them, and kept with the
 * topic in the store's registry (and, in a cluster, in the metadata that creates it), so that every broker names a
 * topic by the same id for as long as the topic lives. A topic deleted and created again under its name gets another.
 *
 * <p>Kafka's clients send requests that name topics by id only (Fetch 13+, Produce 13, OffsetCommit and OffsetFetch
 * 10) as soon as Metadata gives them one, so every topic a broker serves must have one: a topic from before ids gets
 * one once, at the first start of a broker alone that sees it ({@link #identifyAll}), or from a cluster's controller.
 *
 * <p>Thread-safe (static).
 */
public final class TopicIds {

    /** The id Kafka reserves for its own metadata topic, which no topic is given. */
    public static final UUID METADATA_TOPIC_ID = new UUID(0, 1);
    /** The id that stands for none. */
    public static final UUID NONE = new UUID(0, 0);

    private TopicIds() {
    }

    /**
     * @return a random (type 4) UUID that Kafka's {@code Uuid.randomUuid()} could have given: neither the zero id nor
     *     the metadata topic's, and not one whose base64 text starts with '-' (its top six bits 62), which command-line
     *     tools would read as an option
     */
    public static UUID random() {
        while (true) {
            UUID id = UUID.randomUUID();
            if (!id.equals(NONE) && !id.equals(METADATA_TOPIC_ID) && id.getMostSignificantBits() >>> 58 != 62) {
                return id;
            }
        }
    }

    /**
     * Gives every declared topic of the store that has no id one, in one durable registry save: a broker alone does so
     * as it starts, before it serves, so that Metadata never names a topic without one.
     *
     * @return the topics given an id, and their ids
     * @throws io.sluice.store.StoreException if the registry cannot be saved
     */
    public static Map<String, UUID> identifyAll(Store store) {
        Map<String, UUID> missing = new TreeMap<>();
        Map<String, UUID> known = store.topicIds();
        for (String topic : store.declaredTopics().keySet()) {
            if (!known.containsKey(topic)) {
                missing.put(topic, random());
            }
        }
        if (!missing.isEmpty()) {
            store.setTopicIds(missing);
        }
        return missing;
    }
}
