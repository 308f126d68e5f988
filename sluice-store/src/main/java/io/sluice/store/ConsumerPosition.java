package io.sluice.store;

/**
 * A consumer group's registered position on one queue (see {@link Store#commitOffset}).
 *
 * @param group the consumer group
 * @param topic the topic
 * @param queueId the queue
 * @param nextOffset the next offset the group will read
 * @param committedMillis when the position was last committed (the store's clock, epoch millis; the time the store
 *     was opened for a position saved by a version that kept no commit times)
 */
public record ConsumerPosition(String group, String topic, int queueId, long nextOffset, long committedMillis) {
}
