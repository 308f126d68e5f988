package io.sluice.store.internal.recovery;

import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.LogWalker;
import java.lang.foreign.MemorySegment;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What indexing the records from the scan start again will find, worked out without writing: each queue's index is
 * followed as it will be after its truncation (the rules of {@code Recovery.reindex}), so that a log whose index
 * lost entries goes to a rebuild (which validates the whole log first) before anything was changed. Throws
 * {@link IndexGapException} where a record's offset does not continue its queue.
 *
 * <p>Records below {@code reindexFrom} keep their entries (a batch log's below its durable position: they were
 * forced, and hold the store times its batches do not carry): each such record must have them all, as appended, and
 * a queue's kept entries must end where its last such record does. Not thread-safe; used by one recovery.
 */
final class IndexContinuity implements LogWalker.Visitor {

    private final QueueIndexes indexes;
    private final LogFormat format;
    /** Records from here on are indexed again; those below keep their entries. */
    private final long reindexFrom;
    /** By "topic/queue": {next, min, hasFiles (1 or 0)} of the queue as re-indexing leaves it so far. */
    private final Map<String, long[]> queues = new HashMap<>();
    /** By kept queue: the offset after its last record whose entries are kept. */
    private final Map<QueueIndex, Long> keptNext = new LinkedHashMap<>();

    IndexContinuity(QueueIndexes indexes, LogFormat format, long reindexFrom) {
        this.indexes = indexes;
        this.format = format;
        this.reindexFrom = reindexFrom;
    }

    /** @return {next, min, hasFiles (1 or 0)} of the queue after a truncation at the scan start */
    private long[] start(String topic, int queueId) {
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return new long[] {0, 0, 0};
        }
        long from = index.firstEntryAtOrAfter(reindexFrom);
        boolean kept = index.hasFileBefore(from);
        long min = !kept || from < index.minOffset() ? from : index.minOffset();
        return new long[] {from, min, kept ? 1 : 0};
    }

    @Override
    public void visit(MemorySegment record, long position) {
        if (position < reindexFrom) {
            checkKept(record, position);
            return;
        }
        String topic = format.topic(record);
        int queueId = format.queueId(record);
        long first = format.firstOffset(record);
        long[] queue = queues.computeIfAbsent(topic + "/" + queueId, key -> start(topic, queueId));
        if (queue[0] != first) {
            if (queue[2] == 0 || (queue[0] == queue[1] && first > queue[0])) {
                queue[1] = first; // reindex restarts such an index at the record
            } else {
                throw new IndexGapException("queue " + topic + "-" + queueId + ": record at log position "
                        + position + " holds offset " + first + " but the index ends at " + queue[0]);
            }
        }
        queue[0] = first + format.offsetCount(record);
        queue[2] = 1;
    }

    /** A record below {@code reindexFrom} must have all its entries, as they were written at its append. */
    private void checkKept(MemorySegment record, long position) {
        String queue = format.topic(record) + "-" + format.queueId(record);
        QueueIndex index = indexes.get(format.topic(record), format.queueId(record));
        long first = format.firstOffset(record);
        int count = format.offsetCount(record);
        boolean kept = index != null && first >= index.minOffset() && first + count <= index.publishedEnd();
        if (kept) {
            try (QueueIndex.Cursor cursor = index.cursor()) {
                for (int i = 0; i < count && kept; i++) {
                    IndexEntry entry = cursor.entry(first + i);
                    kept = entry.logPosition() == position && entry.recordSize() == record.byteSize()
                            && entry.messageCount() == count && entry.indexInRecord() == i;
                }
            } catch (RuntimeException e) {
                kept = false; // a damaged entry
            }
        }
        if (!kept) {
            throw new IndexGapException("queue " + queue + ": the index entries of the " + format.recordName()
                    + " at log position " + position + " (offsets " + first + ".." + (first + count - 1)
                    + "), below the durable position, are missing or do not match it");
        }
        keptNext.put(index, first + count);
    }

    /**
     * After the walk: a queue's kept entries must end where its last kept record does, none pointing past it.
     *
     * @param keptBelow where the kept entries end in the log: the lower of {@code reindexFrom} and the walk's end
     */
    void checkKeptEnd(long keptBelow) {
        keptNext.forEach((index, next) -> {
            long keptEnd = index.firstEntryAtOrAfter(keptBelow);
            if (keptEnd != next) {
                throw new IndexGapException("queue " + index.topic() + "-" + index.queueId() + ": the index entries"
                        + " kept below log position " + keptBelow + " end at offset " + keptEnd + ", but the last "
                        + format.recordName() + " below it ends at offset " + next);
            }
        });
    }
}
