package io.sluice.store;

import io.sluice.store.internal.index.IndexDamagedException;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndexFormat;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * Checks a store directory without changing it: every record's length, magic, position and CRC32C, and
 * every queue-index and key-index entry against the record it points to, in the shared log and in every
 * log of its own under {@code logs/}. Meant for a closed store (an open one may be
 * mid-append at its tail). Stateless; thread-safe.
 */
public final class StoreVerifier {

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private StoreVerifier() {
    }

    /**
     * What verification found.
     *
     * @param faults one line per problem; empty means the store is sound
     * @param notes findings that are not faults (a torn tail that opening the store will cut off)
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
        Report report = verifyLog(io, directory);
        for (Path own : ownLogDirectories(io, directory)) {
            String name = directory.relativize(own).toString();
            Report part = verifyLog(io, own);
            List<String> faults = new ArrayList<>(report.faults());
            part.faults().forEach(fault -> faults.add(name + ": " + fault));
            List<String> notes = new ArrayList<>(report.notes());
            part.notes().forEach(note -> notes.add(name + ": " + note));
            Map<String, Long> queues = new TreeMap<>(report.queueMessages());
            part.queueMessages().forEach((queue, count) -> queues.merge(queue, count, Long::sum));
            report = new Report(faults, notes, report.segments() + part.segments(), report.records() + part.records(),
                    report.messages() + part.messages(), report.logEnd(), queues,
                    report.indexEntries() + part.indexEntries());
        }
        return report;
    }

    /** @return the directories of the logs of their own under {@code logs/} (TOPIC and QUEUE layouts) */
    private static List<Path> ownLogDirectories(FileIO io, Path directory) throws IOException {
        Path logs = directory.resolve(Store.OWN_LOGS_DIRECTORY);
        List<Path> found = new ArrayList<>();
        if (!io.isDirectory(logs)) {
            return found;
        }
        for (Path topic : io.list(logs)) {
            if (io.exists(topic.resolve(StoreDirectory.META_FILE))) {
                found.add(topic);
            } else if (io.isDirectory(topic)) {
                for (Path queue : io.list(topic)) {
                    if (io.exists(queue.resolve(StoreDirectory.META_FILE))) {
                        found.add(queue);
                    }
                }
            }
        }
        return found;
    }

