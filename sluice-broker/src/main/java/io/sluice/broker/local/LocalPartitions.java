package io.sluice.broker.local;

import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;

/**
 * The partitions of a broker alone: its store's topics, each partition led by this broker in epoch 0, every append
 * committed once stored (a cluster of one with replication factor 1). Thread-safe.
 */
public final class LocalPartitions implements Partitions {

    private final Store store;
    private final int self;
    private final List<BiConsumer<String, Integer>> listeners = new CopyOnWriteArrayList<>();

    /**
     * @param store where the topics live; the caller's to close
     * @param self this broker's node id
     */
    public LocalPartitions(Store store, int self) {
        this.store = store;
        this.self = self;
    }

    @Override
    public Partition partition(String topic, int index) {
        return index >= 0 && index < count(topic) ? new LocalPartition(topic, index) : null;
    }

    @Override
    public int count(String topic) {
        if (topic == null) {
            return 0;
        }
        try {
            return store.queueCount(topic);
        } catch (IllegalArgumentException e) {
            return 0; // not a name the store takes
        }
    }

    @Override
    public Map<String, Integer> topics() {
        return store.declaredTopics();
    }

    @Override
    public void onChange(BiConsumer<String, Integer> listener) {
        listeners.add(listener);
    }

    /** Tells the listeners that a partition changed ({@code partition} -1: the topic went). */
    void changed(String topic, int partition) {
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(topic, partition);
        }
    }

    /** One partition of the store, led here. */
    private final class LocalPartition implements Partition {
        private final String topic;
        private final int index;

        LocalPartition(String topic, int index) {
            this.topic = topic;
            this.index = index;
        }

        @Override
        public String topic() {
            return topic;
        }

        @Override
        public int index() {
            return index;
        }

        @Override
        public Leadership leadership() {
            return new Leadership(self, 0, List.of(self), List.of(self));
        }

        @Override
        public boolean hostedHere() {
            return true;
        }

        @Override
        public boolean leads() {
            return true;
        }

        @Override
        public CompletableFuture<Boolean> awaitLeads(long timeoutMillis) {
            return CompletableFuture.completedFuture(true);
        }

        @Override
        public int leaderEpoch() {
            return 0;
        }

        @Override
        public long logStartOffset() {
            return store.minOffset(topic, index);
        }

        @Override
        public long logEndOffset() {
            return store.maxOffset(topic, index);
        }

        @Override
        public long highWatermark() {
            return store.maxOffset(topic, index);
        }

        /**
         * The store decides what is forced before the append completes ({@link Durability#ACKNOWLEDGED}: under ASYNC
         * an acknowledgement means the batch is in the page cache, as with a single Kafka broker, where a crash of the
         * process loses nothing acknowledged, and a write path that buffers appends in the process forces it first).
         */
        @Override
        public Appended append(KafkaBatch batch, Durability durability) {
            CompletableFuture<Long> stored = store.appendKafkaBatch(topic, index, batch, durability)
                    .thenApply(result -> result.firstQueueOffset());
            // Readable now under ASYNC, once forced under SYNC: waiting fetches are told both times.
            changed(topic, index);
            stored.whenComplete((offset, error) -> {
                if (error == null) {
                    changed(topic, index);
                }
            });
            return new Appended(stored, stored);
        }

        @Override
        public CompletableFuture<Long> awaitCommitted(long offset, long end, long timeoutMillis) {
            return CompletableFuture.completedFuture(offset);
        }

        @Override
        public OpaqueSlice slice(long offset, long maxBytes, long stopOffset) {
            return store.sliceOpaque(topic, index, offset, maxBytes, stopOffset);
        }

        @Override
        public ReadResult read(long offset, int maxMessages, long maxBytes) {
            return store.read(topic, index, offset, maxMessages, maxBytes);
        }

        @Override
        public long offsetForTimestamp(long timestamp) {
            return store.offsetForTimestamp(topic, index, timestamp);
        }
    }
}
