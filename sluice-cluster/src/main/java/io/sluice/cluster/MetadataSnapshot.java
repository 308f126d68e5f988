package io.sluice.cluster;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * A snapshot of the metadata: the commands a node applies, in order, to reach the state of the node that wrote it
 * (docs/format.md, "Cluster"). The file:
 *
 * <pre>
 *   sluice-metadata-snapshot 1\n
 *   untracked=&lt;true|false&gt;\n
 *   &lt;index&gt; &lt;command&gt;\n      one per command: members at index -1, then the topics' creations and growths and
 *   ...                        one offsets command per group, together in log order
 *   crc32c=&lt;hex of the CRC32C of everything before&gt;\n
 * </pre>
 *
 * A node installing a snapshot reads the leader's a chunk at a time ({@link #chunk}, {@link #fetch}).
 *
 * @param untracked whether the log held topics or offsets before any member record (a cluster from before the
 *     records)
 * @param lines the commands, each with the index of the entry it was logged in
 */
record MetadataSnapshot(boolean untracked, List<Logged> lines) {

    /** A command as logged, with its entry's index. */
    record Logged(long index, String command) {
    }

    /** The first line of a snapshot file. */
    private static final String HEADER = "sluice-metadata-snapshot 1";

    /** The most of a snapshot one answer carries (one gRPC message each; Ratis's limit is 64 MiB). */
    static final int CHUNK_BYTES = 1 << 20;

    /** @return the file's content */
    String text() {
        StringBuilder body = new StringBuilder(HEADER).append('\n').append("untracked=").append(untracked)
                .append('\n');
        for (Logged line : lines) {
            body.append(line.index()).append(' ').append(line.command()).append('\n');
        }
        return body + "crc32c=" + crcOf(body.toString()) + "\n";
    }

