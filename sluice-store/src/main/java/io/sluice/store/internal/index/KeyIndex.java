package io.sluice.store.internal.index;

import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.VarHandle;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The key index (RocketMQ's IndexFile): finds the records whose messages carry a key, newest first, without
 * scanning the log. Fixed-size files, each a hash table of slots whose chains link entries newest first:
 *
 * <pre>
 * header (64 bytes, little-endian)
 *   0  4 magic "SKEY"          4  4 version (1)          8  4 slot count        12  4 entry capacity
 *  16  8 first store time     24  8 last store time     32  8 first log pos.    40  8 last log position
 *  48  4 entries written      52 12 reserved
 * slots: slot count x 4 bytes, each 1 + the number of the newest entry in its chain, 0 for empty
 * entries: capacity x 32 bytes
 *   0  8 log position of the record   8  8 store time   16  4 key hash   20  4 previous entry in the chain
 *      (1 + its number, 0 for none)  24  4 message's place in the record   28  4 marker "KEY1"
 * </pre>
 *
 * Files are named by a 20-digit sequence number and filled in log order, so entries are sorted by log
 * position within a file and across files. A hash says nothing certain: the store re-reads each candidate
 * record and checks its topic and keys, so collisions never return another key's messages.
 *
 * <p>One writer ({@link #put}, under the store's append lock, or recovery); any number of readers. A
 * slot is published with a release store after its entry is complete, and read with an acquire load, so
 * a reader that finds an entry through a slot sees all of it. Readers also skip entries past the log
 * position they may read.
 */
public final class KeyIndex implements AutoCloseable {

    static final int MAGIC = 0x59454B53;
    static final int VERSION = 1;
    static final int HEADER_BYTES = 64;
    static final int ENTRY_BYTES = 32;
    static final int ENTRY_MARKER = 0x3159454B;

    private static final int H_MAGIC = 0;
    private static final int H_VERSION = 4;
    private static final int H_SLOTS = 8;
    private static final int H_CAPACITY = 12;
    private static final int H_FIRST_TIME = 16;
    private static final int H_LAST_TIME = 24;
    private static final int H_FIRST_POSITION = 32;
    private static final int H_LAST_POSITION = 40;
    private static final int H_COUNT = 48;

    private static final int E_POSITION = 0;
    private static final int E_TIME = 8;
    private static final int E_HASH = 16;
    private static final int E_PREVIOUS = 20;
    private static final int E_INDEX_IN_RECORD = 24;
    private static final int E_MARKER = 28;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final VarHandle SLOT = ValueLayout.JAVA_INT.withOrder(ByteOrder.LITTLE_ENDIAN).varHandle();

    private final Path directory;
    private final FileIO fileIO;
    private final int slotsPerFile;
    private final int entriesPerFile;
    private volatile KeyFile[] files;
    /** Unforced entries and directory, and files retention removed (see {@link #retireBefore}). */
    private final IndexFiles bookkeeping;

    private KeyIndex(Path directory, FileIO fileIO, int slotsPerFile, int entriesPerFile, KeyFile[] files) {
        this.directory = directory;
        this.fileIO = fileIO;
        this.slotsPerFile = slotsPerFile;
        this.entriesPerFile = entriesPerFile;
        this.files = files;
        this.bookkeeping = new IndexFiles(fileIO, directory);
    }

    /**
     * Opens the key index directory (creating it if needed). Each file keeps the geometry it was created
     * with; new files get {@code slotsPerFile} and {@code entriesPerFile}.
     *
     * @throws IndexDamagedException if a file's header is not a key index header
     */
    public static KeyIndex open(Path directory, FileIO fileIO, int slotsPerFile, int entriesPerFile)
            throws IOException {
        FileTree.createDirectories(fileIO, directory);
        List<KeyFile> files = new ArrayList<>();
        {
            for (Path path : fileIO.list(directory).stream().filter(KeyIndex::isKeyFileName).toList()) {
                try {
                    long sequence = Long.parseLong(path.getFileName().toString());
                    if (!files.isEmpty() && files.getLast().sequence + 1 != sequence) {
                        throw new IndexDamagedException("key index " + directory + " is missing file "
                                + (files.getLast().sequence + 1));
                    }
                    files.add(KeyFile.open(fileIO, path));
                } catch (IOException | RuntimeException e) {
                    for (KeyFile file : files) {
                        file.close();
                    }
                    throw e;
                }
            }
        }
        return new KeyIndex(directory, fileIO, slotsPerFile, entriesPerFile, files.toArray(KeyFile[]::new));
    }

    private static boolean isKeyFileName(Path path) {
        String name = path.getFileName().toString();
        return name.length() == 20 && name.chars().allMatch(Character::isDigit);
    }

    /**
     * @param topic the topic
     * @param key the key
     * @return the 32-bit hash under which the key is indexed for the topic
     */
    public static int hash(String topic, String key) {
        int h = topic.hashCode() * 0x01000193 ^ key.hashCode();
        // MurmurHash3's finalizer spreads String.hashCode's weak low bits over the slots.
        h ^= h >>> 16;
        h *= 0x85ebca6b;
        h ^= h >>> 13;
        h *= 0xc2b2ae35;
        h ^= h >>> 16;
        return h;
    }

    /**
     * Writer: indexes one key of the message at {@code indexInRecord} in the record at {@code logPosition}.
     * Calls must come in log order.
     *
     * @throws IOException if a new file cannot be created (ENOSPC)
     */
    public void put(int keyHash, long logPosition, long storeTimestamp, int indexInRecord) throws IOException {
        KeyFile[] current = files;
        KeyFile file = current.length == 0 ? null : current[current.length - 1];
        if (file == null || file.count == file.capacity) {
            file = roll(current);
        }
        file.put(keyHash, logPosition, storeTimestamp, indexInRecord);
        bookkeeping.markWritten();
    }

    /**
     * Writer: makes sure the active file has room for {@code keys} more entries, starting a new file if not,
     * so that the puts of one append cannot fail half-way.
     *
     * @throws IllegalArgumentException if {@code keys} exceeds what one file holds
     * @throws IOException if a new file cannot be created (ENOSPC)
     */
    public void ensureRoom(int keys) throws IOException {
        if (keys == 0) {
            return;
        }
        if (keys > entriesPerFile) {
            throw new IllegalArgumentException("one append carries " + keys + " keys, more than a key-index file holds"
                    + " (keyIndexEntriesPerFile = " + entriesPerFile + ")");
        }
        KeyFile[] current = files;
        KeyFile file = current.length == 0 ? null : current[current.length - 1];
        if (file == null || file.capacity - file.count < keys) {
            roll(current);
        }
    }

    private KeyFile roll(KeyFile[] current) throws IOException {
        long sequence = current.length == 0 ? 0 : current[current.length - 1].sequence + 1;
        KeyFile file = KeyFile.create(fileIO, directory, sequence, slotsPerFile, entriesPerFile);
        bookkeeping.markCreated();
        KeyFile[] grown = Arrays.copyOf(current, current.length + 1);
        grown[grown.length - 1] = file;
        files = grown;
        return file;
    }

    /** Called for each candidate entry; returns true if the record really carries the key (it counts). */
    @FunctionalInterface
    public interface Candidate {
        /**
         * @param logPosition the record's position
         * @param indexInRecord the message's place in the record
         * @return true if it matched and was kept
         */
        boolean accept(long logPosition, int indexInRecord);
    }

    /**
     * Walks the entries for {@code keyHash}, newest first, offering those with a store time in [fromMillis,
     * toMillis] and a log position in [minPosition, limitPosition) until {@code maxResults} were accepted.
     */
    public void lookup(int keyHash, long fromMillis, long toMillis, long minPosition, long limitPosition,
                       int maxResults, Candidate candidate) {
        KeyFile[] current = files;
        int accepted = 0;
        for (int f = current.length - 1; f >= 0 && accepted < maxResults; f--) {
            KeyFile file = current[f];
            if (file.count == 0 || file.lastTime() < fromMillis || file.firstTime() > toMillis
                    || file.lastPosition() < minPosition) {
                continue;
            }
            int link = file.slot(keyHash);
            while (link != 0 && accepted < maxResults) {
                long at = file.entryOffset(link - 1);
                MemorySegment m = file.mapping;
                int previous = m.get(INT, at + E_PREVIOUS);
                if (m.get(INT, at + E_HASH) == keyHash) {
                    long position = m.get(LONG, at + E_POSITION);
                    long time = m.get(LONG, at + E_TIME);
                    if (position >= minPosition && position < limitPosition && time >= fromMillis && time <= toMillis
                            && candidate.accept(position, m.get(INT, at + E_INDEX_IN_RECORD))) {
                        accepted++;
                    }
                }
                link = previous;
            }
        }
    }

    /**
     * Recovery: forgets every entry for a record at or after {@code logPosition}: files that start there
     * are deleted, the last kept file ends before it, and its slots are rebuilt from the entries kept. The
     * kept entries were forced at the checkpoint that {@code logPosition} comes from, so they are intact.
     */
    public void truncateFrom(long logPosition) throws IOException {
        KeyFile[] current = files;
        int last = current.length - 1;
        boolean deleted = false;
        while (last >= 0) {
            KeyFile file = current[last];
            int keep = file.scanCount(logPosition);
            if (keep > 0) {
                file.rebuild(keep);
                bookkeeping.markWritten();
                break;
            }
            file.close();
            fileIO.delete(file.path);
            deleted = true;
            last--;
        }
        files = Arrays.copyOf(current, last + 1);
        if (deleted) {
            fileIO.syncDirectory(directory);
        }
    }

    /**
     * Retention (under the append lock): deletes the oldest files whose every entry points before {@code
     * logMinPosition}, never the last. As with queue indexes, deleted files stay mapped until the next call
     * (or close), so a lookup walking them never finds the mapping gone.
     *
     * @return the number of files deleted
     */
    public int retireBefore(long logMinPosition) throws IOException {
        bookkeeping.closeRetired();
        KeyFile[] current = files;
        int drop = 0;
        while (drop < current.length - 1 && current[drop].lastPosition() < logMinPosition) {
            drop++;
        }
        if (drop == 0) {
            return 0;
        }
        files = Arrays.copyOfRange(current, drop, current.length);
        bookkeeping.retire(current, drop);
        return drop;
    }

    /** Forces written entries to the device if any were written since the last force. */
    public void forceIfDirty() throws IOException {
        bookkeeping.forceIfDirty(files);
    }

    /** @return entries in all files */
    public long entryCount() {
        long total = 0;
        for (KeyFile file : files) {
            total += file.count;
        }
        return total;
    }

    /** @return the number of files */
    public int fileCount() {
        return files.length;
    }

    /**
     * Visits every entry of every file, oldest first (the verifier's view).
     *
     * @param visitor receives (log position, key hash, index in record)
     */
    public void forEach(EntryVisitor visitor) {
        for (KeyFile file : files) {
            for (int n = 0; n < file.count; n++) {
                long at = file.entryOffset(n);
                visitor.visit(file.mapping.get(LONG, at + E_POSITION), file.mapping.get(INT, at + E_HASH),
                        file.mapping.get(INT, at + E_INDEX_IN_RECORD));
            }
        }
    }

    /** Receives one entry. */
    @FunctionalInterface
    public interface EntryVisitor {
        /**
         * @param logPosition the record's position
         * @param keyHash the key's hash
         * @param indexInRecord the message's place in the record
         */
        void visit(long logPosition, int keyHash, int indexInRecord);
    }

    @Override
    public void close() throws IOException {
        KeyFile[] closing = files;
        files = new KeyFile[0];
        bookkeeping.close(closing);
    }

    /** One mapped key-index file. */
    private static final class KeyFile implements IndexFiles.MappedFile {
        final Path path;
        final long sequence;
        final StoreFile file;
        final Arena arena;
        final MemorySegment mapping;
        final int slots;
        final int capacity;
        /** Entries written; the writer's copy of the header field. */
        volatile int count;

        private KeyFile(Path path, long sequence, StoreFile file, Arena arena, MemorySegment mapping) {
            this.path = path;
            this.sequence = sequence;
            this.file = file;
            this.arena = arena;
            this.mapping = mapping;
            this.slots = mapping.get(INT, H_SLOTS);
            this.capacity = mapping.get(INT, H_CAPACITY);
            this.count = mapping.get(INT, H_COUNT);
        }

        static long bytes(int slots, int capacity) {
            return HEADER_BYTES + (long) slots * 4 + (long) capacity * ENTRY_BYTES;
        }

        static KeyFile create(FileIO io, Path directory, long sequence, int slots, int capacity) throws IOException {
            Path path = directory.resolve(String.format("%020d", sequence));
            StoreFile file = io.open(path, FileIO.OpenMode.CREATE);
            Arena arena = Arena.ofShared();
            try {
                file.allocate(bytes(slots, capacity), false);
                MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, bytes(slots, capacity), arena);
                mapping.set(INT, H_SLOTS, slots);
                mapping.set(INT, H_CAPACITY, capacity);
                mapping.set(INT, H_VERSION, VERSION);
                mapping.set(INT, H_MAGIC, MAGIC);
                // The directory is forced by the checkpoint, not under the append lock (see forceIfDirty).
                return new KeyFile(path, sequence, file, arena, mapping);
            } catch (IOException | RuntimeException e) {
                arena.close();
                file.close();
                io.delete(path);
                throw e;
            }
        }

        static KeyFile open(FileIO io, Path path) throws IOException {
            StoreFile file = io.open(path, FileIO.OpenMode.READ_WRITE);
            Arena arena = Arena.ofShared();
            try {
                long size = file.size();
                if (size < HEADER_BYTES) {
                    throw new IndexDamagedException("key index file " + path + " is too short for its header");
                }
                MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, size, arena);
                int slots = mapping.get(INT, H_SLOTS);
                int capacity = mapping.get(INT, H_CAPACITY);
                int count = mapping.get(INT, H_COUNT);
                if (mapping.get(INT, H_MAGIC) != MAGIC || mapping.get(INT, H_VERSION) != VERSION || slots <= 0
                        || capacity <= 0 || size != bytes(slots, capacity) || count < 0 || count > capacity) {
                    throw new IndexDamagedException("key index file " + path + " has a damaged or unknown header");
                }
                return new KeyFile(path, Long.parseLong(path.getFileName().toString()), file, arena, mapping);
            } catch (IOException | RuntimeException e) {
                arena.close();
                file.close();
                throw e;
            }
        }

        long entryOffset(int n) {
            return HEADER_BYTES + (long) slots * 4 + (long) n * ENTRY_BYTES;
        }

        private long slotOffset(int keyHash) {
            return HEADER_BYTES + (long) Integer.remainderUnsigned(keyHash, slots) * 4;
        }

        int slot(int keyHash) {
            return (int) SLOT.getAcquire(mapping, slotOffset(keyHash));
        }

        long firstTime() {
            return mapping.get(LONG, H_FIRST_TIME);
        }

        long lastTime() {
            return mapping.get(LONG, H_LAST_TIME);
        }

        long lastPosition() {
            return mapping.get(LONG, H_LAST_POSITION);
        }

        void put(int keyHash, long logPosition, long storeTimestamp, int indexInRecord) {
            int n = count;
            long at = entryOffset(n);
            long slot = slotOffset(keyHash);
            mapping.set(LONG, at + E_POSITION, logPosition);
            mapping.set(LONG, at + E_TIME, storeTimestamp);
            mapping.set(INT, at + E_HASH, keyHash);
            mapping.set(INT, at + E_PREVIOUS, (int) SLOT.get(mapping, slot));
            mapping.set(INT, at + E_INDEX_IN_RECORD, indexInRecord);
            mapping.set(INT, at + E_MARKER, ENTRY_MARKER);
            if (n == 0) {
                mapping.set(LONG, H_FIRST_TIME, storeTimestamp);
                mapping.set(LONG, H_FIRST_POSITION, logPosition);
            }
            mapping.set(LONG, H_LAST_TIME, Math.max(storeTimestamp, n == 0 ? storeTimestamp : lastTime()));
            mapping.set(LONG, H_LAST_POSITION, logPosition);
            mapping.set(INT, H_COUNT, n + 1);
            SLOT.setRelease(mapping, slot, n + 1);
            count = n + 1;
        }

        /**
         * @return how many leading entries are complete and index records before {@code logPosition}. Never
         *     more than the header's count: that was forced with the entries at every checkpoint and only grows,
         *     and anything past it is left over from before an earlier truncation.
         */
        int scanCount(long logPosition) {
            int n = 0;
            int limit = Math.min(capacity, count);
            while (n < limit) {
                long at = entryOffset(n);
                if (mapping.get(INT, at + E_MARKER) != ENTRY_MARKER || mapping.get(LONG, at + E_POSITION) >= logPosition) {
                    break;
                }
                n++;
            }
            return n;
        }

        /** Keeps the first {@code keep} entries and rebuilds the slots and header from them. */
        void rebuild(int keep) {
            mapping.asSlice(HEADER_BYTES, (long) slots * 4).fill((byte) 0);
            long firstTime = 0;
            long lastTime = 0;
            for (int n = 0; n < keep; n++) {
                long at = entryOffset(n);
                long slot = slotOffset(mapping.get(INT, at + E_HASH));
                mapping.set(INT, at + E_PREVIOUS, (int) SLOT.get(mapping, slot));
                SLOT.set(mapping, slot, n + 1);
                long time = mapping.get(LONG, at + E_TIME);
                firstTime = n == 0 ? time : firstTime;
                lastTime = Math.max(lastTime, time);
            }
            if (keep < capacity) {
                // Only the first entry after the kept ones is cleared: nothing past the count is ever read,
                // and the writer overwrites entries in order.
                mapping.asSlice(entryOffset(keep), ENTRY_BYTES).fill((byte) 0);
            }
            mapping.set(LONG, H_FIRST_TIME, firstTime);
            mapping.set(LONG, H_LAST_TIME, lastTime);
            mapping.set(LONG, H_FIRST_POSITION, keep == 0 ? 0 : mapping.get(LONG, entryOffset(0) + E_POSITION));
            mapping.set(LONG, H_LAST_POSITION, keep == 0 ? 0 : mapping.get(LONG, entryOffset(keep - 1) + E_POSITION));
            mapping.set(INT, H_COUNT, keep);
            count = keep;
        }

        @Override
        public Path path() {
            return path;
        }

        @Override
        public StoreFile storeFile() {
            return file;
        }

        @Override
        public void close() throws IOException {
            try {
                arena.close();
            } finally {
                file.close();
            }
        }
    }
}
