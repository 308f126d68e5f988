package io.sluice.broker;

import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The idempotent producers of one partition's log as a replica stored its batches, in log order: for each producer id,
 * its epoch and its last five batches (a producer has at most five in flight), as Kafka's replicas keep them. A
 * replica of a cluster keeps it as it writes each entry's batches, so the replica that becomes leader takes its
 * producers from here rather than reading its log back; a cut of the log's tail (Raft truncating uncommitted entries,
 * an install) drops it, and it is rebuilt from the log where next asked for.
 *
 * <p>Thread-safe.
 */
public final class ProducerHistory {

    /**
     * Producers remembered, the least recently seen forgotten first (a forgotten producer is an unknown one: it starts
     * again at sequence 0, in a new epoch).
     */
    public static final int MAX_PRODUCERS = 10_000;
    /** Batches remembered per producer: as many as a producer may have in flight. */
    public static final int RECENT_BATCHES = 5;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * One stored batch of a producer.
     *
     * @param firstSequence its first record's sequence
     * @param lastSequence its last record's sequence
     * @param baseOffset its first offset
     */
    public record Batch(int firstSequence, int lastSequence, long baseOffset) {
    }

    /**
     * A producer as the log shows it.
     *
     * @param epoch its epoch
     * @param recent its last batches of that epoch, oldest first, at most {@link #RECENT_BATCHES}
     */
    public record Producer(short epoch, List<Batch> recent) {
    }

    private static final class Kept {
        final short epoch;
        final ArrayDeque<Batch> recent = new ArrayDeque<>(RECENT_BATCHES);

        Kept(short epoch) {
            this.epoch = epoch;
        }
    }

    private final Map<Long, Kept> producers = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Kept> eldest) {
            return size() > MAX_PRODUCERS;
        }
    };

    /**
     * Notes a batch the log stored, in log order: its producer's fields are read from its header. A batch with no
     * producer id, or shorter than a header, is passed over; one of an older epoch than its producer's is too (the
     * log holds it, but the producer has moved on).
     *
     * @param batch the batch's bytes, from its baseOffset on
     * @param baseOffset the first offset the log gave it
     */
    public synchronized void stored(MemorySegment batch, long baseOffset) {
        if (batch.byteSize() < KafkaBatch.HEADER_BYTES) {
            return;
        }
        long producerId = batch.get(LONG, KafkaBatch.PRODUCER_ID);
        if (producerId < 0) {
            return;
        }
        short epoch = batch.get(SHORT, KafkaBatch.PRODUCER_EPOCH);
        int first = batch.get(INT, KafkaBatch.BASE_SEQUENCE);
        int last = first == -1 ? -1 : KafkaBatch.lastSequence(first, batch.get(INT, KafkaBatch.LAST_OFFSET_DELTA));
        Kept entry = producers.get(producerId);
        if (entry == null || epoch > entry.epoch) {
            entry = new Kept(epoch);
            producers.put(producerId, entry);
        } else if (epoch < entry.epoch) {
            return;
        }
        if (entry.recent.size() == RECENT_BATCHES) {
            entry.recent.removeFirst();
        }
        entry.recent.addLast(new Batch(first, last, baseOffset));
    }

    /** @return the producers as now, least recently seen first: a copy, which the log's later batches leave alone */
    public synchronized Map<Long, Producer> producers() {
        Map<Long, Producer> copy = new LinkedHashMap<>();
        for (Map.Entry<Long, Kept> entry : producers.entrySet()) {
            copy.put(entry.getKey(), new Producer(entry.getValue().epoch, new ArrayList<>(entry.getValue().recent)));
        }
        return copy;
    }

    /** Offsets read back to rebuild a partition's producers from its log: far more than five batches of any producer. */
    public static final long REBUILD_OFFSETS = 20_000;

    /** Reads a partition's stored batches. */
    @FunctionalInterface
    public interface LogReader {
        /** @return up to {@code maxMessages} stored messages from {@code offset} on (close it) */
        ReadResult read(long offset, int maxMessages, long maxBytes);
    }

    /**
     * Rebuilds the producers from the log's last {@link #REBUILD_OFFSETS} offsets below {@code end}: where no replica
     * kept them (a start, a cut of the log's tail).
     *
     * @param start the log's first offset
     * @param end the offset after the last batch to read
     */
    public static ProducerHistory readBack(LogReader log, long start, long end) {
        ProducerHistory history = new ProducerHistory();
        long offset = Math.max(start, end - REBUILD_OFFSETS);
        while (offset < end) {
            try (ReadResult read = log.read(offset, 1_000, 16L << 20)) {
                if (read.status() != ReadResult.Status.FOUND) {
                    break;
                }
                for (StoredMessage message : read.messages()) {
                    if (message.queueOffset() >= end) {
                        return history;
                    }
                    if (message.opaque()) {
                        history.stored(message.body(), message.queueOffset());
                    }
                }
                offset = read.nextOffset();
            }
        }
        return history;
    }

    /** @return how many producers are remembered */
    public synchronized int size() {
        return producers.size();
    }
}
