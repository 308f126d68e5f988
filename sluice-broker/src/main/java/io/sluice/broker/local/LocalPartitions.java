package io.sluice.broker.local;

import io.sluice.broker.DurableFile;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.broker.ProducerHistory;
import io.sluice.broker.TopicIds;
import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The partitions of a broker alone: its store's topics, each partition led by this broker in epoch 0 (which each
 * appended batch carries), every append committed once stored (a cluster of one with replication factor 1).
 * Thread-safe.
 *
 * <p>Each partition's idempotent producers ({@link ProducerHistory}) are read back from its log the first time the
 * Kafka layer asks for them, and kept from then on as its batches are stored. A clean close keeps them in the store's
 * directory ({@link #PRODUCERS_DIRECTORY}, a file per partition, written once the store is forced), and the next start
 * takes them (the files go, whatever they held) and adds what the log holds past them: a restart reads nothing back.
 */
public final class LocalPartitions implements Partitions {

    private static final Logger LOG = LoggerFactory.getLogger(LocalPartitions.class);

    /** The directory, in the store's, where a clean close keeps each partition's producers. */
    public static final String PRODUCERS_DIRECTORY = "producers";

    private final Store store;
    private final int self;
    private final List<BiConsumer<String, Integer>> listeners = new CopyOnWriteArrayList<>();
    /** Each partition's producers once asked for, by topic and partition. */
    private final Map<String, Producers> producers = new ConcurrentHashMap<>();
    /** What the last clean close kept, by topic and partition, until asked for. */
    private final Map<String, ProducerHistory.Saved> kept = new ConcurrentHashMap<>();
    private final AtomicInteger producerRebuilds = new AtomicInteger();
    /** Held while a topic without an id is given one, so that concurrent requests give it one save, not several. */
    private final Object identifying = new Object();

    /** A partition's producers, and the appends of idempotent batches not stored yet. */
    private static final class Producers {
        ProducerHistory history;
        int inFlight;
    }

    /**
     * @param store where the topics live; the caller's to close
     * @param self this broker's node id
     */
    public LocalPartitions(Store store, int self) {
        this.store = store;
        this.self = self;
        takeKept();
    }

    private static String key(String topic, int index) {
        return topic + "-" + index;
    }

    /** Takes the producers the last clean close kept: each file goes once read, whatever it held. */
    private void takeKept() {
        FileIO io = store.config().fileIO();
        Path directory = store.directory().resolve(PRODUCERS_DIRECTORY);
        try {
            if (!io.isDirectory(directory)) {
                return;
            }
            for (Path file : io.list(directory)) {
                String name = file.getFileName().toString();
                ProducerHistory.Saved saved = ProducerHistory.take(io, file);
                if (saved != null) {
                    kept.put(name, saved);
                }
            }
        } catch (IOException e) {
            LOG.warn("the producers kept at the last close cannot be read ({}): they are read back from the log",
                    e.toString());
        }
    }

    /**
     * Keeps each partition's producers for the next start: the store is forced, then a file per partition names the
     * offset its log ends at. A partition with an idempotent batch not stored yet keeps none (its next start reads its
     * producers back). Call once no request is served any more, before the store closes.
     */
    @Override
    public void close() {
        if (producers.isEmpty()) {
            return;
        }
        FileIO io = store.config().fileIO();
        Path directory = store.directory().resolve(PRODUCERS_DIRECTORY);
        try {
            store.sync();
            DurableFile.createDirectories(io, directory);
            for (Map.Entry<String, Producers> entry : producers.entrySet()) {
                Producers state = entry.getValue();
                synchronized (state) {
                    String name = entry.getKey();
                    int dash = name.lastIndexOf('-');
                    if (state.history != null && state.inFlight == 0) {
                        state.history.save(io, directory.resolve(name), store.maxOffset(name.substring(0, dash),
                                Integer.parseInt(name.substring(dash + 1))));
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            LOG.warn("the producers were not kept at close ({}): the next start reads them back", e.toString());
        }
    }

    /** @return how many partitions' producers were read back from their logs since the start (tests) */
    public int producerRebuilds() {
        return producerRebuilds.get();
    }

    @Override
    public Partition partition(String topic, int index) {
        return index >= 0 && index < count(topic) ? new LocalPartition(topic, index) : null;
    }

    @Override
    public int count(String topic) {
        return Partitions.countIn(store, topic);
    }

    @Override
    public Map<String, Integer> topics() {
        return store.declaredTopics();
    }

    @Override
    public UUID topicId(String topic) {
        return Partitions.idIn(store, topic);
    }

    /**
     * A topic declared without an id (through the store's API while this broker runs, or one the start could not give
     * an id) is given one the first time an answer hands it to a client, durably (a registry save), so that no topic is
     * answered without one: Kafka's Java producer would name it by the zero id (Produce 13), which is refused.
     */
    @Override
    public UUID identify(String topic) {
        UUID id = Partitions.idIn(store, topic);
        if (id != null || count(topic) == 0) {
            return id;
        }
        synchronized (identifying) {
            id = Partitions.idIn(store, topic);
            if (id == null) {
                try {
                    store.setTopicIds(Map.of(topic, TopicIds.random()));
                    LOG.info("topic {}, declared without an id, is given the id {}", topic, store.topicId(topic));
                } catch (RuntimeException e) {
                    // A read-only store: the topic is answered without an id until it can be given one.
                    LOG.warn("topic {} has no id and cannot be given one now: {}", topic, e.toString());
                }
                id = Partitions.idIn(store, topic);
            }
            return id;
        }
    }

    @Override
    public String topicNamed(UUID id) {
        return id == null ? null : store.topicWithId(id);
    }

    @Override
    public void onChange(BiConsumer<String, Integer> listener) {
        listeners.add(listener);
    }

    /** Tells the listeners that a partition changed ({@code partition} -1: the topic went, and its producers). */
    void changed(String topic, int partition) {
        if (partition < 0) {
            String prefix = topic + "-";
            producers.keySet().removeIf(key -> key.startsWith(prefix) && isPartition(key.substring(prefix.length())));
            kept.keySet().removeIf(key -> key.startsWith(prefix) && isPartition(key.substring(prefix.length())));
        }
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(topic, partition);
        }
    }

    private static boolean isPartition(String digits) {
        return !digits.isEmpty() && digits.chars().allMatch(Character::isDigit);
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

        /** 0 throughout the log: a broker alone has led it in epoch 0 alone, whatever its batches' fields say. */
        @Override
        public int leaderEpochAt(long offset) {
            return offset >= logStartOffset() && offset < logEndOffset() ? 0 : -1;
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
        public CompactionReport compact(long endOffset, BatchCleaner cleaner) {
            return store.compact(topic, index, endOffset, cleaner);
        }

        @Override
        public long bytesFrom(long offset) {
            return store.bytesFrom(topic, index, offset);
        }

        /** Made in the store, durably, before the answer. */
        @Override
        public CompletableFuture<Long> deleteRecords(long offset) {
            try {
                return CompletableFuture.completedFuture(store.deleteRecords(topic, index, offset));
            } catch (RuntimeException e) {
                return CompletableFuture.failedFuture(e);
            }
        }

        @Override
        public long highWatermark() {
            return store.maxOffset(topic, index);
        }

        /**
         * @return the producers of this partition's log: kept since first asked for; the first time, those the last
         *     clean close kept with the batches stored since, or else read back from the log
         */
        @Override
        public ProducerHistory producerHistory() {
            Producers state = producers.computeIfAbsent(key(topic, index), key -> new Producers());
            synchronized (state) {
                if (state.history == null) {
                    ProducerHistory.Saved saved = kept.remove(key(topic, index));
                    long end = logEndOffset();
                    if (saved != null && saved.end() <= end) {
                        state.history = saved.history();
                        state.history.readOn(this::read, Math.max(saved.end(), logStartOffset()), end);
                    } else {
                        state.history = ProducerHistory.readBack(this::read, logStartOffset(), end);
                        producerRebuilds.incrementAndGet();
                    }
                }
                return state.history;
            }
        }

        /**
         * The store decides what is forced before the append completes ({@link Durability#ACKNOWLEDGED}: under ASYNC
         * an acknowledgement means the batch is in the page cache, as with a single Kafka broker, where a crash of the
         * process loses nothing acknowledged, and a write path that buffers appends in the process forces it first).
         */
        @Override
        public Appended append(KafkaBatch batch, Durability durability) {
            // The leader's epoch in the batch, as Kafka's leader sets it (producers send -1): a consumer tracks the
            // epoch of what it read from there and validates its position by it (OffsetForLeaderEpoch).
            batch.setPartitionLeaderEpoch(0);
            // The Kafka layer asks for a partition's producers before its first idempotent batch: such a batch is
            // noted once stored, in log order (appends of a partition complete in the order they were made).
            Producers state = batch.producerId() >= 0 ? producers.get(key(topic, index)) : null;
            long producerId = batch.producerId();
            short epoch = batch.producerEpoch();
            int first = batch.baseSequence();
            int last = batch.lastSequence();
            if (state != null) {
                synchronized (state) {
                    state.inFlight++;
                }
            }
            CompletableFuture<Long> stored = store.appendKafkaBatch(topic, index, batch, durability)
                    .thenApply(result -> result.firstQueueOffset());
            if (state != null) {
                stored.whenComplete((offset, error) -> {
                    synchronized (state) {
                        state.inFlight--;
                        if (error == null && state.history != null) {
                            state.history.stored(producerId, epoch, first, last, offset);
                        }
                    }
                });
            }
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

    @Override
    public LogDirectory logDirectory() {
        return Partitions.logDirectoryOf(store);
    }
}
