package io.sluice.store.io;

import java.io.IOException;
import java.nio.file.FileStore;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * The store's file seam: how it opens files and changes directories. The default goes to the operating
 * system; tests substitute one that injects faults. Implementations must be thread-safe.
 */
public interface FileIO {

    /** The operating system's files. */
    FileIO DEFAULT = new DefaultFileIO();

    /**
     * Opens a file for reading and writing.
     *
     * @param path the file
     * @param create create it if it does not exist
     * @return the open file
     * @throws IOException on an I/O error, or if it does not exist and {@code create} is false
     */
    StoreFile open(Path path, boolean create) throws IOException;

    /**
     * Forces a directory's entries (after files in it were created, renamed or deleted).
     *
     * @param directory the directory
     * @throws IOException on an I/O error
     */
    void syncDirectory(Path directory) throws IOException;

    /**
     * Tells how full the filesystem holding {@code path} is; retention and the append guard act on it.
     *
     * @param path a file or directory on the filesystem
     * @return its total and usable bytes
     * @throws IOException on an I/O error
     */
    default DiskSpace diskSpace(Path path) throws IOException {
        FileStore store = Files.getFileStore(path);
        return new DiskSpace(store.getTotalSpace(), store.getUnallocatedSpace(), store.getUsableSpace());
    }
}
