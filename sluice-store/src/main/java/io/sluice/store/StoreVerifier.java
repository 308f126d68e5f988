package io.sluice.store;

import io.sluice.store.internal.index.IndexDamagedException;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndexFormat;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.log.BatchFormat;
import io.sluice.store.internal.log.BatchLog;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a store directory without changing it: every record's length, magic, position and CRC32C, and every
 * queue-index and key-index entry against the record it points to, in the shared log and in every log of its
 * own. It judges a crashed store as recovery would: damage below a log's durable position (what the
 * checkpoint claims was forced) is a fault; what a power cut leaves past it (a torn tail, index entries for
 * records that did not survive, entries not yet written) is what opening the store repairs, reported as
 * notes. Meant for a closed store (an open one may be mid-append at its tail). Stateless; thread-safe.
 */
public final class StoreVerifier {

    private StoreVerifier() {
    }

    /**
     * What verification found.
     *
     * @param faults one line per problem opening the store cannot repair; empty means the store is sound
     * @param notes findings that are not faults, among them what opening the store will repair
     * @param segments segment files checked
     * @param records valid records
     * @param messages messages in them
     * @param logEnd the position after the last valid record of the shared log
     * @param queueMessages messages per queue ("topic-queueId"), as counted in the log
     * @param indexEntries index entries checked
     */
    public record Report(List<String> faults, List<String> notes, int segments, long records, long messages, long logEnd,
                         Map<String, Long> queueMessages, long indexEntries) {
        /** @return true if no fault was found */
        public boolean ok() {
            return faults.isEmpty();
        }
    }

    /**
     * @param directory a store directory
     * @return the findings
     * @throws IOException if the directory cannot be read at all
     */
    public static Report verify(Path directory) throws IOException {
        return verify(directory, FileIO.DEFAULT);
    }

