package io.sluice.store.internal.verify;

import io.sluice.store.StoreVerifier.Report;
import io.sluice.store.internal.index.IndexDamagedException;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.LogWalker;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks one log without changing it, as recovery would judge it: walks its records with the {@link LogWalker}
 * recovery uses, then checks every queue-index and key-index entry against the record it points to. Damage below
 * the log's durable position is a fault; what a power cut leaves past it is a note saying what opening repairs.
 * Not thread-safe; one instance per log and run.
 */
public final class LogVerifier {

    private final FileIO io;
    private final Path root;
    private final IndexGeometry geometry;
    private final long durable;
    private final boolean clean;
    private final LogFormat format;
    /** The log's first position as the checkpoint records it (retention deleted what lay below), or -1. */
    private final long recordedStart;
    private final List<String> faults = new ArrayList<>();
    private final List<String> notes = new ArrayList<>();
    /** topic-queue -> [first offset, next offset, next offset after the last record below the durable position]. */
    private final Map<String, long[]> queues = new TreeMap<>();
    private LogWalker walker = new LogWalker(List.of(), LogFormat.records());
    private long logStart;
    private long logEnd;
    private long records;
    private long messages;

    /**
     * @param io the file seam to read through
     * @param root the log's directory (holding {@code log/}, {@code index/}, {@code keys/})
     * @param geometry the store's queue-index geometry
     * @param durable the log's durable position from the checkpoint ({@link Recovery#UNKNOWN} without one)
     * @param recordedStart the log's first position from the checkpoint (retention deleted what lay below), or -1
     * @param clean the store was closed cleanly: the log ends at {@code durable}
     * @param format what the log's records are
     */
    public LogVerifier(FileIO io, Path root, IndexGeometry geometry, long durable, long recordedStart, boolean clean,
                       LogFormat format) {
        this.io = io;
        this.root = root;
        this.geometry = geometry;
        this.durable = durable;
        this.recordedStart = recordedStart;
        this.clean = clean;
        this.format = format;
    }

    /**
     * @return what the log's checks found
     * @throws IOException if a file cannot be read at all
     */
    public Report run() throws IOException {
        List<Segment> segments = openSegments();
        try {
            walker = new LogWalker(segments, format);
            walkLog();
            long entries;
            if (compactionInterrupted()) {
                // Recovery row 15: the next open rebuilds every index of this log from its segments.
                notes.add("a compaction was interrupted while swapping in a segment: opening the store rebuilds this"
                        + " log's indexes from its segments (they were not checked)");
                entries = 0;
            } else {
                entries = new QueueChecks(this).run(root.resolve("index"));
                checkKeyIndex();
            }
            Map<String, Long> counts = new TreeMap<>();
            queues.forEach((queue, range) -> counts.put(queue, range[1] - range[0]));
            return new Report(faults, notes, segments.size(), records, messages, logEnd, counts, entries);
        } finally {
            for (Segment segment : segments) {
                segment.close();
            }
        }
    }

    private List<Segment> openSegments() throws IOException {
        Path logDirectory = root.resolve("log");
        List<Segment> opened = new ArrayList<>();
        if (!io.isDirectory(logDirectory)) {
            return opened;
        }
        try {
            for (Path file : io.list(logDirectory).stream().filter(CommitLog::isSegmentName).toList()) {
                long size;
                try (StoreFile probe = io.open(file, FileIO.OpenMode.READ_ONLY)) {
                    size = probe.size();
                }
                if (size == 0) {
                    notes.add("empty segment file " + file.getFileName() + " (created, never sized): opening deletes it");
                    continue;
                }
                opened.add(Segment.open(io, file, Long.parseLong(file.getFileName().toString()), false, true));
            }
            return opened;
        } catch (IOException | RuntimeException e) {
            for (Segment segment : opened) {
                segment.close();
            }
            throw e;
        }
    }

