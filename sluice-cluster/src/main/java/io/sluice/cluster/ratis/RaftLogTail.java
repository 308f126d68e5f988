package io.sluice.cluster.ratis;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.regex.Matcher;
import java.util.function.ToLongFunction;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.apache.ratis.thirdparty.com.google.protobuf.InvalidProtocolBufferException;

/**
 * A partition's Raft log as its segment files hold it, read and cut back while its group is not running: how far
 * the store holds the batches the log names, and the log cut back to the last entry it holds whole.
 *
 * <p>Under ASYNC the store forces its batches about once a second while Ratis forces its log after each write, so a
 * power cut can leave a log naming batches its store lost. When a majority of a partition's replicas are in that
 * state no leader can be elected (each such replica stays out of its group), and each cuts its log back to the last
 * entry whose batches its store holds, cuts its store to that entry's end, and starts its group again (docs/cluster.md,
 * "Where the log ends"). The files are read with the framing {@link OpenSegmentBelowSnapshot} reads.
 */
public final class RaftLogTail {

    private static final Pattern CLOSED = Pattern.compile("log_(\\d+)-(\\d+)");
    private static final Pattern OPEN = Pattern.compile("log_inprogress_(\\d+)");

    private RaftLogTail() {
    }

    /**
     * A segment file of the log.
     *
     * @param path the file
     * @param first its first entry's index
     * @param last its last entry's index, from its name; -1 for the open segment
     */
    public record Segment(Path path, long first, long last) {

        public boolean open() {
            return last < 0;
        }
    }

    /** @return the log's segments, by first index (a name Ratis would not load is left out) */
    public static List<Segment> segments(Path logDirectory) throws IOException {
        List<Segment> segments = new ArrayList<>();
        try (Stream<Path> files = Files.list(logDirectory)) {
            for (Path file : files.toList()) {
                String name = file.getFileName().toString();
                Matcher closed = CLOSED.matcher(name);
                Matcher open = OPEN.matcher(name);
                if (closed.matches()) {
                    segments.add(new Segment(file, Long.parseLong(closed.group(1)), Long.parseLong(closed.group(2))));
                } else if (open.matches()) {
                    segments.add(new Segment(file, Long.parseLong(open.group(1)), -1));
                }
            }
        }
        segments.sort(Comparator.comparingLong(Segment::first));
        return segments;
    }

