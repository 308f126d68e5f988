package io.sluice.cluster;

import io.sluice.store.Store;
import java.io.IOException;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.server.raftlog.RaftLog;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A replica's hold on its store's retention: from the first batch its Raft log names. A leader reads those batches
 * back to send its entries to a replica behind it, and the store's retention does not know about Raft. Batches below,
 * which the log no longer names, are covered by the latest snapshot and go to a replica by a copy, which starts at the
 * leader's first stored offset. Set at a start's first write, at each snapshot (before Ratis purges the log below it)
 * and every few seconds by the node ({@link Replicas}): read before a purge, it keeps more than needed, never less.
 * Nothing is held above the latest snapshot's end: after an install the log may still hold the tail of a leader of an
 * earlier term, whose batches lie past it.
 *
 * <p>The partition's log start (Kafka's DeleteRecords, moved through the Raft log) is carried to the store's own first
 * offset ({@link Store#deleteRecords}, {@link #deleteBelow}), but never past the hold: the store reads nothing below its
 * first offset, and a leader must still read back the batches its log names. So the store's first offset follows the
 * log start as far as the hold lets it, and retention deletes the segments below it at its next pass.
 *
 * <p>Thread-safe: a hold read from an older log start or snapshot is lower, so one that lost a race with a newer read
 * only keeps more until the next.
 */
final class RetentionHold {

    private static final Logger LOG = LoggerFactory.getLogger(RetentionHold.class);

    /** Who holds the store's retention back on a partition: the batches its Raft log still names. */
    static final String HOLDER = "raft-log";

    private final Store store;
    private final ClusterNode.PartitionId partition;
    /** The log start and snapshot the hold was last read from. */
    private volatile long heldFromIndex = -1;
    private volatile PartitionSnapshot heldWith;
    /** The offset held from, -1 before the log was read. */
    private volatile long held = -1;

    /**
     * @param store the node's store
     * @param partition the replica's partition
     */
    RetentionHold(Store store, ClusterNode.PartitionId partition) {
        this.store = store;
        this.partition = partition;
    }

    /** Holds the whole partition: until the log is read (the first write after a start), nothing may go. */
    void holdWhole() {
        holdWhole(store, partition);
    }

    /** Holds the whole of a partition's batches in {@code store}, before its group has read its Raft log. */
    static void holdWhole(Store store, ClusterNode.PartitionId partition) {
        store.holdRetention(HOLDER, partition.topic(), partition.partition(), 0);
    }

    /**
     * Moves the hold to the first batch {@code log} names, or the snapshot's end if that is lower or the log names
     * none; nothing if neither the log's start nor the snapshot moved since the last time.
     *
     * @param log the replica's Raft log
     * @param latest its latest snapshot, or null
     */
    void holdAtLog(RaftLog log, PartitionSnapshot latest) {
        long first = -1;
        long start;
        try {
            start = Math.max(log.getStartIndex(), 0);
            if (start == heldFromIndex && latest == heldWith) {
                // Neither the log's start nor the snapshot moved: the hold stands, and no segment of a log purged
                // long ago is read back from disk every few seconds.
                return;
            }
            for (long i = start; i < log.getNextIndex() && first < 0; i++) {
                LogEntryProto entry = log.get(i);
                if (entry != null && entry.hasStateMachineLogEntry()) {
                    first = EntryHeader.decode(entry.getStateMachineLogEntry().getLogData()).baseOffset();
                }
            }
        } catch (IOException | RuntimeException e) {
            // The group is closing, or its log is: the hold stays where it is.
            LOG.debug("{}: reading the Raft log for the retention hold failed; the hold stays: {}", partition,
                    e.toString());
            return;
        }
        long snapshotEnd = latest == null ? 0 : latest.end();
        first = first < 0 ? snapshotEnd : latest == null ? first : Math.min(first, snapshotEnd);
        try {
            store.holdRetention(HOLDER, partition.topic(), partition.partition(), first);
            held = first;
            heldFromIndex = start;
            heldWith = latest;
        } catch (RuntimeException e) {
            LOG.debug("{}: the retention hold could not be set: {}", partition, e.toString());
        }
    }

    /**
     * Raises the store's first offset to the partition's log start, or to the hold if that is lower; nothing before the
     * log was read. The store forces what it holds first ({@link Store#deleteRecords}), so this is for the node's
     * recurring duty, not for Ratis's threads.
     *
     * @param logStart the partition's log start as the replica applied it
     */
    void deleteBelow(long logStart) {
        long below = Math.min(logStart, held);
        try {
            if (below > store.minOffset(partition.topic(), partition.partition())) {
                store.deleteRecords(partition.topic(), partition.partition(), below);
            }
        } catch (RuntimeException e) {
            LOG.warn("{}: the store's records below offset {} could not be deleted now (tried again later): {}",
                    partition, below, e.toString());
        }
    }
}