    /** Verifies one log directory: the shared log's (the store directory) or one under {@code logs/}. */
    private static Report verifyLog(FileIO io, Path directory) throws IOException {
        List<String> faults = new ArrayList<>();
        if (!io.exists(directory.resolve(StoreDirectory.META_FILE))) {
            faults.add(directory + " has no " + StoreDirectory.META_FILE + ": not a Sluice store");
            return new Report(faults, List.of(), 0, 0, 0, 0, Map.of(), 0);
        }
        List<Segment> segments = openSegments(io, directory.resolve("log"), faults);
        try {
            Map<String, long[]> queues = new TreeMap<>();
            long[] totals = new long[3];
            List<String> notes = new ArrayList<>();
            Checkpoint checkpoint = Checkpoint.read(io, directory);
            boolean clean = io.exists(directory.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE)) && checkpoint != null;
            long cleanEnd = clean ? checkpoint.flushedLogPosition() : Long.MAX_VALUE;
            scanLog(segments, cleanEnd, faults, notes, queues, totals);
            long entries = checkIndexes(io, directory.resolve("index"), segments, totals[2], queues, faults);
            checkKeyIndex(io, directory.resolve("keys"), segments, totals[2], faults, notes);
            Map<String, Long> counts = new TreeMap<>();
            queues.forEach((queue, range) -> counts.put(queue, range[1] - range[0]));
            return new Report(faults, notes, segments.size(), totals[0], totals[1], totals[2], counts, entries);
        } finally {
            for (Segment segment : segments) {
                segment.close();
            }
        }
    }

    private static List<Segment> openSegments(FileIO io, Path logDirectory, List<String> faults)
            throws IOException {
        List<Segment> segments = new ArrayList<>();
        if (!io.isDirectory(logDirectory)) {
            return segments;
        }
        List<Path> files = io.list(logDirectory).stream()
                .filter(CommitLog::isSegmentName).toList();
        for (Path file : files) {
            if (sizeOf(io, file) == 0) {
                continue;
            }
            long base = Long.parseLong(file.getFileName().toString());
            if (!segments.isEmpty() && segments.getLast().end() != base) {
                faults.add("segment missing between log positions " + segments.getLast().end() + " and " + base);
            }
            segments.add(Segment.open(io, file, base, false, true));
        }
        return segments;
    }

    /** totals: [records, messages, logEnd]; queues: topic-queue -> [first offset, next offset]. */
    private static void scanLog(List<Segment> segments, long cleanEnd, List<String> faults, List<String> notes,
                                Map<String, long[]> queues, long[] totals) {
        long position = segments.isEmpty() ? 0 : segments.getFirst().base();
        for (int s = 0; s < segments.size(); s++) {
            Segment segment = segments.get(s);
            MemorySegment data = segment.mapping();
            position = Math.max(position, segment.base());
            while (position < segment.end()) {
                long offset = position - segment.base();
                if (position >= cleanEnd) {
                    totals[2] = position;
                    return;
                }
                if (segment.size() - offset < RecordFormat.FILLER_BYTES) {
                    break;
                }
                long length = RecordFormat.validate(data, offset, position);
                if (length < 0) {
                    String where = "log position " + position + " (" + segment + ", offset " + offset + ")";
                    long follower = Recovery.findValidRecordAfter(segments, s, position);
                    if (cleanEnd != Long.MAX_VALUE) {
                        faults.add("invalid record at " + where + " before the end recorded at clean shutdown ("
                                + cleanEnd + ")");
                    } else if (follower >= 0) {
                        faults.add("invalid record at " + where + " with a valid record after it at log position "
                                + follower + ": corruption");
                    } else {
                        notes.add("torn tail at " + where + ": the store was not closed cleanly; opening it"
                                + " will cut the log there");
                    }
                    totals[2] = position;
                    return;
                }
                MemorySegment record = data.asSlice(offset, length);
                if (RecordFormat.isFiller(record)) {
                    break;
                }
                String queue = RecordFormat.topic(record) + "-" + RecordFormat.queueId(record);
                long first = RecordFormat.firstQueueOffset(record);
                int count = RecordFormat.messageCount(record);
                long[] range = queues.computeIfAbsent(queue, q -> new long[] {first, first});
                if (range[1] != first) {
                    faults.add("queue " + queue + ": record at log position " + position + " holds offset " + first
                            + ", expected " + range[1]);
                }
                range[1] = first + count;
                totals[0]++;
                totals[1] += count;
                position += length;
            }
            position = segment.end();
        }
        totals[2] = segments.isEmpty() ? 0 : position;
    }

    private static long sizeOf(FileIO io, Path file) throws IOException {
        try (StoreFile opened = io.open(file, FileIO.OpenMode.READ_ONLY)) {
            return opened.size();
        }
    }

    private static long checkIndexes(FileIO io, Path indexRoot, List<Segment> segments, long logEnd, Map<String, long[]> queues,
                                     List<String> faults) throws IOException {
        long checked = 0;
        Map<String, Path> queueDirectories = new TreeMap<>();
        if (io.isDirectory(indexRoot)) {
            for (Path topic : io.list(indexRoot)) {
                if (!io.isDirectory(topic)) {
                    continue;
                }
                for (Path queue : io.list(topic)) {
                    if (io.isDirectory(queue)) {
                        queueDirectories.put(topic.getFileName() + "-" + queue.getFileName(), queue);
                    }
                }
            }
        }
        for (Map.Entry<String, long[]> queue : queues.entrySet()) {
            if (!queueDirectories.containsKey(queue.getKey())) {
                faults.add("queue " + queue.getKey() + " has records in the log but no index");
            }
        }
        for (Map.Entry<String, Path> queue : queueDirectories.entrySet()) {
            long[] expected = queues.get(queue.getKey());
            checked += checkQueue(io, queue.getKey(), queue.getValue(), expected, segments, logEnd, faults);
        }
        return checked;
    }

    private static long checkQueue(FileIO io, String queue, Path directory, long[] expected,
                                   List<Segment> segments, long logEnd, List<String> faults) throws IOException {
        List<Path> files = io.list(directory);
        long checked = 0;
        long next = -1;
        boolean ended = false;
        for (Path file : files) {
            long first = Long.parseLong(file.getFileName().toString());
            try (StoreFile channel = io.open(file, FileIO.OpenMode.READ_ONLY); Arena arena = Arena.ofConfined()) {
                MemorySegment entries = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                long count = channel.size() / QueueIndexFormat.ENTRY_BYTES;
                for (long i = 0; i < count; i++) {
                    long at = i * QueueIndexFormat.ENTRY_BYTES;
                    int size = entries.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET);
                    long offset = first + i;
                    if (size == 0) {
                        ended = true;
                        continue;
                    }
                    if (ended) {
                        faults.add("queue " + queue + ": index entry " + offset + " follows an empty entry");
                        return checked;
                    }
                    if (next >= 0 && offset != next) {
                        faults.add("queue " + queue + ": index jumps from " + next + " to " + offset);
                    }
                    next = offset + 1;
                    checked++;
                    String fault = checkEntry(entries, at, offset, size, segments, logEnd, queue);
                    if (fault != null) {
                        faults.add("queue " + queue + ": index entry " + offset + ": " + fault);
                        return checked;
                    }
                }
            }
        }
        long end = Math.max(next, 0);
        boolean allRetired = expected == null && next > 0 && !segments.isEmpty()
                && lastEntryPosition(io, files) < segments.getFirst().base();
        if (expected == null ? end > 0 && !allRetired : end != expected[1]) {
            faults.add("queue " + queue + ": index ends at offset " + end + " but the log holds offsets up to "
                    + (expected == null ? 0 : expected[1]));
        }
        return checked;
    }

    /** @return the log position the last filled entry of the queue's files points at, or -1 */
    private static long lastEntryPosition(FileIO io, List<Path> files) throws IOException {
        long last = -1;
        for (Path file : files) {
            try (StoreFile channel = io.open(file, FileIO.OpenMode.READ_ONLY); Arena arena = Arena.ofConfined()) {
                MemorySegment entries = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
                for (long at = 0; at + QueueIndexFormat.ENTRY_BYTES <= channel.size(); at += QueueIndexFormat.ENTRY_BYTES) {
                    if (entries.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET) != 0) {
                        last = entries.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET);
                    }
                }
            }
        }
        return last;
    }

    /** Every key-index entry must point at a valid record whose message there carries a key of that hash. */
    private static void checkKeyIndex(FileIO io, Path keyDirectory, List<Segment> segments, long logEnd,
                                      List<String> faults, List<String> notes) throws IOException {
        if (!io.isDirectory(keyDirectory)) {
            return;
        }
        long[] checked = new long[1];
        try (KeyIndex keys = KeyIndex.open(keyDirectory, io, 16, 16)) {
            keys.forEach((position, keyHash, indexInRecord) -> {
                checked[0]++;
                String fault = checkKeyEntry(segments, logEnd, position, keyHash, indexInRecord);
                if (fault != null && faults.size() < 100) {
                    faults.add("key index entry for log position " + position + ": " + fault);
                }
            });
        } catch (IndexDamagedException e) {
            faults.add(e.getMessage());
        }
        notes.add("key index: " + checked[0] + " entries checked");
    }

    private static String checkKeyEntry(List<Segment> segments, long logEnd, long position, int keyHash,
                                        int indexInRecord) {
        if (!segments.isEmpty() && position < segments.getFirst().base()) {
            return null; // deleted by retention, as for queue-index entries
        }
        Segment segment = segmentFor(segments, position);
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
        long at = RecordFormat.messageOffset(record, indexInRecord);
        String topic = RecordFormat.topic(record);
        for (String key : RecordFormat.decodeMetadata(record, at).keys()) {
            if (KeyIndex.hash(topic, key) == keyHash) {
                return null;
            }
        }
        return "message " + indexInRecord + " of the record carries no key with that hash";
    }

    private static Segment segmentFor(List<Segment> segments, long position) {
        for (Segment segment : segments) {
            if (segment.base() <= position && position < segment.end()) {
                return segment;
            }
        }
        return null;
    }

    private static String checkEntry(MemorySegment entries, long at, long offset, int size, List<Segment> segments,
                                     long logEnd, String queue) {
        long position = entries.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET);
        if (!segments.isEmpty() && position < segments.getFirst().base()) {
            return null; // the record's segment was deleted by retention; the queue starts after it
        }
        if (position + size > logEnd) {
            return "points past the end of the valid log (" + position + "+" + size + " > " + logEnd + ")";
        }
        Segment segment = segmentFor(segments, position);
        if (segment == null) {
            return "points at log position " + position + ", which is not stored";
        }
        long length = RecordFormat.validate(segment.mapping(), position - segment.base(), position);
        if (length != size) {
            return "no valid record of " + size + " bytes at log position " + position;
        }
        MemorySegment record = segment.mapping().asSlice(position - segment.base(), length);
        int indexInRecord = entries.get(INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET);
        boolean matches = (RecordFormat.topic(record) + "-" + RecordFormat.queueId(record)).equals(queue)
                && RecordFormat.firstQueueOffset(record) + indexInRecord == offset
                && RecordFormat.messageCount(record) == entries.get(INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET)
                && RecordFormat.storeTimestamp(record) == entries.get(LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET);
        return matches ? null : "does not match the record at log position " + position;
    }
}
