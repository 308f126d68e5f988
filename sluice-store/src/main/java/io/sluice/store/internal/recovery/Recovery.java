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
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.LogWalker;
import io.sluice.store.internal.log.LogWalker.Walk;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
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
 * <tr><td>15</td><td>what a compaction left: a segment's copy ({@code <base>.cleaned}), or the marker of a swap
 *     whose index entries may not be forced ({@code <base>.reindex})</td><td>the copy is deleted; with a marker,
 *     every index is rebuilt from the log (as row 5), forced, and the marker deleted. Checked first</td></tr>
 * </table>
 * After a crash (rows 2-11) the recovered range, the erasure, the index files and the directories are forced
 * before the store opens; the caller then writes the new end into the checkpoint. A crash during recovery
 * therefore recovers to the same state (tested).
 *
 * <h2>Who does what</h2>
 * Recovery reads a log with the {@link LogWalker} the verifier uses, so both agree on where a log's valid records
 * end; what a record is (how it is framed and checked, what it indexes) is the log's {@link LogFormat}, which holds
 * every difference between a log of store records and a batch log. {@link Damage} judges an invalid record or a gap
 * (rows 3, 4, 5 and 7), {@link IndexContinuity} checks the indexes against the records before anything is written
 * (rows 2 and 9), and {@link SegmentFiles} does the file work on segments (rows 1, 3, 8 and 14).
 *
 * <p>Not thread-safe; runs alone before the store opens.
 */
public final class Recovery {

