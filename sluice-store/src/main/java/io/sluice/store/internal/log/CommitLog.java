package io.sluice.store.internal.log;

import io.sluice.store.CacheStats;
import io.sluice.store.SegmentAllocation;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.store.internal.cache.MemoryBudget;
import io.sluice.store.internal.cache.ReadCache;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.StampedLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The commit log: records appended to one sequence of segment files, each named by the log position of its
 * first byte and sized by the log's {@link SegmentSizes}.
 *
 * <h2>Positions</h2>
 * Three positions only grow: {@code writePosition} (after the last appended record), {@code
 * committedPosition} (bytes below it are in the files; trails the write position only on the WRITE_BUFFER and DIRECT
 * paths) and {@code flushedPosition} (bytes below it were forced to the device). Each is written by one thread
 * and read by others through volatile fields, so a reader that sees a position also sees every byte below it.
 *
 * <h2>Threads</h2>
 * {@link #append} and {@link #roll} run under the store's append lock (one writer); {@link #commit} and
 * {@link #flush} run on the flusher thread; {@link #read} and {@link #transfer} (the read paths, in
 * {@link LogViews}) are for anyone.
 */
public final class CommitLog implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(CommitLog.class);

    private final StoreConfig config;
    private final SegmentSizes sizes;
    private final Path directory;
    private final SegmentWriter writer;
    private final WriteBufferPool pool;
    private final SegmentPreparer preparer;
    private final SegmentWarmer warmer;
    private final boolean buffered;
    /** The tail-aware read cache (WRITE_BUFFER and DIRECT, when configured), or null. */
    private final ReadCache cache;
    private final LogViews views;
    /** Replaced, never changed in place; swaps happen under {@link #segmentsLock} (roll and retention). */
    private volatile Segment[] segments;
    private final Object segmentsLock = new Object();
    /** Segments retention took out whose files are not deleted yet: a reader still holds them. */
    private final Set<Segment> retired = ConcurrentHashMap.newKeySet();
    /** Guarded by segmentsLock: the segment compaction is swapping a copy in for, which retention leaves alone. */
    private Segment swapping;
    /** Segments compaction replaced, still open for the transfers chosen before (closed, never deleted). */
    private final Set<Segment> replaced = ConcurrentHashMap.newKeySet();
    /** Serialises commits (the write buffer has one committer at a time). */
    private final Object commitLock = new Object();
    /** Serialises forces, so the flushed position only grows. */
    private final Object flushLock = new Object();
    private Segment active;
    /**
     * Held for reading while a reader turns index entries into log positions and reads the records there; held for
     * writing while compaction puts a rewritten segment in place and rewrites the entries that point into it.
     */
    private final StampedLock layout = new StampedLock();
    private final Scheduler scheduler;
    /** Writer-owned: the segment after the active one is being prepared. */
    private boolean nextPrepared;

    private volatile long writePosition;
    private volatile long committedPosition;
    private volatile long flushedPosition;

    /**
     * @param config the store's configuration
     * @param sizes how large its segments are
     * @param directory the log directory
     * @param segments the existing segments in order (recovery has checked them)
     * @param endPosition the log position after the last valid record
     * @param mappedReadMaxBytes reads larger than this go positionally even where the segment is mapped (the
     *     calibrated crossover; {@link Long#MAX_VALUE} without calibration)
     * @param scheduler runs segment preparation and prefetch
     * @param cacheBudget the store's read-cache memory, shared by every log's cache
     * @param readOnly a log opened to be read: no write buffer, no cache, nothing written
     */
    public CommitLog(StoreConfig config, SegmentSizes sizes, Path directory, List<Segment> segments, long endPosition,
                     long mappedReadMaxBytes, Scheduler scheduler, MemoryBudget cacheBudget, boolean readOnly) {
        this.config = config;
        this.sizes = sizes;
        this.directory = directory;
        this.segments = segments.toArray(Segment[]::new);
        this.scheduler = scheduler;
        this.writePosition = endPosition;
        this.committedPosition = endPosition;
        this.flushedPosition = endPosition;
        this.buffered = config.writePath().buffered();
        boolean loadsOnMiss = config.writePath() == WritePath.DIRECT;
        this.cache = buffered && !readOnly && config.cacheBytes() > 0 ? new ReadCache(config.cacheBytes(),
                config.writeBufferBytes(), config.cacheHotWindowMillis(), config.clock(), ReadCache.Eviction.TAIL_AWARE,
                loadsOnMiss ? scheduler::execute : null, cacheBudget) : null;
        this.pool = buffered && !readOnly
                ? new WriteBufferPool(config.writeBufferBytes(), config.writeBufferCount(), cache, !sizes.grows())
                : null;
        this.writer = readOnly ? new MappedSegmentWriter() : switch (config.writePath()) {
            case MMAP -> new MappedSegmentWriter();
            case CHANNEL -> new ChannelSegmentWriter(64 * 1024);
            case WRITE_BUFFER -> new BufferedSegmentWriter(pool, () -> commit(writePosition),
                    config.writeBufferWaitMillis(), false);
            case DIRECT -> new BufferedSegmentWriter(pool, () -> commit(writePosition), config.writeBufferWaitMillis(),
                    true);
        };
        this.views = new LogViews(this, writer, cache, buffered, loadsOnMiss, mappedReadMaxBytes);
        this.warmer = new SegmentWarmer(config.warmUp(), mapsWritable(config.writePath()));
        this.preparer = new SegmentPreparer(this::createSegment, config.fileIO(), scheduler);
        for (Segment segment : this.segments) {
            if (segment.base() <= endPosition && endPosition < segment.end()) {
                active = segment;
                warmer.openActive(segment, endPosition);
            } else {
                warmer.sealed(segment, false);
            }
        }
        // The next segment is prepared at the first append, not here: a store opened only to be read (stat,
        // consume, verify) must not create a segment file.
        enforceMappingWindow();
    }

    /** @return true if the write path maps segments read-write */
    public static boolean mapsWritable(WritePath path) {
        return path == WritePath.MMAP;
    }

    private Segment createSegment(long base, long size) throws IOException {
        SegmentAllocation allocation = config.segmentAllocation().resolve(config.flushMode(), config.writePath());
        Segment segment = Segment.create(config.fileIO(), directory, base, size, allocation,
                mapsWritable(config.writePath()));
        try {
            warmer.preTouch(segment);
        } catch (IOException | RuntimeException e) {
            segment.close();
            throw e;
        }
        return segment;
    }

    /**
     * Appends one record. Does not publish it: the caller indexes it, then calls {@link #publish}.
     *
     * @return the record's log position
     * @throws IOException if no segment could be had (ENOSPC) or the write failed
     */
    public long append(int size, long storeTimestamp, long firstQueueOffset, int queueId, byte[] topic,
                       PreparedMessage[] messages) throws IOException {
        long position = placeRecord(size);
        MemorySegment target = writer.reserve(active, position, size);
        RecordFormat.encode(target, position, storeTimestamp, firstQueueOffset, queueId, topic, messages);
        writer.complete(active, position, target);
        return position;
    }

    /**
     * Appends one batch to a batch log ({@link BatchFormat}), right after the previous one. Does not publish it.
     *
     * @param firstQueueOffset the batch's first queue offset, which becomes its baseOffset
     * @param body the batch, checked by {@link BatchFormat#problem}
     * @param checksumChecked the batch's CRC32C was checked by {@code KafkaBatch.check}, whose caller leaves its
     *     bytes alone: it is not checked again
     * @return the batch's log position
     * @throws IllegalArgumentException if the copy's CRC32C does not match: nothing is appended
     * @throws IOException if no segment could be had (ENOSPC) or the write failed
     */
    public long appendBatch(long firstQueueOffset, MemorySegment body, boolean checksumChecked) throws IOException {
        int size = (int) body.byteSize();
        long position = placeRecord(size);
        MemorySegment target = writer.reserve(active, position, size);
        BatchFormat.encode(target, firstQueueOffset, body);
        // An unchecked batch is checked on the copy, which recovery will read: a batch the caller changed while it was
        // copied is refused here, before it is complete, rather than cutting the log at it after a crash.
        if (!checksumChecked && !BatchFormat.checksumMatches(target)) {
            throw new IllegalArgumentException("a BATCHES log takes Kafka record batches (v2) only: the batch's CRC32C"
                    + " does not match its bytes (or they changed while the store copied them)");
        }
        writer.complete(active, position, target);
        return position;
    }

    /** @return where a record of {@code size} bytes goes: the write position, or the next segment's start */
    private long placeRecord(int size) throws IOException {
        long position = writePosition;
        // A fixed-size log prepares its next segment at the first append into the active one; a growing log
        // (one of thousands of queues, perhaps) once the active one is half full, so an idle log holds one file.
        if (!nextPrepared && active != null
                && (!sizes.grows() || position - active.base() >= active.size() / 2)) {
            preparer.prepare(active.end(), sizes.next(active.size(), 0));
            nextPrepared = true;
        }
        if (active == null || position + size > active.end()) {
            position = roll(position, size);
        }
        return position;
    }

    /**
     * Ends the active segment with a filler and switches to the next, which is obtained first so that a
     * failure (a full disk) leaves the log exactly as it was.
     *
     * @param size the record that did not fit: the next segment holds it
     * @return the new write position (the next segment's start)
     */
    private long roll(long position, int size) throws IOException {
        long nextBase = active == null ? position : active.end();
        Segment[] current = segments;
        long previous = active != null ? active.size() : current.length == 0 ? 0 : current[current.length - 1].size();
        Segment next = preparer.take(nextBase, size, sizes.next(previous, size));
        if (active != null) {
            long remaining = active.end() - position;
            if (remaining >= RecordFormat.FILLER_BYTES) {
                MemorySegment filler = writer.reserve(active, position, RecordFormat.FILLER_BYTES);
                RecordFormat.encodeFiller(filler, position, (int) remaining);
                writer.complete(active, position, filler);
            }
            writer.seal(active.end());
            warmer.sealed(active, true);
        }
        warmer.activated(next);
        synchronized (segmentsLock) {
            Segment[] grown = Arrays.copyOf(segments, segments.length + 1);
            grown[grown.length - 1] = next;
            segments = grown;
        }
        active = next;
        enforceMappingWindow();
        // A fixed-size log prepares the segment after it now; a growing log once this one is half full.
        nextPrepared = !sizes.grows();
        if (nextPrepared) {
            preparer.prepare(next.end(), sizes.next(next.size(), 0));
        }
        // The old segment is complete (its filler written): the log now ends where the new one starts, so an
        // append that fails after the roll (no write-buffer page for its record) leaves a log that continues there.
        publish(next.base());
        LOG.debug("rolled to segment {}", next);
        return next.base();
    }

    /** Makes everything below {@code position} visible to the flusher and readers. */
    public void publish(long position) {
        if (!buffered) {
            // MMAP and CHANNEL put the bytes in the file as they append: they are committed once published.
            committedPosition = position;
        }
        writePosition = position;
    }

    /** @return the position after the last published record */
    public long writePosition() {
        return writePosition;
    }

    /** @return bytes below this position are in the files */
    public long committedPosition() {
        return committedPosition;
    }

    /** @return bytes below this position are forced */
    public long flushedPosition() {
        return flushedPosition;
    }

    /** @return the first position still stored */
    public long minPosition() {
        Segment[] current = segments;
        return current.length == 0 ? writePosition : current[0].base();
    }

    /** @return bytes appended but not yet committed to the files */
    public long uncommittedBytes() {
        return config.writePath().buffered() ? writePosition - committedPosition : 0;
    }

    /**
     * Writes buffered bytes below {@code upTo} to the files (the flusher, a checkpoint or the closing thread;
     * one at a time).
     *
     * @return the committed position
     */
    public long commit(long upTo) throws IOException {
        synchronized (commitLock) {
            long committed = writer.commit(upTo);
            if (committed > committedPosition) {
                committedPosition = committed;
            }
            return committedPosition;
        }
    }

    /**
     * Flusher: forces every segment holding bytes in [flushedPosition, upTo), then advances the flushed
     * position. On failure the flushed position stays where it was.
     */
    public void flush(long upTo) throws IOException {
        synchronized (flushLock) {
            long from = flushedPosition;
            if (upTo <= from) {
                return;
            }
            for (Segment segment : segments) {
                if (segment.end() > from && segment.base() < upTo && segment.tryRetain()) {
                    try {
                        segment.file().force();
                    } finally {
                        segment.release();
                    }
                }
            }
            flushedPosition = upTo;
        }
    }

    /**
     * Flusher, after a sync of the whole file system that began once every byte below {@code upTo} was committed
     * (and so forced them all): advances the flushed position without forcing the segments again.
     */
    public void flushed(long upTo) {
        synchronized (flushLock) {
            if (upTo > flushedPosition) {
                flushedPosition = upTo;
            }
        }
    }

    /**
     * A view of the bytes [position, position + length) ({@link LogViews#read}). The caller must stay below the
     * position it is allowed to read.
     *
     * @return the view; close it when done
     */
    public RecordView read(long position, int length) {
        return views.read(position, length);
    }

    /**
     * Sends the log bytes [position, position + length) to {@code target} from the segment {@code chosen}, the one
     * that held them when a reader chose them, even if compaction has replaced it since (a replaced segment stays open
     * a while for this): {@link LogViews#transfer(long, long, WritableByteChannel, Segment)}.
     *
     * @param chosen the segment, or null to take the one holding the position now
     * @throws SegmentRetiredException if the segment is gone
     */
    public void transfer(long position, long length, WritableByteChannel target, Segment chosen) throws IOException {
        views.transfer(position, length, target, chosen);
    }

    /**
     * Compaction, before it renames a copy over {@code segment}'s file: retention leaves the segment alone until
     * {@link #endSwap} (its release would delete the file by its name, the copy's by then).
     *
     * @return false if the segment is no longer in the log
     */
    public boolean beginSwap(Segment segment) {
        synchronized (segmentsLock) {
            if (!Arrays.asList(segments).contains(segment)) {
                return false;
            }
            swapping = segment;
            return true;
        }
    }

    /** Compaction's swap is over: retention may take the segment again. */
    public void endSwap() {
        synchronized (segmentsLock) {
            swapping = null;
        }
    }

    /** @return a stamp to pass to {@link #unlockLayout}, once the layout lock is held for reading */
    public long lockLayoutForReading() {
        return layout.readLock();
    }

    /** @return a stamp to pass to {@link #unlockLayout}, once the layout lock is held for writing */
    public long lockLayoutForWriting() {
        return layout.writeLock();
    }

    public void unlockLayout(long stamp) {
        layout.unlock(stamp);
    }

    /**
     * Compaction: puts {@code replacement}, a rewritten copy of a sealed segment of the same base and size whose file
     * was renamed over the old one's, in the old one's place. Call with the layout lock held for writing. The old
     * segment's file (its name now the replacement's) is closed, never deleted, once its readers let go, and no
     * sooner than {@code graceMillis} from now, so that a transfer chosen before the swap reads what it chose.
     *
     * @return false if {@code old} is no longer in the log (retention deleted it): nothing was changed
     */
    public boolean replaceSegment(Segment old, Segment replacement, long graceMillis) {
        if (!layout.isWriteLocked()) {
            throw new IllegalStateException("the layout lock must be held for writing");
        }
        if (old.base() != replacement.base() || old.size() != replacement.size() || old == active) {
            throw new IllegalArgumentException("segment " + replacement + " cannot replace " + old);
        }
        synchronized (segmentsLock) {
            Segment[] current = segments;
            int at = Arrays.asList(current).indexOf(old);
            if (at < 0) {
                return false;
            }
            Segment[] next = current.clone();
            next[at] = replacement;
            segments = next;
            old.abandon();
            replaced.add(old);
        }
        if (cache != null) {
            cache.invalidate(old.base(), old.end());
        }
        Runnable retire = () -> {
            if (replaced.remove(old)) {
                old.retire();
            }
        };
        try {
            scheduler.schedule(retire, graceMillis);
        } catch (RuntimeException e) {
            retire.run(); // the scheduler is shutting down: no transfer is on its way
        }
        return true;
    }

    /**
     * Sends the log bytes [position, position + length) to {@code target} ({@link LogViews#transfer}).
     *
     * @throws SegmentRetiredException if retention deleted the segment
     * @throws IOException if writing to {@code target} or reading the file failed
     */
    public void transfer(long position, long length, WritableByteChannel target) throws IOException {
        views.transfer(position, length, target);
    }

    /**
     * @return the end of the bytes from {@code position} that one {@link #transfer} can send from a file: the end of
     *     the segment holding it or the committed position, whichever comes first (0 if no segment holds it)
     */
    public long fileRunEnd(long position) {
        Segment segment = segmentFor(position);
        return segment == null ? 0 : Math.min(segment.end(), committedPosition);
    }

    /** @return the read cache's counters, or null without a cache */
    public CacheStats cacheStats() {
        return views.cacheStats();
    }

    /**
     * Keeps only the newest {@code maxMappedSegments} segments mapped; older ones are unmapped (once their
     * readers let go) and read positionally from then on.
     */
    private void enforceMappingWindow() {
        Segment[] current = segments;
        for (int i = 0; i < current.length - config.maxMappedSegments(); i++) {
            if (current[i].mapped() && current[i] != active) {
                current[i].unmap();
            }
        }
    }

    /** @return bytes of segment files mapped now (each mapped segment is mapped whole) */
    public long mappedBytes() {
        long total = 0;
        for (Segment segment : segments) {
            if (segment.mapped()) {
                total += segment.size();
            }
        }
        return total;
    }

    /**
     * Retention: takes the oldest segment out of the log and {@linkplain Segment#retire(Runnable) retires} it, if it
     * is not the active segment and every byte of it was flushed.
     *
     * @return the retired segment, or null if the oldest may not go
     */
    public Segment retireOldest(Runnable onDeleted) {
        Segment oldest;
        synchronized (segmentsLock) {
            Segment[] current = segments;
            if (current.length < 2 || current[0].end() > flushedPosition || current[0].end() > writePosition
                    || current[0] == swapping) {
                return null;
            }
            oldest = current[0];
            segments = Arrays.copyOfRange(current, 1, current.length);
            retired.add(oldest);
        }
        oldest.retire(() -> {
            retired.remove(oldest);
            onDeleted.run();
        });
        if (cache != null) {
            cache.dropBelow(oldest.end());
        }
        LOG.info("retention deleted segment {} (log positions {}..{})", oldest, oldest.base(), oldest.end());
        return oldest;
    }

    /** @return the segment holding {@code position}, or null */
    public Segment segmentFor(long position) {
        Segment[] current = segments;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            Segment segment = current[mid];
            if (position < segment.base()) {
                high = mid - 1;
            } else if (position >= segment.end()) {
                low = mid + 1;
            } else {
                return segment;
            }
        }
        return null;
    }

    /** @return the segments, oldest first */
    public List<Segment> segments() {
        return List.of(segments);
    }

    /** @return the write buffer pool, or null off the WRITE_BUFFER and DIRECT paths */
    public WriteBufferPool pool() {
        return pool;
    }

    /** @return the log directory */
    public Path directory() {
        return directory;
    }

    /**
     * The log is being deleted with its directory: retired segments that readers still hold must not delete their
     * files by path when let go (see {@link Segment#abandon()}). Call before the directory goes.
     */
    public void abandonRetired() {
        for (Segment segment : retired) {
            segment.abandon();
        }
    }

    /** Unmaps and closes every segment and frees the write buffers. Call after the final commit and flush. */
    @Override
    public void close() throws IOException {
        preparer.close();
        writer.close();
        if (cache != null) {
            cache.close(); // first: stops prefetching before the segments close
        }
        views.close();
        List<Throwable> errors = new ArrayList<>();
        for (Segment segment : List.copyOf(replaced)) {
            if (replaced.remove(segment)) {
                segment.retire();
            }
        }
        for (Segment segment : segments) {
            try {
                segment.close();
            } catch (IOException | RuntimeException e) {
                errors.add(e);
            }
        }
        if (pool != null) {
            pool.close();
        }
        if (!errors.isEmpty()) {
            IOException failure = new IOException("closing the commit log failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
    }

    /** @return true if the file name is a segment's: 20 digits */
    public static boolean isSegmentName(Path file) {
        String name = file.getFileName().toString();
        return name.length() == 20 && name.chars().allMatch(Character::isDigit);
    }
}
