package io.sluice.cluster;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
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
 * A segment that does not read cleanly this way (another header, a checksum that fails on a whole entry, bytes after
 * the zeros) is left to Ratis, which refuses it or reads it as it does today.
 */
final class OpenSegmentBelowSnapshot {

    private static final Logger LOG = LoggerFactory.getLogger(OpenSegmentBelowSnapshot.class);

    /** Ratis's name of an open segment: {@code log_inprogress_<first index>}. */
    private static final Pattern OPEN_SEGMENT = Pattern.compile("log_inprogress_(\\d+)");

    private OpenSegmentBelowSnapshot() {
    }

    /**
     * What reading a segment's framing found.
     *
     * @param entries the whole entries, whose checksums hold, from the start
     * @param end the byte just after the last of them
     * @param clean whether only the end of the file, zero bytes, or a torn last entry (cut short by the end of the
     *     file) follow them
     */
    record Scan(int entries, long end, boolean clean) {
    }

    /** Reads the framing of the segment file {@code segment}. */
    static Scan scan(Path segment) throws IOException {
        ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(segment));
        ByteBuffer header = SegmentedRaftLogFormat.getHeaderBytebuffer();
        if (bytes.remaining() < header.remaining() || !bytes.slice(0, header.remaining()).equals(header)) {
            return new Scan(0, 0, false);
        }
        int at = header.remaining();
        int entries = 0;
        CRC32C crc = new CRC32C();
        while (at < bytes.limit()) {
            if (bytes.get(at) == 0) {
                // Ratis's terminator: zeros to the end of the file.
                for (int i = at; i < bytes.limit(); i++) {
                    if (bytes.get(i) != 0) {
                        return new Scan(entries, at, false);
                    }
                }
                return new Scan(entries, at, true);
            }
            long length = 0;
            int varint = 0;
            boolean more = true;
            while (more) {
                if (at + varint >= bytes.limit()) {
                    return new Scan(entries, at, true); // torn in its length
                }
                if (varint == 5) {
                    return new Scan(entries, at, false);
                }
                byte b = bytes.get(at + varint);
                length |= (long) (b & 0x7f) << (7 * varint);
                more = (b & 0x80) != 0;
                varint++;
            }
            long next = at + varint + length + Integer.BYTES;
            if (next > bytes.limit()) {
                return new Scan(entries, at, true); // torn: cut short by the end of the file
            }
            crc.reset();
            crc.update(bytes.slice(at, varint + (int) length));
            if ((int) crc.getValue() != bytes.getInt(at + varint + (int) length)) {
                return new Scan(entries, at, false);
            }
            entries++;
            at = (int) next;
        }
        return new Scan(entries, at, true);
    }

    /**
     * Closes the open segment in a group's log directory if each of its entries is at or below the snapshot's index.
     *
     * @param logDirectory the directory of the group's segments (Ratis's {@code current})
     * @param snapshotIndex the index of the replica's latest snapshot, or -1 if it has none
     * @param group what the log belongs to, for the log line
     * @return the closed segment, or null if none was closed
     */
    static Path closeIfBelow(Path logDirectory, long snapshotIndex, String group) throws IOException {
        if (snapshotIndex < 0) {
            return null;
        }
        List<Path> open;
        try (Stream<Path> files = Files.list(logDirectory)) {
            open = files.filter(file -> OPEN_SEGMENT.matcher(file.getFileName().toString()).matches()).toList();
        }
        Path closed = null;
        for (Path segment : open) {
            Matcher name = OPEN_SEGMENT.matcher(segment.getFileName().toString());
            if (!name.matches()) {
                continue;
            }
            long first = Long.parseLong(name.group(1));
            if (first > snapshotIndex) {
                continue;
            }
            Scan scan = scan(segment);
            long last = first + scan.entries() - 1;
            if (!scan.clean() || scan.entries() == 0 || last >= snapshotIndex) {
                // Empty (Ratis deletes it), unreadable (Ratis decides), or reaching the snapshot (nothing to do).
                continue;
            }
            try (FileChannel channel = FileChannel.open(segment, StandardOpenOption.WRITE)) {
                channel.truncate(scan.end());
                channel.force(true);
            }
            closed = segment.resolveSibling("log_" + first + "-" + last);
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
