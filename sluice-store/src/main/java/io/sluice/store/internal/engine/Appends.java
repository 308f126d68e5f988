package io.sluice.store.internal.engine;

import io.sluice.store.AppendResult;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Message;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicDeletedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.log.BatchFormat;
import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.recovery.TopicRegistry;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;

/**
 * The append side of the store ({@code Store.append} and the like): prepares the messages outside any lock, checks
 * the topic and queue against the registry, and hands the append to the log that holds the queue, routing it again
 * if that log turned it away (its topic got a log of its own, or it closed for a truncation).
 *
 * <p>Thread-safe.
 */
public final class Appends {

    private final Logs logs;
    private final StoreConfig config;

    Appends(Logs logs) {
        this.logs = logs;
        this.config = logs.config();
    }

    /** Appends one message ({@code Store.append}). */
    public CompletableFuture<AppendResult> append(String topic, int queueId, Message message) {
        Objects.requireNonNull(message, "message");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.prepare(message, config.maxMessageBytes())},
                Durability.FLUSH_MODE, false);
    }

    /** Appends messages as one record ({@code Store.appendBatch}). */
    public CompletableFuture<AppendResult> appendBatch(String topic, int queueId, List<Message> messages) {
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            throw new IllegalArgumentException("a batch must hold at least one message");
        }
        PreparedMessage[] prepared = new PreparedMessage[messages.size()];
        for (int i = 0; i < prepared.length; i++) {
            prepared[i] = PreparedMessage.prepare(Objects.requireNonNull(messages.get(i), "message"),
                    config.maxMessageBytes());
        }
        return append(topic, queueId, prepared, Durability.FLUSH_MODE, false);
    }

    /**
     * Appends an opaque batch ({@code Store.appendOpaque}).
     *
     * @param durability what the append's completion promises
     * @param declaredOnly fail with {@link TopicDeletedException} unless the topic has a declared queue count, and
     *     create nothing
     */
    public CompletableFuture<AppendResult> appendOpaque(String topic, int queueId, MemorySegment body, int count,
                                                        Durability durability, boolean declaredOnly) {
        Objects.requireNonNull(body, "body");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.opaque(body, count,
                config.maxMessageBytes())}, durability, declaredOnly);
    }

    /** Appends a gap of {@code count} offsets to a BATCHES queue ({@code Store.appendGap}). */
    public CompletableFuture<AppendResult> appendGap(String topic, int queueId, int count, long maxTimestamp,
                                                     Durability durability) {
        if (logs.registry().layout(topic) != TopicLayout.BATCHES) {
            throw new IllegalArgumentException("only a BATCHES topic takes gaps; " + topic + " is not one");
        }
        MemorySegment gap = MemorySegment.ofArray(new byte[BatchFormat.HEADER_BYTES]);
        BatchFormat.encodeGap(gap, 0, count, maxTimestamp, -1);
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.gap(gap, count)}, durability, true);
    }

    /** Appends a checked Kafka record batch ({@code Store.appendKafkaBatch}): its CRC32C is not checked again. */
    public CompletableFuture<AppendResult> appendKafkaBatch(String topic, int queueId, KafkaBatch batch,
                                                            Durability durability) {
        Objects.requireNonNull(batch, "batch");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.opaque(batch.bytes(),
                batch.offsetCount(), config.maxMessageBytes(), true)}, durability, true);
    }

    private CompletableFuture<AppendResult> append(String topic, int queueId, PreparedMessage[] messages,
                                                   Durability durability, boolean declaredOnly) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (queueId >= config.maxQueuesPerTopic()) {
            throw new IllegalArgumentException("queue id " + queueId + " is not below maxQueuesPerTopic ("
                    + config.maxQueuesPerTopic() + ")");
        }
        // One registry lookup per append: the declared count and the layout come from the same entry.
        TopicRegistry.Entry entry = logs.registry().entry(topic);
        if (entry.queues() > 0 && queueId >= entry.queues()) {
            throw new IllegalArgumentException("topic " + topic + " has " + entry.queues() + " queues; queue id "
                    + queueId + " is not below it");
        }
        logs.checkWritable();
        if (declaredOnly && entry.queues() == 0) {
            // Read after a deletion's commit point (or never created): the topic is not recreated here.
            return CompletableFuture.failedFuture(new TopicDeletedException(topic));
        }
        try {
            CompletableFuture<AppendResult> result = appendTo(logs.use(topic, entry.layout(), queueId, true), topic,
                    queueId, messages, durability);
            while (result == null) {
                // The topic was created with a log of its own while this append was on its way to the shared log,
                // or its log closed for a truncation: the log to use now is found again.
                result = appendTo(logs.use(topic, queueId, true), topic, queueId, messages, durability);
            }
            return result;
        } catch (TopicDeletedException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /** Appends to a log in use, and ends the use (an append waiting for its force needs the log no more). */
    private CompletableFuture<AppendResult> appendTo(LogStore log, String topic, int queueId,
                                                     PreparedMessage[] messages, Durability durability) {
        try {
            return log.append(topic, queueId, messages, durability);
        } finally {
            logs.release(log);
        }
    }
}
