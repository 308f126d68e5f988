package io.sluice.store.internal.engine;

import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.StoreException;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.log.BatchFormat;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.RecordView;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.function.BooleanSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Compaction of one batch log: each sealed segment is read batch by batch, what a {@link BatchCleaner} keeps is
 * written, back to back, to a copy of the same base and size, and the copy takes the segment's place. A batch keeps
 * its offsets (a cleaned one its baseOffset and lastOffsetDelta); a run of batches dropped whole becomes one gap
 * ({@link BatchFormat#encodeGap}), so the log's offset chain and its queue index stay as dense as before and readers
 * step over the gap.
 *
 * <h2>The swap (docs/format.md, "Compaction")</h2>
 * <ol>
 *   <li>the copy is written to {@code log/<base>.cleaned} and forced;</li>
 *   <li>{@code log/<base>.reindex} is created and the directory forced: from here, an open rebuilds the log's
 *       indexes from its segments;</li>
 *   <li>under the append lock: the copy is renamed over {@code log/<base>} and the directory forced; then, with
 *       readers kept out (the layout lock), the copy's segment replaces the old one and the queue-index entries of
 *       its offsets are pointed at their new positions;</li>
 *   <li>the index files are forced, and only then {@code <base>.reindex} deleted.</li>
 * </ol>
 * A crash before step 2 leaves a {@code .cleaned} file, deleted at open; from step 2 until step 4 ends, the marker
 * has the open rebuild the indexes from the log, whichever of the two segment files the rename left. A transfer
 * chosen before the swap still reads the old file, which stays open a while.
 *
 * <p>Not thread-safe: the log runs one compaction at a time.
 */
final class Compaction {

    private static final Logger LOG = LoggerFactory.getLogger(Compaction.class);

    /** How long a replaced segment stays open for the transfers chosen before it was replaced. */
    static final long REPLACED_GRACE_MILLIS = 30_000;
    private static final int WRITE_BUFFER_BYTES = 1 << 20;
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /** What the swap needs of its log. */
    interface Target {
        /** Runs {@code action} under the log's append lock, unless the log stopped taking writes (then false). */
        boolean underAppendLock(LogStore.IoAction action) throws IOException;
    }

    private final CommitLog log;
    private final QueueIndex index;
    private final DurabilityLedger ledger;
    private final FileIO io;
    private final Path directory;
    private final Target target;
    private final BooleanSupplier stopped;

    Compaction(CommitLog log, QueueIndex index, DurabilityLedger ledger, FileIO io, Target target,
               BooleanSupplier stopped) {
        this.log = log;
        this.index = index;
        this.ledger = ledger;
        this.io = io;
        this.directory = log.directory();
        this.target = target;
        this.stopped = stopped;
    }

    /**
     * Rewrites each sealed, forced segment whose batches all lie below {@code endOffset}, oldest first, stopping at
     * the first that does not.
     */
    CompactionReport run(long endOffset, BatchCleaner cleaner) throws IOException {
        Totals totals = new Totals();
        long floor = index.minOffset();
        List<Segment> segments = log.segments();
        // Never the last: the active segment, which may end exactly at the write position (an append filled it and
        // the roll waits for the next), and which replaceSegment refuses only after the rename.
        for (Segment segment : segments.subList(0, Math.max(0, segments.size() - 1))) {
            if (stopped.getAsBoolean() || segment.end() > log.flushedPosition()
                    || segment.end() > log.writePosition()) {
                break;
            }
            Rewrite rewrite = new Rewrite(segment);
            boolean whole;
            try {
                whole = rewrite.write(endOffset, floor, cleaner, totals);
                if (whole && rewrite.changed) {
                    whole = swap(segment, rewrite, totals);
                }
            } finally {
                rewrite.discard();
            }
            if (!whole) {
                break;
            }
            if (rewrite.endOffset >= 0) {
                totals.endOffset = rewrite.endOffset;
            }
        }
        return totals.report();
    }

    /** Steps 2 to 4 of the swap. @return false if the log stopped taking writes or lost the segment meanwhile */
    private boolean swap(Segment old, Rewrite rewrite, Totals totals) throws IOException {
        Path path = directory.resolve(Segment.fileName(old.base()));
        Path marker = directory.resolve(Segment.fileName(old.base()) + LogDirectories.REINDEX_SUFFIX);
        try (StoreFile created = io.open(marker, FileIO.OpenMode.CREATE)) {
            created.force();
        }
        io.syncDirectory(directory);
        boolean[] swapped = new boolean[1];
        boolean ran;
        try {
            ran = target.underAppendLock(() -> {
                if (!log.beginSwap(old)) {
                    return; // retention deleted it
                }
                try {
                    swapLocked(old, rewrite, path, swapped);
                } finally {
                    log.endSwap();
                }
            });
        } finally {
            if (!rewrite.renamed) {
                io.delete(marker);
                io.syncDirectory(directory);
            }
        }
        return finishSwap(old, rewrite, marker, swapped[0], ran, totals);
    }

    /** Step 3, under the append lock, retention holding off the segment. */
    private void swapLocked(Segment old, Rewrite rewrite, Path path, boolean[] swapped) throws IOException {
        io.rename(rewrite.path, path);
        rewrite.renamed = true;
        Segment replacement;
        try {
            io.syncDirectory(directory);
            replacement = Segment.open(io, path, old.base(), false, false);
        } catch (IOException e) {
            throw new SwapFailedException(e);
        }
        long stamp = log.lockLayoutForWriting();
        try {
            if (!log.replaceSegment(old, replacement, REPLACED_GRACE_MILLIS)) {
                replacement.retire(); // cannot be: retention leaves a segment being swapped alone
                return;
            }
            rewrite.reindex(index);
        } finally {
            log.unlockLayout(stamp);
        }
        swapped[0] = true;
    }

    private boolean finishSwap(Segment old, Rewrite rewrite, Path marker, boolean swapped, boolean ran, Totals totals)
            throws IOException {
        if (!swapped) {
            return false; // a renamed copy whose segment retention took meanwhile leaves the marker: rebuilt at open
        }
        try {
            ledger.forceAll();
        } catch (IOException e) {
            throw new SwapFailedException(e);
        }
        io.delete(marker);
        io.syncDirectory(directory);
        totals.swapped(rewrite);
        LOG.debug("compaction rewrote segment {} of {}: {} bytes of batches -> {}", old, directory,
                rewrite.bytesBefore, rewrite.bytesAfter);
        return ran;
    }

    /** A failure once a copy took its segment's name: the log's state on disk is no longer known. */
    static final class SwapFailedException extends IOException {
        private static final long serialVersionUID = 1L;

        SwapFailedException(IOException cause) {
            super("swapping in a compacted segment failed: " + cause.getMessage(), cause);
        }
    }

    /** One segment's copy. */
    private final class Rewrite {
        final Segment segment;
        final Path path;
        StoreFile file;
        boolean renamed;
        boolean changed;
        /** The items written before the first change: they lie where they lay, and their entries stay. */
        int unchangedItems = -1;
        long bytesBefore;
        long bytesAfter;
        long dropped;
        long cleaned;
        /** The copy's items in order: size (high 32 bits) and offset count (low) of each batch or gap. */
        long[] items = new long[64];
        int itemCount;
        long firstOffset = -1;
        /** The offset after the segment's last batch, once read whole. */
        long endOffset = -1;
        // A run of dropped batches and gaps not written yet.
        long gapFirst = -1;
        long gapCount;
        long gapTimestamp = Long.MIN_VALUE;
        int gapEpoch;
        int gapsMet;
        ByteBuffer buffer;
        long bufferAt;
        long written;

        Rewrite(Segment segment) {
            this.segment = segment;
            this.path = directory.resolve(Segment.fileName(segment.base()) + LogDirectories.CLEANED_SUFFIX);
        }

        /**
         * Step 1: reads the segment and writes its copy, forced.
         *
         * @return false if the segment holds an offset at or past {@code endOffset} (nothing is swapped then)
         */
        boolean write(long endOffset, long floor, BatchCleaner cleaner, Totals totals) throws IOException {
            long position = segment.base();
            long end = segment.end();
            long expected = -1;
            while (end - position >= RecordFormat.FILLER_BYTES) {
                if (stopped.getAsBoolean()) {
                    return false;
                }
                int length;
                try (RecordView head = log.read(position, RecordFormat.FILLER_BYTES)) {
                    if (RecordFormat.isFillerHeader(head.bytes(), position)) {
                        break;
                    }
                    length = head.bytes().get(INT, BatchFormat.LOG_OVERHEAD - 4) + BatchFormat.LOG_OVERHEAD;
                }
                if (length < BatchFormat.HEADER_BYTES || length > end - position) {
                    throw new StoreException("segment " + segment + " holds no valid batch at log position "
                            + position);
                }
                try (RecordView view = log.read(position, length)) {
                    MemorySegment batch = view.bytes();
                    long first = BatchFormat.firstOffset(batch);
                    int count = BatchFormat.offsetCount(batch);
                    if ((expected >= 0 && first != expected) || BatchFormat.headerProblem(batch) != null) {
                        throw new StoreException("segment " + segment + " holds no valid batch at log position "
                                + position + " (offset " + expected + " expected)");
                    }
                    if (first + count > endOffset) {
                        return false;
                    }
                    if (firstOffset < 0) {
                        firstOffset = first;
                    }
                    totals.bytesRead += length;
                    bytesBefore += length;
                    take(batch, first, count, first + count <= floor ? null : cleaner);
                    expected = first + count;
                }
                position += length;
            }
            if (firstOffset < 0) {
                return true; // an empty segment: nothing to rewrite
            }
            this.endOffset = expected; // the field: the parameter of that name is the caller's bound
            totals.segmentsRead++;
            endGap();
            if (!changed) {
                return true;
            }
            finish();
            return true;
        }

        /** One batch: kept, cleaned or dropped (a gap is carried on; a batch below the queue's start is kept as is). */
        private void take(MemorySegment batch, long first, int count, BatchCleaner cleaner) throws IOException {
            boolean gap = BatchFormat.isGap(batch);
            MemorySegment kept = gap ? null : cleaner == null ? batch : cleaner.clean(batch);
            if (kept == null) {
                if (!gap) {
                    dropped++;
                    change();
                } else if (gapFirst >= 0) {
                    change(); // two gaps in a row become one
                }
                if (gapFirst < 0) {
                    gapFirst = first;
                    gapCount = 0;
                    gapTimestamp = Long.MIN_VALUE;
                }
                gapCount += count;
                gapTimestamp = Math.max(gapTimestamp, BatchFormat.maxTimestamp(batch));
                gapEpoch = BatchFormat.leaderEpoch(batch);
                return;
            }
            if (kept != batch) {
                checkCleaned(batch, kept);
                cleaned++;
                change();
            }
            endGap();
            put(kept, count);
        }

        private void change() {
            if (!changed) {
                changed = true;
                unchangedItems = itemCount;
            }
        }

        private void checkCleaned(MemorySegment original, MemorySegment kept) {
            String problem = BatchFormat.headerProblem(kept);
            if (problem == null && BatchFormat.firstOffset(kept) != BatchFormat.firstOffset(original)) {
                problem = "its baseOffset changed";
            }
            if (problem == null && BatchFormat.offsetCount(kept) != BatchFormat.offsetCount(original)) {
                problem = "its lastOffsetDelta changed";
            }
            if (problem == null && BatchFormat.isGap(kept)) {
                problem = "it holds no record";
            }
            if (problem == null && !BatchFormat.checksumMatches(kept)) {
                problem = "its CRC32C does not match";
            }
            if (problem != null) {
                throw new IllegalArgumentException("the cleaner's copy of the batch at offset "
                        + BatchFormat.firstOffset(original) + " is refused: " + problem);
            }
        }

        private void endGap() throws IOException {
            if (gapFirst < 0) {
                return;
            }
            // A gap's count is an int, as a batch's: a longer run takes several.
            while (gapCount > 0) {
                int count = (int) Math.min(gapCount, Integer.MAX_VALUE);
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment gap = arena.allocate(BatchFormat.HEADER_BYTES);
                    BatchFormat.encodeGap(gap, gapFirst, count, gapTimestamp, gapEpoch);
                    put(gap, count);
                }
                gapFirst += count;
                gapCount -= count;
            }
            gapFirst = -1;
        }

        private void put(MemorySegment batch, int count) throws IOException {
            if (file == null) {
                file = io.open(path, FileIO.OpenMode.CREATE);
                file.truncate(0);
                buffer = ByteBuffer.allocateDirect(WRITE_BUFFER_BYTES);
                bufferAt = 0;
            }
            long size = batch.byteSize();
            if (itemCount == items.length) {
                items = Arrays.copyOf(items, itemCount * 2);
            }
            items[itemCount++] = size << 32 | (count & 0xFFFFFFFFL);
            bytesAfter += size;
            if (size > buffer.capacity()) {
                drain();
                file.writeFully(batch.asByteBuffer(), bufferAt);
                bufferAt += size;
                written = bufferAt;
                return;
            }
            if (size > buffer.remaining()) {
                drain();
            }
            buffer.put(batch.asByteBuffer());
        }

        private void drain() throws IOException {
            buffer.flip();
            int n = buffer.remaining();
            file.writeFully(buffer, bufferAt);
            bufferAt += n;
            written = bufferAt;
            buffer.clear();
        }

        /** Ends the copy with a filler to the segment's size, as a sealed segment ends, and forces it. */
        private void finish() throws IOException {
            if (file == null) {
                throw new IllegalStateException("a changed segment wrote nothing");
            }
            drain();
            long contentEnd = written;
            long size = segment.size();
            if (contentEnd > size) {
                throw new StoreException("the copy of segment " + segment + " (" + contentEnd
                        + " bytes) does not fit in its " + size + " bytes");
            }
            if (size - contentEnd >= RecordFormat.FILLER_BYTES) {
                try (Arena arena = Arena.ofConfined()) {
                    MemorySegment filler = arena.allocate(RecordFormat.FILLER_BYTES);
                    RecordFormat.encodeFiller(filler, segment.base() + contentEnd, (int) (size - contentEnd));
                    file.writeFully(filler.asByteBuffer(), contentEnd);
                }
            }
            if (file.size() < size) {
                file.writeFully(ByteBuffer.allocate(1), size - 1); // the rest a hole: zeros that take no block
            }
            file.force();
            file.close();
            file = null;
        }

        /** Step 3's index part: entries of the copy's offsets point where their batch or gap now lies. */
        void reindex(QueueIndex index) {
            long position = segment.base();
            long offset = firstOffset;
            for (int i = 0; i < itemCount; i++) {
                int size = (int) (items[i] >>> 32);
                int count = (int) items[i];
                for (int k = 0; k < count && i >= unchangedItems; k++) {
                    index.rewrite(offset + k, position, size, count, k);
                }
                offset += count;
                position += size;
            }
        }

        /** Deletes the copy unless it took the segment's place. */
        void discard() throws IOException {
            if (file != null) {
                file.close();
                file = null;
            }
            if (!renamed) {
                io.delete(path);
            }
        }
    }

    /** Counts over one run. */
    private static final class Totals {
        int segmentsRead;
        int segmentsRewritten;
        long bytesRead;
        long bytesBefore;
        long bytesAfter;
        long dropped;
        long cleaned;
        long endOffset = -1;

        void swapped(Rewrite rewrite) {
            segmentsRewritten++;
            bytesBefore += rewrite.bytesBefore;
            bytesAfter += rewrite.bytesAfter;
            dropped += rewrite.dropped;
            cleaned += rewrite.cleaned;
        }

        CompactionReport report() {
            return new CompactionReport(segmentsRead, segmentsRewritten, bytesRead, bytesBefore, bytesAfter, dropped,
                    cleaned, endOffset);
        }
    }
}
