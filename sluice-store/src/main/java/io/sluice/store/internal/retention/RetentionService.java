package io.sluice.store.internal.retention;

import io.sluice.store.RetentionPolicy;
import io.sluice.store.RetentionReport;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.RecordView;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.concurrent.locks.Lock;
import java.util.function.LongSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Deletes old segments per the {@link RetentionPolicy} and decides whether the disk is too full for appends.
 *
 * <h2>One pass</h2>
 * <ol>
 * <li>Read disk use, and the lowest log position any registered consumer still needs (the record of its
 *     next offset, if that offset is still stored and not yet past the queue's end).</li>
 * <li>Walk segments oldest first. The oldest may go if it is not the active segment, is fully flushed, and
 *     lies wholly below every queue's first offset (raised by {@code Store.deleteRecords}), or is expired (the
 *     first record of the next segment is older than {@code retentionMillis}, so every record of this one is),
 *     or the log exceeds {@code retentionBytes}, or the disk is fuller than {@code diskCleanRatio}. If a
 *     consumer needs it, it stays and the pass stops, unless the disk is fuller than {@code diskEmergencyRatio}:
 *     then it goes, with a warning naming the group. The walk stops at the first segment that stays, so the log
 *     remains one contiguous range. Before a segment the last checkpoint did not cover goes, the log is made
 *     durable up to its write position, index entries and their files included: a power cut may keep the
 *     deletion and lose entries not forced, and the index would then end short of the log's new first record.</li>
 * <li>Under the append lock, move every queue index's first offset past the deleted range and take the
 *     queue- and key-index files that only pointed into it out of the indexes (readers still holding them keep
 *     them mapped). Their files are deleted only after a checkpoint has recorded the log's new start
 *     ({@link #deletePendingUpTo}): until then a power cut may bring a deleted segment back, and it must come
 *     back with the index entries that lead to it.</li>
 * <li>Refuse appends while disk use (less what this pass freed) is above {@code diskHardRatio}.</li>
 * </ol>
 * A deleted segment's blocks are freed when its last reader lets go (see {@link Segment#retire(Runnable)}); the
 * pass counts them as freed at once so that one pass does not delete more than the disk ratio asks.
 *
 * <p>Runs on one thread at a time (the store's retention thread, or a caller of
 * {@code Store.enforceRetention}, serialised here).
 */
public final class RetentionService {

    private static final Logger LOG = LoggerFactory.getLogger(RetentionService.class);

    private final RetentionPolicy policy;
    private final LogFormat format;
    private final FileIO fileIO;
    private final InstantSource clock;
    private final CommitLog log;
    private final QueueIndexes indexes;
    private final ConsumerOffsets consumers;
    private final Lock appendLock;
    /** Told when a retired segment's file is deleted: the log directory's entries changed. */
    private final Runnable segmentDeleted;
    /** The position up to which the log, its index entries and their files are durable. */
    private final LongSupplier durablePosition;
    /** Makes the log, its index entries and their files durable up to its write position; returns the position. */
    private final LongSupplier makeDurable;
    private volatile boolean appendsRefused;
    private volatile RetentionReport lastReport;
    private String lastHeldBy;

    /**
     * @param policy the policy
     * @param fileIO the file seam (disk space)
     * @param clock the store's clock
     * @param log the commit log
     * @param indexes the indexes
     * @param consumers the registered consumer positions
     * @param appendLock the store's append lock, held while indexes are trimmed
     * @param segmentDeleted told when a retired segment's file is deleted
     * @param format what the log's records are (a batch carries no store time: the index has it)
     * @param durablePosition the position up to which the log, its index entries and their files are durable
     * @param makeDurable makes them durable up to the log's write position, and returns the position that covers
     */
    public RetentionService(RetentionPolicy policy, FileIO fileIO, InstantSource clock, CommitLog log,
                            QueueIndexes indexes, ConsumerOffsets consumers, Lock appendLock, Runnable segmentDeleted,
                            LogFormat format, LongSupplier durablePosition, LongSupplier makeDurable) {
        this.policy = policy;
        this.fileIO = fileIO;
        this.clock = clock;
        this.log = log;
        this.indexes = indexes;
        this.consumers = consumers;
        this.appendLock = appendLock;
        this.segmentDeleted = segmentDeleted;
        this.format = format;
        this.durablePosition = durablePosition;
        this.makeDurable = makeDurable;
    }

    /** @return true while disk use is above the hard ratio */
    public boolean appendsRefused() {
        return appendsRefused;
    }

    /**
     * A log opened again after the store closed it while idle starts where the store's last pass left every log:
     * refusing appends while the disk is above the hard ratio, until a pass finds it below.
     */
    public void refuseAppendsAsLastPass(boolean refused) {
        appendsRefused = refused;
    }

    /**
     * What a pass could still delete from this log if nothing is appended to it, for a log the store closes while
     * idle: its passes then decide from this whether to open it, rather than open every log each time. Call with
     * appends stopped.
     *
     * @return the segments, bytes, store time of the record that starts the second segment, and whether the first
     *     segment lies wholly below every queue's start
     */
    public Outlook outlook() {
        List<Segment> segments = log.segments();
        long bytes = logBytes(segments);
        if (segments.size() < 2) {
            return new Outlook(segments.size(), bytes, Long.MAX_VALUE, false);
        }
        Segment next = segments.get(1);
        long startPosition = startPosition();
        boolean startPast = startPosition >= 0 && segments.get(0).end() <= startPosition;
        long nextStoreMillis = log.writePosition() < next.base() + format.headerBytes(0) ? Long.MAX_VALUE
                : storeTimestampAt(next.base());
        return new Outlook(segments.size(), bytes, nextStoreMillis, startPast);
    }

    /**
     * What retention could delete from a closed log ({@link #outlook()}).
     *
     * @param segments its segment files
     * @param logBytes their bytes
     * @param nextSegmentStoreMillis the store time of the record that starts its second segment (every record of the
     *     first is older), {@link Long#MAX_VALUE} if none or unknown
     * @param startPastOldest its first segment lies wholly below every queue's start ({@code Store.deleteRecords})
     */
    public record Outlook(int segments, long logBytes, long nextSegmentStoreMillis, boolean startPastOldest) {

        /**
         * @return true if a pass with these limits could delete a segment: the same reasons as {@link #run}'s (the
         *     active segment always stays, and a closed log was forced whole)
         */
        public boolean mayDelete(long nowMillis, long retentionMillis, long retentionBytes, double diskUsedRatio,
                                 double diskCleanRatio) {
            if (segments < 2) {
                return false;
            }
            boolean expired = retentionMillis != Long.MAX_VALUE && nextSegmentStoreMillis != Long.MAX_VALUE
                    && nowMillis - nextSegmentStoreMillis > retentionMillis;
            return startPastOldest || expired || logBytes > retentionBytes || diskUsedRatio > diskCleanRatio;
        }
    }

    /** @return the last pass's report, or null before the first */
    public RetentionReport lastReport() {
        return lastReport;
    }

    /** Runs one pass, reading disk use itself. @return what it did */
    public RetentionReport run() throws IOException {
        return run(fileIO.diskSpace(log.directory()));
    }

    /**
     * Runs one pass.
     *
     * @param space the filesystem's use, read once by the caller for every log of the store
     * @return what it did
     */
    public RetentionReport run(DiskSpace space) throws IOException {
        return run(space, policy.retentionMillis(), policy.retentionBytes());
    }

    /**
     * Runs one pass with a log's own age and size limits in place of the policy's (a topic's configs).
     *
     * @param space the filesystem's use, read once by the caller for every log of the store
     * @param retentionMillis keep messages at least this long; {@link Long#MAX_VALUE} keeps them forever
     * @param retentionBytes keep the log at most this large; {@link Long#MAX_VALUE} for no limit
     * @return what it did
     */
    public synchronized RetentionReport run(DiskSpace space, long retentionMillis, long retentionBytes)
            throws IOException {
        long usedBytes = space.usedBytes();
        long capacity = space.usedBytes() + space.usableBytes();
        Protection protection = protectedPosition();
        long startPosition = startPosition();
        long logBytes = logBytes(log.segments());
        long now = clock.millis();
        long durable = durablePosition.getAsLong();
        int deleted = 0;
        long deletedBytes = 0;
        String reason = null;
        String heldBy = null;
        while (true) {
            List<Segment> segments = log.segments();
            if (segments.size() < 2) {
                break;
            }
            Segment oldest = segments.get(0);
            double ratio = ratio(usedBytes - deletedBytes, capacity);
            String why = oldest.end() <= startPosition ? "start"
                    : expired(segments.get(1), now, retentionMillis) ? "age"
                    : logBytes - deletedBytes > retentionBytes ? "size"
                    : ratio > policy.diskCleanRatio() ? "disk" : null;
            if (why == null) {
                break;
            }
            if (oldest.end() > protection.position()) {
                if (ratio <= policy.diskEmergencyRatio()) {
                    heldBy = protection.group();
                    break;
                }
                why = "emergency";
                LOG.warn("disk use {} is above diskEmergencyRatio {}: deleting segment {} although consumer group"
                        + " or retention hold {} still needs it", percent(ratio), percent(policy.diskEmergencyRatio()),
                        oldest, protection.group());
            }
            if (oldest.end() > durable && (durable = makeDurable.getAsLong()) < oldest.end()) {
                break; // its records' index entries could not be forced: it waits for a checkpoint
            }
            Segment retired = log.retireOldest(segmentDeleted);
            if (retired == null) {
                break;
            }
            deleted++;
            deletedBytes += retired.size();
            reason = why;
        }
        trimIndexes();
        double ratio = ratio(usedBytes - deletedBytes, capacity);
        updateRefusal(ratio);
        if (heldBy != null && !heldBy.equals(lastHeldBy)) {
            LOG.info("retention is holding segments from {} for consumer group or retention hold {}", log.minPosition(),
                    heldBy);
        }
        lastHeldBy = heldBy;
        RetentionReport report = new RetentionReport(deleted, deletedBytes, logBytes - deletedBytes, ratio,
                appendsRefused, heldBy, reason);
        lastReport = report;
        return report;
    }

    /**
     * @return the log position below which no queue of this log holds a record it has not deleted: the least, over
     *     its queues, of the position of each one's first offset (raised by {@code Store.deleteRecords}, or moved by
     *     retention), or, for a queue with nothing left below its published end, of the end of its last published
     *     record (an append not published yet lies past it); -1 to keep everything (a log with no queue, or a queue
     *     that never published one)
     */
    private long startPosition() {
        long least = Long.MAX_VALUE;
        boolean any = false;
        for (QueueIndex index : indexes.all()) {
            any = true;
            long first = index.minOffset();
            long end = index.publishedEnd();
            if (end == 0) {
                return -1;
            }
            try (QueueIndex.Cursor cursor = index.cursor()) {
                least = Math.min(least, first < end ? cursor.logPosition(first) : cursor.recordEnd(end - 1));
            } catch (RuntimeException e) {
                return -1; // an index file retired meanwhile: keep everything this pass
            }
        }
        return any ? least : -1;
    }

    private void trimIndexes() {
        long minPosition = log.minPosition();
        Map<QueueIndex, List<QueueIndex.IndexFile>> retired = new java.util.LinkedHashMap<>();
        List<KeyIndex.KeyFile> retiredKeys;
        appendLock.lock();
        try {
            for (QueueIndex index : indexes.all()) {
                List<QueueIndex.IndexFile> files = index.advanceMinOffset(minPosition);
                if (!files.isEmpty()) {
                    retired.put(index, files);
                }
            }
            retiredKeys = indexes.keys().retireBefore(minPosition);
        } finally {
            appendLock.unlock();
        }
        if (!retired.isEmpty() || !retiredKeys.isEmpty()) {
            synchronized (pending) {
                pending.add(new PendingDeletion(minPosition, retired, retiredKeys));
            }
        }
    }

    /** Index files taken out by a pass, to delete once a checkpoint records a log start of at least {@code start}. */
    private record PendingDeletion(long start, Map<QueueIndex, List<QueueIndex.IndexFile>> files,
                                   List<KeyIndex.KeyFile> keyFiles) {
    }

    private final List<PendingDeletion> pending = new java.util.ArrayList<>();

    /**
     * After a checkpoint recorded the log's start: deletes the index files that only pointed below it.
     *
     * @param recordedStart the start the checkpoint recorded
     * @throws IOException if deleting failed (the rest stay pending)
     */
    public void deletePendingUpTo(long recordedStart) throws IOException {
        List<PendingDeletion> due = new java.util.ArrayList<>();
        synchronized (pending) {
            pending.removeIf(deletion -> deletion.start() <= recordedStart && due.add(deletion));
        }
        for (PendingDeletion deletion : due) {
            for (Map.Entry<QueueIndex, List<QueueIndex.IndexFile>> entry : deletion.files().entrySet()) {
                entry.getKey().deleteRetired(entry.getValue());
            }
            indexes.keys().deleteRetired(deletion.keyFiles());
        }
    }

    /**
     * Index files a log found wholly below its start as it opened again in the same run of the store (their deletion
     * waited for a checkpoint when the store closed the log): deleted, as a pass's are, once a checkpoint records a
     * start of at least {@code start}.
     */
    public void deleteOnceRecorded(long start, Map<QueueIndex, List<QueueIndex.IndexFile>> files,
                                   List<KeyIndex.KeyFile> keyFiles) {
        if (files.isEmpty() && keyFiles.isEmpty()) {
            return;
        }
        synchronized (pending) {
            pending.add(new PendingDeletion(start, files, keyFiles));
        }
    }

    /**
     * The log is being deleted with its directory, or closed while idle: index files still waiting for a checkpoint
     * are unmapped (once no reader holds them) and left on disk, for the directory's deletion, or for the log's next
     * open, which finds them below its start again.
     */
    public void abandonPending() {
        List<PendingDeletion> abandoned;
        synchronized (pending) {
            abandoned = new java.util.ArrayList<>(pending);
            pending.clear();
        }
        for (PendingDeletion deletion : abandoned) {
            deletion.files().values().forEach(files -> files.forEach(QueueIndex.IndexFile::retire));
            deletion.keyFiles().forEach(KeyIndex.KeyFile::retire);
        }
    }

    private void updateRefusal(double ratio) {
        boolean refuse = ratio > policy.diskHardRatio();
        if (refuse != appendsRefused) {
            appendsRefused = refuse;
            if (refuse) {
                LOG.error("disk use {} is above diskHardRatio {}: refusing appends until it falls below",
                        percent(ratio), percent(policy.diskHardRatio()));
            } else {
                LOG.warn("disk use {} is back below diskHardRatio {}: accepting appends again", percent(ratio),
                        percent(policy.diskHardRatio()));
            }
        }
    }

    /** True if the record that starts {@code next} is older than the retention time: so is all before it. */
    private boolean expired(Segment next, long now, long retentionMillis) {
        if (retentionMillis == Long.MAX_VALUE || log.writePosition() < next.base() + format.headerBytes(0)) {
            return false;
        }
        return now - storeTimestampAt(next.base()) > retentionMillis;
    }

    /** @return the store time of the record at {@code position}: its own, or its index entry's if it carries none */
    private long storeTimestampAt(long position) {
        long first;
        String topic;
        int queueId;
        try (RecordView view = log.read(position, format.headerBytes(0))) {
            MemorySegment header = view.bytes();
            long storeTimestamp = format.storeTimestamp(header);
            if (storeTimestamp != LogFormat.NO_STORE_TIME) {
                return storeTimestamp;
            }
            first = format.firstOffset(header);
            topic = format.topic(header);
            queueId = format.queueId(header);
        }
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null || first < index.minOffset() || first >= index.publishedEnd()) {
            return Long.MAX_VALUE; // nothing says it is old: keep it
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            IndexEntry entry = cursor.entry(first);
            return entry.logPosition() == position ? entry.storeTimestamp() : Long.MAX_VALUE;
        }
    }

    /** The lowest log position a registered consumer still needs, and whose it is. */
    private record Protection(long position, String group) {
    }

    private Protection protectedPosition() {
        long lowest = Long.MAX_VALUE;
        String group = null;
        for (Map.Entry<ConsumerOffsets.Key, Long> entry : consumers.protectedPositions(policy.consumersHoldRetention()).entrySet()) {
            ConsumerOffsets.Key key = entry.getKey();
            QueueIndex index = indexes.get(key.topic(), key.queueId());
            if (index == null) {
                continue;
            }
            long offset = Math.max(entry.getValue(), index.minOffset());
            if (offset >= index.publishedEnd()) {
                continue;
            }
            long position;
            try (QueueIndex.Cursor cursor = index.cursor()) {
                position = cursor.logPosition(offset);
            } catch (io.sluice.store.internal.index.IndexFileRetiredException e) {
                continue;
            }
            if (position < lowest) {
                lowest = position;
                group = key.group();
            }
        }
        return new Protection(lowest, group);
    }

    private static long logBytes(List<Segment> segments) {
        long total = 0;
        for (Segment segment : segments) {
            total += segment.size();
        }
        return total;
    }

    private static double ratio(long used, long total) {
        return total <= 0 ? 0 : Math.max(0, (double) used / total);
    }

    private static String percent(double ratio) {
        return String.format("%.1f%%", ratio * 100);
    }
}