    /**
     * @param directory a store directory
     * @param io the file seam to read it through
     * @return the findings
     * @throws IOException if the directory cannot be read at all
     */
    public static Report verify(Path directory, FileIO io) throws IOException {
        if (!io.exists(directory.resolve(StoreDirectory.META_FILE))) {
            return new Report(List.of(directory + " has no " + StoreDirectory.META_FILE + ": not a Sluice store"),
                    List.of(), 0, 0, 0, 0, Map.of(), 0);
        }
        IndexGeometry geometry;
        try (StoreDirectory store = StoreDirectory.open(directory, io, IndexGeometry.growingTo(64),
                KeyGeometry.growingTo(16, 16), true)) {
            geometry = store.indexGeometry();
        } catch (StoreException e) {
            return new Report(List.of(e.getMessage()), List.of(), 0, 0, 0, 0, Map.of(), 0);
        }
        Checkpoint checkpoint = Checkpoint.read(io, directory);
        boolean clean = checkpoint != null && io.exists(directory.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        List<String> notes = new ArrayList<>();
        if (checkpoint == null) {
            notes.add("the store has no valid checkpoint: opening it rebuilds every index from the log");
        } else if (!clean) {
            notes.add("the store was not closed cleanly: opening it recovers each log from its durable position");
        }
        Map<String, Store.LogRoot> logs = Store.logRoots(io, directory, TopicRegistry.load(io, directory));
        Report report = null;
        for (Map.Entry<String, Store.LogRoot> log : logs.entrySet()) {
            Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(log.getKey());
            long durable = checkpoint == null ? Recovery.UNKNOWN : positions == null ? 0 : positions.durablePosition();
            Report part = new LogCheck(io, log.getValue().directory(), geometry, durable, clean,
                    log.getValue().batchLog()).run();
            String prefix = log.getKey().isEmpty() ? "" : "logs/" + log.getKey() + ": ";
            report = report == null ? prefixed(part, prefix, notes) : merge(report, prefixed(part, prefix, List.of()));
        }
        return report;
    }

    private static Report prefixed(Report part, String prefix, List<String> leading) {
        List<String> faults = part.faults().stream().map(f -> prefix + f).toList();
        List<String> notes = new ArrayList<>(leading);
        part.notes().forEach(n -> notes.add(prefix + n));
        return new Report(faults, notes, part.segments(), part.records(), part.messages(), part.logEnd(),
                part.queueMessages(), part.indexEntries());
    }

    private static Report merge(Report a, Report b) {
        List<String> faults = new ArrayList<>(a.faults());
        faults.addAll(b.faults());
        List<String> notes = new ArrayList<>(a.notes());
        notes.addAll(b.notes());
        Map<String, Long> queues = new TreeMap<>(a.queueMessages());
        b.queueMessages().forEach((queue, count) -> queues.merge(queue, count, Long::sum));
        return new Report(faults, notes, a.segments() + b.segments(), a.records() + b.records(),
                a.messages() + b.messages(), a.logEnd(), queues, a.indexEntries() + b.indexEntries());
    }

    /** The checks of one log. */
    private static final class LogCheck {
        private final FileIO io;
        private final Path root;
        private final IndexGeometry geometry;
        private final long durable;
        private final boolean clean;
        /** What the log holds if it is a batch log (records are batches, with no store header), else null. */
        private final BatchLog batchLog;
        private final List<String> faults = new ArrayList<>();
        private final List<String> notes = new ArrayList<>();
        /** topic-queue -> [first offset, next offset, next offset after the last record below the durable position]. */
        private final Map<String, long[]> queues = new TreeMap<>();
        private List<Segment> segments = List.of();
        private long logStart;
        private long logEnd;
        private long records;
        private long messages;

        LogCheck(FileIO io, Path root, IndexGeometry geometry, long durable, boolean clean, BatchLog batchLog) {
            this.io = io;
            this.root = root;
            this.geometry = geometry;
            this.durable = durable;
            this.clean = clean;
            this.batchLog = batchLog;
        }

        Report run() throws IOException {
            segments = openSegments();
            try {
                scanLog();
                long entries = checkIndexes();
                checkKeyIndex();
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
        }

        /** The durable position the log's records are judged by: the checkpoint's, or all of it after a clean close. */
        private boolean claimed(long position) {
            return durable != Recovery.UNKNOWN && position < durable;
        }

        private void scanLog() {
            logStart = segments.isEmpty() ? 0 : segments.getFirst().base();
            long position = logStart;
            long limit = clean ? durable : Long.MAX_VALUE;
            long expectedFirst = -1;
            for (int s = 0; s < segments.size(); s++) {
                Segment segment = segments.get(s);
                if (segment.base() != position && position < limit) {
                    invalid(s, position, "log positions " + position + " to " + segment.base() + " are missing",
                            expectedFirst);
                    return;
                }
                MemorySegment data = segment.mapping();
                while (position < segment.end() && position < limit) {
                    long offset = position - segment.base();
                    if (segment.size() - offset < RecordFormat.FILLER_BYTES) {
                        break;
                    }
                    long length = batchLog != null ? BatchFormat.validate(data, offset, expectedFirst)
                            : RecordFormat.validate(data, offset, position);
                    if (length < 0 && batchLog != null && RecordFormat.isFillerAt(data, offset, position)) {
                        break;
                    }
                    if (length < 0) {
                        invalid(s, position, "invalid " + (batchLog != null ? "batch" : "record") + " at log position "
                                + position + " (" + segment + ", offset " + offset + ")", expectedFirst);
                        return;
                    }
                    MemorySegment record = data.asSlice(offset, length);
                    if (batchLog == null && RecordFormat.isFiller(record)) {
                        break;
                    }
                    count(record, position);
                    if (batchLog != null) {
                        expectedFirst = BatchFormat.firstOffset(record) + BatchFormat.offsetCount(record);
                    }
                    position += length;
                }
                if (position >= limit) {
                    break;
                }
                position = segment.end();
            }
            logEnd = segments.isEmpty() ? 0 : Math.min(position, limit);
        }

        private void count(MemorySegment record, long position) {
            String queue = batchLog != null ? batchLog.topic() + "-" + batchLog.queueId()
                    : RecordFormat.topic(record) + "-" + RecordFormat.queueId(record);
            long first = batchLog != null ? BatchFormat.firstOffset(record) : RecordFormat.firstQueueOffset(record);
            int count = batchLog != null ? BatchFormat.offsetCount(record) : RecordFormat.messageCount(record);
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

        /** A record at {@code position} fails validation: a fault below the durable position, else a note. */
        private void invalid(int segmentIndex, long position, String what, long expectedFirst) {
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
                long follower = Recovery.findValidRecordAfter(segments, segmentIndex, position,
                        batchLog == null ? -1 : Math.max(0, expectedFirst));
                if (follower >= 0) {
                    faults.add(what + ", with a valid record after it at log position " + follower + ": corruption");
                } else {
                    notes.add("torn tail: " + what + "; opening the store cuts the log there");
                }
            }
        }

        private long checkIndexes() throws IOException {
            Path indexRoot = root.resolve("index");
            Map<String, Path> directories = new TreeMap<>();
            if (io.isDirectory(indexRoot)) {
                for (Path topic : io.list(indexRoot)) {
                    if (io.isDirectory(topic)) {
                        for (Path queue : io.list(topic)) {
                            if (io.isDirectory(queue)) {
                                directories.put(topic.getFileName() + "-" + queue.getFileName(), queue);
                            }
                        }
                    }
                }
            }
            for (Map.Entry<String, long[]> queue : queues.entrySet()) {
                if (!directories.containsKey(queue.getKey())) {
                    report(claimed(Long.MAX_VALUE) && queue.getValue()[2] > queue.getValue()[0],
                            "queue " + queue.getKey() + " has records in the log but no index",
                            "queue " + queue.getKey() + " has no index yet: opening the store indexes its records");
                }
            }
            long checked = 0;
            for (Map.Entry<String, Path> queue : directories.entrySet()) {
                checked += checkQueue(queue.getKey(), queue.getValue());
            }
            return checked;
        }

        /** A fault if {@code isFault}, else a note saying what opening repairs. */
        private void report(boolean isFault, String fault, String note) {
            if (isFault) {
                faults.add(fault);
            } else {
                notes.add(note);
            }
        }

        private long checkQueue(String queue, Path directory) throws IOException {
            long checked = 0;
            long end = -1;
            long runEnd = 0;
            long past = 0;
            boolean gapsDone = false;
            int expectedFile = -1;
            for (Path file : io.list(directory)) {
                String name = file.getFileName().toString();
                long first = Long.parseLong(name);
                int number = geometry.fileStartingAt(first);
                if (number < 0 || (expectedFile >= 0 && number != expectedFile)) {
                    faults.add("queue " + queue + ": index file " + name + " is not where the next file should start");
                    return checked;
                }
                expectedFile = number + 1;
                try (StoreFile opened = io.open(file, FileIO.OpenMode.READ_ONLY); Arena arena = Arena.ofConfined()) {
                    long size = opened.size();
                    MemorySegment entries = opened.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
                    for (long i = 0; i < size / QueueIndexFormat.ENTRY_BYTES; i++) {
                        long offset = first + i;
                        long at = i * QueueIndexFormat.ENTRY_BYTES;
                        if (!gapsDone && QueueIndexFormat.isGap(entries, at, offset)) {
                            continue;
                        }
                        gapsDone = true;
                        if (!QueueIndexFormat.isEntry(entries, at, offset)) {
                            if (end < 0) {
                                end = offset;
                            }
                            continue;
                        }
                        checked++;
                        if (end < 0) {
                            runEnd = offset + 1;
                        }
                        long position = entries.get(QueueIndexFormat.LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET);
                        if (end >= 0) {
                            if (claimed(position)) {
                                faults.add("queue " + queue + ": index entry " + offset + " follows a hole at " + end
                                        + " below the durable position");
                            } else {
                                past++;
                            }
                            continue;
                        }
                        String fault = checkEntry(entries, at, offset, queue);
                        if (fault == null) {
                            continue;
                        }
                        if (fault.startsWith("past:")) {
                            past++;
                        } else {
                            faults.add("queue " + queue + ": index entry " + offset + ": " + fault);
                            return checked;
                        }
                    }
                }
            }
            end = end < 0 ? runEnd : end;
            if (past > 0) {
                notes.add("queue " + queue + ": " + past + " index entries point past where the log ends: opening the"
                        + " store drops them");
            }
            long[] expected = queues.get(queue);
            if (expected != null && end < expected[1]) {
                report(end < expected[2], "queue " + queue + ": index ends at offset " + end + " but the log holds"
                        + " offsets up to " + expected[1] + ", and those below " + expected[2] + " were claimed durable",
                        "queue " + queue + ": index ends at offset " + end + ", the log at " + expected[1]
                                + ": opening the store indexes the rest");
            }
            return checked;
        }

        /** @return null if the entry matches its record, "past:..." if its record lies past the log's end, else a fault */
        private String checkEntry(MemorySegment entries, long at, long offset, String queue) {
            long position = entries.get(QueueIndexFormat.LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET);
            int size = entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET);
            if (position < logStart) {
                return null; // the record's segment was deleted by retention; the queue starts after it
            }
            if (position + size > logEnd) {
                if (clean || claimed(position + size - 1)) {
                    return "points past the end of the valid log (" + position + "+" + size + " > " + logEnd + ")";
                }
                return "past:";
            }
            Segment segment = segmentFor(position);
            if (segment == null) {
                return "points at log position " + position + ", which is not stored";
            }
            int indexInRecord = entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET);
            int messageCount = entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET);
            if (batchLog != null) {
                // A batch carries no store time; its first offset and offset count must match.
                long length = BatchFormat.validate(segment.mapping(), position - segment.base(), offset - indexInRecord);
                boolean matches = length == size
                        && BatchFormat.offsetCount(segment.mapping().asSlice(position - segment.base())) == messageCount;
                return matches ? null : "no valid batch of " + size + " bytes starting at offset "
                        + (offset - indexInRecord) + " at log position " + position;
            }
            long length = RecordFormat.validate(segment.mapping(), position - segment.base(), position);
            if (length != size) {
                return "no valid record of " + size + " bytes at log position " + position;
            }
            MemorySegment record = segment.mapping().asSlice(position - segment.base(), length);
            boolean matches = (RecordFormat.topic(record) + "-" + RecordFormat.queueId(record)).equals(queue)
                    && RecordFormat.firstQueueOffset(record) + indexInRecord == offset
                    && RecordFormat.messageCount(record) == messageCount
                    && RecordFormat.storeTimestamp(record)
                    == entries.get(QueueIndexFormat.LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET);
            return matches ? null : "does not match the record at log position " + position;
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
            Segment segment = segmentFor(position);
            if (segment == null || position >= logEnd) {
                return "not a stored log position";
            }
            long length = RecordFormat.validate(segment.mapping(), position - segment.base(), position);
            if (length < 0 || position + length > logEnd) {
                return "no valid record there";
            }
            MemorySegment record = segment.mapping().asSlice(position - segment.base(), length);
            if (indexInRecord < 0 || indexInRecord >= RecordFormat.messageCount(record)) {
                return "the record has no message " + indexInRecord;
            }
            if (RecordFormat.isOpaque(record)) {
                return "the record is an opaque batch, which carries no keys";
            }
            long at = RecordFormat.messageOffset(record, indexInRecord);
            String topic = RecordFormat.topic(record);
            for (String key : RecordFormat.decodeMetadata(record, at).keys()) {
                if (KeyIndex.hash(topic, key) == keyHash) {
                    return null;
                }
            }
            return "message " + indexInRecord + " of the record carries no key with that hash";
        }

        private Segment segmentFor(long position) {
            for (Segment segment : segments) {
                if (segment.base() <= position && position < segment.end()) {
                    return segment;
                }
            }
            return null;
        }
    }
}
