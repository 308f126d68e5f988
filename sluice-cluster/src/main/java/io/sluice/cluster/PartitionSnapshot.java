package io.sluice.cluster;

import io.sluice.broker.DurableFile;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;

/**
 * A partition replica's snapshot: the log index (and term) it covers up to, and the offset the batches of the entries
 * up to there end at. The batches themselves are in the store, forced before the snapshot is written; the file only
 * says how far (docs/format.md, "Cluster"):
 *
 * <pre>
 *   offset.end=&lt;end&gt;\n
 *   crc32c=&lt;hex of the CRC32C of the line before&gt;\n
 * </pre>
 *
 * written aside, forced, renamed into place, its directory forced ({@link DurableFile}), under the name Ratis's
 * snapshot storage gives the term and index.
 *
 * @param at the last entry the snapshot covers
 * @param end the offset its batches end at
 */
record PartitionSnapshot(TermIndex at, long end) {

    /** The temporary file a snapshot is written to first, beside the snapshots. */
    private static final String TEMPORARY = "partition-snapshot.tmp";

    /** @return the index of the last entry the snapshot covers */
    long index() {
        return at.getIndex();
    }

    /**
     * Writes the snapshot file and tells the storage it is the latest.
     *
     * @param snapshots the group's snapshot storage
     * @param at the last entry it covers
     * @param end the offset its batches end at; the store must hold them forced
     * @return the snapshot
     */
    static PartitionSnapshot write(SnapshotStorage snapshots, TermIndex at, long end) throws IOException {
        Path path = snapshots.getSnapshotFile(at.getTerm(), at.getIndex()).toPath();
        DurableFile.write(FileIO.DEFAULT, path, path.resolveSibling(TEMPORARY), text(end));
        snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), at));
        return new PartitionSnapshot(at, end);
    }

    /**
     * @param snapshot a snapshot file Ratis's storage found
     * @param partition whose it is, for the error
     * @return what it says
     * @throws IOException if it is not a whole snapshot file
     */
    static PartitionSnapshot read(SingleFileSnapshotInfo snapshot, ClusterNode.PartitionId partition)
            throws IOException {
        Path path = snapshot.getFile().getPath();
        String text = Files.readString(path, StandardCharsets.US_ASCII);
        int newline = text.indexOf('\n');
        long end = newline < 0 || !text.startsWith("offset.end=") ? -1
                : parseEnd(text.substring("offset.end=".length(), newline));
        if (end < 0 || !text.equals(text(end))) {
            throw new IOException("the snapshot file " + path + " of " + partition + " is damaged");
        }
        return new PartitionSnapshot(snapshot.getTermIndex(), end);
    }

    /** @return the file's content for a snapshot whose batches end at {@code end} */
    static String text(long end) {
        String body = "offset.end=" + end + "\n";
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return body + "crc32c=" + Long.toHexString(crc.getValue()) + "\n";
    }

    private static long parseEnd(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