    private static String crcOf(String body) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(body.getBytes(StandardCharsets.UTF_8));
        return Long.toHexString(crc.getValue());
    }

    /** @throws IOException if the text is not a whole snapshot (a torn or damaged file) */
    static MetadataSnapshot parse(String text) throws IOException {
        int crcAt = text.lastIndexOf("crc32c=");
        if (crcAt < 0 || !text.endsWith("\n") || !text.startsWith(HEADER + "\n")
                || !text.substring(crcAt).equals("crc32c=" + crcOf(text.substring(0, crcAt)) + "\n")) {
            throw new IOException("not a whole metadata snapshot (its checksum or framing does not match)");
        }
        String[] lines = text.substring(0, crcAt).split("\n");
        if (lines.length < 2 || !lines[1].startsWith("untracked=")) {
            throw new IOException("a metadata snapshot without its untracked line");
        }
        List<Logged> commands = new ArrayList<>();
        for (int i = 2; i < lines.length; i++) {
            int space = lines[i].indexOf(' ');
            try {
                commands.add(new Logged(Long.parseLong(lines[i].substring(0, Math.max(space, 0))),
                        lines[i].substring(space + 1)));
            } catch (NumberFormatException e) {
                throw new IOException("a metadata snapshot line without its index: " + lines[i], e);
            }
        }
        return new MetadataSnapshot(Boolean.parseBoolean(lines[1].substring("untracked=".length())), commands);
    }

    /** @throws IOException if the file cannot be read or is not a whole snapshot */
    static MetadataSnapshot read(Path path) throws IOException {
        try {
            return parse(Files.readString(path, StandardCharsets.UTF_8));
        } catch (IOException e) {
            throw new IOException("the metadata snapshot " + path + " is damaged: " + e.getMessage(), e);
        }
    }

    /**
     * Answers {@code snapshot <term> <index> <from> <max>}: {@code <term> <index> <size>}, a newline, and up to
     * {@code <max>} bytes (at most {@link #CHUNK_BYTES}) from byte {@code <from>} on of the snapshot at that term and
     * index ({@code -1 -1}: the latest); {@code none} if there is no snapshot yet. Only the chunk asked for is read: a
     * large snapshot is read a MiB per query, not whole each time.
     *
     * @param snapshots the group's snapshots
     * @param words the query's words
     * @return the answer
     * @throws IOException if the snapshot asked for cannot be read
     * @throws IllegalArgumentException if it has no such bytes
     */
    static ByteString chunk(SnapshotStorage snapshots, String[] words) throws IOException {
        long term = Long.parseLong(words[1]);
        long index = Long.parseLong(words[2]);
        long from = Long.parseLong(words[3]);
        int max = Math.min(Integer.parseInt(words[4]), CHUNK_BYTES);
        SingleFileSnapshotInfo latest = snapshots.getLatestSnapshot();
        if (index < 0 && latest == null) {
            return ByteString.copyFromUtf8("none");
        }
        TermIndex at = index < 0 ? latest.getTermIndex() : TermIndex.valueOf(term, index);
        try (FileChannel file = FileChannel.open(snapshots.getSnapshotFile(at.getTerm(), at.getIndex()).toPath())) {
            long size = file.size();
            if (from < 0 || from > size || max < 1) {
                throw new IllegalArgumentException("no bytes " + from + " (" + max + " of them) in the snapshot at "
                        + at + ", of " + size + " bytes");
            }
            ByteBuffer chunk = ByteBuffer.allocate((int) Math.min(max, size - from));
            while (chunk.hasRemaining() && file.read(chunk, from + chunk.position()) >= 0) {
                // reads until the chunk is full
            }
            if (chunk.hasRemaining()) {
                throw new IOException("the snapshot at " + at + " ended before its size, " + size + " bytes");
            }
            ByteString header = ByteString.copyFromUtf8(at.getTerm() + " " + at.getIndex() + " " + size + "\n");
            return header.concat(ByteString.copyFrom(chunk.flip()));
        }
    }

    /** Reads one chunk of a snapshot, as {@link #chunk} answers: the query's text to its answer's bytes. */
    @FunctionalInterface
    interface Source {
        /** @return the answer to {@code query} */
        ByteString ask(String query) throws IOException;
    }

    /**
     * Reads the latest snapshot of a leader, a chunk of at most {@code chunk} bytes at a time, every chunk of the same
     * snapshot (one the leader deleted meanwhile fails the read, which is tried again).
     *
     * @return the snapshot's term and index and its text, or null if the leader has none
     */
    static Map.Entry<TermIndex, String> fetch(Source source, int chunk) throws IOException {
        ByteArrayOutputStream text = new ByteArrayOutputStream();
        TermIndex at = null;
        long size = 0;
        do {
            ByteString answer = source.ask("snapshot " + (at == null ? "-1 -1" : at.getTerm() + " " + at.getIndex())
                    + " " + text.size() + " " + chunk);
            String head = answer.substring(0, Math.min(answer.size(), 100)).toStringUtf8();
            int newline = head.indexOf('\n');
            if (newline < 0) {
                if (head.equals("none") && at == null) {
                    return null;
                }
                throw new IOException("not a snapshot chunk: " + head);
            }
            String[] words = head.substring(0, newline).split(" ");
            TermIndex chunkAt = TermIndex.valueOf(Long.parseLong(words[0]), Long.parseLong(words[1]));
            if (at != null && !at.equals(chunkAt)) {
                throw new IOException("the snapshot changed from " + at + " to " + chunkAt + " while it was read");
            }
            at = chunkAt;
            size = Long.parseLong(words[2]);
            ByteString bytes = answer.substring(newline + 1);
            if (bytes.isEmpty() && text.size() < size) {
                throw new IOException("the snapshot at " + at + " ended at byte " + text.size() + " of " + size);
            }
            bytes.writeTo(text);
        } while (text.size() < size);
        return Map.entry(at, text.toString(StandardCharsets.UTF_8));
    }
}