    /** @return the whole entries of a segment file, from its first (a torn or damaged tail is not read) */
    public static List<LogEntryProto> entries(Path segment, int maxEntryBytes) throws IOException {
        OpenSegmentBelowSnapshot.Scan scan = OpenSegmentBelowSnapshot.scan(segment, maxEntryBytes, Long.MAX_VALUE);
        List<LogEntryProto> entries = new ArrayList<>(scan.entries());
        try (Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(segment, StandardOpenOption.READ)) {
            MemorySegment bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, scan.end(), arena);
            long at = 8; // the header, which the scan checked
            for (int i = 0; i < scan.entries(); i++) {
                int length = 0;
                int varint = 0;
                byte b;
                do {
                    b = bytes.get(ValueLayout.JAVA_BYTE, at + varint);
                    length |= (b & 0x7f) << (7 * varint);
                    varint++;
                } while ((b & 0x80) != 0);
                try {
                    entries.add(LogEntryProto.parseFrom(bytes.asSlice(at + varint, length).toArray(
                            ValueLayout.JAVA_BYTE)));
                } catch (InvalidProtocolBufferException e) {
                    throw new IOException("entry " + i + " of " + segment + " is not a Raft log entry: " + e, e);
                }
                at += varint + length + Integer.BYTES;
            }
        }
        return entries;
    }

    /**
     * How far a store holds the batches a log names.
     *
     * @param wholeIndex the last entry whose batches (and every earlier entry's) the store holds; -1 if none
     * @param wholeEnd the offset the batches of the entries up to it end at
     * @param lastIndex the log's last entry
     * @param namedEnd the offset the batches of the log's entries end at
     */
    public record Held(long wholeIndex, long wholeEnd, long lastIndex, long namedEnd) {

        /** @return whether the log names batches past what the store holds */
        public boolean isShort() {
            return wholeIndex < lastIndex && namedEnd > wholeEnd;
        }
    }

    /**
     * Reads the log from its end back to the last entry whose batches end at or below {@code stored}: the batch
     * entries of a log follow one another in offsets, so the entries up to that one are held whole, and any
     * entries after it that carry no batch.
     *
     * @param logDirectory the group's {@code current} directory
     * @param maxEntryBytes the largest entry Ratis reads
     * @param stored the offset the store's batches of the partition end at
     * @param snapshotIndex the index of the replica's latest snapshot, or -1
     * @param snapshotEnd the offset its batches end at (0 without one)
     * @param batchesEnd the offset the batches of an entry end at, from the entry's state-machine log data
     * @return how far the store holds the log's batches; null if not even the snapshot's (the store lost what was
     *     forced), or if the log does not follow on from the snapshot: the log cannot be cut back to the store
     */
    public static Held held(Path logDirectory, int maxEntryBytes, long stored, long snapshotIndex, long snapshotEnd,
                            ToLongFunction<ByteString> batchesEnd) throws IOException {
        if (snapshotEnd > stored) {
            return null;
        }
        List<Segment> segments = segments(logDirectory);
        long lastIndex = -1;
        long namedEnd = -1;
        long wholeIndex = -1;
        long lowest = Long.MAX_VALUE;
        for (int s = segments.size() - 1; s >= 0; s--) {
            List<LogEntryProto> entries = entries(segments.get(s).path(), maxEntryBytes);
            for (int i = entries.size() - 1; i >= 0; i--) {
                LogEntryProto entry = entries.get(i);
                if (entry.getIndex() <= snapshotIndex) {
                    break;
                }
                if (entry.getIndex() >= lowest) {
                    continue; // a segment Ratis would refuse overlaps the next one: read as Ratis would not
                }
                if (lastIndex < 0) {
                    lastIndex = entry.getIndex();
                    wholeIndex = lastIndex;
                }
                lowest = entry.getIndex();
                if (!entry.hasStateMachineLogEntry()) {
                    continue;
                }
                long end = batchesEnd.applyAsLong(entry.getStateMachineLogEntry().getLogData());
                namedEnd = namedEnd < 0 ? end : namedEnd;
                if (end <= stored) {
                    return new Held(wholeIndex, end, lastIndex, namedEnd);
                }
                // This entry's batches are not all in the store: the log is held whole up to the one before it.
                wholeIndex = entry.getIndex() - 1;
            }
        }
        if (lastIndex < 0) {
            // No entry past the snapshot.
            return new Held(snapshotIndex, snapshotEnd, snapshotIndex, snapshotEnd);
        }
        if (lowest != snapshotIndex + 1) {
            return null;
        }
        return new Held(wholeIndex, snapshotEnd, lastIndex, namedEnd < 0 ? snapshotEnd : namedEnd);
    }

    /**
     * Cuts the log back so that {@code lastKept} is its last entry: the segments that start after it are deleted
     * (the last first), then the segment holding it is cut after it and named as Ratis names a closed segment; the
     * directory is forced after each step. A cut stopped halfway leaves a log without gaps, ending past
     * {@code lastKept}, which a second cut finishes.
     *
     * @param logDirectory the group's {@code current} directory; its group must not be running
     * @param lastKept the entry to end with
     * @param maxEntryBytes the largest entry Ratis reads
     * @return how many entries were cut off
     * @throws IOException if the log does not read as a log holding {@code lastKept}
     */
    public static long cutAfter(Path logDirectory, long lastKept, int maxEntryBytes) throws IOException {
        List<Segment> segments = segments(logDirectory);
        long cut = 0;
        for (int s = segments.size() - 1; s >= 0 && segments.get(s).first() > lastKept; s--) {
            Segment segment = segments.get(s);
            cut += segment.open() ? entries(segment.path(), maxEntryBytes).size() : segment.last() - segment.first() + 1;
            Files.delete(segment.path());
            forceDirectory(logDirectory);
        }
        Segment holding = segments.stream().filter(segment -> segment.first() <= lastKept)
                .reduce((a, b) -> b).orElse(null);
        if (holding == null || (!holding.open() && holding.last() <= lastKept)) {
            return cut;
        }
        long keep = lastKept - holding.first() + 1;
        OpenSegmentBelowSnapshot.Scan scan = OpenSegmentBelowSnapshot.scan(holding.path(), maxEntryBytes, keep);
        if (scan.entries() < keep) {
            if (holding.open()) {
                return cut; // the open segment ends at or before the entry already
            }
            throw new IOException("the Raft log segment " + holding.path() + " holds " + scan.entries()
                    + " whole entries, not the " + keep + " up to entry " + lastKept);
        }
        long entries = holding.open() ? entries(holding.path(), maxEntryBytes).size()
                : holding.last() - holding.first() + 1;
        try (FileChannel channel = FileChannel.open(holding.path(), StandardOpenOption.WRITE)) {
            channel.truncate(scan.end());
            channel.force(true);
        }
        Path closed = holding.path().resolveSibling("log_" + holding.first() + "-" + lastKept);
        if (!closed.equals(holding.path())) {
            Files.move(holding.path(), closed, StandardCopyOption.ATOMIC_MOVE);
            forceDirectory(logDirectory);
        }
        return cut + entries - keep;
    }

    private static void forceDirectory(Path directory) throws IOException {
        try (FileChannel channel = FileChannel.open(directory, StandardOpenOption.READ)) {
            channel.force(true);
        }
    }
}
