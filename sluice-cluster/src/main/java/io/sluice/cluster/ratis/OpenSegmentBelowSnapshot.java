package io.sluice.cluster.ratis;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogFormat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes a Raft log's open segment that ends below the replica's latest snapshot, before Ratis loads the log.
 *
 * <p>Under ASYNC Ratis writes a replica's log in the background while the replica applies committed entries and
 * snapshots them; and a follower that installs a snapshot records it before Ratis rolls its log past it. A SIGKILL or
 * a power cut can therefore leave a snapshot at index S and a log whose open segment ends at E &lt; S. Ratis 3.3.0
 * then purges the log's closed segments up to S as it loads, but not the open one, which it keeps as the log's last
 * segment: the next entry (S + 1) is taken as following E, and each append fails ("gap between start index E + 1 and
 * first entry to append S + 1") until the replica restarts with the segment closed. The replica stays out of sync
 * meanwhile. Every entry of such a segment is in the snapshot, so closing it (the name of a closed segment, its torn
 * tail cut off) is what Ratis would have done had the roll reached the disk: Ratis then loads it, takes any
 * configuration in it, and purges it.
 *
 * <p>A segment file (Ratis's {@code SegmentedRaftLogOutputStream}; only its framing is read here):
 * <pre>
 *   "RaftLog1"                                   8-byte header
 *   entry: varint32 n | n bytes (LogEntryProto) | CRC32C of the varint and the n bytes, 4 bytes big-endian
 *   ... more entries, then the end of the file, or zero bytes (space Ratis allocated ahead)
 * </pre>
 * A segment that does not read cleanly this way (another header, a length above the largest entry Ratis reads, a
 * checksum that fails on an entry with bytes written after it, bytes after the zeros) is left to Ratis, which refuses
 * it. A last entry cut short by the end of the file or by zeros is torn (never acknowledged, as Ratis says of the
 * former) and cut off.
 */
public final class OpenSegmentBelowSnapshot {

    private static final Logger LOG = LoggerFactory.getLogger(OpenSegmentBelowSnapshot.class);

    /**
     * Ratis's name of an open segment: {@code log_inprogress_<first index>}. (Ratis also takes one with a suffix after
     * a dot as open; such a file is left to it.)
     */
    private static final Pattern OPEN_SEGMENT = Pattern.compile("log_inprogress_(\\d+)");

    private OpenSegmentBelowSnapshot() {
    }

    /**
     * What reading a segment's framing found.
     *
     * @param entries the whole entries, whose checksums hold, from the start
     * @param end the byte just after the last of them
     * @param clean whether only the end of the file, zero bytes, or a torn last entry (cut short by the end of the
     *     file, or by zeros) follow them
     */
    public record Scan(int entries, long end, boolean clean) {
    }

    /**
     * Reads the framing of the segment file {@code segment}, up to {@code limit} entries.
     *
     * @param maxEntryBytes the largest entry Ratis reads (its {@code raft.server.log.appender.buffer.byte-limit}): a
     *     length above it is damage, not a torn entry, as Ratis takes it
     * @param limit how many entries to read at most (the scan then ends clean after the last of them)
     */
    public static Scan scan(Path segment, int maxEntryBytes, long limit) throws IOException {
        try (Arena arena = Arena.ofConfined();
             FileChannel channel = FileChannel.open(segment, StandardOpenOption.READ)) {
            MemorySegment bytes = channel.map(FileChannel.MapMode.READ_ONLY, 0, channel.size(), arena);
            return scan(bytes, maxEntryBytes, limit);
        }
    }

    private static Scan scan(MemorySegment bytes, int maxEntryBytes, long limit) {
        long size = bytes.byteSize();
        ByteBuffer header = SegmentedRaftLogFormat.getHeaderBytebuffer();
        if (size < header.remaining() || !bytes.asSlice(0, header.remaining()).asByteBuffer().equals(header)) {
            return new Scan(0, 0, false);
        }
        long at = header.remaining();
        int entries = 0;
        CRC32C crc = new CRC32C();
        while (at < size && entries < limit) {
            if (bytes.get(ValueLayout.JAVA_BYTE, at) == 0) {
                // Ratis's terminator: zeros to the end of the file.
                return new Scan(entries, at, zerosFrom(bytes, at));
            }
            long length = 0;
            int varint = 0;
            boolean more = true;
            while (more) {
                if (at + varint >= size) {
                    return new Scan(entries, at, true); // torn in its length
                }
                if (varint == 5) {
                    return new Scan(entries, at, false);
                }
                byte b = bytes.get(ValueLayout.JAVA_BYTE, at + varint);
                length |= (long) (b & 0x7f) << (7 * varint);
                more = (b & 0x80) != 0;
                varint++;
            }
            if (length > maxEntryBytes) {
                return new Scan(entries, at, false);
            }
            long checksumAt = at + varint + length;
            long next = checksumAt + Integer.BYTES;
            if (next > size) {
                return new Scan(entries, at, true); // torn: cut short by the end of the file
            }
            crc.reset();
            crc.update(bytes.asSlice(at, varint + length).asByteBuffer());
            if ((int) crc.getValue() != bytes.get(BIG_ENDIAN_INT, checksumAt)) {
                // Torn if nothing was written after it (Ratis allocates ahead with zeros); damage otherwise.
                return new Scan(entries, at, zerosFrom(bytes, next));
            }
            entries++;
            at = next;
        }
        return new Scan(entries, at, true);
    }

    private static final ValueLayout.OfInt BIG_ENDIAN_INT =
            ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    private static boolean zerosFrom(MemorySegment bytes, long from) {
        for (long i = from; i < bytes.byteSize(); i++) {
            if (bytes.get(ValueLayout.JAVA_BYTE, i) != 0) {
                return false;
            }
        }
        return true;
    }

    /** @return the largest entry the Ratis server reads back from its log ({@link #scan}) */
    public static int maxEntryBytes(RaftServer server) {
        return RaftServerConfigKeys.Log.Appender.bufferByteLimit(server.getProperties()).getSizeInt();
    }

    /**
     * Closes the open segment in a group's log directory if each of its entries is at or below the snapshot's index.
     *
     * @param logDirectory the directory of the group's segments (Ratis's {@code current})
     * @param snapshotIndex the index of the replica's latest snapshot, or -1 if it has none
     * @param maxEntryBytes the largest entry Ratis reads ({@link #scan})
     * @param group what the log belongs to, for the log line
     * @return the closed segment, or null if none was closed
     */
    public static Path closeIfBelow(Path logDirectory, long snapshotIndex, int maxEntryBytes, String group)
            throws IOException {
        if (snapshotIndex < 0) {
            return null;
        }
        List<Path> open;
        try (Stream<Path> files = Files.list(logDirectory)) {
            open = files.filter(file -> OPEN_SEGMENT.matcher(file.getFileName().toString()).matches()).toList();
        }
        Path closed = null;
        for (Path segment : open) {
            long first = Long.parseLong(segment.getFileName().toString().substring("log_inprogress_".length()));
            if (first > snapshotIndex) {
                continue;
            }
            // Entries up to the snapshot's are read, no more: one past them settles it.
            Scan scan = scan(segment, maxEntryBytes, snapshotIndex - first + 1);
            long last = first + scan.entries() - 1;
            Path target = segment.resolveSibling("log_" + first + "-" + last);
            if (!scan.clean() || scan.entries() == 0 || last >= snapshotIndex || Files.exists(target)) {
                // Empty (Ratis deletes it), unreadable (Ratis decides), reaching the snapshot (nothing to do), or
                // beside a closed segment of the same entries (Ratis decides).
                continue;
            }
            try (FileChannel channel = FileChannel.open(segment, StandardOpenOption.WRITE)) {
                channel.truncate(scan.end());
                channel.force(true);
            }
            closed = target;
            Files.move(segment, closed, StandardCopyOption.ATOMIC_MOVE);
            try (FileChannel directory = FileChannel.open(logDirectory, StandardOpenOption.READ)) {
                directory.force(true);
            }
            LOG.warn("{}: the Raft log's open segment {} ends at entry {}, below the snapshot at {} (the log's tail was"
                    + " not written when the node stopped); closed as {} for Ratis to purge", group,
                    segment.getFileName(), last, snapshotIndex, closed.getFileName());
        }
        return closed;
    }
}
