package io.sluice.broker.kafka;

import io.sluice.broker.Partition;
import io.sluice.broker.ProducerHistory;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;

/**
 * The transactions of one partition's log, as Kafka's replicas keep them: the producers whose transaction is open
 * (its first offset, which bounds the last stable offset a read_committed consumer reads to) and the transactions
 * aborted (a producer's first offset and its abort marker's, which a read_committed fetch lists so that the client
 * drops their records). Built from the log on first use, by reading every batch's header from the log's start; then
 * kept as batches and markers are appended. Not thread-safe: used under the partition's producer lock
 * ({@link ProducerStates.Producers#lock}).
 */
final class PartitionTransactions {

    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * A transaction aborted.
     *
     * @param producerId its producer
     * @param firstOffset the offset of its first batch (or a lower bound of it, with no batch of the producer between)
     * @param lastOffset the offset of its abort marker (or a lower bound, with no batch of the producer between)
     */
    record Aborted(long producerId, long firstOffset, long lastOffset) {
    }

    /** Open transactions: producer id to the first offset of its transaction, oldest first. */
    private final Map<Long, Long> open = new LinkedHashMap<>();
    /** Aborted transactions, in the order of their markers. */
    private final List<Aborted> aborted = new ArrayList<>();

    /** @return the transactions of {@code log}, read from its start to its end */
    static PartitionTransactions readFrom(Partition log) {
        PartitionTransactions transactions = new PartitionTransactions();
        long offset = log.logStartOffset();
        long end = log.logEndOffset();
        int restarts = 0;
        while (offset < end) {
            try (ReadResult read = log.read(offset, 1_000, 16L << 20)) {
                if (read.status() == ReadResult.Status.OFFSET_TOO_SMALL && restarts++ < 10) {
                    // Retention moved the log's start while it was read: on from the new start.
                    offset = log.logStartOffset();
                    continue;
                }
                if (read.status() != ReadResult.Status.FOUND || read.messages().isEmpty()) {
                    break;
                }
                for (StoredMessage message : read.messages()) {
                    if (message.opaque() && message.queueOffset() < end) {
                        transactions.noteStored(message.body(), message.queueOffset());
                    }
                }
                offset = read.nextOffset();
            }
        }
        return transactions;
    }

    /** Notes a stored batch of the log, read back: a transaction's batch, or its marker. */
    private void noteStored(MemorySegment batch, long baseOffset) {
        if (batch.byteSize() < KafkaBatch.HEADER_BYTES) {
            return;
        }
        short attributes = batch.get(SHORT, KafkaBatch.ATTRIBUTES);
        long producerId = batch.get(LONG, KafkaBatch.PRODUCER_ID);
        if ((attributes & ProducerHistory.CONTROL_FLAG) != 0) {
            ControlRecordType type = markerType(batch);
            if (type == ControlRecordType.COMMIT || type == ControlRecordType.ABORT) {
                ended(producerId, type == ControlRecordType.COMMIT, baseOffset);
            }
        } else if ((attributes & ProducerHistory.TRANSACTIONAL_FLAG) != 0 && batch.get(INT,
                KafkaBatch.RECORDS_COUNT) > 0) {
            began(producerId, baseOffset);
        }
    }

    /** @return the type of a control batch's record (COMMIT or ABORT for a transaction marker) */
    static ControlRecordType markerType(MemorySegment batch) {
        MemoryRecords records = MemoryRecords.readableRecords(batch.asByteBuffer());
        for (RecordBatch only : records.batches()) {
            Iterator<Record> iterator = only.iterator();
            if (iterator.hasNext()) {
                return ControlRecordType.parse(iterator.next().key());
            }
        }
        return ControlRecordType.UNKNOWN;
    }

    /**
     * Notes a transaction's batch: the producer's transaction is open from {@code offset} on, if it was not already.
     *
     * @param offset the batch's offset, or a lower bound of it above every earlier batch of the producer
     */
    void began(long producerId, long offset) {
        open.putIfAbsent(producerId, offset);
    }

    /**
     * Notes a producer's transaction marker: its open transaction, if any, ends; an abort is listed.
     *
     * @param markerOffset the marker's offset, or a lower bound of it above every earlier batch of the producer
     */
    void ended(long producerId, boolean committed, long markerOffset) {
        Long first = open.remove(producerId);
        if (!committed && first != null) {
            aborted.add(new Aborted(producerId, first, markerOffset));
        }
    }

    /** @return whether the producer has a transaction open in this partition */
    boolean isOpen(long producerId) {
        return open.containsKey(producerId);
    }

    /** @return the first offset of the producer's open transaction here, or -1 if none is open */
    long openSince(long producerId) {
        Long first = open.get(producerId);
        return first == null ? -1 : first;
    }

    /**
     * @param highWatermark the partition's high watermark
     * @return the last stable offset: the first offset of the oldest open transaction, or the high watermark if that
     *     is lower (or none is open)
     */
    long lastStable(long highWatermark) {
        long stable = highWatermark;
        for (long first : open.values()) {
            stable = Math.min(stable, first);
        }
        return stable;
    }

    /**
     * @return the aborted transactions a read_committed fetch of offsets {@code from} to {@code to} (exclusive) must
     *     list: those whose marker is at or after {@code from} and whose first batch is before {@code to}
     */
    List<Aborted> abortedBetween(long from, long to) {
        List<Aborted> found = new ArrayList<>();
        for (Aborted one : aborted) {
            if (one.lastOffset() >= from && one.firstOffset() < to) {
                found.add(one);
            }
        }
        return found;
    }

    /** Forgets the aborted transactions wholly below {@code logStart}: their records are gone. */
    void trimBelow(long logStart) {
        aborted.removeIf(one -> one.lastOffset() < logStart);
    }
}
