package io.sluice.store.internal.engine;

import io.sluice.store.ConsumerPosition;
import io.sluice.store.StoreConfig;
import io.sluice.store.internal.retention.ConsumerOffsets;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

/**
 * Registered consumer positions and retention holds, as the store's API takes them ({@code Store.commitOffset} and
 * the like): checks the names and offsets, and schedules a checkpoint when a saved position changed. The positions
 * themselves are {@link ConsumerOffsets}.
 *
 * <p>Thread-safe.
 */
public final class ConsumerPositions {

    private final Logs logs;
    private final ConsumerOffsets offsets;
    private final StoreConfig config;

    ConsumerPositions(Logs logs) {
        this.logs = logs;
        this.offsets = logs.consumers();
        this.config = logs.config();
    }

    /** Registers (or moves) a group's position on a queue ({@code Store.commitOffset}). */
    public void commit(String group, String topic, int queueId, long nextOffset) {
        Names.checkGroup(group);
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (nextOffset < 0) {
            throw new IllegalArgumentException("nextOffset must not be negative, was " + nextOffset);
        }
        logs.checkWritable();
        offsets.commit(group, topic, queueId, nextOffset, config.clock().millis());
        logs.checkpoints().changed();
    }

    /** Holds retention back on a queue from an offset on ({@code Store.holdRetention}). */
    public void hold(String holder, String topic, int queueId, long offset) {
        Objects.requireNonNull(holder, "holder");
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (offset < 0) {
            throw new IllegalArgumentException("a retention hold must not be negative, was " + offset);
        }
        logs.checkOpen();
        offsets.hold(holder, topic, queueId, offset);
    }

    /** @return the group's registered position on the queue, if any */
    public OptionalLong committed(String group, String topic, int queueId) {
        Names.checkGroup(group);
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logs.checkOpen();
        return offsets.get(group, topic, queueId);
    }

    /** @return every registered consumer position, sorted by group, topic and queue */
    public List<ConsumerPosition> all() {
        logs.checkOpen();
        return offsets.snapshot().entrySet().stream()
                .map(e -> new ConsumerPosition(e.getKey().group(), e.getKey().topic(), e.getKey().queueId(),
                        e.getValue(), offsets.committedMillis(e.getKey())))
                .sorted(Comparator.comparing(ConsumerPosition::group).thenComparing(ConsumerPosition::topic)
                        .thenComparingInt(ConsumerPosition::queueId))
                .toList();
    }

    /** Forgets every position of a group ({@code Store.removeConsumerGroup}). @return true if it had any */
    public boolean removeGroup(String group) {
        Names.checkGroup(group);
        logs.checkWritable();
        boolean removed = offsets.removeGroup(group);
        logs.checkpoints().changed();
        return removed;
    }

    /** Forgets a group's position on one queue ({@code Store.removeCommittedOffset}). */
    public boolean removeOffset(String group, String topic, int queueId) {
        Names.checkGroup(group);
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logs.checkWritable();
        boolean removed = offsets.removeOffset(group, topic, queueId);
        logs.checkpoints().changed();
        return removed;
    }

    /**
     * Forgets every position of a group that committed none since {@code cutoffMillis}
     * ({@code Store.removeConsumerGroupIfIdle}).
     *
     * @return true if the group had positions and they are gone
     */
    public boolean removeGroupIfIdle(String group, long cutoffMillis) {
        Names.checkGroup(group);
        logs.checkWritable();
        boolean removed = offsets.removeGroupIfIdle(group, cutoffMillis);
        if (removed) {
            logs.checkpoints().changed();
        }
        return removed;
    }

    /** @return how many positions are registered */
    int count() {
        return offsets.snapshot().size();
    }
}
