package io.sluice.store.internal.log;

/**
 * What a batch log ({@code TopicLayout.BATCHES}, {@link BatchFormat}) holds: one queue of one topic. Its batches
 * carry neither, so recovery, retention and readers learn them here.
 *
 * @param topic the topic
 * @param queueId the queue
 */
public record BatchLog(String topic, int queueId) {
}
