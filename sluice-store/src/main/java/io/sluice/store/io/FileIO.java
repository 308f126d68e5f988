package io.sluice.store.io;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;

/**
 * The store's file seam: every operation the store performs on files and directories goes through here, so
 * that a test can substitute a file system that injects faults or simulates a power cut. The default goes to
 * the operating system.
 *
 * <h2>Durability contract</h2>
 * Implementations follow POSIX, and the store relies on nothing stronger:
 * <ul>
 * <li>bytes written to a file (by {@link StoreFile#writeFully}, {@link StoreFile#writeDirect}, a store into a
 *     read-write mapping, {@link StoreFile#zeroRange}, {@link StoreFile#allocate} or
 *     {@link StoreFile#truncate}), and the file's size, are durable only once {@link StoreFile#force()}
 *     returned; until then any of them may be lost, kept, or (per 512-byte sector) torn by a power cut, in any
 *     order;</li>
 * <li>a name created, deleted or renamed in a directory is durable only once {@link #syncDirectory} of that
 *     directory returned.</li>
 * </ul>
 *
 * <p>Implementations must be thread-safe.
 */
public interface FileIO {

    /**
     * The operating system's files: through the C library's calls on Linux ({@code errno} on every failure, no
     * reaction to interrupts), through {@code FileChannel} elsewhere.
     */
    FileIO DEFAULT = ChannelFileIO.platformDefault();

    /** How a file is opened. */
    enum OpenMode {
        /** Reading only; the file must exist. Mappings must be read-only. */
        READ_ONLY,
        /** Reading and writing; the file must exist. */
        READ_WRITE,
        /** Reading and writing; the file is created (empty) if it does not exist. */
        CREATE
    }

    /**
     * Opens a file.
     *
     * @param path the file
     * @param mode how
     * @return the open file
     * @throws java.nio.file.NoSuchFileException if it does not exist and {@code mode} is not CREATE
     * @throws IOException on another I/O error
     */
    StoreFile open(Path path, OpenMode mode) throws IOException;

    /**
     * Forces a directory's entries: the names created, deleted or renamed in it become durable.
     *
     * @param directory the directory
     * @throws IOException on an I/O error
     */
    void syncDirectory(Path directory) throws IOException;

    /**
     * Makes everything written to the file system holding {@code path} durable, whatever file it was written
     * through ({@code syncfs}): for files whose cached pages look right but whose durable content is unknown,
     * such as those a killed process wrote and did not force. One call instead of a force per file.
     *
     * @param path a file or directory on the file system
     * @return false where this seam cannot do it; the caller then forces each file
     * @throws IOException on an I/O error (a write-back error of the file system included)
     */
    default boolean syncFileSystem(Path path) throws IOException {
        return false;
    }

    /** Syncs of one file system through a descriptor held open ({@link #openFileSystemSync}). */
    interface FileSystemSync extends Closeable {
        /**
         * Makes everything written to the file system durable ({@code syncfs}).
         *
         * @throws IOException on an I/O error, a write-back error the kernel met since the handle opened included
         */
        void sync() throws IOException;
    }

    /**
     * Opens a handle whose {@link FileSystemSync#sync} makes everything written to the file system holding
     * {@code path} durable: {@code syncfs} on a descriptor opened now, so that a write-back error the kernel meets from
     * now on, whatever write-back met it, is reported by the next sync (a descriptor opened after the error would not
     * report it).
     *
     * @param path a file or directory on the file system
     * @return the handle, or null where this seam cannot sync a file system
     * @throws IOException on an I/O error
     */
    default FileSystemSync openFileSystemSync(Path path) throws IOException {
        return null;
    }

    /**
     * Tells how full the filesystem holding {@code path} is; retention and the append guard act on it.
     *
     * @param path a file or directory on the filesystem
     * @return its total and usable bytes
     * @throws IOException on an I/O error
     */
    DiskSpace diskSpace(Path path) throws IOException;

    /** @return true if a file or directory exists at {@code path} @throws IOException on an I/O error */
    boolean exists(Path path) throws IOException;

    /** @return true if {@code path} is a directory @throws IOException on an I/O error */
    boolean isDirectory(Path path) throws IOException;

    /**
     * @param directory a directory
     * @return the entries in it (files and directories), sorted by name
     * @throws IOException on an I/O error, or if it is not a directory
     */
    List<Path> list(Path directory) throws IOException;

    /**
     * Creates one directory, whose parent must exist. Not durable until the parent is synced.
     *
     * @return false if it already existed
     * @throws IOException on an I/O error
     */
    boolean createDirectory(Path directory) throws IOException;

    /**
     * Deletes a file or an empty directory. Not durable until its directory is synced.
     *
     * @return false if nothing was there
     * @throws IOException on an I/O error
     */
    boolean delete(Path path) throws IOException;

    /**
     * Renames a file atomically within one directory, replacing {@code target} if it exists. Not durable until
     * the directory is synced.
     *
     * @throws IOException on an I/O error
     */
    void rename(Path source, Path target) throws IOException;

    /**
     * Takes an exclusive lock on a file for this process, creating the file if needed; closing the returned
     * handle releases it.
     *
     * @return the held lock, or null if another holder (in this or another process) has it
     * @throws IOException on an I/O error
     */
    Closeable tryLock(Path path) throws IOException;
}
