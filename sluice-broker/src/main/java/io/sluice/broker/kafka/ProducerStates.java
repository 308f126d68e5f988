package io.sluice.broker.kafka;

import io.sluice.broker.ProducerHistory;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.protocol.Errors;

/**
 * The idempotent producer's state per partition: for each producer id, its epoch, the sequence of its last batch and
 * its last five batches (a producer has at most five in flight), as Kafka keeps it. A batch that repeats one of
 * those five is a retry: it is answered with the first offset of the original and stored again nowhere. A batch that
 * skips sequences is refused with OUT_OF_ORDER_SEQUENCE_NUMBER, one of an older epoch with INVALID_PRODUCER_EPOCH.
 * A producer this partition knows nothing of must start at sequence 0: at a change of leader, a producer's later batch
 * can reach the new leader before an earlier one that the old leader refused (the client sends to the leader it
 * knows, and learns of the change per request), and taking the later one first made the earlier one's retry out of
 * order for good (a kill round: "expected sequence 415, got 0", 260 times). Kafka's clients retry a batch so refused
 * after the batches before it; a producer whose state was truly lost here (its batches aged out of the log, or it was
 * forgotten behind {@link #MAX_PRODUCERS} others) is told the same, and an idempotent producer then bumps its epoch
 * and starts again at 0.
 *
 * <p>A partition's state is taken, the first time it is written after a start and whenever its leader epoch moved, from
 * the producers its replica kept as it stored its batches ({@link io.sluice.broker.Partition#producerHistory}: a
 * cluster's replicas keep them, so a failover reads nothing back), or else rebuilt from its log: the batches of its
 * last {@link ProducerHistory#REBUILD_OFFSETS} offsets are read back, so a producer retrying across a broker restart
 * gets its original offsets. Each partition's state is used under its own lock ({@link Producers}), held across the
 * check and the store append, so that the order of sequences is the order of offsets.
 */
final class ProducerStates {

    /**
     * Producers remembered per partition, the least recently seen forgotten first: a forgotten producer is treated
     * as an unknown one (it starts again at sequence 0, in a new epoch), so the cap costs producers idle behind this
     * many others an epoch bump and duplicate detection.
     */
    static final int MAX_PRODUCERS = ProducerHistory.MAX_PRODUCERS;

    /** @return an empty map of producers that forgets the least recently used beyond {@link #MAX_PRODUCERS} */
    private static Map<Long, Producer> newProducerMap() {
        return new java.util.LinkedHashMap<>(16, 0.75f, true) {
            @Override
            protected boolean removeEldestEntry(Map.Entry<Long, Producer> eldest) {
                return size() > MAX_PRODUCERS;
            }
        };
    }

    private static final int RECENT_BATCHES = ProducerHistory.RECENT_BATCHES;

    private final Map<String, Producers> partitions = new ConcurrentHashMap<>();

    /**
     * @return the state of one partition, taken from the producers its log shows on first use and whenever its leader
     *     epoch moved: a state kept from another epoch is taken anew, since the log now holds what the leaders in
     *     between appended
     */
    Producers of(io.sluice.broker.Partition partition) {
        int epoch = partition.leaderEpoch();
        String key = partition.topic() + "\u0000" + partition.index();
        Producers kept = partitions.get(key);
        if (kept != null && kept.leaderEpoch == epoch) {
            // The common case, every batch of a partition whose leader stays: no lock of the map's.
            return kept;
        }
        return partitions.compute(key, (ignored, existing) ->
                existing != null && existing.leaderEpoch == epoch ? existing : new Producers(partition, epoch));
    }

    /**
     * @param highWatermark the partition's high watermark as read by the caller
     * @return the partition's last stable offset: below its oldest open transaction, at most {@code highWatermark}
     */
    long lastStable(io.sluice.broker.Partition partition, long highWatermark) {
        Producers state = of(partition);
        synchronized (state.lock) {
            return state.transactions().lastStable(highWatermark);
        }
    }

    /**
     * @return the partition's last stable offset if its transactions were read already, else {@code highWatermark}:
     *     for a read_uncommitted fetch, which reads to the high watermark anyway and must not wait for the partition's
     *     log to be read back
     */
    long lastStableIfKnown(io.sluice.broker.Partition partition, long highWatermark) {
        Producers state = of(partition);
        if (state.transactions == null) {
            // The common case of a partition no transaction wrote to: no lock the producers contend for.
            return highWatermark;
        }
        synchronized (state.lock) {
            return state.lastStableIfKnown(highWatermark);
        }
    }

    /**
     * The transactions a cleaning of the partition's log is bounded and filtered by: on the leader, those it keeps as
     * it appends; on a replica that does not lead, read from its log now (its batches reach the store through the
     * replication, which tells no producer state, so what was read earlier may be stale).
     *
     * @param highWatermark the partition's high watermark as read by the caller
     * @param lastStable the last stable offset, below the oldest open transaction, at most {@code highWatermark}
     * @param aborted the transactions aborted in the log
     */
    record ForCleaning(long lastStable, java.util.List<PartitionTransactions.Aborted> aborted) {
    }

