package io.sluice.store.internal.recovery;

import io.sluice.store.StoreConfig;
import io.sluice.store.StoreCorruptedException;
import io.sluice.store.internal.index.IndexDamagedException;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Brings a store directory to a consistent state before it opens: finds where the log's valid records
 * end, cuts off what follows, and makes the queue indexes agree with the log.
 *
 * <h2>Decision table</h2>
 * Rows are checked in order; each has a test in {@code RecoveryTest}.
 * <table>
 * <caption>state found at open, and what recovery does</caption>
 * <tr><th>#</th><th>log / markers</th><th>indexes</th><th>action</th></tr>
 * <tr><td>1</td><td>clean-shutdown marker and a valid checkpoint whose position lies in the log</td>
 *     <td>any</td><td>fast open: the log ends at the checkpoint; no record is read</td></tr>
 * <tr><td>2</td><td>no marker, valid checkpoint</td><td>forced up to the checkpoint</td>
 *     <td>drop queue- and key-index entries for records at or after the scan start (the start of the segment holding the
 *     lower of the checkpoint's flushed and indexed positions), then validate every record from there (length, magic, version, own position,
 *     CRC32C) and re-index it</td></tr>
 * <tr><td>3</td><td>checkpoint missing or damaged</td><td>untrusted</td>
 *     <td>delete every index and rebuild all of them from the first segment</td></tr>
 * <tr><td>4</td><td>a record fails validation and no valid record follows (cut mid-record, random or zero
 *     bytes after the last record)</td><td>-</td><td>torn tail: the log ends before it; later segment
 *     files are deleted</td></tr>
 * <tr><td>5</td><td>a record fails validation and a valid record follows it</td><td>-</td>
 *     <td>corruption: refuse to open, naming segment and position, unless {@code truncateOnCorruption},
 *     then truncate there and log what was dropped</td></tr>
 * <tr><td>6</td><td>a segment file is missing between two others</td><td>-</td>
 *     <td>corruption: refuse, naming the gap</td></tr>
 * <tr><td>7</td><td>-</td><td>entries past the valid end of the log</td>
 *     <td>dropped (they were dropped with everything after the scan start and only valid records were
 *     re-indexed)</td></tr>
 * <tr><td>8</td><td>-</td><td>entries missing (index behind the log, or index files deleted) for records
 *     after the scan start</td><td>rebuilt by re-indexing</td></tr>
 * <tr><td>9</td><td>-</td><td>an index file missing between two others, or a record's queue offset
 *     beyond its index's end before the scan start (the index lost entries the checkpoint claimed)</td>
 *     <td>fall back to row 3: rebuild every index</td></tr>
 * <tr><td>10</td><td>unknown directory or format version</td><td>-</td>
 *     <td>refuse (see {@link StoreDirectory})</td></tr>
 * <tr><td>11</td><td>-</td><td>the key-index directory missing from a store with a log, a key-index file
 *     missing between two others, or one with a damaged or unknown header</td>
 *     <td>fall back to row 3: rebuild every index</td></tr>
 * </table>
 *
 * After a crash (rows 2-5, 7-9) the recovered range is forced and a new checkpoint written, so a second
 * crash during or after recovery recovers to the same state.
 *
 * <p>Not thread-safe; runs alone before the store opens.
 */
public final class Recovery {

    private static final Logger LOG = LoggerFactory.getLogger(Recovery.class);

    /**
     * What recovery found.
     *
     * @param segments the segments kept, oldest first
     * @param endPosition where the next record goes
     * @param indexes the queue indexes, consistent with the log
     * @param clean true if the store had shut down cleanly (fast open)
     * @param scannedRecords records validated and re-indexed
     * @param invalidAt log position of the first record that failed validation (a torn tail, or corruption
     *     accepted with truncateOnCorruption), or -1 if every record was valid
     */
    public record Result(List<Segment> segments, long endPosition, QueueIndexes indexes, boolean clean,
                         long scannedRecords, long invalidAt) {
    }

    private final StoreConfig config;
    private final StoreDirectory directory;
    private final boolean writable;

