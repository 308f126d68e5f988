package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.StoreException;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.Closeable;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.zip.CRC32C;

/**
 * A store's root directory: its identity and format marker ({@code sluice.meta}), its process lock
 * ({@code lock}) and its clean-shutdown marker ({@code clean-shutdown}), which covers every log of the store.
 *
 * <pre>
 * sluice.meta, little-endian
 * offset size field
 *   0     4   magic                     0x534C4D44 ("SLMD")
 *   4     4   formatVersion             2
 *   8    16   storeId                   UUID (most, least significant)
 *  24     8   createdMillis
 *  32     4   queueIndexInitialEntries  queue-index files grow from this many entries ...
 *  36     4   queueIndexMaxEntries      ... doubling up to this many (IndexGeometry)
 *  40     4   keyIndexInitialSlots      key-index files grow from this many hash slots ...
 *  44     4   keyIndexMaxSlots          ... doubling up to this many
 *  48     4   keyIndexInitialEntries    and from this many entries ...
 *  52     4   keyIndexMaxEntries        ... doubling up to this many (KeyGeometry)
 *  56     4   crc                       CRC32C of bytes [0, 56)
 * </pre>
 * The geometry is fixed for the store's life. The meta file is written atomically (temp file, fsync, rename,
 * directory fsync); a directory that holds nothing but a lock file and a temp meta file is what a power cut
 * during creation leaves, and is created afresh.
 *
 * <p>Not thread-safe; used while opening and closing the store.
 */
public final class StoreDirectory implements AutoCloseable {

    /** The identity file's name. */
    public static final String META_FILE = "sluice.meta";
    /** The clean-shutdown marker's name. */
    public static final String CLEAN_SHUTDOWN_FILE = "clean-shutdown";
    /** The lock file's name. */
    public static final String LOCK_FILE = "lock";
    /** The on-disk format this code reads and writes. */
    public static final int FORMAT_VERSION = 2;
    static final int MAGIC = 0x534C4D44;
    static final int META_BYTES = 60;
    private static final String META_TEMP = META_FILE + ".tmp";
    /** What a crash during creation can leave in an otherwise empty directory. */
    private static final Set<String> CREATION_LEFTOVERS = Set.of(LOCK_FILE, META_TEMP);

    private final Path root;
    private final FileIO io;
    private final Closeable lock;
    private final UUID storeId;
    private final IndexGeometry indexGeometry;
    private final KeyGeometry keyGeometry;
    private final boolean created;

    private StoreDirectory(Path root, FileIO io, Closeable lock, UUID storeId, IndexGeometry indexGeometry,
                           KeyGeometry keyGeometry, boolean created) {
        this.root = root;
        this.io = io;
        this.lock = lock;
        this.storeId = storeId;
        this.indexGeometry = indexGeometry;
        this.keyGeometry = keyGeometry;
        this.created = created;
    }

    /**
     * Opens (creating if absent or empty) a store directory and takes its lock.
     *
     * @param indexGeometry the queue-index geometry a new store gets
     * @param keyGeometry the key-index geometry a new store gets
     * @param readOnly open an existing store without creating or changing anything
     * @throws StoreCorruptedException for a directory that is not a Sluice store or has another format
     * @throws StoreException if another process holds the store, or (read-only) there is no store
     */
    public static StoreDirectory open(Path root, FileIO io, IndexGeometry indexGeometry, KeyGeometry keyGeometry,
                                      boolean readOnly) throws IOException {
        Path meta = root.resolve(META_FILE);
        if (readOnly) {
            if (!io.exists(meta)) {
                throw new StoreException("no store at " + root + " (" + META_FILE + " is missing)");
            }
            ByteBuffer buffer = readMeta(io, meta);
            return new StoreDirectory(root, io, () -> { }, storeId(buffer), indexGeometry(buffer), keyGeometry(buffer),
                    false);
        }
        FileTree.createDirectories(io, root);
        if (!io.exists(meta) && !onlyCreationLeftovers(io, root)) {
            throw new StoreCorruptedException(root + " is not a Sluice store: it is not empty and has no "
                    + META_FILE, root, -1);
        }
        Closeable lock = io.tryLock(root.resolve(LOCK_FILE));
        if (lock == null) {
            throw new StoreException("store " + root + " is already open (in this or another process)");
        }
        try {
            if (io.exists(meta)) {
                ByteBuffer buffer = readMeta(io, meta);
                return new StoreDirectory(root, io, lock, storeId(buffer), indexGeometry(buffer), keyGeometry(buffer),
                        false);
            }
            UUID id = UUID.randomUUID();
            writeMeta(root, io, id, indexGeometry, keyGeometry);
            return new StoreDirectory(root, io, lock, id, indexGeometry, keyGeometry, true);
        } catch (IOException | RuntimeException e) {
            lock.close();
            throw e;
        }
    }

    private static boolean onlyCreationLeftovers(FileIO io, Path root) throws IOException {
        List<Path> entries = io.list(root);
        return entries.stream().allMatch(p -> CREATION_LEFTOVERS.contains(p.getFileName().toString()));
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
                    + " is not supported; this Sluice reads format version " + FORMAT_VERSION
                    + (version == 1 ? " (format 1 predates index check words and the store-wide checkpoint:"
                    + " re-create the store)" : ""), meta, 4);
        }
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, Math.min(bytes.length, META_BYTES - 4));
        if (bytes.length != META_BYTES || buffer.getInt(META_BYTES - 4) != (int) crc.getValue()) {
            throw new StoreCorruptedException(meta + " is damaged (checksum mismatch)", meta, 0);
        }
        return buffer;
    }

    private static UUID storeId(ByteBuffer meta) {
        return new UUID(meta.getLong(8), meta.getLong(16));
    }

    private static IndexGeometry indexGeometry(ByteBuffer meta) {
        return new IndexGeometry(meta.getInt(32), meta.getInt(36));
    }

    private static KeyGeometry keyGeometry(ByteBuffer meta) {
        return new KeyGeometry(meta.getInt(40), meta.getInt(44), meta.getInt(48), meta.getInt(52));
    }

    private static void writeMeta(Path root, FileIO io, UUID id, IndexGeometry index, KeyGeometry keys)
            throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(META_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putInt(MAGIC).putInt(FORMAT_VERSION).putLong(id.getMostSignificantBits())
                .putLong(id.getLeastSignificantBits()).putLong(System.currentTimeMillis())
                .putInt(index.initialEntries()).putInt(index.maxEntries())
                .putInt(keys.initialSlots()).putInt(keys.maxSlots())
                .putInt(keys.initialEntries()).putInt(keys.maxEntries());
        CRC32C crc = new CRC32C();
        crc.update(buffer.array(), 0, META_BYTES - 4);
        buffer.putInt((int) crc.getValue()).flip();
        Path temp = root.resolve(META_TEMP);
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

    /** @return the queue-index geometry, fixed at creation */
    public IndexGeometry indexGeometry() {
        return indexGeometry;
    }

    /** @return the key-index geometry, fixed at creation */
    public KeyGeometry keyGeometry() {
        return keyGeometry;
    }

    /** @return true if this open created the store */
    public boolean created() {
        return created;
    }

    /** @return the directory */
    public Path root() {
        return root;
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