    /** @return the partition's transactions for a cleaning of its log ({@link ForCleaning}) */
    ForCleaning forCleaning(io.sluice.broker.Partition partition, long highWatermark) {
        if (!partition.leads()) {
            PartitionTransactions read = PartitionTransactions.readFrom(partition);
            return new ForCleaning(read.lastStable(highWatermark), read.abortedBetween(0, Long.MAX_VALUE));
        }
        Producers state = of(partition);
        synchronized (state.lock) {
            PartitionTransactions transactions = state.transactions();
            return new ForCleaning(transactions.lastStable(highWatermark),
                    transactions.abortedBetween(0, Long.MAX_VALUE));
        }
    }

    /** @return the transactions aborted in the partition that a read_committed fetch of offsets from-to must list */
    java.util.List<PartitionTransactions.Aborted> aborted(io.sluice.broker.Partition partition, long from, long to) {
        Producers state = of(partition);
        synchronized (state.lock) {
            return state.transactions().abortedBetween(from, to);
        }
    }

    /** Drops the state of every partition of a deleted topic: a topic created again starts with none. */
    void forget(String topic) {
        String prefix = topic + "\u0000";
        partitions.keySet().removeIf(key -> key.startsWith(prefix));
    }

    /** One batch a producer sent: its sequences and where it was stored. */
    private record Sent(int firstSequence, int lastSequence, CompletableFuture<Long> baseOffset) {
    }

    private static final class Producer {
        short epoch;
        /** The sequence of the producer's last batch of its epoch; -1 before its first. */
        int lastSequence = -1;
        final ArrayDeque<Sent> recent = new ArrayDeque<>(RECENT_BATCHES);

        Producer(short epoch) {
            this.epoch = epoch;
        }

        void add(Sent sent) {
            if (recent.size() == RECENT_BATCHES) {
                recent.removeFirst();
            }
            recent.addLast(sent);
            lastSequence = sent.lastSequence();
        }
    }

    /** What to do with a batch: append it, answer a duplicate with its original offset, or refuse it. */
    record Verdict(Errors error, CompletableFuture<Long> duplicateOf, String message) {
        static final Verdict APPEND = new Verdict(Errors.NONE, null, null);
    }

    /** The producers of one partition. Use {@link #lock} around {@link #check}, the append and {@link #record}. */
    static final class Producers {

        final Object lock = new Object();
        private final io.sluice.broker.Partition log;
        private final int leaderEpoch;
        private Map<Long, Producer> producers;
        /** Set and changed under {@link #lock}; volatile so that a fetch learns without the lock that there are none. */
        private volatile PartitionTransactions transactions;
        /** The last coordinator epoch that wrote a marker for each producer. */
        private final Map<Long, Integer> coordinatorEpochs = new java.util.HashMap<>();
        /** The check of each producer's transaction under way, by producer (see {@link #startVerification}). */
        private final Map<Long, Object> verifications = new java.util.HashMap<>();

        Producers(io.sluice.broker.Partition log, int leaderEpoch) {
            this.log = log;
            this.leaderEpoch = leaderEpoch;
        }

        /** @return whether the batch may be appended; call under {@link #lock} */
        Verdict check(long producerId, short epoch, int firstSequence, int lastSequence) {
            Producer producer = producers().get(producerId);
            if (producer == null) {
                return firstSequence == 0 ? Verdict.APPEND : new Verdict(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, null,
                        "no batch of producer " + producerId + " is known here: its first must start at sequence 0,"
                                + " not " + firstSequence);
            }
            if (epoch < producer.epoch) {
                return new Verdict(Errors.INVALID_PRODUCER_EPOCH, null, "epoch " + epoch + " is older than the"
                        + " producer's current epoch " + producer.epoch);
            }
            if (epoch > producer.epoch) {
                return firstSequence == 0 ? Verdict.APPEND : new Verdict(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, null,
                        "a new epoch " + epoch + " must start at sequence 0, not " + firstSequence);
            }
            for (Sent sent : producer.recent) {
                if (sent.firstSequence() == firstSequence && sent.lastSequence() == lastSequence) {
                    return new Verdict(Errors.NONE, sent.baseOffset(), null);
                }
            }
            int expected = producer.lastSequence == Integer.MAX_VALUE ? 0 : producer.lastSequence + 1;
            if (firstSequence != expected) {
                return new Verdict(Errors.OUT_OF_ORDER_SEQUENCE_NUMBER, null, "expected sequence " + expected
                        + " from producer " + producerId + ", got " + firstSequence);
            }
            return Verdict.APPEND;
        }

        /** Forgets every producer: the state is rebuilt from the log at its next use; call under {@link #lock}. */
        void invalidate() {
            producers = null;
            transactions = null;
        }

        /**
         * @return the partition's transactions, read from its log on first use ({@link PartitionTransactions}); call
         *     under {@link #lock}
         */
        PartitionTransactions transactions() {
            if (transactions == null) {
                transactions = PartitionTransactions.readFrom(log);
            }
            transactions.trimBelow(log.logStartOffset());
            return transactions;
        }

