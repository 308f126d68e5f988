package io.sluice.store.internal.index;

import io.sluice.store.internal.cache.RefCounted;
import io.sluice.store.internal.io.DurabilityLedger;
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
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The key index (RocketMQ's IndexFile): finds the records whose messages carry a key, newest first, without
 * scanning the log. Files, each a hash table of slots whose chains link entries newest first:
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
 * Files are named by a 20-digit sequence number, sized per {@link KeyGeometry} (larger when one append carries
 * more keys than the scheduled size holds), and filled in log order, so entries are sorted by log position
 * within a file and across files. A hash says nothing certain: the store re-reads each candidate record and
 * checks its topic and keys, so collisions never return another key's messages.
 *
 * <h2>Durability</h2>
 * Every file written is marked in the log's {@link DurabilityLedger}; the checkpoint forces it before claiming
 * the entries durable. After a power cut, a file whose header is damaged or whose size was lost was created
 * after the last checkpoint, so it holds only entries that recovery re-derives from the log: it is deleted, with
 * every later file. {@link #truncateFrom} erases what lies past a cut, so no stale entry ever comes back.
 *
 * <p>One writer ({@link #put}, under the store's append lock, or recovery); any number of readers, each holding
 * the files it walks. A slot is published with a release store after its entry is complete, and read with an
 * acquire load, so a reader that finds an entry through a slot sees all of it. Readers also skip entries past
 * the log position they may read.
 */
public final class KeyIndex implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KeyIndex.class);

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
    private final FileIO io;
    private final KeyGeometry geometry;
    private final DurabilityLedger ledger;
    private final boolean readOnly;
    private volatile KeyFile[] files;

    private KeyIndex(Path directory, FileIO io, KeyGeometry geometry, DurabilityLedger ledger, boolean readOnly,
                     KeyFile[] files) {
        this.directory = directory;
        this.io = io;
        this.geometry = geometry;
        this.ledger = ledger;
        this.readOnly = readOnly;
        this.files = files;
    }

    /**
     * Opens the key index directory. A file with a damaged header (or one that follows such a file) was created
     * after the last checkpoint and is deleted, unless read-only: then it is left out.
     *
     * @throws IndexDamagedException if a file is missing between two others
     */
    public static KeyIndex open(Path directory, FileIO io, KeyGeometry geometry, DurabilityLedger ledger,
                                boolean readOnly) throws IOException {
        List<KeyFile> opened = new ArrayList<>();
        try {
            if (io.isDirectory(directory)) {
                List<Path> names = io.list(directory).stream().filter(KeyIndex::isKeyFileName).toList();
                for (int i = 0; i < names.size(); i++) {
                    Path path = names.get(i);
                    long sequence = Long.parseLong(path.getFileName().toString());
                    if (!opened.isEmpty() && opened.getLast().sequence + 1 != sequence) {
                        throw new IndexDamagedException("key index " + directory + " is missing file "
                                + (opened.getLast().sequence + 1));
                    }
                    KeyFile file = KeyFile.open(io, path, sequence, ledger, readOnly);
                    if (file == null) {
                        dropFrom(io, names.subList(i, names.size()), readOnly, ledger, directory);
                        break;
                    }
                    opened.add(file);
                }
            }
        } catch (IOException | RuntimeException e) {
            opened.forEach(KeyFile::retire);
            throw e;
        }
        return new KeyIndex(directory, io, geometry, ledger, readOnly, opened.toArray(KeyFile[]::new));
    }

    private static void dropFrom(FileIO io, List<Path> damaged, boolean readOnly, DurabilityLedger ledger,
                                 Path directory) throws IOException {
        LOG.info("key index {}: {} has a damaged header (created after the last checkpoint); {} it and {} later"
                + " file(s)", directory, damaged.getFirst().getFileName(), readOnly ? "leaving out" : "deleting",
                damaged.size() - 1);
        if (readOnly) {
            return;
        }
        for (Path path : damaged.reversed()) {
            io.delete(path);
        }
        ledger.markDirectory(directory);
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
     * Calls must come in log order, after {@link #ensureRoom} made room.
     */
    public void put(int keyHash, long logPosition, long storeTimestamp, int indexInRecord) {
        KeyFile[] current = files;
        KeyFile file = current[current.length - 1];
        file.put(keyHash, logPosition, storeTimestamp, indexInRecord);
        file.markWritten();
    }

    /**
     * Writer: makes sure the active file has room for {@code keys} more entries, starting a new file if not
     * (larger than scheduled if one append carries that many keys), so the puts of one append cannot fail
     * half-way.
     *
     * @throws IOException if a new file cannot be created (ENOSPC)
     */
    public void ensureRoom(int keys) throws IOException {
        if (keys == 0) {
            return;
        }
        if (readOnly) {
            throw new IllegalStateException("key index " + directory + " is open for reading only");
        }
        KeyFile[] current = files;
        KeyFile file = current.length == 0 ? null : current[current.length - 1];
        if (file == null || file.capacity - file.count < keys) {
            roll(current, keys);
        }
    }

    private void roll(KeyFile[] current, int keys) throws IOException {
        long sequence = current.length == 0 ? 0 : current[current.length - 1].sequence + 1;
        if (current.length == 0) {
            FileTree.createDirectories(io, directory, ledger);
        }
        KeyFile file = KeyFile.create(io, directory, sequence, geometry.slotsOf(sequence),
                Math.max(geometry.entriesOf(sequence), keys), ledger);
        KeyFile[] grown = Arrays.copyOf(current, current.length + 1);
        grown[grown.length - 1] = file;
        files = grown;
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
     * toMillis] and a log position in [minPosition, limitPosition) until {@code maxResults} were accepted. Each
     * file is held while walked, so retention never unmaps it underneath.
     */
    public void lookup(int keyHash, long fromMillis, long toMillis, long minPosition, long limitPosition,
                       int maxResults, Candidate candidate) {
        KeyFile[] current = files;
        int accepted = 0;
        for (int f = current.length - 1; f >= 0 && accepted < maxResults; f--) {
            KeyFile file = current[f];
            if (!file.tryRetain()) {
                continue; // deleted by retention meanwhile: it only held entries before the log's start
            }
            try {
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
                        if (position >= minPosition && position < limitPosition && time >= fromMillis
                                && time <= toMillis && candidate.accept(position, m.get(INT, at + E_INDEX_IN_RECORD))) {
                            accepted++;
                        }
                    }
                    link = previous;
                }
            } finally {
                file.release();
            }
        }
    }

    /**
     * Recovery: forgets every entry for a record at or after {@code logPosition}: files whose first entry is
     * there are deleted (newest first); in the last kept file the entries past the cut are erased and, if any
     * was there, the slots and header are rebuilt from the entries kept. Entries below the log's durable
     * position are intact (the checkpoint forced them), and past it they are intact or erased, never stale, so
     * the kept entries are a run found by binary search.
     */
    public void truncateFrom(long logPosition) throws IOException {
        if (readOnly) {
            throw new IllegalStateException("key index " + directory + " is open for reading only");
        }
        KeyFile[] current = files;
        int last = current.length - 1;
        while (last >= 0) {
            KeyFile file = current[last];
            int keep = file.entriesBefore(logPosition);
            if (keep > 0) {
                if (file.hasEntryAt(keep) || file.count != keep) {
                    file.erase(keep);
                    file.rebuild(keep);
                } else {
                    file.uncertain(); // it reads right; a killed recovery may have left that unforced
                }
                break;
            }
            file.retire();
            io.delete(file.path);
            ledger.markDirectory(directory);
            last--;
        }
        files = Arrays.copyOf(current, last + 1);
    }

    /**
     * Retention (under the append lock): takes out the oldest files whose every entry points before {@code
     * logMinPosition}, never the last, and returns them; the caller deletes them outside the lock
     * ({@link #deleteRetired}).
     */
    public List<KeyFile> retireBefore(long logMinPosition) {
        KeyFile[] current = files;
        int drop = 0;
        while (drop < current.length - 1 && current[drop].lastPosition() < logMinPosition) {
            drop++;
        }
        if (drop == 0) {
            return List.of();
        }
        files = Arrays.copyOfRange(current, drop, current.length);
        return List.of(Arrays.copyOf(current, drop));
    }

    /** Retention, outside the append lock: deletes files {@link #retireBefore} took out, unmapping each once free. */
    public void deleteRetired(List<KeyFile> retired) throws IOException {
        for (KeyFile file : retired) {
            file.retire();
            io.delete(file.path);
        }
        if (!retired.isEmpty()) {
            ledger.markDirectory(directory);
        }
    }

    /** @return the number of files */
    public int fileCount() {
        return files.length;
    }

    /**
     * Visits every entry the header counts, of every file, oldest first (the verifier's view).
     *
     * @param visitor receives each entry
     */
    public void forEach(EntryVisitor visitor) {
        for (KeyFile file : files) {
            for (int n = 0; n < file.count; n++) {
                long at = file.entryOffset(n);
                visitor.visit(file.mapping.get(LONG, at + E_POSITION), file.mapping.get(INT, at + E_HASH),
                        file.mapping.get(INT, at + E_INDEX_IN_RECORD),
                        file.mapping.get(INT, at + E_MARKER) == ENTRY_MARKER);
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
         * @param written false if the entry's marker is missing (never written, or lost in a power cut)
         */
        void visit(long logPosition, int keyHash, int indexInRecord, boolean written);
    }

    /** Unmaps every file once its readers let go. */
    @Override
    public void close() {
        KeyFile[] closing = files;
        files = new KeyFile[0];
        for (KeyFile file : closing) {
            file.retire();
        }
    }

    /** One mapped key-index file. No descriptor stays open. */
    public static final class KeyFile extends MappedIndexFile {
        final long sequence;
        final int slots;
        final int capacity;
        /** Entries written; the writer's copy of the header field. */
        volatile int count;

        private KeyFile(Path path, long sequence, FileIO io, Arena arena, MemorySegment mapping,
                        DurabilityLedger ledger) {
            super(path, io, arena, mapping, ledger);
            this.sequence = sequence;
            this.slots = mapping.get(INT, H_SLOTS);
            this.capacity = mapping.get(INT, H_CAPACITY);
            this.count = mapping.get(INT, H_COUNT);
        }

        static long bytes(int slots, int capacity) {
            return HEADER_BYTES + (long) slots * 4 + (long) capacity * ENTRY_BYTES;
        }

        static KeyFile create(FileIO io, Path directory, long sequence, int slots, int capacity,
                              DurabilityLedger ledger) throws IOException {
            Path path = directory.resolve(String.format("%020d", sequence));
            Arena arena = Arena.ofShared();
            try (StoreFile file = io.open(path, FileIO.OpenMode.CREATE)) {
                file.allocate(bytes(slots, capacity), false);
                MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, bytes(slots, capacity), arena);
                mapping.set(INT, H_SLOTS, slots);
                mapping.set(INT, H_CAPACITY, capacity);
                mapping.set(INT, H_VERSION, VERSION);
                mapping.set(INT, H_MAGIC, MAGIC);
                KeyFile created = new KeyFile(path, sequence, io, arena, mapping, ledger);
                // Its name, size and header are forced by the next checkpoint, not here under the append lock.
                ledger.markDirectory(directory);
                created.markWritten();
                return created;
            } catch (IOException | RuntimeException e) {
                arena.close();
                io.delete(path);
                throw e;
            }
        }

        /** @return the file, or null if its header is damaged or its size does not match it */
        static KeyFile open(FileIO io, Path path, long sequence, DurabilityLedger ledger, boolean readOnly)
                throws IOException {
            try (StoreFile file = io.open(path, readOnly ? FileIO.OpenMode.READ_ONLY : FileIO.OpenMode.READ_WRITE)) {
                long size = file.size();
                if (size < HEADER_BYTES) {
                    return null;
                }
                Arena arena = Arena.ofShared();
                try {
                    MemorySegment mapping = file.map(readOnly ? FileChannel.MapMode.READ_ONLY
                            : FileChannel.MapMode.READ_WRITE, 0, size, arena);
                    int slots = mapping.get(INT, H_SLOTS);
                    int capacity = mapping.get(INT, H_CAPACITY);
                    int count = mapping.get(INT, H_COUNT);
                    if (mapping.get(INT, H_MAGIC) != MAGIC || mapping.get(INT, H_VERSION) != VERSION || slots <= 0
                            || capacity <= 0 || size != bytes(slots, capacity) || count < 0 || count > capacity) {
                        arena.close();
                        return null;
                    }
                    return new KeyFile(path, sequence, io, arena, mapping, ledger);
                } catch (IOException | RuntimeException e) {
                    arena.close();
                    throw e;
                }
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

        boolean hasEntryAt(int n) {
            return n < capacity && mapping.get(INT, entryOffset(n) + E_MARKER) == ENTRY_MARKER;
        }

        /**
         * @return how many leading entries are written and index records before {@code logPosition}: found by
         *     binary search, and never more than the header's count. That count was forced with the entries at
         *     every checkpoint, so it covers every entry the checkpoint claims; an entry past it can only be left
         *     over from before an erasure that did not finish, and is not trusted.
         */
        int entriesBefore(long logPosition) {
            int low = 0;
            int high = Math.min(capacity, Math.max(count, 0));
            while (low < high) {
                int mid = (low + high) >>> 1;
                long at = entryOffset(mid);
                if (mapping.get(INT, at + E_MARKER) == ENTRY_MARKER && mapping.get(LONG, at + E_POSITION) < logPosition) {
                    low = mid + 1;
                } else {
                    high = mid;
                }
            }
            return low;
        }

        /** Zeroes entries from number {@code from} to the end, through the file seam. */
        void erase(int from) throws IOException {
            try (StoreFile file = io().open(path, FileIO.OpenMode.READ_WRITE)) {
                file.zeroRange(entryOffset(from), (long) (capacity - from) * ENTRY_BYTES);
            }
            markWritten();
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
            mapping.set(LONG, H_FIRST_TIME, firstTime);
            mapping.set(LONG, H_LAST_TIME, lastTime);
            mapping.set(LONG, H_FIRST_POSITION, keep == 0 ? 0 : mapping.get(LONG, entryOffset(0) + E_POSITION));
            mapping.set(LONG, H_LAST_POSITION, keep == 0 ? 0 : mapping.get(LONG, entryOffset(keep - 1) + E_POSITION));
            mapping.set(INT, H_COUNT, keep);
            count = keep;
            markWritten();
        }
    }
}
