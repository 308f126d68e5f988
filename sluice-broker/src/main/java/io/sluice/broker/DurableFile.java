package io.sluice.broker;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

/**
 * The small files a broker writes whole and must find whole after a crash or a power cut: a cluster node's identity,
 * markers and snapshots, a partition's producers kept across a clean restart. Each is written aside, forced, renamed over the old one, and its directory forced, so a cut at any
 * point leaves the old file (or none) or the new one, never a torn one.
 */
public final class DurableFile {

    private DurableFile() {
    }

    /** Replaces {@code file} with {@code content}, written aside in {@code <file>.tmp}; durable once it returns. */
    public static void write(Path file, String content) throws IOException {
        write(FileIO.DEFAULT, file, file.resolveSibling(file.getFileName() + ".tmp"), content);
    }

    /**
     * Replaces {@code file} with {@code content}; durable once it returns.
     *
     * @param io the file system
     * @param file the file, in an existing directory
     * @param temp where the content is written first, in the same directory (left behind only by a crash, and
     *     overwritten by the next write through it)
     * @param content the whole file
     * @throws IOException if a step fails: the file then holds its old content, or the new one
     */
    public static void write(FileIO io, Path file, Path temp, String content) throws IOException {
        try (StoreFile out = io.open(temp, FileIO.OpenMode.CREATE)) {
            out.truncate(0);
            out.writeFully(ByteBuffer.wrap(content.getBytes(StandardCharsets.UTF_8)), 0);
            out.force();
        }
        io.rename(temp, file);
        io.syncDirectory(file.getParent());
    }

    /** The whole of a file written by {@link #write}, as UTF-8. */
    public static String read(FileIO io, Path file) throws IOException {
        try (StoreFile in = io.open(file, FileIO.OpenMode.READ_ONLY)) {
            ByteBuffer buffer = ByteBuffer.allocate(Math.toIntExact(in.size()));
            while (buffer.hasRemaining()) {
                if (in.read(buffer, buffer.position()) < 0) {
                    throw new IOException(file + " ended before its size");
                }
            }
            return new String(buffer.array(), StandardCharsets.UTF_8);
        }
    }

    /**
     * Creates a directory and the parents it lacks, each one's name forced into its parent; durable once it returns.
     */
    public static void createDirectories(FileIO io, Path directory) throws IOException {
        Path parent = directory.toAbsolutePath().getParent();
        if (parent == null) {
            return;
        }
        if (!io.exists(parent)) {
            createDirectories(io, parent);
        }
        io.createDirectory(directory);
        // Also when it existed: a start cut short may have created it and not forced its name.
        io.syncDirectory(parent);
    }
}