    private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);

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
            SegmentFiles.closeQuietly(segments, indexes, new IOException("closing a recovery result"));
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
     * @param format what the log's records are
     */
    public record Target(Path root, long durablePosition, long start, boolean clean, boolean readOnly,
                         boolean dryRun, LogFormat format) {

        /** A log of store records. */
        public Target(Path root, long durablePosition, long start, boolean clean, boolean readOnly, boolean dryRun) {
            this(root, durablePosition, start, clean, readOnly, dryRun, LogFormat.records());
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
    private final LogFormat format;
    private final SegmentFiles files;
    private final Damage damage;
    /** The queue {@link #reindex} indexed last, where its last record ended, and the store time it got. */
    private QueueIndex lastIndexed;
    private long lastIndexedEnd;
    private long lastIndexedTimestamp;

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
        this.format = target.format();
        this.files = new SegmentFiles(io, target.logDirectory(), ledger, target.writes());
        this.damage = new Damage(target, config.truncateOnCorruption());
    }

    /** Runs recovery. On failure every file it opened is closed again. */
    public Result run() throws IOException {
        List<Segment> segments = files.open(target.start(), writableMappings);
        QueueIndexes indexes = null;
        try {
            long logStart = segments.isEmpty() ? 0 : segments.getFirst().base();
            long logEnd = segments.isEmpty() ? 0 : segments.getLast().end();
            long durable = target.durablePosition();
            List<Path> compacting = files.compactionLeftovers();
            if (!compacting.isEmpty()) {
                return afterInterruptedCompaction(segments, logStart, compacting);
            }
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
            long scanFrom = SegmentFiles.scanStart(segments,
                    Math.max(logStart, damage.checkGapsBelow(segments, durable)));
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
            SegmentFiles.closeQuietly(segments, indexes, e);
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
        LogWalker walker = new LogWalker(segments, format);
        for (QueueIndex index : indexes.all()) {
            String problem = tailProblem(walker, index, end);
            if (problem != null) {
                LOG.warn("{}: closed cleanly, but queue {}-{} {}; recovering", target.root(), index.topic(),
                        index.queueId(), problem);
                indexes.close();
                return null;
            }
        }
        List<Segment> kept = files.dropFrom(segments, end);
        LOG.debug("clean open of {}: log ends at {}", target.root(), end);
        return new Result(kept, end, indexes, new RecoveryReport(Mode.CLEAN, end, -1, end, 0, -1, 0, 0, List.of(), null));
    }

    /**
     * @return what is wrong with the queue's last entry (it must point at its own record, ending by {@code end}),
     *     or with the entry past it (a clean close leaves it never written: zeros)
     */
    private String tailProblem(LogWalker walker, QueueIndex index, long end) {
        if (!index.isBlank(index.publishedEnd())) {
            return "has a damaged entry where its index ends (" + index.publishedEnd() + ")";
        }
        long last = index.publishedEnd() - 1;
        if (last < index.minOffset()) {
            return null;
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            IndexEntry entry = cursor.entry(last);
            if (entry.recordEnd() > end) {
                return "ends past the log (" + entry.recordEnd() + " > " + end + ")";
            }
            Segment segment = walker.segmentAt(entry.logPosition());
            if (segment == null) {
                return null; // its segment went to retention: nothing to check it against
            }
            boolean matches = format.matchesEntry(segment.mapping(), entry.logPosition() - segment.base(),
                    entry.logPosition(), entry.recordSize(), index.topic(), index.queueId(),
                    last - entry.indexInRecord(), entry.messageCount(), entry.storeTimestamp());
            return matches ? null : "has a last entry that matches no " + format.recordName() + " of its queue";
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

    /** Row 15: a compaction's swap was interrupted; the indexes are rebuilt from the log, then its markers go. */
    private Result afterInterruptedCompaction(List<Segment> segments, long logStart, List<Path> markers)
            throws IOException {
        if (target.readOnly()) {
            throw new StoreException(target.root() + ": a compaction was interrupted; only a writable open rebuilds"
                    + " its indexes");
        }
        LOG.warn("{}: a compaction was interrupted while swapping in a segment; rebuilding every index from the log",
                target.root());
        Result result = rebuildAll(segments, logStart);
        if (target.writes()) {
            files.deleteMarkers(markers);
        }
        return result;
    }

    /** Rows 5 and 9: every index of the log built again from its first segment. */
    private Result rebuildAll(List<Segment> segments, long logStart) throws IOException {
        if (target.dryRun()) {
            return scan(segments, null, logStart, Mode.REBUILD, null); // validates without indexing
        }
        if (!target.writes()) {
            throw new StoreException(target.root() + ": its indexes must be rebuilt, which only a writable open does");
        }
        LogWalker walker = new LogWalker(segments, format);
        // Refuses before deleting anything.
        Walk validated = damage.decide(walker, walker.walk(logStart, Long.MAX_VALUE, null));
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
        LogWalker walker = new LogWalker(segments, format);
        // A log whose records do not carry their store time (a batch log) keeps its entries below the durable
        // position: they were forced, and they hold those times (a store record's entries are derived again from its
        // header). Not after a clean close whose index failed its check (row 1): the index is then what is in doubt.
        long keepBelow = !format.recordsCarryStoreTime() && mode == Mode.CRASH && !target.clean()
                ? Math.max(scanFrom, target.durablePosition()) : scanFrom;
        // Checked before anything is written, so that a log whose index lost entries goes to a rebuild unchanged.
        IndexContinuity continuity = validated != null || indexes == null ? null
                : new IndexContinuity(indexes, format, keepBelow);
        Walk walk = validated != null ? validated
                : damage.decide(walker, walker.walk(scanFrom, Long.MAX_VALUE, continuity));
        if (continuity != null) {
            continuity.checkKeptEnd(Math.min(keepBelow, walk.end()));
        }
        List<String> dropped = walk.invalidAt() >= 0 && target.dryRun()
                ? Damage.describeDropped(walker, walk) : List.of();
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
            kept = reindexAndCut(walker, indexes, scanFrom, Math.min(keepBelow, end), end);
        }
        LOG.info("recovered {}: {} records validated from log position {}, log ends at {}{}", target.root(),
                walk.records(), scanFrom, end,
                walk.invalidAt() >= 0 ? " (cut there: " + bytesDropped + " bytes past it dropped)" : "");
        return new Result(kept, end, indexes, new RecoveryReport(mode, target.durablePosition(), scanFrom, end,
                walk.records(), walk.invalidAt(), bytesDropped, segmentsDropped, dropped, damage.problem()));
    }

    /**
     * Drops the index entries from {@code reindexFrom}, indexes the records from there again, cuts the log at
     * {@code end} and forces what changed.
     *
     * @return the segments kept
     */
    private List<Segment> reindexAndCut(LogWalker walker, QueueIndexes indexes, long scanFrom, long reindexFrom,
                                        long end) throws IOException {
        for (QueueIndex index : indexes.all()) {
            index.truncateFrom(index.firstEntryAtOrAfter(reindexFrom));
        }
        indexes.keys().truncateFrom(reindexFrom);
        long now = config.clock().millis();
        Walk indexed = walker.walk(scanFrom, Long.MAX_VALUE, (record, position) -> {
            if (position >= reindexFrom) {
                reindex(indexes, record, position, now);
            }
        });
        if (indexed.end() != end) {
            throw new IllegalStateException("the log changed during recovery: " + indexed.end() + " != " + end);
        }
        List<Segment> kept = files.cut(walker.segments(), end);
        files.forceRecovered(kept, scanFrom, end);
        return kept;
    }

    /** Indexes one record again, as its append did: its queue's entries, then its messages' keys. */
    private void reindex(QueueIndexes indexes, MemorySegment record, long position, long now) throws IOException {
        String topic = format.topic(record);
        int queueId = format.queueId(record);
        long first = format.firstOffset(record);
        int count = format.offsetCount(record);
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
        long storeTimestamp = format.indexTimestamp(record, () -> previousTimestamp(index), now);
        for (int i = 0; i < count; i++) {
            index.put(first + i, position, storeTimestamp, size, count, i);
        }
        KeyIndex keys = indexes.keys();
        format.forEachKeys(record, (indexInRecord, messageKeys) -> {
            keys.ensureRoom(messageKeys.size());
            for (String key : messageKeys) {
                keys.put(KeyIndex.hash(topic, key), position, storeTimestamp, indexInRecord);
            }
        });
        lastIndexed = index;
        lastIndexedEnd = first + count;
        lastIndexedTimestamp = storeTimestamp;
        index.publish(first + count);
    }

    /** @return the store time of the queue's entry before its next offset, or {@link Long#MIN_VALUE} if none */
    private long previousTimestamp(QueueIndex index) {
        if (index == lastIndexed && index.nextOffset() == lastIndexedEnd) {
            return lastIndexedTimestamp; // the record just indexed: no need to read its entry back
        }
        if (index.nextOffset() <= index.minOffset()) {
            return Long.MIN_VALUE;
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            return cursor.entry(index.nextOffset() - 1).storeTimestamp();
        }
    }

    private void deleteTree(Path root) throws IOException {
        if (FileTree.deleteTree(io, root)) {
            ledger.markDirectory(root.getParent());
        }
    }
}
