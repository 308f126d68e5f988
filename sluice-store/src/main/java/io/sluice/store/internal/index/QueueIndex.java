package io.sluice.store.internal.index;

import static io.sluice.store.internal.index.QueueIndexFormat.ENTRY_BYTES;
import static io.sluice.store.internal.index.QueueIndexFormat.INT;
import static io.sluice.store.internal.index.QueueIndexFormat.LONG;

import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The dense index of one topic's queue: entry n locates the message at queue offset n in O(1).
 *
 * <p>One writer (the log writer, under the append lock, or recovery) writes entries with {@link #put} and
 * then makes them visible with {@link #publish}, a volatile store; readers read {@link #publishedEnd()}
 * first, so every entry below it is complete when they read it. Files are mapped whole and grow by
 * whole files; the file array is replaced, never changed in place.
 */
public final class QueueIndex implements AutoCloseable {

    private final String topic;
    private final int queueId;
    private final Path directory;
    private final FileIO fileIO;
    private final int entriesPerFile;
    private volatile IndexFile[] files;
    /** Unforced entries and directory, and files retention removed (see {@link #advanceMinOffset}). */
    private final IndexFiles bookkeeping;
    /** The writer's next offset to fill. */
    private long nextOffset;
    /** Offsets below this are visible to readers. */
    private volatile long publishedEnd;
    /** First offset still stored. */
    private volatile long minOffset;

    private QueueIndex(String topic, int queueId, Path directory, FileIO fileIO, int entriesPerFile,
                       IndexFile[] files) {
        this.topic = topic;
        this.queueId = queueId;
        this.directory = directory;
        this.fileIO = fileIO;
        this.entriesPerFile = entriesPerFile;
        this.files = files;
        this.bookkeeping = new IndexFiles(fileIO, directory);
        this.minOffset = files.length == 0 ? 0 : files[0].firstEntry;
    }

    /**
     * Opens a queue's index directory (creating it if needed) and finds where its entries end.
     */
    public static QueueIndex open(String topic, int queueId, Path directory, FileIO fileIO, int entriesPerFile)
            throws IOException {
        FileTree.createDirectories(fileIO, directory);
        List<IndexFile> files = new ArrayList<>();
        {
            for (Path path : fileIO.list(directory)) {
                String name = path.getFileName().toString();
                if (name.length() == 20 && name.chars().allMatch(Character::isDigit)) {
                    long first = Long.parseLong(name);
                    if (!files.isEmpty() && files.getLast().firstEntry + entriesPerFile != first) {
                        long expected = files.getLast().firstEntry + entriesPerFile;
                        for (IndexFile file : files) {
                            file.close();
                        }
                        throw new IndexDamagedException("queue index " + directory + " is missing the file for"
                                + " entries from " + expected);
                    }
                    files.add(IndexFile.open(fileIO, path, first, entriesPerFile));
                }
            }
        }
        QueueIndex index = new QueueIndex(topic, queueId, directory, fileIO, entriesPerFile,
                files.toArray(IndexFile[]::new));
        long end = index.findEnd();
        index.nextOffset = end;
        index.publishedEnd = end;
        return index;
    }

    /** Binary-searches the last file for its first empty entry (entries fill in order). */
    private long findEnd() {
        IndexFile[] current = files;
        if (current.length == 0) {
            return 0;
        }
        IndexFile last = current[current.length - 1];
        long low = 0;
        long high = entriesPerFile;
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (last.mapping.get(INT, mid * ENTRY_BYTES + QueueIndexFormat.RECORD_SIZE_OFFSET) != 0) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        return last.firstEntry + low;
    }

    /** @return the topic */
    public String topic() {
        return topic;
    }

    /** @return the queue id */
    public int queueId() {
        return queueId;
    }

    /** @return the writer's next offset (may be ahead of what readers see) */
    public long nextOffset() {
        return nextOffset;
    }

    /** @return offsets below this are visible */
    public long publishedEnd() {
        return publishedEnd;
    }

    /** @return the first offset still stored */
    public long minOffset() {
        return minOffset;
    }

    /**
     * Writer: makes sure the files for entries below {@code endOffset} exist, so that {@link #put} cannot
     * fail half-way through a batch.
     */
    public void ensureCapacity(long endOffset) throws IOException {
        for (long offset = nextOffset; offset < endOffset; offset += entriesPerFile - offset % entriesPerFile) {
            try {
                fileFor(offset, true);
            } catch (java.io.UncheckedIOException e) {
                throw e.getCause();
            }
        }
    }

    /** Writer: fills entry {@code offset}, which must be {@link #nextOffset()}. */
    public void put(long offset, long logPosition, long storeTimestamp, int recordSize, int messageCount,
                    int indexInRecord, int tagHash) throws IOException {
        assert offset == nextOffset : "queue index " + topic + "-" + queueId + " expected " + nextOffset + " got " + offset;
        MemorySegment file = fileFor(offset, true).mapping;
        long at = (offset % entriesPerFile) * ENTRY_BYTES;
        file.set(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET, logPosition);
        file.set(LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET, storeTimestamp);
        file.set(INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET, messageCount);
        file.set(INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET, indexInRecord);
        file.set(INT, at + QueueIndexFormat.TAG_HASH_OFFSET, tagHash);
        file.set(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET, recordSize);
        nextOffset = offset + 1;
        bookkeeping.markWritten();
    }

    /** Writer: makes entries below {@code end} visible to readers. */
    public void publish(long end) {
        publishedEnd = end;
    }

    /** @return the entry at {@code offset}, which must be in [minOffset, nextOffset) */
    public IndexEntry entry(long offset) {
        MemorySegment file = fileFor(offset, false).mapping;
        long at = (offset % entriesPerFile) * ENTRY_BYTES;
        return new IndexEntry(file.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET),
                file.get(LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET),
                file.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET),
                file.get(INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET),
                file.get(INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET),
                file.get(INT, at + QueueIndexFormat.TAG_HASH_OFFSET));
    }

    /** @return the log position of entry {@code offset}'s record end, without allocating */
    public long recordEnd(long offset) {
        MemorySegment file = fileFor(offset, false).mapping;
        long at = (offset % entriesPerFile) * ENTRY_BYTES;
        return file.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET)
                + file.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET);
    }

    /** @return the store timestamp of entry {@code offset} */
    public long storeTimestamp(long offset) {
        MemorySegment file = fileFor(offset, false).mapping;
        return file.get(LONG, (offset % entriesPerFile) * ENTRY_BYTES + QueueIndexFormat.STORE_TIMESTAMP_OFFSET);
    }

    private IndexFile fileFor(long offset, boolean create) {
        IndexFile[] current = files;
        long firstEntry = offset - offset % entriesPerFile;
        if (current.length > 0) {
            long slot = (firstEntry - current[0].firstEntry) / entriesPerFile;
            if (slot >= 0 && slot < current.length) {
                return current[(int) slot];
            }
        }
        if (!create) {
            throw new IllegalArgumentException("queue offset " + offset + " of " + topic + "-" + queueId
                    + " is not stored");
        }
        try {
            IndexFile file = IndexFile.create(fileIO, directory, firstEntry, entriesPerFile);
            bookkeeping.markCreated();
            IndexFile[] grown = Arrays.copyOf(current, current.length + 1);
            grown[grown.length - 1] = file;
            files = grown;
            return file;
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Recovery: empties entries from {@code offset} on (zeroing them in place and deleting files that start
     * at or after it), so the index ends at {@code offset}.
     */
    public void truncateFrom(long offset) throws IOException {
        IndexFile[] current = files;
        List<IndexFile> kept = new ArrayList<>();
        for (IndexFile file : current) {
            if (file.firstEntry >= offset) {
                file.close();
                fileIO.delete(file.path);
                continue;
            }
            long from = Math.max(0, offset - file.firstEntry);
            if (from < entriesPerFile) {
                file.mapping.asSlice(from * ENTRY_BYTES).fill((byte) 0);
            }
            kept.add(file);
        }
        files = kept.toArray(IndexFile[]::new);
        if (files.length == 0) {
            minOffset = offset;
        }
        nextOffset = offset;
        publishedEnd = offset;
        fileIO.syncDirectory(directory);
    }

    /**
     * Recovery: restarts an index that lost its files (or whose entries are older than the log) at
     * {@code offset}.
     */
    public void resetTo(long offset) throws IOException {
        for (IndexFile file : files) {
            file.close();
            fileIO.delete(file.path);
        }
        files = new IndexFile[0];
        minOffset = offset;
        nextOffset = offset;
        publishedEnd = offset;
    }

    /**
     * Retention (under the append lock) and open: moves the first offset up to the first entry whose record
     * is at or after {@code logMinPosition}, the log's first stored position; entries below it point at
     * deleted segments. Files whose every entry is now below the first offset are deleted, except the last
     * (it tells where the queue ends). They are unmapped only at the next call, or at close, so that a
     * reader who looked up an entry just before cannot find its mapping gone.
     *
     * @return the number of files deleted
     */
    public int advanceMinOffset(long logMinPosition) throws IOException {
        bookkeeping.closeRetired();
        long low = minOffset;
        long high = publishedEnd;
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (entry(mid).logPosition() < logMinPosition) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        if (low > minOffset) {
            minOffset = low;
        }
        IndexFile[] current = files;
        int drop = 0;
        while (drop < current.length - 1 && current[drop].firstEntry + entriesPerFile <= minOffset) {
            drop++;
        }
        if (drop == 0) {
            return 0;
        }
        files = Arrays.copyOfRange(current, drop, current.length);
        bookkeeping.retire(current, drop);
        return drop;
    }

    /**
     * Forces written entries to the device if any were written since the last force, and the directory if a
     * file was created since: the checkpoint calls this before it claims the entries durable.
     */
    public void forceIfDirty() throws IOException {
        bookkeeping.forceIfDirty(files);
    }

    /** @return the number of index files */
    public int fileCount() {
        return files.length;
    }

    /** @return the index directory */
    public Path directory() {
        return directory;
    }

    @Override
    public void close() throws IOException {
        bookkeeping.close(files);
    }

    /** One mapped index file. */
    private static final class IndexFile implements IndexFiles.MappedFile {
        final Path path;
        final long firstEntry;
        final StoreFile file;
        final Arena arena;
        final MemorySegment mapping;

        private IndexFile(Path path, long firstEntry, StoreFile file, Arena arena, MemorySegment mapping) {
            this.path = path;
            this.firstEntry = firstEntry;
            this.file = file;
            this.arena = arena;
            this.mapping = mapping;
        }

        static IndexFile create(FileIO io, Path directory, long firstEntry, int entries) throws IOException {
            Path path = directory.resolve(String.format("%020d", firstEntry));
            StoreFile file = io.open(path, FileIO.OpenMode.CREATE);
            try {
                // No directory fsync here, under the append lock: the owner marks its directory unsynced and
                // the checkpoint syncs it before claiming the entries durable (see forceIfDirty).
                file.allocate((long) entries * ENTRY_BYTES, false);
            } catch (IOException e) {
                file.close();
                io.delete(path);
                throw e;
            }
            return map(path, firstEntry, file, entries);
        }

        static IndexFile open(FileIO io, Path path, long firstEntry, int entries) throws IOException {
            StoreFile file = io.open(path, FileIO.OpenMode.READ_WRITE);
            if (file.size() < (long) entries * ENTRY_BYTES) {
                file.allocate((long) entries * ENTRY_BYTES, false);
            }
            return map(path, firstEntry, file, entries);
        }

        private static IndexFile map(Path path, long firstEntry, StoreFile file, int entries) throws IOException {
            Arena arena = Arena.ofShared();
            try {
                MemorySegment mapping = file.map(FileChannel.MapMode.READ_WRITE, 0, (long) entries * ENTRY_BYTES, arena);
                return new IndexFile(path, firstEntry, file, arena, mapping);
            } catch (IOException | RuntimeException e) {
                arena.close();
                file.close();
                throw e;
            }
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