    /** @return true if a compaction left the marker of a swap whose index entries may not be forced */
    private boolean compactionInterrupted() throws IOException {
        Path logDirectory = root.resolve("log");
        return io.isDirectory(logDirectory) && io.list(logDirectory).stream()
                .anyMatch(file -> file.getFileName().toString().endsWith(LogDirectories.REINDEX_SUFFIX));
    }

    /** @return true if {@code position} lies below what the checkpoint claims was forced */
    boolean claimed(long position) {
        return durable != Recovery.UNKNOWN && position < durable;
    }

    /** Walks the log's valid records, up to its end at a clean close, counting each queue's. */
    private void walkLog() throws IOException {
        List<Segment> segments = walker.segments();
        // A log that retention emptied up to its durable position (every record's segment deleted, the empty segment
        // after them never forced) has no segment: it starts and ends there, as recovery opens it.
        long emptyAt = durable != Recovery.UNKNOWN && recordedStart >= durable ? durable : 0;
        logStart = segments.isEmpty() ? emptyAt : segments.getFirst().base();
        long limit = clean ? durable : Long.MAX_VALUE;
        LogWalker.Walk walk = walker.walk(logStart, limit, this::count);
        switch (walk.stop()) {
            case GAP -> invalid(walk, "log positions " + walk.end() + " to "
                    + segments.get(walk.segmentIndex()).base() + " are missing");
            case INVALID -> {
                Segment segment = segments.get(walk.segmentIndex());
                invalid(walk, "invalid " + format.recordName() + " at log position " + walk.end() + " (" + segment
                        + ", offset " + (walk.end() - segment.base()) + ")");
            }
            case END, LIMIT -> logEnd = segments.isEmpty() ? emptyAt : Math.min(walk.end(), limit);
        }
    }

    private void count(MemorySegment record, long position) {
        String queue = format.topic(record) + "-" + format.queueId(record);
        long first = format.firstOffset(record);
        int count = format.offsetCount(record);
        long[] range = queues.computeIfAbsent(queue, q -> new long[] {first, first, first});
        if (range[1] != first) {
            faults.add("queue " + queue + ": record at log position " + position + " holds offset " + first
                    + ", expected " + range[1]);
        }
        range[1] = first + count;
        if (claimed(position + record.byteSize() - 1)) {
            range[2] = first + count;
        }
        records++;
        messages += count;
    }

    /** The walk stopped at a record that fails validation: a fault below the durable position, else a note. */
    private void invalid(LogWalker.Walk walk, String what) {
        long position = walk.end();
        logEnd = position;
        if (clean) {
            faults.add(what + ", before the end recorded at clean shutdown (" + durable + ")");
        } else if (durable != Recovery.UNKNOWN) {
            if (position < durable) {
                faults.add(what + ", below the durable position " + durable + ": corruption");
            } else {
                notes.add(what + ", at or past the durable position " + durable + ": the tail of an interrupted"
                        + " write; opening the store cuts the log there");
            }
        } else {
            long follower = walker.findValidAfter(walk.segmentIndex(), position, Math.max(0, walk.nextFirst()));
            if (follower >= 0) {
                faults.add(what + ", with a valid record after it at log position " + follower + ": corruption");
            } else {
                notes.add("torn tail: " + what + "; opening the store cuts the log there");
            }
        }
    }

    /** A fault if {@code isFault}, else a note saying what opening repairs. */
    void report(boolean isFault, String fault, String note) {
        if (isFault) {
            faults.add(fault);
        } else {
            notes.add(note);
        }
    }

    void fault(String fault) {
        faults.add(fault);
    }

    void note(String note) {
        notes.add(note);
    }

    FileIO io() {
        return io;
    }

    IndexGeometry geometry() {
        return geometry;
    }

    boolean clean() {
        return clean;
    }

    long logStart() {
        return logStart;
    }

    long logEnd() {
        return logEnd;
    }

