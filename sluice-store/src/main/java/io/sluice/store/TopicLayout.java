package io.sluice.store;

/**
 * Where a topic's messages live, chosen when the topic is created ({@link Store#createTopic}) and recorded
 * on disk (docs/format.md, "topics").
 */
public enum TopicLayout {
    /** One commit log shared by every such topic (RocketMQ): the fewest files, the most sequential writes. */
    SHARED,
    /** One commit log for the topic (JMQ4): its reads and retention are its own. */
    TOPIC,
    /** One commit log per queue (Kafka): a queue's records are contiguous, so transfers are single ranges. */
    QUEUE,
    /**
     * One log per queue, as QUEUE, holding only opaque batches ({@link Store#appendOpaque}) and those back to back,
     * with no store framing between them: a run of batches is one range of the log, sent with one transfer. The
     * batches must be Kafka record batches (v2): the store checks their length, magic, CRC32C and offset delta as
     * it appends them and recovers the log by them (docs/format.md, "Batch logs").
     */
    BATCHES
}
