package io.sluice.store.internal.io;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;

/** Whole-file and directory-tree operations built on {@link FileIO}. Stateless; thread-safe. */
public final class FileTree {

    private FileTree() {
    }

    /**
     * Creates {@code directory} and any missing ancestors, durably: after each directory it creates, the
     * parent's entries are synced, so a power cut never loses a directory that something inside it was
     * promised to.
     *
     * @return true if anything was created
     * @throws IOException on an I/O error
     */
    public static boolean createDirectories(FileIO io, Path directory) throws IOException {
        return createDirectories(io, directory, io::syncDirectory);
    }

    /**
     * Creates {@code directory} and any missing ancestors, and marks the parent of each directory it creates in
     * {@code ledger} instead of syncing it now: for directories made on the append path, whose names the next
     * checkpoint forces before it claims anything inside them.
     *
     * @return true if anything was created
     * @throws IOException on an I/O error
     */
    public static boolean createDirectories(FileIO io, Path directory, DurabilityLedger ledger) throws IOException {
        return createDirectories(io, directory, ledger::markDirectory);
    }

    /** What is done with the parent of each directory created. */
    @FunctionalInterface
    private interface ParentAction {
        void run(Path parent) throws IOException;
    }

    private static boolean createDirectories(FileIO io, Path directory, ParentAction parentCreatedIn)
            throws IOException {
        Path absolute = directory.toAbsolutePath().normalize();
        Deque<Path> missing = new ArrayDeque<>();
        for (Path at = absolute; at != null && !io.isDirectory(at); at = at.getParent()) {
            missing.push(at);
        }
        boolean created = false;
        while (!missing.isEmpty()) {
            Path next = missing.pop();
            if (io.createDirectory(next)) {
                created = true;
                if (next.getParent() != null) {
                    parentCreatedIn.run(next.getParent());
                }
            }
        }
        return created;
    }

    /**
     * @return the file's whole content
     * @throws NoSuchFileException if it does not exist
     * @throws IOException on an I/O error
     */
    public static byte[] readAll(FileIO io, Path path) throws IOException {
        try (StoreFile file = io.open(path, FileIO.OpenMode.READ_ONLY)) {
            long size = file.size();
            if (size > Integer.MAX_VALUE - 8) {
                throw new IOException(path + " is too large to read whole (" + size + " bytes)");
            }
            ByteBuffer buffer = ByteBuffer.allocate((int) size);
            while (buffer.hasRemaining()) {
                if (file.read(buffer, buffer.position()) < 0) {
                    break;
                }
            }
            byte[] bytes = new byte[buffer.position()];
            buffer.flip().get(bytes);
            return bytes;
        }
    }

    /**
     * Deletes a directory tree, deepest entries first. Durable once the caller syncs {@code root}'s parent; a
     * crash before that may leave any part of the tree.
     *
     * @return true if anything was deleted
     * @throws IOException on an I/O error
     */
    public static boolean deleteTree(FileIO io, Path root) throws IOException {
        if (!io.exists(root)) {
            return false;
        }
        if (io.isDirectory(root)) {
            for (Path child : io.list(root)) {
                deleteTree(io, child);
            }
        }
        return io.delete(root);
    }
}
