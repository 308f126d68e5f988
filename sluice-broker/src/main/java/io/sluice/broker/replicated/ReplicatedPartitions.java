package io.sluice.broker.replicated;

import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.broker.ProducerHistory;
import io.sluice.broker.Replication;
import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.function.BiConsumer;

/**
 * The partitions of a broker of a cluster, as the Kafka layer sees them: the replicated partitions of the cluster's
 * topics, led and committed as the cluster ({@link Replication}) says, read from this broker's store. Waiting (a produce held
 * until this broker, just elected, takes appends; a retried batch's answer held until its original is committed) is
 * done by waiters woken by the partitions' changes (a new leader, a leader ready, the high watermark moving), not by
 * polls. Thread-safe.
 */
public final class ReplicatedPartitions implements Partitions {

    private final Replication node;
    private final Store store;
    private final List<BiConsumer<String, Integer>> listeners = new CopyOnWriteArrayList<>();
    /** What waits for a partition's next change, by partition: each looks again when it comes. */
    private final Map<Key, Set<Runnable>> waiters = new ConcurrentHashMap<>();

    /**
     * @param node the cluster as this broker's node of it sees it
     * @param store the broker's store, which holds its replicas' batches
     */
    public ReplicatedPartitions(Replication node, Store store) {
        this.node = node;
        this.store = store;
        node.onChange(this::changed);
    }