    /** @return topic-queue -> [first offset, next offset, next offset after the last record claimed durable] */
    Map<String, long[]> queues() {
        return queues;
    }

    /**
     * @param size the record size the entry gives
     * @return null if the queue-index entry matches its record, "past:" if its record lies past the log's end (what
     *     opening drops), else a fault
     */
    String checkEntry(String topic, int queueId, long offset, long position, int size, int messageCount,
                      int indexInRecord, long storeTimestamp) {
        if (position < logStart) {
            return null; // the record's segment was deleted by retention; the queue starts after it
        }
        if (position + size > logEnd) {
            if (clean || claimed(position + size - 1)) {
                return "points past the end of the valid log (" + position + "+" + size + " > " + logEnd + ")";
            }
            return "past:";
        }
        Segment segment = walker.segmentAt(position);
        if (segment == null) {
            return "points at log position " + position + ", which is not stored";
        }
        long first = offset - indexInRecord;
        boolean matches = format.matchesEntry(segment.mapping(), position - segment.base(), position, size, topic,
                queueId, first, messageCount, storeTimestamp);
        return matches ? null : "no valid " + format.recordName() + " of " + size + " bytes at log position " + position
                + " matches it (offsets from " + first + ", " + messageCount + " of them)";
    }

    /** Every key-index entry must point at a valid record whose message there carries a key of that hash. */
    private void checkKeyIndex() throws IOException {
        Path keyDirectory = root.resolve("keys");
        if (!io.isDirectory(keyDirectory)) {
            return;
        }
        long[] counts = new long[2];
        try (KeyIndex keys = KeyIndex.open(keyDirectory, io, KeyGeometry.growingTo(16, 16),
                new DurabilityLedger(io), true)) {
            keys.forEach((position, keyHash, indexInRecord, written) -> {
                counts[0]++;
                if (!clean && (!written || (position >= logEnd && !claimed(position)))) {
                    counts[1]++; // lost or past the log's end: written after the last checkpoint
                    return;
                }
                if (written && position < logStart) {
                    return; // deleted by retention, as for queue-index entries
                }
                String fault = checkKeyEntry(position, keyHash, indexInRecord);
                if (fault != null && faults.size() < 100) {
                    faults.add("key index entry for log position " + position + ": " + fault);
                }
            });
        } catch (IndexDamagedException e) {
            faults.add(e.getMessage());
        }
        notes.add("key index: " + counts[0] + " entries checked" + (counts[1] > 0 ? ", " + counts[1]
                + " written after the last checkpoint are lost or point past where the log ends: opening the"
                + " store re-derives them from the log" : ""));
    }

    private String checkKeyEntry(long position, int keyHash, int indexInRecord) {
        Segment segment = walker.segmentAt(position);
        if (segment == null || position >= logEnd) {
            return "not a stored log position";
        }
        long offset = position - segment.base();
        long length = format.frame(segment.mapping(), offset, position, -1);
        if (length < 0 || position + length > logEnd) {
            return "no valid record there";
        }
        MemorySegment record = segment.mapping().asSlice(offset, length);
        if (indexInRecord < 0 || indexInRecord >= format.offsetCount(record)) {
            return "the record has no message " + indexInRecord;
        }
        String topic = format.topic(record);
        boolean[] found = new boolean[1];
        try {
            format.forEachKeys(record, (index, keys) -> {
                if (index == indexInRecord) {
                    found[0] = keys.stream().anyMatch(key -> KeyIndex.hash(topic, key) == keyHash);
                }
            });
        } catch (IOException e) {
            throw new UncheckedIOException(e); // the visitor above throws none
        }
        return found[0] ? null : "message " + indexInRecord + " of the record carries no key with that hash";
    }

    /** Maps one index file whole, read-only, for the queue checks. */
    MemorySegment map(StoreFile file, Arena arena) throws IOException {
        return file.map(FileChannel.MapMode.READ_ONLY, 0, file.size(), arena);
    }
}
