package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.StoreException;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * A store's directory: its identity and format marker ({@code sluice.meta}), its process lock
 * ({@code lock}) and its clean-shutdown marker ({@code clean-shutdown}).
 *
 * <pre>
 * sluice.meta, little-endian
 * offset size field
 *   0     4   magic                     0x534C4D44 ("SLMD")
 *   4     4   formatVersion             1
 *   8    16   storeId                   UUID (most, least significant)
 *  24     8   createdMillis
 *  32     4   queueIndexEntriesPerFile  fixed for the store's life
 *  36     4   crc                       CRC32C of bytes [0, 36)
 * </pre>
 *
 * Not thread-safe; used while opening and closing the store.
 */
public final class StoreDirectory implements AutoCloseable {

    /** The identity file's name. */
    public static final String META_FILE = "sluice.meta";
    /** The clean-shutdown marker's name. */
    public static final String CLEAN_SHUTDOWN_FILE = "clean-shutdown";
    /** The lock file's name. */
    public static final String LOCK_FILE = "lock";
    /** The on-disk format this code reads and writes. */
    public static final int FORMAT_VERSION = 1;
    static final int MAGIC = 0x534C4D44;
    static final int META_BYTES = 40;

    private final Path root;
    private final FileIO io;
    private final Closeable lock;
    private final UUID storeId;
    private final int queueIndexEntriesPerFile;

    private StoreDirectory(Path root, FileIO io, Closeable lock, UUID storeId, int queueIndexEntriesPerFile) {
        this.root = root;
        this.io = io;
        this.lock = lock;
        this.storeId = storeId;
        this.queueIndexEntriesPerFile = queueIndexEntriesPerFile;
    }

    /**
     * Opens (creating if absent or empty) a store directory and takes its lock.
     *
     * @throws StoreCorruptedException for a directory that is not a Sluice store or has another format
     * @throws StoreException if another process holds the store
     */
    public static StoreDirectory open(Path root, FileIO io, int queueIndexEntriesPerFile) throws IOException {
        FileTree.createDirectories(io, root);
        Path meta = root.resolve(META_FILE);
        if (!io.exists(meta) && !isEmpty(io, root)) {
            throw new StoreCorruptedException(root + " is not a Sluice store: it is not empty and has no "
                    + META_FILE, root, -1);
        }
        Closeable lock = io.tryLock(root.resolve(LOCK_FILE));
        if (lock == null) {
            throw new StoreException("store " + root + " is already open (in this or another process)");
        }
        try {
            UUID id;
            int entries = queueIndexEntriesPerFile;
            if (io.exists(meta)) {
                ByteBuffer buffer = readMeta(io, meta);
                id = new UUID(buffer.getLong(8), buffer.getLong(16));
                entries = buffer.getInt(32);
                if (entries != queueIndexEntriesPerFile) {
                    org.slf4j.LoggerFactory.getLogger(StoreDirectory.class).warn(
                            "queueIndexEntriesPerFile is fixed at creation: using the store's {} instead of {}",
                            entries, queueIndexEntriesPerFile);
                }
            } else {
                id = UUID.randomUUID();
                writeMeta(root, io, id, entries);
            }
            return new StoreDirectory(root, io, lock, id, entries);
        } catch (IOException | RuntimeException e) {
            lock.close();
            throw e;
        }
    }

    private static boolean isEmpty(FileIO io, Path root) throws IOException {
        return io.list(root).stream().allMatch(p -> p.getFileName().toString().equals(LOCK_FILE));
    }

    private static ByteBuffer readMeta(FileIO io, Path meta) throws IOException {
        byte[] bytes = FileTree.readAll(io, meta);
        ByteBuffer buffer = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        if (bytes.length < 8 || buffer.getInt(0) != MAGIC) {
            throw new StoreCorruptedException(meta + " is not a Sluice store identity file (bad magic)", meta, 0);
        }
        int version = buffer.getInt(4);
        if (version != FORMAT_VERSION) {
            throw new StoreCorruptedException(meta + ": store format version " + version
                    + " is not supported; this Sluice reads format version " + FORMAT_VERSION, meta, 4);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, Math.min(bytes.length, META_BYTES - 4));
        if (bytes.length != META_BYTES || buffer.getInt(META_BYTES - 4) != (int) crc.getValue()) {
            throw new StoreCorruptedException(meta + " is damaged (checksum mismatch)", meta, 0);
        }
        return buffer;
    }

    private static void writeMeta(Path root, FileIO io, UUID id, int entries) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(META_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putInt(FORMAT_VERSION).putLong(id.getMostSignificantBits())
                .putLong(id.getLeastSignificantBits()).putLong(System.currentTimeMillis()).putInt(entries);
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, META_BYTES - 4);
        buffer.putInt((int) crc.getValue()).flip();
        Path temp = root.resolve(META_FILE + ".tmp");
        try (StoreFile file = io.open(temp, FileIO.OpenMode.CREATE)) {
            file.truncate(0);
            file.writeFully(buffer, 0);
            file.force();
        }
        io.rename(temp, root.resolve(META_FILE));
        io.syncDirectory(root);
    }

    /** @return the store's identity */
    public UUID storeId() {
        return storeId;
    }

    /** @return entries per queue-index file, as fixed at creation */
    public int queueIndexEntriesPerFile() {
        return queueIndexEntriesPerFile;
    }

    /** @return the directory */
    public Path root() {
        return root;
    }

    /** @return the commit log's directory */
    public Path logDirectory() {
        return root.resolve("log");
    }

    /** @return the queue indexes' directory */
    public Path indexDirectory() {
        return root.resolve("index");
    }

    /** @return the key index's directory */
    public Path keyIndexDirectory() {
        return root.resolve("keys");
    }

    /** @return true if the last close was clean */
    public boolean wasCleanlyShutDown() throws IOException {
        return io.exists(root.resolve(CLEAN_SHUTDOWN_FILE));
    }

    /** Removes the clean-shutdown marker, durably, before the store changes anything. */
    public void clearCleanShutdown() throws IOException {
        if (io.delete(root.resolve(CLEAN_SHUTDOWN_FILE))) {
            io.syncDirectory(root);
        }
    }

    /** Writes the clean-shutdown marker, durably, as the last act of a clean close. */
    public void markCleanShutdown() throws IOException {
        try (StoreFile file = io.open(root.resolve(CLEAN_SHUTDOWN_FILE), FileIO.OpenMode.CREATE)) {
            file.force();
        }
        io.syncDirectory(root);
    }

    /** @return the file seam the store uses */
    public FileIO io() {
        return io;
    }

    /** Releases the lock. */
    @Override
    public void close() throws IOException {
        lock.close();
    }
}
