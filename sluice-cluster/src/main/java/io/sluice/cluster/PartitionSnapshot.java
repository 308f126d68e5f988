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
 * A partition replica's snapshot: the log index (and term) it covers up to, the offset the batches of the entries
 * up to there end at, and the partition's log start there (Kafka's DeleteRecords moves it through the log, whose
 * entries up to the snapshot's index are purged). The batches themselves are in the store, forced before the snapshot
 * is written; the file only says how far (docs/format.md, "Cluster"):
 *
 * <pre>
 *   offset.end=&lt;end&gt;\n
 *   log.start=&lt;log start&gt;\n          only if above 0
 *   crc32c=&lt;hex of the CRC32C of the lines before&gt;\n
 * </pre>
 *
 * written aside, forced, renamed into place, its directory forced ({@link DurableFile}), under the name Ratis's
 * snapshot storage gives the term and index. The log start's line is left out at 0, so that the snapshot of a
 * partition whose records were never deleted is the file earlier versions wrote and read (a file without it is read as
 * a log start of 0).
 *
 * @param at the last entry the snapshot covers
 * @param end the offset its batches end at
 * @param logStart the partition's log start there: records below it are deleted for clients (a replica may still
 *     hold them)
 */
record PartitionSnapshot(TermIndex at, long end, long logStart) {

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
     * @param logStart the partition's log start there
     * @return the snapshot
     */
    static PartitionSnapshot write(SnapshotStorage snapshots, TermIndex at, long end, long logStart)
            throws IOException {
        Path path = snapshots.getSnapshotFile(at.getTerm(), at.getIndex()).toPath();
        DurableFile.write(FileIO.DEFAULT, path, path.resolveSibling(TEMPORARY), text(end, logStart));
        snapshots.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(path, null), at));
        return new PartitionSnapshot(at, end, logStart);
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
        String[] lines = text.split("\n", -1);
        long end = lines.length < 3 ? -1 : valueOf(lines[0], "offset.end=");
        long logStart = lines.length == 4 ? valueOf(lines[1], "log.start=") : 0;
        if (end < 0 || logStart < 0 || !text.equals(text(end, logStart))) {
            throw new IOException("the snapshot file " + path + " of " + partition + " is damaged");
        }
        return new PartitionSnapshot(snapshot.getTermIndex(), end, logStart);
    }

    /** @return the file's content for a snapshot whose batches end at {@code end}, the log start at {@code logStart} */
    static String text(long end, long logStart) {
        String body = "offset.end=" + end + "\n" + (logStart > 0 ? "log.start=" + logStart + "\n" : "");
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return body + "crc32c=" + Long.toHexString(crc.getValue()) + "\n";
    }

    /** @return the number after {@code name} on the line, or -1 if the line is not that */
    private static long valueOf(String line, String name) {
        return line.startsWith(name) ? parseEnd(line.substring(name.length())) : -1;
    }

    private static long parseEnd(String digits) {
        try {
            return Long.parseLong(digits);
        } catch (NumberFormatException e) {
            return -1;
        }
    }
}
