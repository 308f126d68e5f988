package io.sluice.broker.kafka;

import io.sluice.broker.Partitions;
import java.util.UUID;
import org.apache.kafka.common.Uuid;

/**
 * Topic ids as the protocol carries them ({@link Uuid}) and as the broker keeps them ({@link UUID}, the same two
 * longs): a topic's id for an answer, and the topic a request's id names. Stateless.
 */
final class KafkaTopicIds {

    private KafkaTopicIds() {
    }

    /** @return the protocol's form of an id, the zero id for none */
    static Uuid kafka(UUID id) {
        return id == null ? Uuid.ZERO_UUID : new Uuid(id.getMostSignificantBits(), id.getLeastSignificantBits());
    }

    /** @return the broker's form of a protocol id, or null for the zero id (or none) */
    static UUID broker(Uuid id) {
        return id == null || Uuid.ZERO_UUID.equals(id) ? null
                : new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits());
    }

    /** @return the topic's id for an answer, the zero id if it has none (or does not exist) */
    static Uuid of(Partitions partitions, String topic) {
        return kafka(partitions.topicId(topic));
    }

    /**
     * @return the topic's id for an answer that hands ids to clients (Metadata, DescribeTopicPartitions, CreateTopics),
     *     given now if a broker alone's topic has none ({@link Partitions#identify}); the zero id if it does not exist
     */
    static Uuid handedOut(Partitions partitions, String topic) {
        return kafka(partitions.identify(topic));
    }

    /** @return the topic the id names, or null if none this broker serves has it (the zero id names none) */
    static String nameOf(Partitions partitions, Uuid id) {
        UUID broker = broker(id);
        return broker == null ? null : partitions.topicNamed(broker);
    }
}
