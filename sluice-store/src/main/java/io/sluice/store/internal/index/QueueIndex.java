package io.sluice.store.internal.index;

import static io.sluice.store.internal.index.QueueIndexFormat.ENTRY_BYTES;
import static io.sluice.store.internal.index.QueueIndexFormat.INT;
import static io.sluice.store.internal.index.QueueIndexFormat.LONG;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.internal.cache.RefCounted;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.function.LongPredicate;

/**
 * The dense index of one topic's queue: entry n locates the message at queue offset n in O(1).
 *
 * <h2>Writing</h2>
 * One writer (the log writer under the append lock, or recovery) fills entries with {@link #put} and makes
 * them visible with {@link #publish}, a volatile store; readers read {@link #publishedEnd()} first, so every
 * entry below it is complete when they read it. Every file written is marked in the log's
 * {@link DurabilityLedger}, so the checkpoint forces it before it claims the entries durable.
 *
 * <h2>Files</h2>
 * Files grow per {@link IndexGeometry}, are mapped whole ({@link IndexFile}), and keep no descriptor open (a
 * force reopens the file), so an idle queue costs one small mapping. Which files exist is kept by
 * {@link QueueIndexFiles}, whose array is replaced, never changed in place. Readers hold a file through a
 * {@link Cursor}; retention {@linkplain RefCounted#retire() retires} files, and a file is unmapped when its last
 * reader lets go, never under one.
 *
 * <h2>Finding the end</h2>
 * Entries carry check words ({@link QueueIndexFormat}), so the valid entries of a queue are one run from its
 * first file's start (gap markers, then entries); the run's end is found by binary search. Below a log's
 * durable position every entry is intact (the ledger forced it); above it, an entry is intact, absent, or
 * erased, never stale, because a truncation erases what lies past it before anything is written there again.
 */
public final class QueueIndex implements AutoCloseable {

    private final String topic;
    private final int queueId;
    private final Path directory;
    private final boolean readOnly;
    private final QueueIndexFiles files;
    /** The writer's next offset to fill. */
    private long nextOffset;
    /** Offsets below this are visible to readers. */
    private volatile long publishedEnd;
    /** First offset still stored: its record is in the log (retention and recovery move it). */
    private volatile long minOffset;
    /**
     * First offset not deleted on request ({@link #raiseStart}), 0 if none was: readers see nothing below it, though
     * the records stay stored (and indexed) until retention deletes their segments. It may lie past the published end
     * (records appended but not yet published when it was raised): they are never seen.
     */
    private volatile long start;

    private QueueIndex(String topic, int queueId, Path directory, boolean readOnly, QueueIndexFiles files) {
        this.topic = topic;
        this.queueId = queueId;
        this.directory = directory;
        this.readOnly = readOnly;
        this.files = files;
    }

    /**
     * Opens a queue's index directory and finds where its entries start and end. A file shorter than the
     * geometry says (its size was lost in a power cut) is restored to its size, unless read-only.
     *
     * @throws IndexDamagedException if a file is missing between two others or is not one of the geometry's
     */
    public static QueueIndex open(String topic, int queueId, Path directory, FileIO io, IndexGeometry geometry,
                                  DurabilityLedger ledger, boolean readOnly) throws IOException {
        QueueIndex index = new QueueIndex(topic, queueId, directory, readOnly,
                QueueIndexFiles.open(directory, io, geometry, ledger, readOnly));
        index.findBounds();
        return index;
    }

    /** Finds the run of gap markers and entries from the first file's start: the queue's first offset and end. */
    private void findBounds() {
        if (files.count() == 0) {
            return;
        }
        long start = files.first().firstEntry;
        long limit = files.last().end();
        long end = search(start, limit, offset -> !isFilled(offset));
        long min = search(start, end, offset -> !isGapAt(offset));
        nextOffset = end;
        publishedEnd = end;
        minOffset = min;
    }

