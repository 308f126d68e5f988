package io.sluice.store.internal.recovery;

import io.sluice.store.RecoveryReport;
import io.sluice.store.RecoveryReport.Mode;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreCorruptedException;
import io.sluice.store.StoreException;
import io.sluice.store.internal.index.IndexDamagedException;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.internal.log.BatchFormat;
import io.sluice.store.internal.log.BatchLog;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings one log to a consistent state before it opens: finds where its valid records end, cuts off and
 * erases what follows, and makes its queue and key indexes agree with it.
 *
 * <h2>The durable position</h2>
 * The store's checkpoint records, per log, a position P below which everything was forced: the log's bytes,
 * the index entries of its records, and the names of their files (the log's {@code DurabilityLedger}). A power
 * cut cannot damage anything below P. Above P it can leave anything a file system may leave: lost pages, later
 * pages written before earlier ones, torn sectors, the head of the next segment without the tail of this one.
 * So damage below P is corruption; damage at or above P is the tail of an interrupted write, cut and logged.
 *
 * <h2>Decision table</h2>
 * Rows are checked in order; each has a test in {@code RecoveryTest}.
 * <table>
 * <caption>state found at open, and what recovery does</caption>
 * <tr><th>#</th><th>state</th><th>action</th></tr>
 * <tr><td>1</td><td>clean-shutdown marker, P within the log, and each queue's last entry matches its record</td>
 *     <td>fast open: the log ends at P; no record is read. Segment files that start at or past P (prepared,
 *     never written) are deleted</td></tr>
 * <tr><td>2</td><td>no marker (or row 1's checks fail), P known</td>
 *     <td>scan from S, the start of the segment holding P: drop index entries for records at or after S,
 *     validate each record from S (length, magic, version, own position, CRC32C, structure) and index it. A
 *     batch log validates its batches from S (length, magic, CRC32C, offset chain) but keeps its entries below P,
 *     which hold the store times its batches do not carry, and indexes from P</td></tr>
 * <tr><td>3</td><td>a record at D fails validation, D &gt;= P</td>
 *     <td>the tail of an interrupted write: the log ends at D. What lies past D in its segment is erased and
 *     later segments are deleted, durably, before anything is appended, so no old record can come back after a
 *     later crash. Logged with the bytes dropped</td></tr>
 * <tr><td>4</td><td>a record at D fails validation, D &lt; P</td>
 *     <td>corruption: refuse, naming segment and position, unless {@code truncateOnCorruption} (or
 *     {@code sluice recover --truncate}): then as row 3, logged as an error</td></tr>
 * <tr><td>5</td><td>no checkpoint at all (deleted or damaged; a power cut cannot leave this once a store has
 *     data, since the checkpoint is written at creation and replaced atomically)</td>
 *     <td>rebuild every index from the first segment. An invalid record with a valid record after it is
 *     corruption (row 4); without one, a torn tail (row 3)</td></tr>
 * <tr><td>6</td><td>the checkpoint does not list the log (created after it)</td><td>P is the log's start</td></tr>
 * <tr><td>7</td><td>a segment file missing between two others, or a segment shorter than the next one's start
 *     says</td><td>at or past P: the log ends at the gap (row 3). Below P: corruption (row 4)</td></tr>
 * <tr><td>8</td><td>an empty segment file (a crash between creating and sizing it)</td><td>deleted</td></tr>
 * <tr><td>9</td><td>index files not a contiguous run, or a record whose queue offset does not follow its
 *     index's end</td><td>rebuild every index of the log from its first segment</td></tr>
 * <tr><td>10</td><td>an index file shorter than its geometry (its size was lost)</td>
 *     <td>restored to its size; its entries past the scan start are re-derived (row 2)</td></tr>
 * <tr><td>11</td><td>a key-index file with a damaged header (created after the last checkpoint)</td>
 *     <td>deleted with every later key file; their entries are re-derived (row 2)</td></tr>
 * <tr><td>12</td><td>opened read-only, not clean, P known</td><td>nothing is written: the log is shown up to
 *     P, each queue up to its last entry below P</td></tr>
 * <tr><td>13</td><td>opened read-only, not clean, no checkpoint</td><td>refused: only a writable open can
 *     recover it</td></tr>
 * <tr><td>14</td><td>a segment wholly below the log's start as the checkpoint records it (retention deleted it;
 *     a power cut undid the deletion)</td><td>deleted again; its index files are still there, since they are
 *     deleted only after a checkpoint records the new start</td></tr>
 * </table>
 * After a crash (rows 2-11) the recovered range, the erasure, the index files and the directories are forced
 * before the store opens; the caller then writes the new end into the checkpoint. A crash during recovery
 * therefore recovers to the same state (tested).
 *
 * <p>Not thread-safe; runs alone before the store opens.
 */
public final class Recovery {

    private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);
    private static final ValueLayout.OfInt MAGIC_LAYOUT =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The durable position when the store has no checkpoint at all. */
    public static final long UNKNOWN = -1;

    /**
     * @param segments the segments kept, oldest first
     * @param endPosition where the next record goes
     * @param indexes the indexes, consistent with the log
     * @param report what recovery found and did
     */
    public record Result(List<Segment> segments, long endPosition, QueueIndexes indexes, RecoveryReport report) {

        /** Closes the segments and indexes (a dry run's, which nothing opens afterwards). */
        public void close() {
            closeQuietly(segments, indexes, new IOException("closing a recovery result"));
        }
    }

    /**
     * Where a log lives and how to open it.
     *
     * @param root the log's directory (holding {@code log/}, {@code index/}, {@code keys/})
     * @param durablePosition its durable position from the checkpoint, {@link #UNKNOWN} without one
     * @param start its start from the checkpoint (segments wholly below it are retention's leftovers), or -1
     * @param clean the store was shut down cleanly
     * @param readOnly change nothing
     * @param dryRun change nothing, and describe every valid record a cut would drop
     * @param batchLog what the log holds if it is a batch log ({@link BatchFormat}), else null
     */
    public record Target(Path root, long durablePosition, long start, boolean clean, boolean readOnly,
                         boolean dryRun, BatchLog batchLog) {

        /** A log of store records (not a batch log). */
        public Target(Path root, long durablePosition, long start, boolean clean, boolean readOnly, boolean dryRun) {
            this(root, durablePosition, start, clean, readOnly, dryRun, null);
        }

        Path logDirectory() {
            return root.resolve("log");
        }

        Path indexDirectory() {
            return root.resolve("index");
        }

        Path keyDirectory() {
            return root.resolve("keys");
        }

        boolean writes() {
            return !readOnly && !dryRun;
        }
    }

    private final StoreConfig config;
    private final FileIO io;
    private final Target target;
    private final IndexGeometry indexGeometry;
    private final KeyGeometry keyGeometry;
    private final DurabilityLedger ledger;
    private final boolean writableMappings;
    /** What the log holds if it is a batch log, else null: its records are batches, with no store header. */
    private final BatchLog batchLog;
    /** The store time {@link #batchStoreTimestamp} gave the batch that ends at {@link #lastBatchEnd}. */
    private long lastBatchTimestamp;
    private long lastBatchEnd = -1;
    /** A dry run: why a plain open would refuse the log, or null. */
    private String problem;

    /**
     * @param config the configuration
     * @param target the log
     * @param indexGeometry the store's queue-index geometry
     * @param keyGeometry the store's key-index geometry
     * @param ledger the log's ledger: recovery marks what it writes, and forces it all before returning
     */
    public Recovery(StoreConfig config, Target target, IndexGeometry indexGeometry, KeyGeometry keyGeometry,
                    DurabilityLedger ledger) {
        this.config = config;
        this.io = config.fileIO();
        this.target = target;
        this.indexGeometry = indexGeometry;
        this.keyGeometry = keyGeometry;
        this.ledger = ledger;
        this.writableMappings = target.writes() && CommitLog.mapsWritable(config.writePath());
        this.batchLog = target.batchLog();
    }

    /** Runs recovery. On failure every file it opened is closed again. */
    public Result run() throws IOException {
        List<Segment> segments = openSegments();
        QueueIndexes indexes = null;
        try {
            long logStart = segments.isEmpty() ? 0 : segments.getFirst().base();
            long logEnd = segments.isEmpty() ? 0 : segments.getLast().end();
            long durable = target.durablePosition();
            if (target.clean() && durable >= logStart && durable <= logEnd) {
                Result clean = tryCleanOpen(segments, durable);
                if (clean != null) {
                    return clean;
                }
            }
            if (target.readOnly()) {
                return openReadOnlyToDurable(segments, durable);
            }
            if (durable == UNKNOWN) {
                LOG.warn("{}: the store has no valid checkpoint; rebuilding every index from the log", target.root());
                return rebuildAll(segments, logStart);
            }
            long scanFrom = scanStart(segments, Math.max(logStart, checkGapsBelow(segments, durable)));
            try {
                indexes = openIndexes();
            } catch (IndexDamagedException e) {
                LOG.warn("{}: {}; rebuilding every index from the log", target.root(), e.getMessage());
                return rebuildAll(segments, logStart);
            }
            try {
                return scan(segments, indexes, scanFrom, Mode.CRASH, null);
            } catch (IndexGapException e) {
                LOG.warn("{}: {}; rebuilding every index from the log", target.root(), e.getMessage());
                indexes.close();
                indexes = null;
                return rebuildAll(segments, logStart);
            }
        } catch (IOException | RuntimeException e) {
            closeQuietly(segments, indexes, e);
            throw e;
        }
    }

    private QueueIndexes openIndexes() throws IOException {
        return QueueIndexes.open(target.indexDirectory(), target.keyDirectory(), io, indexGeometry, keyGeometry,
                ledger, !target.writes());
    }

    /** Row 1: a clean open, if every queue's last entry matches its record below P; else null (row 2). */
    private Result tryCleanOpen(List<Segment> segments, long end) throws IOException {
        QueueIndexes indexes;
        try {
            indexes = openIndexes();
        } catch (IndexDamagedException e) {
            LOG.warn("{}: closed cleanly but {}; recovering", target.root(), e.getMessage());
            return null;
        }
        for (QueueIndex index : indexes.all()) {
            String problem = tailProblem(segments, index, end);
            if (problem != null) {
                LOG.warn("{}: closed cleanly, but queue {}-{} {}; recovering", target.root(), index.topic(),
                        index.queueId(), problem);
                indexes.close();
                return null;
            }
        }
        List<Segment> kept = dropSegmentsFrom(segments, end);
        LOG.debug("clean open of {}: log ends at {}", target.root(), end);
        return new Result(kept, end, indexes, new RecoveryReport(Mode.CLEAN, end, -1, end, 0, -1, 0, 0, List.of(), null));
    }

    /**
     * @return what is wrong with the queue's last entry (it must point at its own record, ending by {@code end}),
     *     or with the entry past it (a clean close leaves it never written: zeros)
     */
    private String tailProblem(List<Segment> segments, QueueIndex index, long end) {
        if (!index.isBlank(index.publishedEnd())) {
            return "has a damaged entry where its index ends (" + index.publishedEnd() + ")";
        }
        long last = index.publishedEnd() - 1;
        if (last < index.minOffset()) {
            return null;
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            var entry = cursor.entry(last);
            if (entry.recordEnd() > end) {
                return "ends past the log (" + entry.recordEnd() + " > " + end + ")";
            }
            Segment segment = segmentAt(segments, entry.logPosition());
            if (segment == null) {
                return null; // its segment went to retention: nothing to check it against
            }
            MemorySegment data = segment.mapping();
            long offset = entry.logPosition() - segment.base();
            if (batchLog != null) {
                boolean matches = BatchFormat.validate(data, offset, last - entry.indexInRecord()) == entry.recordSize()
                        && BatchFormat.offsetCount(data.asSlice(offset)) == entry.messageCount();
                return matches ? null : "has a last entry that matches no batch";
            }
            if (RecordFormat.validate(data, offset, entry.logPosition()) != entry.recordSize()) {
                return "has a last entry that matches no record";
            }
            MemorySegment record = data.asSlice(offset, entry.recordSize());
            boolean matches = RecordFormat.queueId(record) == index.queueId()
                    && RecordFormat.topic(record).equals(index.topic())
                    && RecordFormat.firstQueueOffset(record) + entry.indexInRecord() == last;
            return matches ? null : "has a last entry that points at another queue's record";
        } catch (RuntimeException e) {
            return "has a damaged last entry (" + e.getMessage() + ")";
        }
    }

    /** Rows 12 and 13: read-only after a crash. */
    private Result openReadOnlyToDurable(List<Segment> segments, long durable) throws IOException {
        if (durable == UNKNOWN) {
            throw new StoreException(target.root() + " was not closed cleanly and has no checkpoint: only a writable"
                    + " open can recover it");
        }
        long logStart = segments.isEmpty() ? 0 : segments.getFirst().base();
        long end = Math.max(durable, logStart);
        QueueIndexes indexes = openIndexes();
        for (QueueIndex index : indexes.all()) {
            index.limitTo(index.firstEntryAtOrAfter(end));
        }
        LOG.info("{} was not closed cleanly: shown read-only up to its durable position {}; open it for writing to"
                + " recover what lies past it", target.root(), end);
        return new Result(segments, end, indexes, new RecoveryReport(Mode.READ_ONLY_TO_DURABLE, durable, -1, end, 0, -1, 0,
                0, List.of(), null));
    }

    private Result rebuildAll(List<Segment> segments, long logStart) throws IOException {
        if (target.dryRun()) {
            return scan(segments, null, logStart, Mode.REBUILD, null); // validates without indexing
        }
        if (!target.writes()) {
            throw new StoreException(target.root() + ": its indexes must be rebuilt, which only a writable open does");
        }
        Walk validated = decide(segments, walk(segments, logStart, null)); // refuses before deleting anything
        deleteTree(target.indexDirectory());
        deleteTree(target.keyDirectory());
        QueueIndexes indexes = openIndexes();
        try {
            return scan(segments, indexes, logStart, Mode.REBUILD, validated);
        } catch (IndexGapException e) {
            indexes.close();
            throw new StoreCorruptedException("log records out of queue order: " + e.getMessage(), null, -1);
        } catch (IOException | RuntimeException e) {
            indexes.close();
            throw e;
        }
    }

    /**
     * Validates every record from {@code scanFrom} and decides what an invalid one means; only then (a
     * refused log is left exactly as it was) drops the index entries from {@code scanFrom}, indexes the valid
     * records again, and cuts the log where they end.
     *
     * @param validated the walk from {@code scanFrom}, already decided on, or null
     */
    private Result scan(List<Segment> segments, QueueIndexes indexes, long scanFrom, Mode mode, Walk validated)
            throws IOException {
        // From the scan start, each record must continue its queue's index where the truncation there leaves
        // it; checked here, before anything is written, so that a log whose index lost entries goes to a
        // rebuild (which validates the whole log first) without having been changed.
        // A batch log keeps its entries below the durable position: they were forced, and they hold the store times
        // its batches do not carry (a store record's entries are derived again from its header).
        // Not after a clean close whose index failed its check (row 1): the index is then what is in doubt.
        long keepBelow = batchLog != null && mode == Mode.CRASH && !target.clean()
                ? Math.max(scanFrom, target.durablePosition()) : scanFrom;
        GapCheck gaps = validated != null || indexes == null ? null : new GapCheck(indexes, keepBelow);
        Walk walk = validated != null ? validated : decide(segments, walk(segments, scanFrom, gaps));
        if (gaps != null) {
            gaps.checkKeptEnd(Math.min(keepBelow, walk.end()));
        }
        List<String> dropped = walk.invalidAt() >= 0 && target.dryRun()
                ? describeDropped(segments, walk.segmentIndex(), walk.invalidAt(), walk.nextFirst()) : List.of();
        long end = walk.end();
        long bytesDropped = 0;
        int segmentsDropped = 0;
        for (Segment segment : segments) {
            if (segment.end() > end) {
                bytesDropped += segment.end() - Math.max(end, segment.base());
                segmentsDropped += segment.base() >= end ? 1 : 0;
            }
        }
        List<Segment> kept = segments;
        if (target.writes()) {
            long reindexFrom = Math.min(keepBelow, end);
            for (QueueIndex index : indexes.all()) {
                index.truncateFrom(index.firstEntryAtOrAfter(reindexFrom));
            }
            indexes.keys().truncateFrom(reindexFrom);
            Walk indexed = walk(segments, scanFrom, (record, position) -> {
                if (position >= reindexFrom) {
                    reindex(indexes, record, position);
                }
            });
            if (indexed.end() != end) {
                throw new IllegalStateException("the log changed during recovery: " + indexed.end() + " != " + end);
            }
            kept = cut(segments, end);
            forceRecovered(kept, scanFrom, end);
        }
        LOG.info("recovered {}: {} records validated from log position {}, log ends at {}{}", target.root(),
                walk.records(), scanFrom, end,
                walk.invalidAt() >= 0 ? " (cut there: " + bytesDropped + " bytes past it dropped)" : "");
        return new Result(kept, end, indexes, new RecoveryReport(mode, target.durablePosition(), scanFrom, end,
                walk.records(), walk.invalidAt(), bytesDropped, segmentsDropped, dropped, problem));
    }

    /**
     * What re-indexing the records from the scan start will find, worked out without writing: each queue's
     * index is followed as it will be after its truncation at the scan start (the rules of {@code reindex}).
     * Throws {@link IndexGapException} where a record's offset does not continue its queue.
     */
    private final class GapCheck implements RecordVisitor {
        private final QueueIndexes indexes;
        /** Records from here on are indexed again; those below keep their entries. */
        private final long reindexFrom;
        private final Map<String, long[]> queues = new java.util.HashMap<>();
        /** In a batch log, the offset after the last batch whose entries are kept, or -1. */
        private long keptNext = -1;

        GapCheck(QueueIndexes indexes, long reindexFrom) {
            this.indexes = indexes;
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
            String topic = topicOf(record);
            int queueId = queueIdOf(record);
            long first = firstOffsetOf(record);
            long[] queue = queues.computeIfAbsent(topic + "/" + queueId, key -> start(topic, queueId));
            if (queue[0] != first) {
                if (queue[2] == 0 || (queue[0] == queue[1] && first > queue[0])) {
                    queue[1] = first; // reindex restarts such an index at the record
                } else {
                    throw new IndexGapException("queue " + topic + "-" + queueId + ": record at log position "
                            + position + " holds offset " + first + " but the index ends at " + queue[0]);
                }
            }
            queue[0] = first + offsetCountOf(record);
            queue[2] = 1;
        }

        /**
         * A batch log keeps the entries of its batches below the durable position: each such batch must have them, as
         * they were written at its append. Else the index goes to a rebuild.
         */
        private void checkKept(MemorySegment record, long position) {
            QueueIndex index = indexes.get(batchLog.topic(), batchLog.queueId());
            long first = firstOffsetOf(record);
            int count = offsetCountOf(record);
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
                throw new IndexGapException("queue " + batchLog.topic() + "-" + batchLog.queueId() + ": the index"
                        + " entries of the batch at log position " + position + " (offsets " + first + ".."
                        + (first + count - 1) + "), below the durable position, are missing or do not match it");
            }
            keptNext = first + count;
        }

        /** The kept entries must end where the last kept batch does: none may point past it. */
        void checkKeptEnd(long reindexFrom) {
            if (keptNext < 0) {
                return;
            }
            QueueIndex index = indexes.get(batchLog.topic(), batchLog.queueId());
            long keptEnd = index.firstEntryAtOrAfter(reindexFrom);
            if (keptEnd != keptNext) {
                throw new IndexGapException("queue " + batchLog.topic() + "-" + batchLog.queueId() + ": the index"
                        + " entries kept below log position " + reindexFrom + " end at offset " + keptEnd
                        + ", the batches there at " + keptNext);
            }
        }
    }

    /** Told each valid record a walk passes. */
    @FunctionalInterface
    private interface RecordVisitor {
        void visit(MemorySegment record, long position) throws IOException;
    }

    /**
     * Walks the valid records from {@code from}, telling {@code visitor} (if any) each one. In a batch log each batch
     * after the first must start at the offset after the one before it (stale bytes cannot follow on).
     */
    private Walk walk(List<Segment> segments, long from, RecordVisitor visitor) throws IOException {
        long position = from;
        long records = 0;
        long invalidAt = -1;
        long expectedFirst = -1;
        int segmentIndex = segmentIndexFor(segments, from);
        while (segmentIndex >= 0 && segmentIndex < segments.size()) {
            Segment segment = segments.get(segmentIndex);
            if (segment.base() > position) {
                invalidAt = position; // row 7: a gap between segments
                break;
            }
            MemorySegment data = segment.mapping();
            long offset = position - segment.base();
            long length = batchLog != null ? BatchFormat.validate(data, offset, expectedFirst)
                    : RecordFormat.validate(data, offset, position);
            if (length < 0) {
                if ((segment.size() - offset < RecordFormat.FILLER_BYTES && position > segment.base())
                        || (batchLog != null && RecordFormat.isFillerAt(data, offset, position))) {
                    position = segment.end();
                    segmentIndex++;
                    continue;
                }
                invalidAt = position;
                break;
            }
            MemorySegment record = data.asSlice(offset, length);
            if (batchLog == null && RecordFormat.isFiller(record)) {
                position = segment.end();
                segmentIndex++;
                continue;
            }
            if (visitor != null) {
                visitor.visit(record, position);
            }
            if (batchLog != null) {
                expectedFirst = BatchFormat.firstOffset(record) + BatchFormat.offsetCount(record);
            }
            records++;
            position += length;
        }
        return new Walk(position, records, invalidAt, segmentIndex, expectedFirst);
    }

    /**
     * @param batchesFrom for a batch log, the least first offset a batch counts with; -1 for a log of store records
     * @return the length of the valid record at {@code offset} (a store record; in a batch log a batch starting at
     *     or past {@code batchesFrom}, or a filler), or -1
     */
    private static long anyRecordAt(MemorySegment data, long offset, long position, long batchesFrom) {
        if (batchesFrom >= 0) {
            long length = BatchFormat.validate(data, offset, -1);
            if (length > 0 && BatchFormat.firstOffset(data.asSlice(offset)) >= batchesFrom) {
                return length;
            }
            return RecordFormat.isFillerAt(data, offset, position) ? RecordFormat.validate(data, offset, position) : -1;
        }
        return RecordFormat.validate(data, offset, position);
    }

    /**
     * A batch log's byte scan past a bad batch counts only batches that could follow it: a batch inside a
     * record's value (a mirrored batch, say) with a lower first offset is not taken for a later record.
     *
     * @return for {@link #findValidRecordAfter}: the least first offset, or -1 for a log of store records
     */
    private long batchesFrom(long nextFirst) {
        return batchLog == null ? -1 : Math.max(0, nextFirst);
    }

    private String topicOf(MemorySegment record) {
        return batchLog != null ? batchLog.topic() : RecordFormat.topic(record);
    }

    private int queueIdOf(MemorySegment record) {
        return batchLog != null ? batchLog.queueId() : RecordFormat.queueId(record);
    }

    private long firstOffsetOf(MemorySegment record) {
        return batchLog != null ? BatchFormat.firstOffset(record) : RecordFormat.firstQueueOffset(record);
    }

    private int offsetCountOf(MemorySegment record) {
        return batchLog != null ? BatchFormat.offsetCount(record) : RecordFormat.messageCount(record);
    }

    /**
     * Where a walk over the log stopped.
     *
     * @param end where the valid records end
     * @param records how many it passed (fillers not counted)
     * @param invalidAt the position of the first invalid record (or of a gap), or -1 if the walk reached the end
     * @param segmentIndex the segment holding {@code invalidAt}
     * @param nextFirst in a batch log, the offset the next batch had to start at (-1 if no batch was passed)
     */
    private record Walk(long end, long records, long invalidAt, int segmentIndex, long nextFirst) {
    }

    /** Rows 3, 4 and 5: throws if the log may not end where the walk stopped. */
    private Walk decide(List<Segment> segments, Walk walk) {
        if (walk.invalidAt() >= 0) {
            decideOnInvalid(segments, walk.segmentIndex(), walk.invalidAt(), walk.nextFirst());
        }
        return walk;
    }

    /**
     * Row 7 below the scan: a segment missing (or short) below the durable position is corruption; past it, the
     * scan meets the gap and cuts there.
     *
     * @return where the scan must start from: the durable position, or the gap if truncating through it
     */
    private long checkGapsBelow(List<Segment> segments, long durable) {
        for (int i = 1; i < segments.size(); i++) {
            long gap = segments.get(i - 1).end();
            if (segments.get(i).base() != gap && gap < durable) {
                String message = "commit log corrupt: log positions " + gap + " to " + segments.get(i).base()
                        + " are missing (no segment holds them), below the durable position " + durable + " in "
                        + target.logDirectory();
                if (target.dryRun()) {
                    problem = message;
                } else if (!config.truncateOnCorruption()) {
                    throw new StoreCorruptedException(message + "; truncateOnCorruption (sluice recover --truncate)"
                            + " drops everything from " + gap, target.logDirectory(), gap);
                }
                LOG.error("{}; dropping everything from {}", message, gap);
                return gap;
            }
        }
        return durable;
    }

    /**
     * Rows 3, 4 and 5: an invalid record at {@code position}; returns if the log may end there.
     *
     * @param nextFirst in a batch log, the offset the batch there had to start at, or -1
     */
    private void decideOnInvalid(List<Segment> segments, int segmentIndex, long position, long nextFirst) {
        long durable = target.durablePosition();
        String where = where(segments, segmentIndex, position);
        String corruption;
        if (durable != UNKNOWN) {
            if (position >= durable) {
                LOG.warn("{}: the record at {} fails validation, at or past the durable position {}: the tail of an"
                        + " interrupted write; the log ends there", target.root(), where, durable);
                return;
            }
            corruption = "commit log corrupt: the record at " + where + " fails validation below the durable position "
                    + durable + ", which was forced before the last checkpoint";
        } else {
            long follower = findValidRecordAfter(segments, Math.min(segmentIndex, segments.size() - 1), position,
                    batchesFrom(nextFirst));
            if (follower < 0) {
                LOG.warn("{}: torn tail at {}; the log ends there", target.root(), where);
                return;
            }
            corruption = "commit log corrupt: the record at " + where + " fails validation, but a valid record follows"
                    + " at log position " + follower;
        }
        if (target.dryRun()) {
            problem = corruption;
        }
        if (config.truncateOnCorruption() || target.dryRun()) {
            LOG.error("{}; {}dropping every record from log position {}", corruption,
                    target.dryRun() ? "a truncating recovery would be " : "truncateOnCorruption is set: ", position);
            return;
        }
        throw new StoreCorruptedException(corruption + "; sluice recover --dry-run shows what truncating would drop,"
                + " and truncateOnCorruption (sluice recover --truncate) drops everything from " + position,
                segmentIndex < segments.size() ? segments.get(segmentIndex).file().path() : target.logDirectory(),
                position);
    }

    private static String where(List<Segment> segments, int segmentIndex, long position) {
        if (segmentIndex < 0 || segmentIndex >= segments.size() || segments.get(segmentIndex).base() > position) {
            return "log position " + position + " (no segment holds it)";
        }
        Segment segment = segments.get(segmentIndex);
        return "log position " + position + " (segment " + segment.file().path() + ", offset "
                + (position - segment.base()) + ")";
    }

    /** Dry run: every valid record past {@code position}, by queue ({@code nextFirst} as for decideOnInvalid). */
    private List<String> describeDropped(List<Segment> segments, int segmentIndex, long position, long nextFirst) {
        Map<String, long[]> queues = new TreeMap<>();
        boolean batches = batchLog != null;
        long batchesFrom = batchesFrom(nextFirst);
        long at = position;
        int index = Math.min(Math.max(segmentIndex, 0), segments.size() - 1);
        while (index >= 0 && (at = findValidRecordAfter(segments, index, at, batchesFrom)) >= 0) {
            Segment segment = segmentAt(segments, at);
            index = segments.indexOf(segment);
            MemorySegment data = segment.mapping();
            long length = anyRecordAt(data, at - segment.base(), at, batchesFrom);
            MemorySegment record = data.asSlice(at - segment.base(), length);
            boolean filler = batches ? RecordFormat.isFillerAt(data, at - segment.base(), at) : RecordFormat.isFiller(record);
            if (batches && !filler) {
                batchesFrom = firstOffsetOf(record) + offsetCountOf(record);
            }
            if (!filler) {
                String queue = topicOf(record) + "-" + queueIdOf(record);
                long first = firstOffsetOf(record);
                long last = first + offsetCountOf(record) - 1;
                long[] range = queues.computeIfAbsent(queue, q -> new long[] {first, last, 0, 0});
                range[0] = Math.min(range[0], first);
                range[1] = Math.max(range[1], last);
                range[2] += offsetCountOf(record);
                range[3]++;
            }
            at += length - 1;
        }
        List<String> lines = new ArrayList<>();
        queues.forEach((queue, range) -> lines.add(queue + ": offsets " + range[0] + ".." + range[1] + " (" + range[2]
                + " messages in " + range[3] + " records)"));
        return lines;
    }

    private void reindex(QueueIndexes indexes, MemorySegment record, long position) throws IOException {
        String topic = topicOf(record);
        int queueId = queueIdOf(record);
        long first = firstOffsetOf(record);
        int count = offsetCountOf(record);
        QueueIndex index = indexes.getOrCreate(topic, queueId);
        if (index.nextOffset() != first) {
            if (index.fileCount() == 0 || (index.nextOffset() == index.minOffset() && first > index.nextOffset())) {
                index.resetTo(first);
            } else {
                throw new IndexGapException("queue " + topic + "-" + queueId + ": record at log position "
                        + position + " holds offset " + first + " but the index ends at " + index.nextOffset());
            }
        }
        index.ensureCapacity(first + count);
        int size = (int) record.byteSize();
        if (batchLog != null) {
            long storeTimestamp = batchStoreTimestamp(index, record);
            for (int i = 0; i < count; i++) {
                index.put(first + i, position, storeTimestamp, size, count, i);
            }
            index.publish(first + count);
            return;
        }
        long storeTimestamp = RecordFormat.storeTimestamp(record);
        long messageOffset = RecordFormat.firstMessageOffset(record);
        KeyIndex keys = indexes.keys();
        boolean opaque = RecordFormat.isOpaque(record);
        for (int i = 0; i < count; i++) {
            index.put(first + i, position, storeTimestamp, size, count, i);
            if (opaque) {
                continue;
            }
            List<String> messageKeys = RecordFormat.decodeMetadata(record, messageOffset).keys();
            keys.ensureRoom(messageKeys.size());
            for (String key : messageKeys) {
                keys.put(KeyIndex.hash(topic, key), position, storeTimestamp, i);
            }
            messageOffset = RecordFormat.nextMessageOffset(record, messageOffset);
        }
        index.publish(first + count);
    }

    /**
     * A batch carries no store time: a batch indexed again gets its producer's max timestamp, capped by this clock
     * and never below the entry before it, so the queue's times still only grow (time lookups binary-search them).
     */
    private long batchStoreTimestamp(QueueIndex index, MemorySegment batch) {
        if (index.nextOffset() != lastBatchEnd) {
            lastBatchTimestamp = Long.MIN_VALUE;
            if (index.nextOffset() > index.minOffset()) {
                try (QueueIndex.Cursor cursor = index.cursor()) {
                    lastBatchTimestamp = cursor.entry(index.nextOffset() - 1).storeTimestamp();
                }
            }
        }
        lastBatchTimestamp = Math.max(lastBatchTimestamp, Math.min(BatchFormat.maxTimestamp(batch),
                config.clock().millis()));
        lastBatchEnd = index.nextOffset() + BatchFormat.offsetCount(batch);
        return lastBatchTimestamp;
    }

    /**
     * Row 3: makes the log end at {@code end}: the rest of its segment is erased, later segments deleted
     * (newest first, so a crash midway leaves a contiguous run), and the index entries past it are gone already.
     */
    private List<Segment> cut(List<Segment> segments, long end) throws IOException {
        List<Segment> kept = new ArrayList<>();
        List<Segment> dropped = new ArrayList<>();
        for (Segment segment : segments) {
            (segment.base() >= end ? dropped : kept).add(segment);
        }
        for (Segment segment : dropped.reversed()) {
            Path path = segment.file().path();
            segment.close();
            io.delete(path);
        }
        if (!dropped.isEmpty()) {
            ledger.markDirectory(target.logDirectory());
        }
        if (!kept.isEmpty()) {
            Segment last = kept.getLast();
            if (end < last.end()) {
                last.file().zeroRange(end - last.base(), last.end() - end);
            }
        }
        return kept;
    }

    private void forceRecovered(List<Segment> segments, long from, long end) throws IOException {
        for (Segment segment : segments) {
            if (segment.end() > from && segment.base() <= end) {
                segment.file().force();
            }
        }
        ledger.forceAll();
    }

    /** Closes and deletes segments that start at or after {@code end} (never written); returns the rest. */
    private List<Segment> dropSegmentsFrom(List<Segment> segments, long end) throws IOException {
        List<Segment> kept = new ArrayList<>();
        boolean deleted = false;
        for (Segment segment : segments.reversed()) {
            if (segment.base() >= end && target.writes()) {
                Path path = segment.file().path();
                segment.close();
                io.delete(path);
                deleted = true;
            } else {
                kept.addFirst(segment);
            }
        }
        if (deleted) {
            io.syncDirectory(target.logDirectory());
        }
        return kept;
    }

    /**
     * @param batchesFrom for a batch log, the least first offset a batch found counts with (a filler counts too);
     *     -1 for a log of store records
     * @return the position of a valid record after {@code position}, or -1 (scans byte by byte)
     */
    public static long findValidRecordAfter(List<Segment> segments, int segmentIndex, long position,
                                            long batchesFrom) {
        boolean batches = batchesFrom >= 0;
        for (int i = Math.max(segmentIndex, 0); i < segments.size(); i++) {
            Segment segment = segments.get(i);
            MemorySegment data = segment.mapping();
            long from = Math.max(0, position - segment.base() + 1);
            long last = segment.size() - RecordFormat.FILLER_BYTES;
            for (long offset = from; offset <= last; offset++) {
                boolean candidate = data.get(MAGIC_LAYOUT, offset + RecordFormat.MAGIC_OFFSET) == RecordFormat.MAGIC
                        || (batches && offset + BatchFormat.HEADER_BYTES <= segment.size()
                            && data.get(ValueLayout.JAVA_BYTE, offset + BatchFormat.MAGIC_OFFSET) == BatchFormat.MAGIC);
                if (candidate && anyRecordAt(data, offset, segment.base() + offset, batchesFrom) > 0) {
                    return segment.base() + offset;
                }
            }
        }
        return -1;
    }

    /** Rows 7 and 8: opens the segment files in order; empty ones (never sized) are deleted. */
    private List<Segment> openSegments() throws IOException {
        Path logDirectory = target.logDirectory();
        if (target.writes()) {
            FileTree.createDirectories(io, logDirectory);
        } else if (!io.isDirectory(logDirectory)) {
            return new ArrayList<>();
        }
        List<Path> files = io.list(logDirectory).stream().filter(CommitLog::isSegmentName).toList();
        List<Segment> segments = new ArrayList<>();
        try {
            for (Path file : files) {
                long base = Long.parseLong(file.getFileName().toString());
                long size;
                try (StoreFile probe = io.open(file, FileIO.OpenMode.READ_ONLY)) {
                    size = probe.size();
                }
                if (size == 0 || (target.start() >= 0 && base < target.start() && base + size <= target.start())) {
                    // Row 8, and row 14: a segment retention deleted whose deletion a power cut undid.
                    if (target.writes()) {
                        io.delete(file);
                        ledger.markDirectory(logDirectory);
                    }
                    continue;
                }
                segments.add(Segment.open(io, file, base, writableMappings, !target.writes()));
            }
            return segments;
        } catch (IOException | RuntimeException e) {
            closeQuietly(segments, null, e);
            throw e;
        }
    }

    /**
     * Scanning starts at the start of the segment holding the durable position (or the last segment if it
     * lies past them), so the whole active segment is always validated.
     */
    private static long scanStart(List<Segment> segments, long durable) {
        for (Segment segment : segments) {
            if (durable < segment.end()) {
                return Math.min(durable, segment.base());
            }
        }
        return segments.isEmpty() ? durable : segments.getLast().base();
    }

    private static int segmentIndexFor(List<Segment> segments, long position) {
        for (int i = 0; i < segments.size(); i++) {
            if (position < segments.get(i).end()) {
                return i;
            }
        }
        return -1;
    }

    private static Segment segmentAt(List<Segment> segments, long position) {
        for (Segment segment : segments) {
            if (segment.base() <= position && position < segment.end()) {
                return segment;
            }
        }
        return null;
    }

    private void deleteTree(Path root) throws IOException {
        if (FileTree.deleteTree(io, root)) {
            ledger.markDirectory(root.getParent());
        }
    }

    private static void closeQuietly(List<Segment> segments, QueueIndexes indexes, Exception primary) {
        for (Segment segment : segments) {
            try {
                segment.close();
            } catch (IOException | RuntimeException e) {
                primary.addSuppressed(e);
            }
        }
        if (indexes != null) {
            indexes.close();
        }
    }

    /** A queue's index lost entries the checkpoint claimed were durable. */
    private static final class IndexGapException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        IndexGapException(String message) {
            super(message);
        }
    }
}
