package io.sluice.store.internal.engine;

import io.sluice.store.StoreException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.BatchFormat;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Cutting a BATCHES topic's queue back ({@code Store.truncateQueue}) and emptying it at an offset
 * ({@code Store.emptyQueueAt}), as a Raft follower cuts its log back to its leader's. It reuses recovery rather than
 * a second way of moving a log's positions backwards: the queue's log closes, the checkpoint is lowered to the cut,
 * the batch header at the cut is zeroed and forced (the commit point), and the log opens again through recovery,
 * which finds a torn tail there (docs/store.md, "Truncating a queue").
 *
 * <p>Thread-safe: both hold the log-set lock for writing and the log-creation lock.
 */
public final class QueueTruncation {

    private static final Logger LOG = LoggerFactory.getLogger(QueueTruncation.class);

    private final Logs logs;

    QueueTruncation(Logs logs) {
        this.logs = logs;
    }

    /**
     * Removes the batches of a queue of a BATCHES topic from {@code offset} on ({@code Store.truncateQueue}).
     *
     * @throws IllegalArgumentException if the topic is not BATCHES or no batch of the queue starts at {@code offset}
     * @throws StoreException if the log is not writable or a file operation failed
     */
    public void truncate(String topic, int queueId, long offset) {
        truncate(topic, queueId, offset, false);
    }

    /**
     * @param wholeQueue cut at the queue's first stored batch, {@code offset}, though records were deleted past it
     *     ({@code Store.deleteRecords}): an emptying removes every batch the log holds of the queue
     */
    private void truncate(String topic, int queueId, long offset, boolean wholeQueue) {
        try {
            truncateChecked(topic, queueId, offset, wholeQueue);
        } catch (IOException e) {
            throw new StoreException("cannot truncate " + topic + "-" + queueId + ": " + e.getMessage(), e);
        }
    }

    private void truncateChecked(String topic, int queueId, long offset, boolean wholeQueue) throws IOException {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logs.checkWritable();
        checkBatches(topic, "truncated");
        String key = LogDirectories.name(topic, TopicLayout.BATCHES, queueId);
        logs.setLock().writeLock().lock();
        try {
            synchronized (logs.ownLock()) {
                logs.checkWritable();
                LogStore log = logs.use(topic, TopicLayout.BATCHES, queueId, false); // opened if closed
                if (log == null && logs.config().fileIO().isDirectory(LogDirectories.directory(logs.root(), topic,
                        TopicLayout.BATCHES, queueId))) {
                    log = logs.use(topic, TopicLayout.BATCHES, queueId, true); // has files, not known yet
                }
                long position;
                try {
                    position = log == null ? truncationOfUnopened(topic, queueId, offset)
                            : log.underAppendLock(indexes -> truncationPoint(indexes, topic, queueId, offset,
                                    wholeQueue));
                    if (position < 0) {
                        return;
                    }
                    cut(log, key, LogFormat.batches(topic, queueId), position);
                } finally {
                    logs.release(log);
                }
                // Appends from here on take offsets from the cut: none may read as deleted at the next open.
                logs.lowerStart(topic, queueId, offset);
                LOG.info("truncated {} at offset {} (log position {})", key, offset, position);
            }
        } finally {
            logs.setLock().writeLock().unlock();
        }
    }