    private void changed(String topic, int partition) {
        Set<Runnable> waiting = waiters.get(new Key(topic, partition));
        if (waiting != null) {
            waiting.forEach(Runnable::run);
        }
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(topic, partition);
        }
    }

    /**
     * Completes {@code result} with what {@code check} says (a non-null value) now or at one of the partition's later
     * changes, or with {@code otherwise} once {@code timeoutMillis} passed.
     */
    private <T> CompletableFuture<T> await(Key partition, java.util.function.Supplier<T> check,
                                           T otherwise, long timeoutMillis) {
        CompletableFuture<T> result = new CompletableFuture<>();
        Runnable look = () -> {
            T value = check.get();
            if (value != null) {
                result.complete(value);
            }
        };
        Set<Runnable> waiting = waiters.computeIfAbsent(partition, key -> ConcurrentHashMap.newKeySet());
        waiting.add(look);
        result.whenComplete((value, error) -> waiters.computeIfPresent(partition, (key, set) -> {
            set.remove(look);
            return set.isEmpty() ? null : set;
        }));
        look.run(); // after joining: a change between the first look and the join is not missed
        return result.completeOnTimeout(otherwise, timeoutMillis, TimeUnit.MILLISECONDS);
    }

    @Override
    public Partition partition(String topic, int index) {
        return index >= 0 && index < count(topic) && node.partition(topic, index) != null
                ? new ReplicatedPartition(new Key(topic, index)) : null;
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

    @Override
    public String topicNamed(UUID id) {
        return id == null ? null : store.topicWithId(id);
    }

    @Override
    public void onChange(BiConsumer<String, Integer> listener) {
        listeners.add(listener);
    }

    /** A topic's partition, as the waiters' key. */
    private record Key(String topic, int partition) {
    }

    /** One replicated partition of which this broker may or may not hold a replica. */
    private final class ReplicatedPartition implements Partition {
        private final Key id;

        ReplicatedPartition(Key id) {
            this.id = id;
        }

        @Override
        public String topic() {
            return id.topic();
        }

        @Override
        public int index() {
            return id.partition();
        }

        @Override
        public Leadership leadership() {
            Replication.PartitionView view = node.partition(id.topic(), id.partition());
            return view == null ? new Leadership(-1, -1, List.of(), List.of())
                    : new Leadership(view.leader(), view.leaderEpoch(), view.replicas(), view.inSync());
        }

        @Override
        public boolean leaderInDoubt() {
            return node.leaderInDoubt(id.topic(), id.partition());
        }

        @Override
        public boolean hostedHere() {
            Replication.PartitionView view = node.partition(id.topic(), id.partition());
            return view != null && view.replicas().contains(node.self());
        }

        @Override
        public boolean leads() {
            return node.leads(id.topic(), id.partition());
        }

        /**
         * Waits while this broker is named the leader but not ready; false at once, or as soon as another is named.
         */
        @Override
        public CompletableFuture<Boolean> awaitLeads(long timeoutMillis) {
            return await(id, () -> {
                if (leads()) {
                    return true;
                }
                Replication.PartitionView view = node.partition(id.topic(), id.partition());
                return view == null || view.leader() != node.self() ? false : null;
            }, false, timeoutMillis);
        }

        @Override
        public int leaderEpoch() {
            return node.leaderEpoch(id.topic(), id.partition());
        }

        /**
         * The partitionLeaderEpoch of the batch holding {@code offset} in this broker's store: the term its leader
         * submitted it in (each replica stores the leader's bytes).
         */
        @Override
        public int leaderEpochAt(long offset) {
            if (offset < 0) {
                return -1;
            }
            try (ReadResult read = store.read(id.topic(), id.partition(), offset, 1, 1)) {
                if (read.status() != ReadResult.Status.FOUND || read.messages().isEmpty()) {
                    return -1;
                }
                StoredMessage message = read.messages().getFirst();
                ByteBuffer body = message.opaque() ? message.bodyBuffer() : null;
                return body == null || body.remaining() < KafkaBatch.HEADER_BYTES ? -1
                        : body.getInt(body.position() + KafkaBatch.PARTITION_LEADER_EPOCH);
            }
        }

        /**
         * The partition's log start (Kafka's DeleteRecords, moved through the cluster), or the store's first offset if
         * that is later (retention): the store keeps batches below the log start that a replica behind is still sent.
         */
        @Override
        public long logStartOffset() {
            return Math.max(store.minOffset(id.topic(), id.partition()),
                    node.logStartOffset(id.topic(), id.partition()));
        }

        @Override
        public long logEndOffset() {
            return store.maxOffset(id.topic(), id.partition());
        }

        @Override
        public CompactionReport compact(long endOffset, BatchCleaner cleaner) {
            return store.compact(id.topic(), id.partition(), endOffset, cleaner);
        }

        @Override
        public long bytesFrom(long offset) {
            return store.bytesFrom(id.topic(), id.partition(), offset);
        }

        /**
         * Through the cluster: the log start moves at one place of the partition's replicated log, on every replica,
         * and the answer comes once that is committed; the low watermark is the log start after it, or the store's
         * first offset if retention took more.
         */
        @Override
        public CompletableFuture<Long> deleteRecords(long offset) {
            return notLeader(node.deleteRecords(id.topic(), id.partition(), offset))
                    .thenApply(start -> Math.max(start, store.minOffset(id.topic(), id.partition())));
        }

        @Override
        public long highWatermark() {
            return node.highWatermark(id.topic(), id.partition());
        }

        @Override
        public ProducerHistory producerHistory() {
            return node.producerHistory(id.topic(), id.partition());
        }

        /**
         * The batch waits for its entry in the partition's queue: it is copied out of the request's buffer. Each
         * replica stores it per its store's flush mode, whatever {@code durability} asks: a cluster acknowledges
         * acks=1 once the leader stored it so, acks=all once a majority did.
         */
        @Override
        public Appended append(KafkaBatch batch, Durability durability) {
            Replication.Appended appended = node.append(id.topic(), id.partition(), batch.copy());
            return new Appended(notLeader(appended.stored()), notLeader(appended.committed()));
        }

        /** @return the append's moment, failing with the Kafka layer's not-leader exception for the cluster's */
        private CompletableFuture<Long> notLeader(CompletableFuture<Long> moment) {
            return moment.exceptionallyCompose(error -> {
                Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                        ? error.getCause() : error;
                return CompletableFuture.failedFuture(cause instanceof Replication.NotLeaderException
                        ? new NotLeaderException(cause.getMessage()) : cause);
            });
        }

        /** Completes once the high watermark reaches {@code end}, woken as it moves. */
        @Override
        public CompletableFuture<Long> awaitCommitted(long offset, long end, long timeoutMillis) {
            return await(id, () -> highWatermark() >= end ? offset : null, null, timeoutMillis)
                    .thenCompose(committed -> committed != null ? CompletableFuture.completedFuture(committed)
                            : CompletableFuture.failedFuture(new java.util.concurrent.TimeoutException(
                                    "not committed within " + timeoutMillis + " ms")));
        }

        @Override
        public OpaqueSlice slice(long offset, long maxBytes, long stopOffset) {
            return store.sliceOpaque(id.topic(), id.partition(), offset, maxBytes, stopOffset);
        }

        @Override
        public ReadResult read(long offset, int maxMessages, long maxBytes) {
            return store.read(id.topic(), id.partition(), offset, maxMessages, maxBytes);
        }

        @Override
        public long offsetForTimestamp(long timestamp) {
            return store.offsetForTimestamp(id.topic(), id.partition(), timestamp);
        }
    }

    @Override
    public LogDirectory logDirectory() {
        return Partitions.logDirectoryOf(store);
    }
}
