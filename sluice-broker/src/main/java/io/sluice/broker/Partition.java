package io.sluice.broker;

import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * One partition of a topic as the Kafka layer sees it, and all it sees of one: who leads it, how far its log reaches
 * and is committed, appends and reads. A broker alone serves each partition as a cluster of one would (it leads,
 * epoch 0, every append committed once stored: {@code io.sluice.broker.local.LocalPartitions}); a broker of a cluster
 * serves its replicas of the Raft-replicated partitions the same way (the cluster module's {@code RaftPartitions}).
 * The Kafka layer holds no store and knows no mode.
 *
 * <p>Thread-safe. Appends of one partition must be made one at a time (their offsets follow the order of the calls):
 * the Kafka layer appends under the lock of the partition's idempotent producer state.
 */
public interface Partition {

    /** @return the topic */
    String topic();

    /** @return the partition's index in its topic */
    int index();

    /**
     * Who leads the partition as this broker knows it.
     *
     * @param leader the node that leads it, or -1 if none is known (an election is on)
     * @param epoch grows with every change of leader (0 for a broker alone; the Raft term in a cluster), -1 if unknown
     * @param replicas the nodes holding a replica
     * @param inSync the replicas known to have every committed batch
     */
    record Leadership(int leader, int epoch, List<Integer> replicas, List<Integer> inSync) {
    }

    /** @return who leads the partition as known now */
    Leadership leadership();

    /**
     * @return true if this broker holds a replica whose leader it cannot name with confidence now (an election is on,
     *     or the leader it names has been silent longer than its heartbeats allow): a Metadata answer waits, a little,
     *     for that to settle, rather than send a client to a leader that may be gone
     */
    default boolean leaderInDoubt() {
        return false;
    }

    /** @return true if this broker holds a replica of the partition (leader or follower) */
    boolean hostedHere();

    /** @return true if this broker leads the partition and takes appends now */
    boolean leads();

    /**
     * Waits, at most {@code timeoutMillis}, for this broker to lead the partition and take appends, when it was just
     * elected and is not ready yet (a Raft leader until its term's first entry is committed). Completes at once with
     * false when another broker leads it: a waiter, woken by the partition's changes, not a poll.
     *
     * @return true once this broker takes appends, false if it does not (another leads, or the time ran out)
     */
    CompletableFuture<Boolean> awaitLeads(long timeoutMillis);

    /** @return the leader epoch as this broker knows it (0 for a broker alone) */
    int leaderEpoch();

    /**
     * The leader epoch the batch holding {@code offset} was appended in: the partition's history of leaders, as its
     * log tells it. Every batch carries the epoch of the leader that took it in its partitionLeaderEpoch field, which
     * the leader sets as Kafka's does (a cluster's leader, the Raft term it submits the batch's entry in; a broker
     * alone, 0, the only epoch it leads in); a broker alone answers 0 without reading the batch, since batches it took
     * before it set the field carry whatever their producer sent. Along a partition's log the epochs never decrease,
     * which is what lets a caller find where an epoch ends by bisection: Kafka's OffsetForLeaderEpoch.
     *
     * @return the epoch, or -1 if this replica holds no batch at {@code offset} (below its log start, or at or past
     *     its end)
     */
    int leaderEpochAt(long offset);

    /** @return the first offset the partition still holds */
    long logStartOffset();

    /** @return the offset after the last batch this broker's replica holds (its log end) */
    long logEndOffset();

    /** @return the offset below which every batch is committed, what consumers may read (the high watermark) */
    long highWatermark();

    /**
     * An append's two moments.
     *
     * @param stored completes with the batch's base offset once this broker stored it (acks=1)
     * @param committed completes with it once it is committed: a majority of the replicas have it (acks=all); for a
     *     broker alone, the same moment as {@code stored}
     */
    record Appended(CompletableFuture<Long> stored, CompletableFuture<Long> committed) {
    }

    /**
     * Appends one Kafka record batch (magic 2), checked by the caller, as the producer sent it.
     *
     * @param batch the checked batch (its CRC32C is not computed again); the partition copies what it keeps
     * @param durability what {@code stored} promises: {@link Durability#ACKNOWLEDGED} when a producer waits for the
     *     append's answer (acks=1 or -1); the store decides from it what is forced before {@code stored} completes
     * @return the append's moments; they fail with {@link NotLeaderException} if this broker does not (or no longer)
     *     lead the partition, {@link io.sluice.store.TopicDeletedException} if its topic went, or a store's error
     * @throws IllegalArgumentException if the store refuses the batch's frame
     */
    Appended append(KafkaBatch batch, Durability durability);

    /**
     * @return completes with {@code offset} once the high watermark reaches {@code end} (a retried batch's original,
     *     acknowledged under acks=all only once committed), or fails with a {@link java.util.concurrent.TimeoutException}
     *     after {@code timeoutMillis}: a waiter, woken as the high watermark moves
     */
    CompletableFuture<Long> awaitCommitted(long offset, long end, long timeoutMillis);

    /**
     * The batches stored from {@code offset} on, as slices of the log for {@code sendfile}.
     *
     * @param maxBytes the most bytes the slice may cover
     * @param stopOffset no batch at or past this offset (the high watermark, for a consumer)
     */
    OpaqueSlice slice(long offset, long maxBytes, long stopOffset);

    /** Reads up to {@code maxMessages} stored messages from {@code offset} (batches and messages of the store's API). */
    ReadResult read(long offset, int maxMessages, long maxBytes);

    /**
     * Deletes the partition's records below {@code offset} (Kafka's DeleteRecords): its log start offset becomes
     * {@code offset} on every replica, durably, and fetches below it are out of range.
     *
     * @param offset the new log start offset, at most the high watermark (the caller checks)
     * @return completes with the log start offset after the deletion (the low watermark) once this broker's replica
     *     has it; fails with {@link NotLeaderException} if this broker does not lead the partition, or the store's
     *     error
     */
    CompletableFuture<Long> deleteRecords(long offset);

    /**
     * Compacts this replica's log ({@link io.sluice.store.Store#compact}): each replica compacts its own, as Kafka's
     * do, and keeps the same latest record per key, since each keeps every key's latest record.
     *
     * @param endOffset no batch at or past this offset is touched (the cleaner's first uncleanable offset)
     * @return what it did; {@link CompactionReport#NONE} where this replica's log has no segment to compact
     */
    default CompactionReport compact(long endOffset, BatchCleaner cleaner) {
        return CompactionReport.NONE;
    }

    /** @return the bytes of this replica's log from {@code offset} to its end ({@link io.sluice.store.Store#bytesFrom}) */
    default long bytesFrom(long offset) {
        return 0;
    }

    /** @return the first offset whose store time is at or after {@code timestamp} (the store's time index) */
    long offsetForTimestamp(long timestamp);

    /**
     * @return the idempotent producers of this replica's log as it stored its batches, a history this replica keeps
     *     up to date (a cluster's replicas, so that the one elected takes them from there), or null if it keeps none:
     *     the Kafka layer then reads them back from the log ({@link ProducerHistory#readBack})
     */
    default ProducerHistory producerHistory() {
        return null;
    }

    /** Raised through an append's futures when this broker does not (or no longer) lead the partition. */
    final class NotLeaderException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** @param message what happened */
        public NotLeaderException(String message) {
            super(message);
        }
    }
}