        /**
         * @return why a transaction marker of this producer epoch and coordinator epoch may not be written, or NONE:
         *     a marker of an older producer epoch than the producer's (INVALID_PRODUCER_EPOCH), or from a coordinator
         *     of an older epoch than the last that wrote one for the producer (TRANSACTION_COORDINATOR_FENCED), comes
         *     from a coordinator that lost its place and would end a transaction it does not know; call under
         *     {@link #lock}
         */
        Errors checkMarker(long producerId, short epoch, int coordinatorEpoch) {
            Producer producer = producers().get(producerId);
            if (producer != null && epoch < producer.epoch) {
                return Errors.INVALID_PRODUCER_EPOCH;
            }
            Integer last = coordinatorEpochs.get(producerId);
            if (last != null && coordinatorEpoch < last) {
                return Errors.TRANSACTION_COORDINATOR_FENCED;
            }
            return Errors.NONE;
        }

        /**
         * Records a transaction marker appended for a producer, the moment it is appended; call under {@link #lock}
         * right after the append. A marker of a newer epoch than the producer's (a transaction aborted at its
         * timeout, fencing the producer) starts that epoch at once: its next batch must be its first, and a batch of
         * the old epoch is refused. The transaction stays open until {@link #recordMarkerCommitted}.
         */
        void recordMarkerAppended(long producerId, short epoch, int coordinatorEpoch) {
            Producer producer = producers().get(producerId);
            if (producer == null || epoch > producer.epoch) {
                producers.put(producerId, new Producer(epoch));
            }
            coordinatorEpochs.merge(producerId, coordinatorEpoch, Math::max);
            verifications.remove(producerId);
        }

        /**
         * Ends the producer's open transaction at its marker, once the marker is committed (a replica that takes
         * over has it): the last stable offset moves past it only then; an abort is listed with the marker's exact
         * offset. Call under {@link #lock}.
         */
        void recordMarkerCommitted(long producerId, boolean committed, long markerOffset) {
            if (transactions != null) {
                transactions.ended(producerId, committed, markerOffset);
            }
        }

        /**
         * Starts a check of a transaction's first batch with its coordinator (KIP-890's verification): the token
         * returned must still be the producer's at the append ({@link #stillVerified}); a marker written meanwhile
         * (the transaction ended while the check was out) takes it away. Call under {@link #lock}.
         */
        Object startVerification(long producerId) {
            Object token = new Object();
            verifications.put(producerId, token);
            return token;
        }

        /**
         * @return whether a batch checked with {@code token} may be appended now: its transaction is open here, or no
         *     marker of the producer came since the check began; call under {@link #lock}
         */
        boolean stillVerified(long producerId, Object token) {
            return transactions().isOpen(producerId) || verifications.get(producerId) == token;
        }

        /**
         * A producer as DescribeProducers reports it.
         *
         * @param producerId its id
         * @param epoch its epoch
         * @param lastSequence its last batch's sequence, -1 if none in this epoch
         * @param openSince the first offset of its open transaction here, -1 if none
         */
        record Described(long producerId, short epoch, int lastSequence, long openSince) {
        }

        /** @return the last stable offset if the partition's transactions are known, else {@code highWatermark} */
        long lastStableIfKnown(long highWatermark) {
            return transactions == null ? highWatermark : transactions.lastStable(highWatermark);
        }

        /** @return the producers of the partition; call under {@link #lock} */
        List<Described> describe() {
            List<Described> all = new ArrayList<>();
            PartitionTransactions open = transactions();
            producers().forEach((id, producer) -> all.add(new Described(id, producer.epoch, producer.lastSequence,
                    open.openSince(id))));
            return all;
        }

        /** Records an appended batch; call under {@link #lock} right after the append. */
        void record(long producerId, short epoch, int firstSequence, int lastSequence,
                    CompletableFuture<Long> baseOffset) {
            Producer producer = producers().get(producerId);
            if (producer == null || producer.epoch != epoch) {
                producer = new Producer(epoch);
                producers.put(producerId, producer);
            }
            producer.add(new Sent(firstSequence, lastSequence, baseOffset));
        }

        private Map<Long, Producer> producers() {
            if (producers == null) {
                ProducerHistory history = log.producerHistory();
                producers = seed(history != null ? history
                        : ProducerHistory.readBack(log::read, log.logStartOffset(), log.logEndOffset()));
            }
            return producers;
        }

        /** The leader's state, from the producers the log shows: each batch's original offset is known. */
        private static Map<Long, Producer> seed(ProducerHistory history) {
            Map<Long, Producer> seeded = newProducerMap();
            for (Map.Entry<Long, ProducerHistory.Producer> shown : history.producers().entrySet()) {
                Producer producer = new Producer(shown.getValue().epoch());
                for (ProducerHistory.Batch batch : shown.getValue().recent()) {
                    producer.add(new Sent(batch.firstSequence(), batch.lastSequence(),
                            CompletableFuture.completedFuture(batch.baseOffset())));
                }
                seeded.put(shown.getKey(), producer);
            }
            return seeded;
        }
    }
}