    /**
     * @param config the configuration
     * @param directory the opened store directory
     */
    public Recovery(StoreConfig config, StoreDirectory directory) {
        this.config = config;
        this.directory = directory;
        this.writable = CommitLog.mapsWritable(config.writePath());
    }

    /** Runs recovery. On failure every file it opened is closed again. */
    public Result run() throws IOException {
        List<Segment> segments = openSegments();
        QueueIndexes indexes = null;
        try {
            Checkpoint checkpoint = Checkpoint.read(config.fileIO(), directory.root());
            if (!segments.isEmpty() && !config.fileIO().isDirectory(directory.keyIndexDirectory())) {
                LOG.warn("{}: the key index directory is missing; rebuilding every index from the log",
                        directory.root());
                return rebuildAll(segments, segments.getFirst().base());
            }
            try {
                openIndexes().close();
            } catch (IndexDamagedException e) {
                LOG.warn("{}: {}; rebuilding every index from the log", directory.root(), e.getMessage());
                return rebuildAll(segments, segments.isEmpty() ? 0 : segments.getFirst().base());
            }
            long logStart = segments.isEmpty() ? 0 : segments.getFirst().base();
            long logEnd = segments.isEmpty() ? 0 : segments.getLast().end();
            if (directory.wasCleanlyShutDown() && checkpoint != null
                    && checkpoint.flushedLogPosition() >= logStart && checkpoint.flushedLogPosition() <= logEnd) {
                indexes = openIndexes();
                long end = checkpoint.flushedLogPosition();
                segments = dropSegmentsFrom(segments, end);
                LOG.info("clean open of {}: log ends at {}", directory.root(), end);
                return new Result(segments, end, indexes, true, 0, -1);
            }
            if (checkpoint == null) {
                if (segments.isEmpty()) {
                    return rebuildAll(segments, logStart);
                }
                LOG.warn("{}: no valid checkpoint; rebuilding every queue index from the log", directory.root());
                return rebuildAll(segments, logStart);
            }
            long scanFrom = scanStart(segments, Math.max(logStart, Math.min(checkpoint.flushedLogPosition(),
                    checkpoint.indexedLogPosition())));
            indexes = openIndexes();
            for (QueueIndex index : indexes.all()) {
                index.truncateFrom(firstEntryAtOrAfter(index, scanFrom));
            }
            indexes.keys().truncateFrom(scanFrom);
            try {
                return scan(segments, indexes, scanFrom);
            } catch (IndexGapException e) {
                LOG.warn("{}: {}; rebuilding every queue index from the log", directory.root(), e.getMessage());
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
        return QueueIndexes.open(directory.indexDirectory(), directory.keyIndexDirectory(), config.fileIO(),
                directory.queueIndexEntriesPerFile(), config.keyIndexSlotsPerFile(), config.keyIndexEntriesPerFile());
    }

    private Result rebuildAll(List<Segment> segments, long logStart) throws IOException {
        deleteTree(directory.indexDirectory());
        deleteTree(directory.keyIndexDirectory());
        QueueIndexes indexes = openIndexes();
        try {
            return scan(segments, indexes, logStart);
        } catch (IndexGapException e) {
            indexes.close();
            throw new StoreCorruptedException("log records out of queue order: " + e.getMessage(), null, -1);
        } catch (IOException | RuntimeException e) {
            // Corruption refused mid-scan: the indexes opened here must not stay open and mapped.
            try {
                indexes.close();
            } catch (IOException | RuntimeException suppressed) {
                e.addSuppressed(suppressed);
            }
            throw e;
        }
    }

    /** Validates and re-indexes every record from {@code scanFrom}; classifies the first invalid one. */
    private Result scan(List<Segment> segments, QueueIndexes indexes, long scanFrom) throws IOException {
        long position = scanFrom;
        long records = 0;
        long invalidAt = -1;
        int segmentIndex = segmentIndexFor(segments, scanFrom);
        while (segmentIndex >= 0 && segmentIndex < segments.size()) {
            Segment segment = segments.get(segmentIndex);
            MemorySegment data = segment.mapping();
            long offset = position - segment.base();
            long length = RecordFormat.validate(data, offset, position);
            if (length < 0) {
                if (segment.size() - offset < RecordFormat.FILLER_BYTES && position > segment.base()) {
                    position = segment.end();
                    segmentIndex++;
                    continue;
                }
                invalidAt = position;
                position = classifyInvalid(segments, segmentIndex, position);
                break;
            }
            MemorySegment record = data.asSlice(offset, length);
            if (RecordFormat.isFiller(record)) {
                position = segment.end();
                segmentIndex++;
                continue;
            }
            reindex(indexes, record, position);
            records++;
            position += length;
        }
        long validEnd = position;
        List<Segment> kept = dropSegmentsFrom(segments, validEnd);
        forceRecovered(kept, indexes, scanFrom, validEnd);
        LOG.info("recovered {}: {} records validated from log position {}, log ends at {}",
                directory.root(), records, scanFrom, validEnd);
        return new Result(kept, validEnd, indexes, false, records, invalidAt);
    }

    /**
     * A record at {@code position} failed validation. If any valid record follows it, the log is corrupt
     * (row 5); otherwise this is a torn tail (row 4).
     *
     * @return the position the log ends at
     */
    private long classifyInvalid(List<Segment> segments, int segmentIndex, long position) {
        long follower = findValidRecordAfter(segments, segmentIndex, position);
        if (follower < 0) {
            LOG.warn("{}: torn tail at log position {}; the log ends there", directory.root(), position);
            return position;
        }
        Segment segment = segments.get(segmentIndex);
        String message = "commit log corrupt: the record at log position " + position + " (segment "
                + segment.file().path() + ", offset " + (position - segment.base())
                + ") fails validation, but a valid record follows at log position " + follower;
        if (!config.truncateOnCorruption()) {
            throw new StoreCorruptedException(message + "; set truncateOnCorruption to drop everything from "
                    + position + " on", segment.file().path(), position);
        }
        LOG.error("{}; truncateOnCorruption is set: dropping every record from log position {}", message, position);
        return position;
    }

    /** @return the position of a valid record after {@code position}, or -1 */
    public static long findValidRecordAfter(List<Segment> segments, int segmentIndex, long position) {
        for (int i = segmentIndex; i < segments.size(); i++) {
            Segment segment = segments.get(i);
            MemorySegment data = segment.mapping();
            long from = i == segmentIndex ? position - segment.base() + 1 : 0;
            long last = segment.size() - RecordFormat.FILLER_BYTES;
            for (long offset = from; offset <= last; offset++) {
                if (data.get(MAGIC_LAYOUT, offset + RecordFormat.MAGIC_OFFSET) == RecordFormat.MAGIC
                        && RecordFormat.validate(data, offset, segment.base() + offset) > 0) {
                    return segment.base() + offset;
                }
            }
        }
        return -1;
    }

    private static final ValueLayout.OfInt MAGIC_LAYOUT =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN);

    private static void reindex(QueueIndexes indexes, MemorySegment record, long position) throws IOException {
        String topic = RecordFormat.topic(record);
        int queueId = RecordFormat.queueId(record);
        long first = RecordFormat.firstQueueOffset(record);
        int count = RecordFormat.messageCount(record);
        QueueIndex index = indexes.getOrCreate(topic, queueId);
        if (index.nextOffset() != first) {
            if (index.fileCount() == 0 || (index.nextOffset() == index.minOffset() && first > index.nextOffset())) {
                index.resetTo(first);
            } else {
                throw new IndexGapException("queue " + topic + "-" + queueId + ": record at log position "
                        + position + " holds offset " + first + " but the index ends at " + index.nextOffset());
            }
        }
        long storeTimestamp = RecordFormat.storeTimestamp(record);
        long messageOffset = RecordFormat.firstMessageOffset(record);
        int size = (int) record.byteSize();
        for (int i = 0; i < count; i++) {
            RecordFormat.Metadata metadata = RecordFormat.decodeMetadata(record, messageOffset);
            index.put(first + i, position, storeTimestamp, size, count, i, PreparedMessage.tagHash(metadata.tag()));
            for (String key : metadata.keys()) {
                indexes.keys().put(KeyIndex.hash(topic, key), position, storeTimestamp, i);
            }
            messageOffset = RecordFormat.nextMessageOffset(record, messageOffset);
        }
        index.publish(first + count);
    }

    /** @return the first offset whose entry is empty or points at or after {@code logPosition} */
    private static long firstEntryAtOrAfter(QueueIndex index, long logPosition) {
        long low = index.minOffset();
        long high = index.nextOffset();
        while (low < high) {
            long mid = (low + high) >>> 1;
            var entry = index.entry(mid);
            if (entry.isEmpty() || entry.logPosition() >= logPosition) {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        return low;
    }

    private void forceRecovered(List<Segment> segments, QueueIndexes indexes, long from, long end)
            throws IOException {
        for (Segment segment : segments) {
            if (segment.end() > from && segment.base() < end) {
                segment.file().force();
            }
        }
        indexes.forceDirty();
        new Checkpoint(end, end, System.currentTimeMillis()).write(config.fileIO(), directory.root());
    }

    /** Closes and deletes segments that start at or after {@code end}; they hold no valid record. */
    private List<Segment> dropSegmentsFrom(List<Segment> segments, long end) throws IOException {
        List<Segment> kept = new ArrayList<>();
        boolean deleted = false;
        for (Segment segment : segments) {
            if (segment.base() >= end) {
                Path path = segment.file().path();
                segment.close();
                config.fileIO().delete(path);
                deleted = true;
            } else {
                kept.add(segment);
            }
        }
        if (deleted) {
            config.fileIO().syncDirectory(directory.logDirectory());
        }
        return kept;
    }

    private List<Segment> openSegments() throws IOException {
        Path logDirectory = directory.logDirectory();
        FileIO io = config.fileIO();
        FileTree.createDirectories(io, logDirectory);
        List<Path> files = io.list(logDirectory).stream().filter(CommitLog::isSegmentName).toList();
        List<Segment> segments = new ArrayList<>();
        try {
            for (Path file : files) {
                long base = Long.parseLong(file.getFileName().toString());
                long size;
                try (var probe = io.open(file, FileIO.OpenMode.READ_ONLY)) {
                    size = probe.size();
                }
                if (size == 0) {
                    // A crash between creating and allocating a segment file leaves it empty.
                    io.delete(file);
                    continue;
                }
                if (!segments.isEmpty() && segments.getLast().end() != base) {
                    throw new StoreCorruptedException("commit log corrupt: segment missing between log positions "
                            + segments.getLast().end() + " and " + base + " in " + logDirectory, file,
                            segments.getLast().end());
                }
                segments.add(Segment.open(io, file, base, writable, false));
            }
            return segments;
        } catch (IOException | RuntimeException e) {
            closeQuietly(segments, null, e);
            throw e;
        }
    }

    /**
     * Scanning starts at the start of the segment holding the checkpoint position (or the last segment if
     * the position is past them), so the whole active segment is always validated: the bytes of the log's
     * tail are the ones most likely torn, whatever the checkpoint claims.
     */
    private static long scanStart(List<Segment> segments, long checkpointPosition) {
        for (Segment segment : segments) {
            if (checkpointPosition < segment.end()) {
                return Math.min(checkpointPosition, segment.base());
            }
        }
        return segments.isEmpty() ? checkpointPosition : segments.getLast().base();
    }

    private static int segmentIndexFor(List<Segment> segments, long position) {
        for (int i = 0; i < segments.size(); i++) {
            if (position < segments.get(i).end()) {
                return i;
            }
        }
        return -1;
    }

    private void deleteTree(Path root) throws IOException {
        if (FileTree.deleteTree(config.fileIO(), root)) {
            config.fileIO().syncDirectory(root.getParent());
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
            try {
                indexes.close();
            } catch (IOException | RuntimeException e) {
                primary.addSuppressed(e);
            }
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