    /** @return the first offset in [from, to) where {@code predicate} holds (it must hold from there on), or to */
    private static long search(long from, long to, LongPredicate predicate) {
        long low = from;
        long high = to;
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (predicate.test(mid)) {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        return low;
    }

    private boolean isFilled(long offset) {
        IndexFile file = ownedFile(offset);
        long at = file.byteOf(offset);
        return QueueIndexFormat.isEntry(file.mapping, at, offset) || QueueIndexFormat.isGap(file.mapping, at, offset);
    }

    private boolean isGapAt(long offset) {
        IndexFile file = ownedFile(offset);
        return QueueIndexFormat.isGap(file.mapping, file.byteOf(offset), offset);
    }

    /** The writer's (or recovery's) view of a file it owns: no reader can retire it meanwhile. */
    private IndexFile ownedFile(long offset) {
        IndexFile file = files.find(offset);
        if (file == null) {
            throw new IllegalArgumentException("queue offset " + offset + " of " + topic + "-" + queueId
                    + " has no index file");
        }
        return file;
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

    /**
     * @return the first offset readers see: the first still stored, or the queue's start ({@link #raiseStart}) if
     *     higher, up to the published end
     */
    public long minOffset() {
        return Math.max(minOffset, Math.min(start, publishedEnd));
    }

    /** @return the first offset still stored, which may lie below the queue's start: its record is in the log */
    public long storedMinOffset() {
        return minOffset;
    }

    /** @return the number of index files */
    public int fileCount() {
        return files.count();
    }

    /** @return true if a file of the index starts below {@code offset} (it would survive a truncation there) */
    public boolean hasFileBefore(long offset) {
        IndexFile first = files.first();
        return first != null && first.firstEntry < offset;
    }

    /** @return the index directory */
    public Path directory() {
        return directory;
    }

    /**
     * Writer: makes sure the files for entries below {@code endOffset} exist, so that {@link #put} cannot fail
     * half-way through a batch.
     */
    public void ensureCapacity(long endOffset) throws IOException {
        checkWritable();
        for (long offset = nextOffset; offset < endOffset; ) {
            IndexFile file = files.writerFile(offset);
            if (file == null) {
                file = files.createFor(offset);
            }
            offset = file.end();
        }
    }

    /** Writer: fills entry {@code offset}, which must be {@link #nextOffset()}, in a file that exists. */
    public void put(long offset, long logPosition, long storeTimestamp, int recordSize, int messageCount,
                    int indexInRecord) {
        assert offset == nextOffset : "queue index " + topic + "-" + queueId + " expected " + nextOffset + " got " + offset;
        IndexFile file = files.writerFile(offset);
        if (file == null) {
            throw new IllegalArgumentException("queue offset " + offset + " of " + topic + "-" + queueId
                    + " has no index file");
        }
        QueueIndexFormat.write(file.mapping, file.byteOf(offset), offset, logPosition, storeTimestamp, recordSize,
                messageCount, indexInRecord);
        file.markWritten();
        nextOffset = offset + 1;
    }

    /**
     * Writer, for compaction (with readers kept out): points entry {@code offset}, an existing entry below
     * {@link #nextOffset()}, at the record that now holds it, keeping its store time.
     *
     * @return false if no file holds the entry any more (retention deleted it): nothing was written
     */
    public boolean rewrite(long offset, long logPosition, int recordSize, int messageCount, int indexInRecord) {
        checkWritable();
        if (offset >= nextOffset) {
            throw new IllegalArgumentException("queue index " + topic + "-" + queueId + " has no entry " + offset
                    + " to rewrite (it ends at " + nextOffset + ")");
        }
        IndexFile file = files.find(offset);
        if (file == null || !file.tryRetain()) {
            return false;
        }
        try {
            long at = file.byteOf(offset);
            long storeTimestamp = file.mapping.get(LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET);
            QueueIndexFormat.write(file.mapping, at, offset, logPosition, storeTimestamp, recordSize, messageCount,
                    indexInRecord);
            file.markWritten();
            return true;
        } finally {
            file.release();
        }
    }

    /** Read-only open after a crash: shows only the entries below {@code end} (those the checkpoint claimed). */
    public void limitTo(long end) {
        nextOffset = Math.min(nextOffset, end);
        publishedEnd = Math.min(publishedEnd, end);
    }

    /** Writer: makes entries below {@code end} visible to readers. */
    public void publish(long end) {
        publishedEnd = end;
    }

    /** @return a reader of entries in [minOffset, publishedEnd); close it when done */
    public Cursor cursor() {
        return new Cursor();
    }

    /**
     * Reads entries, holding the file it reads so retention cannot unmap it meanwhile. Not thread-safe: one
     * reader at a time.
     */
    public final class Cursor implements AutoCloseable {
        private IndexFile held;

        private Cursor() {
        }

        private IndexFile hold(long offset) {
            IndexFile file = held;
            if (file != null && offset >= file.firstEntry && offset < file.end()) {
                return file;
            }
            close();
            while (true) {
                file = files.find(offset);
                if (file == null) {
                    throw new IndexFileRetiredException(topic + "-" + queueId + " holds no entry " + offset);
                }
                if (file.tryRetain()) {
                    held = file;
                    return file;
                }
                if (file.isRetired() && files.find(offset) == file) {
                    throw new IndexFileRetiredException(topic + "-" + queueId + " entry " + offset + " was retired");
                }
            }
        }

        /**
         * @return entry {@code offset}
         * @throws StoreCorruptedException if its check word does not match (the file is damaged)
         * @throws IndexFileRetiredException if retention deleted it
         */
        public IndexEntry entry(long offset) {
            IndexFile file = hold(offset);
            long at = file.byteOf(offset);
            if (!QueueIndexFormat.isEntry(file.mapping, at, offset)) {
                throw new StoreCorruptedException("queue index " + topic + "-" + queueId + " entry " + offset + " in "
                        + file.path + " fails its check: the index file is damaged; sluice verify tells more",
                        file.path, offset);
            }
            return new IndexEntry(file.mapping.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET),
                    file.mapping.get(LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET),
                    file.mapping.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET),
                    file.mapping.get(INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET),
                    file.mapping.get(INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET));
        }

        /** @return the log position of entry {@code offset}'s record end, without allocating */
        public long recordEnd(long offset) {
            IndexFile file = hold(offset);
            long at = file.byteOf(offset);
            return file.mapping.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET)
                    + file.mapping.get(INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET);
        }

