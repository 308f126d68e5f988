package io.sluice.store;

/**
 * A consumer group's registered position on one queue (see {@link Store#commitOffset}).
 *
 * @param group the consumer group
 * @param topic the topic
 * @param queueId the queue
 * @param nextOffset the next offset the group will read
 */
public record ConsumerPosition(String group, String topic, int queueId, long nextOffset) {
}
