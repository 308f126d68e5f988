package io.sluice.store.internal.recovery;

import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Recovery's file work on a log's segments: opening them, and cutting, erasing, deleting and forcing them, each
 * change recorded in the log's ledger or synced, as the rows of {@link Recovery}'s decision table say. Not
 * thread-safe; used by one recovery.
 */
final class SegmentFiles {

    private final FileIO io;
    private final Path logDirectory;
    private final DurabilityLedger ledger;
    /** Changes are allowed (not a read-only open nor a dry run). */
    private final boolean writes;

    SegmentFiles(FileIO io, Path logDirectory, DurabilityLedger ledger, boolean writes) {
        this.io = io;
        this.logDirectory = logDirectory;
        this.ledger = ledger;
        this.writes = writes;
    }

    /**
     * Rows 8 and 14: opens the segment files in order; empty ones (never sized) and ones wholly below the log's
     * recorded start (retention deleted them; a power cut undid it) are deleted.
     *
     * @param start the log's start from the checkpoint, or -1
     * @param writableMappings map them read-write (the MMAP path appends through the mapping)
     */
    List<Segment> open(long start, boolean writableMappings) throws IOException {
        if (writes) {
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
                if (size == 0 || (start >= 0 && base < start && base + size <= start)) {
                    if (writes) {
                        io.delete(file);
                        ledger.markDirectory(logDirectory);
                    }
                    continue;
                }
                segments.add(Segment.open(io, file, base, writableMappings, !writes));
            }
            return segments;
        } catch (IOException | RuntimeException e) {
            closeQuietly(segments, null, e);
            throw e;
        }
    }

    /**
     * Row 15: what an interrupted compaction left ({@code Compaction} in the engine): copies never swapped in
     * ({@code <base>.cleaned}) are deleted; the markers of swaps whose index entries may not have been forced
     * ({@code <base>.reindex}) are returned.
     */
    List<Path> compactionLeftovers() throws IOException {
        if (!io.isDirectory(logDirectory)) {
            return List.of();
        }
        List<Path> markers = new ArrayList<>();
        for (Path file : io.list(logDirectory)) {
            String name = file.getFileName().toString();
            if (name.endsWith(LogDirectories.CLEANED_SUFFIX) && writes) {
                io.delete(file);
                ledger.markDirectory(logDirectory);
            } else if (name.endsWith(LogDirectories.REINDEX_SUFFIX)) {
                markers.add(file);
            }
        }
        return markers;
    }

    /** Row 15, once the rebuilt indexes are forced: the markers go. */
    void deleteMarkers(List<Path> markers) throws IOException {
        for (Path marker : markers) {
            io.delete(marker);
        }
        io.syncDirectory(logDirectory);
    }

    /**
     * Row 3: makes the log end at {@code end}: the rest of its segment is erased, later segments deleted
     * (newest first, so a crash midway leaves a contiguous run), and the index entries past it are gone already.
     *
     * @return the segments kept
     */
    List<Segment> cut(List<Segment> segments, long end) throws IOException {
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
            ledger.markDirectory(logDirectory);
        }
        if (!kept.isEmpty()) {
            Segment last = kept.getLast();
            if (end < last.end()) {
                last.file().zeroRange(end - last.base(), last.end() - end);
            }
        }
        return kept;
    }

    /** Forces the segments that hold the recovered range {@code [from, end]}, then everything in the ledger. */
    void forceRecovered(List<Segment> segments, long from, long end) throws IOException {
        for (Segment segment : segments) {
            if (segment.end() > from && segment.base() <= end) {
                segment.file().force();
            }
        }
        ledger.forceAll();
    }

    /** Row 1: closes and deletes segments that start at or after {@code end} (never written); returns the rest. */
    List<Segment> dropFrom(List<Segment> segments, long end) throws IOException {
        List<Segment> kept = new ArrayList<>();
        boolean deleted = false;
        for (Segment segment : segments.reversed()) {
            if (segment.base() >= end && writes) {
                Path path = segment.file().path();
                segment.close();
                io.delete(path);
                deleted = true;
            } else {
                kept.addFirst(segment);
            }
        }
        if (deleted) {
            io.syncDirectory(logDirectory);
        }
        return kept;
    }

    /**
     * Scanning starts at the start of the segment holding the durable position (or the last segment if it
     * lies past them), so the whole active segment is always validated.
     */
    static long scanStart(List<Segment> segments, long durable) {
        for (Segment segment : segments) {
            if (durable < segment.end()) {
                return Math.min(durable, segment.base());
            }
        }
        return segments.isEmpty() ? durable : segments.getLast().base();
    }

    /** Closes the segments and indexes (if any), adding what fails to {@code primary}. */
    static void closeQuietly(List<Segment> segments, QueueIndexes indexes, Exception primary) {
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
}