        /** @return the store timestamp of entry {@code offset} */
        public long storeTimestamp(long offset) {
            IndexFile file = hold(offset);
            return file.mapping.get(LONG, file.byteOf(offset) + QueueIndexFormat.STORE_TIMESTAMP_OFFSET);
        }

        /** @return the log position of entry {@code offset}'s record */
        public long logPosition(long offset) {
            IndexFile file = hold(offset);
            return file.mapping.get(LONG, file.byteOf(offset) + QueueIndexFormat.LOG_POSITION_OFFSET);
        }

        @Override
        public void close() {
            IndexFile file = held;
            held = null;
            if (file != null) {
                file.release();
            }
        }
    }

    /** Recovery: @return true if entry {@code offset} was never written (all zeros), or lies past every file */
    public boolean isBlank(long offset) {
        IndexFile file = files.find(offset);
        if (file == null) {
            return true;
        }
        MemorySegment entry = file.mapping.asSlice(file.byteOf(offset), ENTRY_BYTES);
        return entry.get(LONG, 0) == 0 && entry.get(LONG, 8) == 0 && entry.get(LONG, 16) == 0 && entry.get(LONG, 24) == 0;
    }

    /**
     * Recovery: the first offset at or past {@link #minOffset()} whose entry is not a valid entry for a record
     * below {@code logPosition}: where the entries recovery must re-derive from the log begin.
     */
    public long firstEntryAtOrAfter(long logPosition) {
        return search(minOffset, nextOffset, offset -> {
            IndexFile file = ownedFile(offset);
            long at = file.byteOf(offset);
            return !QueueIndexFormat.isEntry(file.mapping, at, offset)
                    || file.mapping.get(LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET) >= logPosition;
        });
    }

    /**
     * Recovery: empties entries from {@code offset} on, so the index ends there: the rest of the file holding
     * {@code offset} is erased (zeroed through the file seam, cheaply where the filesystem can) and later files
     * deleted, newest first. Marked in the ledger; the caller forces it before anything is written past the cut.
     */
    public void truncateFrom(long offset) throws IOException {
        checkWritable();
        int keep = files.truncateFrom(offset);
        nextOffset = offset;
        publishedEnd = offset;
        if (keep == 0 || offset < minOffset) {
            minOffset = offset;
        }
        if (keep == 0 && offset > 0) {
            // No file is left to say where the queue ends: one is made with gap markers up to it, as resetTo does,
            // or the next open would start the queue at 0 again.
            IndexFile file = files.createFor(offset);
            for (long gap = file.firstEntry; gap < offset; gap++) {
                QueueIndexFormat.write(file.mapping, file.byteOf(gap), gap, QueueIndexFormat.GAP, 0, 0, 0, 0);
            }
            file.markWritten();
        }
    }

    /**
     * Recovery: restarts an index whose files were lost (or whose entries lie wholly before the log) at
     * {@code offset}: its first file is filled with gap markers below it.
     */
    public void resetTo(long offset) throws IOException {
        checkWritable();
        truncateFrom(0);
        IndexFile file = files.createFor(offset);
        for (long gap = file.firstEntry; gap < offset; gap++) {
            QueueIndexFormat.write(file.mapping, file.byteOf(gap), gap, QueueIndexFormat.GAP, 0, 0, 0, 0);
        }
        file.markWritten();
        minOffset = offset;
        nextOffset = offset;
        publishedEnd = offset;
        start = Math.min(start, offset);
    }

    /**
     * Raises the queue's start to {@code offset} (records deleted on request): readers see nothing below it, now or
     * once appends not yet published reach it. Its records stay stored, and their entries indexed, until retention
     * deletes their segments ({@link #advanceMinOffset} goes by the log's start, not by this). Under the append lock.
     */
    public void raiseStart(long offset) {
        if (offset > start) {
            start = offset;
        }
    }

    /** Lowers the queue's start to {@code offset} if it is higher (the queue ends below it). Under the append lock. */
    public void lowerStart(long offset) {
        if (offset < start) {
            start = offset;
        }
    }

    /**
     * Retention (under the append lock) and open: moves the first stored offset up to the first entry whose record
     * is at or after {@code logMinPosition}, the log's first stored position; entries below it point at deleted
     * segments. Files whose every entry is now below the first stored offset are taken out of the index, except the
     * last (it tells where the queue ends), and returned: the caller deletes them outside the lock
     * ({@link #deleteRetired}). The queue's start does not count: the records below it are still in the log, and
     * recovery needs their entries until retention deletes their segments.
     *
     * @return the files taken out
     */
    public List<IndexFile> advanceMinOffset(long logMinPosition) {
        long low;
        try (Cursor cursor = cursor()) {
            low = search(minOffset, publishedEnd, offset -> cursor.logPosition(offset) >= logMinPosition);
        }
        if (low > minOffset) {
            minOffset = low;
        }
        return files.takeOutBelow(minOffset);
    }

    /**
     * Retention, outside the append lock: deletes files {@link #advanceMinOffset} took out. Each is unmapped
     * once no reader holds it; the directory change is forced by the next checkpoint.
     */
    public void deleteRetired(List<IndexFile> retired) throws IOException {
        files.deleteRetired(retired);
    }

    private void checkWritable() {
        if (readOnly) {
            throw new IllegalStateException("queue index " + directory + " is open for reading only");
        }
    }

    /** Unmaps every file once its readers let go. */
    @Override
    public void close() {
        files.close();
    }

    /** One mapped index file: entries [firstEntry, firstEntry + entries). No descriptor stays open. */
    public static final class IndexFile extends MappedIndexFile {
        private static final int PAGE_BYTES = 4096;
        private static final MemorySegment BLANK_PAGE = MemorySegment.ofArray(new byte[PAGE_BYTES]);
        final long firstEntry;
        final long entries;

        private IndexFile(Path path, long firstEntry, long entries, FileIO io, Arena arena, MemorySegment mapping,
                          DurabilityLedger ledger) {
            super(path, io, arena, mapping, ledger);
            this.firstEntry = firstEntry;
            this.entries = entries;
        }

        static IndexFile create(FileIO io, Path directory, long firstEntry, long entries, DurabilityLedger ledger)
                throws IOException {
            Path path = directory.resolve(String.format("%020d", firstEntry));
            IndexFile file;
            try (StoreFile opened = io.open(path, FileIO.OpenMode.CREATE)) {
                try {
                    opened.allocate(entries * ENTRY_BYTES, false);
                    file = map(opened, path, firstEntry, entries, io, ledger, false);
                } catch (IOException | RuntimeException e) {
                    io.delete(path);
                    throw e;
                }
            }
            // Its name and its size are forced by the next checkpoint, not here under the append lock.
            ledger.markDirectory(directory);
            file.markWritten();
            return file;
        }

        static IndexFile open(FileIO io, Path path, long firstEntry, long entries, DurabilityLedger ledger,
                              boolean readOnly) throws IOException {
            try (StoreFile opened = io.open(path, readOnly ? FileIO.OpenMode.READ_ONLY : FileIO.OpenMode.READ_WRITE)) {
                long size = opened.size();
                if (size > entries * ENTRY_BYTES) {
                    throw new IndexDamagedException("queue index file " + path + " holds " + size
                            + " bytes, more than its " + entries + " entries");
                }
                boolean restored = false;
                if (size < entries * ENTRY_BYTES && !readOnly) {
                    // A power cut lost the size of a file created after the last checkpoint.
                    opened.allocate(entries * ENTRY_BYTES, false);
                    restored = true;
                }
                IndexFile file = map(opened, path, firstEntry, readOnly ? size / ENTRY_BYTES : entries, io, ledger,
                        readOnly);
                if (restored) {
                    file.markWritten();
                }
                return file;
            }
        }

        private static IndexFile map(StoreFile opened, Path path, long firstEntry, long entries, FileIO io,
                                     DurabilityLedger ledger, boolean readOnly) throws IOException {
            Arena arena = Arena.ofShared();
            try {
                MemorySegment mapping = opened.map(readOnly ? FileChannel.MapMode.READ_ONLY
                        : FileChannel.MapMode.READ_WRITE, 0, entries * ENTRY_BYTES, arena);
                return new IndexFile(path, firstEntry, entries, io, arena, mapping, ledger);
            } catch (IOException | RuntimeException e) {
                arena.close();
                throw e;
            }
        }

        long end() {
            return firstEntry + entries;
        }

        long byteOf(long offset) {
            return (offset - firstEntry) * ENTRY_BYTES;
        }

        /**
         * Zeroes the entries from {@code offset} to the file's end, through the file seam, unless they are blank
         * already: recovery erases every queue's tail, and most queues (idle ones) have nothing there. Blank is
         * checked without reading the file: the rest of the first page through the mapping, the pages after it
         * by asking the file system where data lies. An erase is forced with the recovery. A skipped one writes
         * nothing, but what it read may be cached pages a killed recovery zeroed and never forced, so the file is
         * still made durable before the recovery's claim ({@link DurabilityLedger#markUncertain}: one syncfs for
         * every such file).
         */
        void erase(long offset) throws IOException {
            long from = byteOf(offset);
            long to = entries * ENTRY_BYTES;
            if (from >= to) {
                return;
            }
            long pageEnd = Math.min(to, (from / PAGE_BYTES + 1) * PAGE_BYTES);
            boolean headBlank = mapping.asSlice(from, pageEnd - from)
                    .mismatch(BLANK_PAGE.asSlice(0, pageEnd - from)) < 0;
            try (StoreFile opened = io().open(path, FileIO.OpenMode.READ_WRITE)) {
                if (headBlank) {
                    long data = pageEnd < to ? opened.nextData(pageEnd) : -1;
                    if (data < 0 || data >= to) {
                        uncertain();
                        return;
                    }
                }
                opened.zeroRange(from, to - from);
            }
            markWritten();
        }
    }
}