    /**
     * Removes every batch of a queue of a BATCHES topic and makes {@code offset} its next offset
     * ({@code Store.emptyQueueAt}): the queue is truncated at its first stored offset, then its index starts again at
     * {@code offset}, and the store is forced and checkpointed.
     *
     * @throws IllegalArgumentException if the topic is not BATCHES or {@code offset} is negative
     * @throws IllegalStateException if a batch was appended to the queue while it was emptied
     * @throws StoreException if the log is not writable or a file operation failed
     */
    public void emptyAt(String topic, int queueId, long offset) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (offset < 0) {
            throw new IllegalArgumentException("cannot start " + topic + "-" + queueId + " at offset " + offset);
        }
        logs.checkWritable();
        checkBatches(topic, "emptied");
        for (int tries = 1; ; tries++) {
            // The first batch stored, not the first a read sees: the batches below a start raised by
            // Store.deleteRecords are still in the log, and must go with the rest.
            long first = firstStoredOffset(topic, queueId);
            if (first == logs.readingLong(topic, queueId, log -> log.nextOffset(topic, queueId))) {
                break;
            }
            try {
                truncate(topic, queueId, first, true);
                break;
            } catch (IllegalArgumentException e) {
                if (tries == 3 || firstStoredOffset(topic, queueId) == first) {
                    throw e;
                }
                // Retention moved the first offset meanwhile: cut at the new one.
            }
        }
        logs.setLock().writeLock().lock();
        try {
            synchronized (logs.ownLock()) {
                logs.checkWritable();
                // Durable before the index starts again below it, or the batches appended there would read as
                // deleted at the next open.
                logs.lowerStart(topic, queueId, offset);
                LogStore log = logs.use(topic, TopicLayout.BATCHES, queueId, true);
                try {
                    log.underAppendLock(indexes -> startEmptyAt(indexes, topic, queueId, offset));
                } finally {
                    logs.release(log);
                }
            }
        } catch (IOException e) {
            throw new StoreException("cannot start " + topic + "-" + queueId + " at offset " + offset + ": "
                    + e.getMessage(), e);
        } finally {
            logs.setLock().writeLock().unlock();
        }
        logs.checkWritable();
        logs.checkpoints().sync();
        LOG.info("emptied {}-{}: its next offset is {}", topic, queueId, offset);
    }

    /** @return the queue's first offset still stored, which lies below its start if records were deleted there */
    private long firstStoredOffset(String topic, int queueId) {
        LogStore log = logs.use(topic, TopicLayout.BATCHES, queueId, false);
        if (log == null) {
            return 0;
        }
        try {
            return log.underAppendLock(indexes -> {
                QueueIndex index = indexes.get(topic, queueId);
                return index == null ? 0 : index.storedMinOffset();
            });
        } catch (IOException e) {
            throw new StoreException("cannot read the first offset of " + topic + "-" + queueId + ": "
                    + e.getMessage(), e);
        } finally {
            logs.release(log);
        }
    }

    private void checkBatches(String topic, String what) {
        TopicLayout layout = logs.registry().layout(topic);
        if (layout != TopicLayout.BATCHES) {
            throw new IllegalArgumentException("only a queue of a BATCHES topic can be " + what + "; " + topic
                    + " has layout " + layout);
        }
    }

    /**
     * Where a truncation of a batch log at {@code offset} cuts: the log position of the batch starting there. Checked
     * under the append lock, and holds until the log is quiesced (the caller stops appends first).
     *
     * @param wholeQueue {@code offset} may lie below the queue's start, down to its first stored offset
     * @return the batch's log position, or -1 if {@code offset} is the queue's next offset (nothing to cut)
     * @throws IllegalArgumentException if no batch of the queue starts at {@code offset}
     */
    private static long truncationPoint(QueueIndexes indexes, String topic, int queueId, long offset,
                                        boolean wholeQueue) {
        QueueIndex index = indexes.get(topic, queueId);
        long next = index == null ? 0 : index.nextOffset();
        long min = index == null ? 0 : wholeQueue ? index.storedMinOffset() : index.minOffset();
        if (offset == next) {
            return -1;
        }
        if (offset < min || offset > next) {
            throw new IllegalArgumentException("cannot truncate " + topic + "-" + queueId + " at offset " + offset
                    + ": it holds offsets " + min + " to " + (next - 1));
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            IndexEntry entry = cursor.entry(offset);
            if (entry.indexInRecord() != 0) {
                throw new IllegalArgumentException("cannot truncate " + topic + "-" + queueId + " at offset " + offset
                        + ": it lies inside the batch that starts at offset " + (offset - entry.indexInRecord()));
            }
            return entry.logPosition();
        }
    }

    /**
     * Makes an empty queue's next offset {@code offset}, under the append lock: its index starts again there, gap
     * markers below it. Not forced here (the caller forces the ledger, through a checkpoint).
     *
     * @throws IllegalStateException if the queue holds a message (one was appended since it was emptied)
     */
    private static Void startEmptyAt(QueueIndexes indexes, String topic, int queueId, long offset)
            throws IOException {
        QueueIndex index = indexes.getOrCreate(topic, queueId);
        if (index.nextOffset() != index.storedMinOffset()) {
            throw new IllegalStateException("queue " + topic + "-" + queueId + " holds offsets "
                    + index.storedMinOffset() + " to " + (index.nextOffset() - 1) + ": appended to while it was emptied");
        }
        if (index.nextOffset() != offset) {
            index.resetTo(offset);
        }
        return null;
    }

    /**
     * Makes the bytes at {@code position} stop being a batch, durably: the first bytes of its header are zeroed and
     * forced, so that recovery finds the log's end there. Call on a closed log, after the checkpoint claims no more
     * than {@code position}.
     */
    private static void eraseBatchAt(FileIO io, Path root, long position) throws IOException {
        Path logDirectory = root.resolve("log");
        Path holder = null;
        for (Path file : io.list(logDirectory)) {
            if (CommitLog.isSegmentName(file) && Long.parseLong(file.getFileName().toString()) <= position
                    && (holder == null || file.getFileName().toString().compareTo(holder.getFileName().toString()) > 0)) {
                holder = file;
            }
        }
        if (holder == null) {
            throw new IOException("no segment of " + logDirectory + " holds log position " + position);
        }
        long offset = position - Long.parseLong(holder.getFileName().toString());
        try (StoreFile file = io.open(holder, FileIO.OpenMode.READ_WRITE)) {
            long length = Math.min(BatchFormat.HEADER_BYTES, file.size() - offset);
            if (length <= 0) {
                throw new IOException("segment " + holder + " ends before log position " + position);
            }
            file.zeroRange(offset, length);
            file.force();
        }
    }

    private static long truncationOfUnopened(String topic, int queueId, long offset) {
        if (offset != 0) {
            throw new IllegalArgumentException("cannot truncate " + topic + "-" + queueId + " at offset " + offset
                    + ": the queue holds nothing");
        }
        return -1;
    }

    /**
     * The truncation's steps, in the order that keeps a crash at any point from leaving a third state. If a step
     * fails, the log opens again (by recovery) from what the checkpoint claims, as it or cut; if forcing it failed,
     * it stays closed, refusing appends and reads, rather than be opened trusting bytes whose write-back failed.
     */
    private void cut(LogStore log, String key, LogFormat format, long position) {
        Path logRoot = log.directory();
        long start = log.start();
        logs.takeOpen(key);
        long end = log.quiesceForTruncation();
        if (end < 0) {
            log.closeBroken("forcing it for a truncation failed; it opens again, by recovery, when the store does");
            logs.putOpen(key, log);
            throw new StoreException("cannot truncate " + key + ": its log could not be forced; it refuses appends"
                    + " and reads until the store is opened again");
        }
        long claimed = end;
        LogStore reopened = null;
        try {
            // 1. The checkpoint claims no byte past the cut, so the erasure below is a torn tail to recovery.
            Map<String, Checkpoint.Log> positions = logs.checkpoints().durablePositions();
            positions.put(key, new Checkpoint.Log(Math.min(end, position), start));
            logs.checkpoints().write(positions);
            claimed = Math.min(end, position);
            // Index files retention took out are deleted once a checkpoint records the new start: this was one.
            log.afterCheckpoint(start);
            closeQuietly(log, key);
            // 2. The batch at the cut stops being one, durably: from here a crash recovers the queue cut there.
            eraseBatchAt(logs.config().fileIO(), logRoot, position);
            // 3. Recovery cuts the log there: erases the rest, deletes later segments, drops their index entries.
            reopened = LogStore.open(key, logRoot, logs.lent(), position, start, false, format);
            reopened.keepOpenReport(log);
            logs.putOpen(key, reopened);
            logs.checkpoints().writeCurrent();
        } catch (IOException | RuntimeException e) {
            if (reopened == null) {
                closeQuietly(log, key);
                reopenAfterFailure(key, logRoot, format, log, claimed, start, e);
            }
            throw new StoreException("truncating " + key + " failed: " + e.getMessage()
                    + "; the queue is as it was, or cut", e);
        }
    }

    private static void closeQuietly(LogStore log, String key) {
        try {
            log.close();
        } catch (RuntimeException e) {
            LOG.warn("closing log {} for its truncation failed: {}", key, e.toString());
        }
    }

    /** A truncation failed after its log closed: the log opens again from what the checkpoint claims. */
    private void reopenAfterFailure(String key, Path logRoot, LogFormat format, LogStore old, long claimed,
                                    long start, Exception failure) {
        try {
            LogStore again = LogStore.open(key, logRoot, logs.lent(), claimed, start, false, format);
            again.keepOpenReport(old);
            logs.putOpen(key, again);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            old.closeBroken("a truncation failed and its log could not be opened again: " + e.getMessage());
            logs.putOpen(key, old);
        }
    }
}
