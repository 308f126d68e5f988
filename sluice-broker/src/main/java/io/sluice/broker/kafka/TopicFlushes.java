package io.sluice.broker.kafka;

import io.sluice.store.Durability;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;

/**
 * A topic's own flush policy on top of the broker's flush mode (flush.messages, flush.ms, as Kafka's log applies them
 * on append): an append is forced before it is answered once the partition's records not forced reach flush.messages,
 * or once the partition was last forced flush.ms ago or more. Kafka's defaults (Long.MAX_VALUE) never force, leaving it
 * to the flush mode. Thread-safe; two appends at once may both force, never neither.
 */
final class TopicFlushes {

    /** Records appended since the partition was last forced, and when that was (ms). */
    private static final class Unforced {
        long records;
        long forcedAt;

        Unforced(long now) {
            this.forcedAt = now;
        }
    }

    private final Map<String, Unforced> partitions = new ConcurrentHashMap<>();
    private final LongSupplier clock;

    /** @param clock the time in ms */
    TopicFlushes(LongSupplier clock) {
        this.clock = clock;
    }

    /**
     * @param records the records the append adds
     * @param asked what the append promises otherwise
     * @return {@link Durability#FORCED} if the topic's policy forces this append, else {@code asked}
     */
    Durability durability(String topic, int partition, int records, TopicConfigs.Produce policy, Durability asked) {
        if (policy.flushMessages() == Long.MAX_VALUE && policy.flushMs() == Long.MAX_VALUE) {
            return asked;
        }
        long now = clock.getAsLong();
        Unforced unforced = partitions.computeIfAbsent(topic + "-" + partition, key -> new Unforced(now));
        synchronized (unforced) {
            unforced.records += records;
            if (unforced.records >= policy.flushMessages() || now - unforced.forcedAt >= policy.flushMs()) {
                unforced.records = 0;
                unforced.forcedAt = now;
                return Durability.FORCED;
            }
            return asked;
        }
    }
}
