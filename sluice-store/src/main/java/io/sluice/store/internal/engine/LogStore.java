package io.sluice.store.internal.engine;

import io.sluice.store.AppendResult;
import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.Durability;
import io.sluice.store.DiskFullException;
import io.sluice.store.FlushMode;
import io.sluice.store.RecoveryReport;
import io.sluice.store.RetentionReport;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreCorruptedException;
import io.sluice.store.StoreException;
import io.sluice.store.StoreStatus;
import io.sluice.store.TopicDeletedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.flush.FlushService;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.log.BatchLogFormat;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.log.SegmentSizes;
import io.sluice.store.internal.read.LogOpaqueSlice;
import io.sluice.store.internal.read.LogReader;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.retention.RetentionService;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit log with its queue indexes, key index, flusher and retention: the unit a store is made of.
 * The shared log lives in the store's own directory; a topic or queue with a log of its own
 * ({@link TopicLayout}) has a {@code LogStore} under {@code logs/}. The store owns what spans logs: the
 * checkpoint, consumer positions, the clean-shutdown marker and the scheduler.
 *
 * <h2>Durability</h2>
 * The log's {@link DurabilityLedger} records every index file, key file and directory written since it was
 * last forced; {@link #makeDurable} commits and forces the log up to its write position and forces the ledger,
 * and only then returns the new durable position, which the store's checkpoint records.
 *
 * <h2>Closing while idle</h2>
 * A log of its own may be closed while nobody uses it, to keep the store's open files under its budget
 * ({@link Logs}). Every caller that goes through the store's API uses the log between {@link #tryUse} and
 * {@link #endUse} (a read result until it is closed); {@link #closeIfIdle} closes it only when no caller does, and
 * forces everything first, so it opens again as after a clean shutdown ({@link ClosedLog}). The shared log is never
 * closed while the store is open, and is not counted.
 *
 * <h2>Thread-safety</h2>
 * Every method is thread-safe. Appends are serialised by one lock (the log has a single writer at a time);
 * reads take no lock ({@link LogReader}).
 */
final class LogStore implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LogStore.class);
    private static final int[] NO_KEY_HASHES = new int[0];
    /** {@link #users} once the log is closing while idle: no caller may use it any more. */
    private static final int CLOSED_IDLE = Integer.MIN_VALUE;

    private final String name;
    private final Path root;
    private final StoreConfig config;
    private final boolean readOnly;
    private final DurabilityLedger ledger;
    private final CommitLog log;
    private final QueueIndexes indexes;
    private final FlushService flusher;
    private final RetentionService retention;
    private final LogHealth health;
    private final LogReader reader;
    private final RecoveryReport recovery;
    private final Runnable changed;
    /** What the log's records are. */
    private final LogFormat format;
    private final ReentrantLock appendLock = new ReentrantLock();
    /** Held by a compaction for its whole run; closing the log waits for it after telling it to stop. */
    private final ReentrantLock compactionLock = new ReentrantLock();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Set by the first {@link #close}: files are closed once. */
    private final AtomicBoolean released = new AtomicBoolean();
    /** Set under the append lock when the log's topic is deleted: appends still on their way are refused. */
    private volatile boolean deleted;
    /** Set under the append lock when the log closes to be truncated and opened again: appends are routed anew. */
    private volatile boolean replaced;
    /** Why the log refuses appends and reads for good (a truncation could not force or reopen it), or null. */
    private volatile String broken;
    /** What the log's first open found, kept across a truncation's reopen (which is not a recovery from a crash). */
    private volatile RecoveryReport openReport;
    /** What the last checkpoint claims (or recovery forced). */
    private volatile long durablePosition;
    /**
     * Decides, under the append lock, whether a topic's appends belong here (the shared log refuses topics
     * created with a log of their own meanwhile); null accepts every topic.
     */
    private volatile Predicate<String> accepts;
    /** Callers using the log now ({@link #tryUse}), or {@link #CLOSED_IDLE}; not counted for the shared log. */
    private final AtomicInteger users = new AtomicInteger();
    /** Set by each use, cleared as the idle-closing hand passes: a log used since its last pass gets a second chance. */
    private volatile boolean recentlyUsed = true;
    /** False for the shared log, which stays open while the store is. */
    private final boolean closesWhenIdle;
    /** How this open found the log: a store open for reading only closes and opens it again the same way. */
    private final ClosedLog opened;
    /** The identity of the log's bytes ({@link ClosedLog#contents}); replaced by a compaction's swap. */
    private volatile Object contents;

    private LogStore(String name, Path root, LogResources shared, DurabilityLedger ledger, Recovery.Result recovered,
                     ClosedLog opened, boolean reopened) throws IOException {
        LogFormat format = opened.format();
        StoreConfig config = shared.config();
        boolean readOnly = shared.readOnly();
        Scheduler scheduler = shared.scheduler();
        Runnable changed = shared.changed();
        this.name = name;
        this.root = root;
        this.config = config;
        this.readOnly = readOnly;
        this.ledger = ledger;
        this.indexes = recovered.indexes();
        this.recovery = recovered.report();
        this.changed = changed;
        this.format = format;
        this.durablePosition = recovered.endPosition();
        this.closesWhenIdle = !name.equals(LogDirectories.SHARED_LOG);
        this.opened = opened;
        this.contents = opened.contents() != null ? opened.contents() : new Object();
        SegmentSizes sizes = name.equals(LogDirectories.SHARED_LOG) ? SegmentSizes.fixed(config.segmentSizeBytes())
                : SegmentSizes.growingTo(config.segmentSizeBytes());
        this.log = new CommitLog(config, sizes, root.resolve("log"), recovered.segments(), recovered.endPosition(),
                shared.mappedReadMaxBytes(), scheduler, shared.cacheBudget(), readOnly);
        this.health = new LogHealth(root, this::onReadOnly);
        this.flusher = readOnly ? null : new FlushService(log, config, scheduler, this::onFlushFailure,
                shared.forceTogether());
        this.retention = readOnly ? null : new RetentionService(config.retention(), config.fileIO(), config.clock(), log,
                indexes, shared.consumers(), appendLock, () -> ledger.markDirectory(root.resolve("log")), format,
                () -> durablePosition, this::makeDurable);
        this.reader = new LogReader(log, indexes, config.flushMode() == FlushMode.SYNC && !readOnly,
                () -> !closed.get(), format);
        trimBelowLogStart(reopened);
        if (shared.logStarts() != null) {
            for (QueueIndex index : indexes.all()) {
                long start = shared.logStarts().start(index.topic(), index.queueId());
                if (start > 0) {
                    index.raiseStart(start);
                }
            }
        }
    }

    /**
     * Raises a queue's first offset ({@code Store.deleteRecords}): reads below it find nothing, and retention deletes
     * the segments wholly below it. The caller made it durable first.
     */
    void raiseStart(String topic, int queueId, long start) {
        appendLock.lock();
        try {
            checkOpen();
            QueueIndex index = indexes.get(topic, queueId);
            if (index != null) {
                index.raiseStart(start);
            }
        } finally {
            appendLock.unlock();
        }
        changed.run();
    }

    /** Lowers a queue's start to {@code start} if it is higher (the queue ends below it). The caller saved it first. */
    void lowerStart(String topic, int queueId, long start) {
        appendLock.lock();
        try {
            checkOpen();
            QueueIndex index = indexes.get(topic, queueId);
            if (index != null) {
                index.lowerStart(start);
            }
        } finally {
            appendLock.unlock();
        }
    }

    /**
     * Entries that point below the log's first segment (deleted by retention before a crash) are not stored:
     * each queue starts past them, and index files that hold nothing else are deleted now (a power cut may
     * have undone their deletion; their segments are gone for good, since recovery found them gone). A log opened
     * again after the store closed it while idle may find index files retention took out while a checkpoint had not
     * recorded the new start yet: those are deleted once one has, as retention's own are.
     */
    private void trimBelowLogStart(boolean reopened) throws IOException {
        long start = log.minPosition();
        Map<QueueIndex, List<QueueIndex.IndexFile>> waiting = new LinkedHashMap<>();
        for (QueueIndex index : indexes.all()) {
            List<QueueIndex.IndexFile> below = index.advanceMinOffset(start);
            if (reopened && retention != null) {
                if (!below.isEmpty()) {
                    waiting.put(index, below);
                }
            } else if (!readOnly) {
                index.deleteRetired(below);
            }
        }
        List<KeyIndex.KeyFile> belowKeys = indexes.keys().retireBefore(start);
        if (reopened && retention != null) {
            retention.deleteOnceRecorded(start, waiting, belowKeys);
        } else if (!readOnly) {
            indexes.keys().deleteRetired(belowKeys);
        }
    }

    /**
     * Opens (recovering it if needed) the log in {@code root}.
     *
     * @param name the log's name in the checkpoint
     * @param shared what the store lends its logs
     * @param durablePosition its durable position from the checkpoint, or {@link Recovery#UNKNOWN}
     * @param start its start from the checkpoint, or -1
     * @param clean the store was shut down cleanly
     * @param format what the log's records are
     * @throws StoreCorruptedException if the log is corrupt below its durable position
     * @throws StoreException on I/O errors
     */
    static LogStore open(String name, Path root, LogResources shared, long durablePosition, long start, boolean clean,
                         LogFormat format) {
        return open(name, shared, new ClosedLog(root, format, durablePosition, start, clean, null, null, null, -1, null,
                null, true));
    }

    /**
     * Opens a log of its own that is closed: one the store has not opened since it opened, or closed while idle
     * (then as after a clean shutdown, and reporting what its first open found).
     *
     * @throws StoreCorruptedException if the log is corrupt below its durable position
     * @throws StoreException on I/O errors
     */
    static LogStore open(String name, LogResources shared, ClosedLog closed) {
        Path root = closed.directory();
        StoreConfig config = shared.config();
        StoreDirectory directory = shared.directory();
        DurabilityLedger ledger = new DurabilityLedger(config.fileIO());
        try {
            Recovery.Result recovered = new Recovery(config, new Recovery.Target(root, closed.durablePosition(),
                    closed.start(), closed.clean(), shared.readOnly(), false, closed.format()), directory.indexGeometry(),
                    directory.keyGeometry(), ledger).run();
            // Forced whole as it closed and untouched since, a log closed while idle opens as after a clean shutdown,
            // or (one with no segment file left, which a clean open does not take) by a recovery that finds nothing to
            // cut or rebuild.
            assert shared.readOnly() || !closed.openedBefore() || opensAsItClosed(recovered.report())
                    : "log " + name + ", closed while idle, opened again by a repair: " + recovered.report();
            LogStore store = new LogStore(name, root, shared, ledger, recovered, closed, closed.openedBefore());
            if (closed.report() != null) {
                store.openReport = closed.report();
            }
            LOG.debug("opened log {} ({}, {}, log ends at {})", root, config.writePath(), config.flushMode(),
                    store.log.writePosition());
            return store;
        } catch (IOException e) {
            throw new StoreException("cannot open log " + root + ": " + e.getMessage(), e);
        }
    }

    /** @return true if recovery found the log as it was closed: nothing cut, dropped or rebuilt */
    private static boolean opensAsItClosed(RecoveryReport report) {
        return report.mode() == RecoveryReport.Mode.CLEAN || report.mode() == RecoveryReport.Mode.CRASH
                && report.cutAt() < 0 && report.bytesDropped() == 0 && report.segmentsDropped() == 0;
    }

    /** @return the log's name in the checkpoint */
    String name() {
        return name;
    }

    /**
     * Starts using the log: it is not closed while idle until {@link #endUse}. Always succeeds for the shared log.
     *
     * @return false if the log is closing (or closed) while idle: look it up again
     */
    boolean tryUse() {
        if (!closesWhenIdle) {
            return true;
        }
        if (!recentlyUsed) {
            recentlyUsed = true;
        }
        for (int now = users.get(); now >= 0; now = users.get()) {
            if (users.compareAndSet(now, now + 1)) {
                return true;
            }
        }
        return false;
    }

    /** Ends a use that {@link #tryUse} started. */
    void endUse() {
        if (closesWhenIdle) {
            users.decrementAndGet();
        }
    }

    /** @return true if the log was used since the last call (the idle-closing hand passing it), and forgets it */
    boolean takeSecondChance() {
        if (recentlyUsed) {
            recentlyUsed = false;
            return true;
        }
        return false;
    }

    /**
     * @return false once the log can never be closed while idle: it is the shared log, turned read-only, broke, was
     *     deleted or closed
     */
    boolean closableWhenIdle() {
        return closesWhenIdle && health.open() && broken == null && !deleted && !replaced && !closed.get();
    }

    /** A log just opened starts as the store's other logs are: refusing appends for a full disk, or for good. */
    void startAs(boolean appendsRefused, String stoppedWriting) {
        if (retention != null) {
            retention.refuseAppendsAsLastPass(appendsRefused);
        }
        if (stoppedWriting != null) {
            health.goReadOnly(stoppedWriting);
        }
    }

    /** @return the identity of the log's bytes: the same across closes while idle, until something rewrites them */
    Object contents() {
        return contents;
    }

    /**
     * Sends a slice chosen from an earlier open of this log (closed while idle since) from this one: the caller
     * checked that the log's bytes are still those ({@link #contents}).
     */
    void transferFromEarlierOpen(LogOpaqueSlice slice, WritableByteChannel target) throws IOException {
        slice.on(log).transferTo(target);
    }

    /**
     * Closes the log if no caller uses it: stops appends, commits and forces everything appended with its index
     * files and directories, and releases its files and mappings. Callers that find it closing look it up again, and
     * the store opens it again from what this returns. A log that is in use, or that turned read-only or broke, stays
     * open. If the force fails, the log turns read-only and breaks: it refuses appends and reads until the store opens
     * again (a force is never retried), and this returns null.
     *
     * @param recordedStart the start the checkpoint file records for the log: index files retention took out below it
     *     may go now (later ones stay, for the log's next open)
     * @return what the log's files hold now, or null if it stays open (or broke)
     */
    ClosedLog closeIfIdle(long recordedStart) {
        if (!closesWhenIdle || !users.compareAndSet(0, CLOSED_IDLE)) {
            return null;
        }
        boolean closable;
        appendLock.lock();
        try {
            closable = closableWhenIdle();
        } finally {
            appendLock.unlock();
        }
        if (!closable) {
            users.set(0);
            return null;
        }
        long end = quiesce();
        if (end < 0) {
            closeBroken("forcing it as it closed while idle failed; it opens again, by recovery, when the store does");
            users.set(0); // reads and appends find it broken and say so
            return null;
        }
        long start = log.minPosition();
        RetentionService.Outlook outlook = null;
        try {
            outlook = retention == null ? null : retention.outlook();
        } catch (RuntimeException e) {
            // Unknown: the store's passes open the log again if it has segments to delete.
            LOG.warn("reading what retention could delete from log {} as it closes failed: {}", name, e.toString());
        }
        Map<String, Set<Integer>> queues = new TreeMap<>();
        Map<String, Map<Integer, ClosedLog.Offsets>> offsets = new TreeMap<>();
        for (QueueIndex index : indexes.all()) {
            queues.computeIfAbsent(index.topic(), topic -> new TreeSet<>()).add(index.queueId());
            offsets.computeIfAbsent(index.topic(), topic -> new TreeMap<>()).put(index.queueId(),
                    new ClosedLog.Offsets(index.minOffset(), index.publishedEnd(), index.nextOffset()));
        }
        boolean keyed = indexes.keys().fileCount() > 0;
        int segments = log.segments().size();
        RecoveryReport report = recovery();
        Object bytes = contents;
        afterCheckpoint(recordedStart);
        if (retention != null) {
            retention.abandonPending();
        }
        try {
            close();
        } catch (RuntimeException e) {
            // Everything was forced: the log opens again from its files whatever closing them left.
            LOG.warn("closing idle log {} failed; it opens again from its files: {}", name, e.toString());
        }
        if (readOnly) {
            return new ClosedLog(root, format, opened.durablePosition(), opened.start(), opened.clean(), report, bytes,
                    outlook, segments, queues, offsets, keyed);
        }
        return new ClosedLog(root, format, end, start, true, report, bytes, outlook, segments, queues, offsets, keyed);
    }

    /** @return what recovery found and did when the log opened (the first time, across truncations) */
    RecoveryReport recovery() {
        RecoveryReport kept = openReport;
        return kept != null ? kept : recovery;
    }

    void acceptOnly(Predicate<String> filter) {
        this.accepts = filter;
    }

    /**
     * Runs {@code action} under the append lock if the log holds no message of {@code topic}, so no append of
     * the topic can slip in between the check and the action.
     *
     * @return false if the log already holds the topic (the action did not run)
     */
    boolean ifTopicAbsent(String topic, IoAction action) throws IOException {
        appendLock.lock();
        try {
            checkOpen();
            if (indexes.topics().contains(topic)) {
                return false;
            }
            action.run();
            return true;
        } finally {
            appendLock.unlock();
        }
    }

    /**
     * @return the append's future, or null if {@link #acceptOnly} turned the topic away or the log closed to be
     *     truncated (route it again)
     */
    CompletableFuture<AppendResult> append(String topic, int queueId, PreparedMessage[] messages,
                                           Durability durability) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (readOnly) {
            throw new IllegalStateException("store " + root + " is open for reading only");
        }
        byte[] topicBytes = topic.getBytes(StandardCharsets.US_ASCII);
        long size = format.appendSize(topic, topicBytes, messages);
        long limit = config.largestRecordBytes();
        if (size > limit) {
            throw new IllegalArgumentException("a record of " + size + " bytes exceeds the largest record this store"
                    + " can hold (" + limit + " bytes: segmentSizeBytes"
                    + (config.writePath().buffered() ? " and writeBufferBytes)" : ")"));
        }
        int[] keyHashes = keyHashes(topic, messages);
        appendLock.lock();
        try {
            if (deleted) {
                return CompletableFuture.failedFuture(new TopicDeletedException(topic));
            }
            if (broken != null) {
                return CompletableFuture.failedFuture(new StoreException("log " + name + " refuses appends: " + broken));
            }
            if (replaced) {
                return null;
            }
            checkOpen();
            StoreException refusal = health.refusal();
            if (refusal != null) {
                return CompletableFuture.failedFuture(refusal);
            }
            Predicate<String> filter = accepts;
            if (filter != null && !filter.test(topic)) {
                return null;
            }
            if (retention.appendsRefused()) {
                return CompletableFuture.failedFuture(new DiskFullException(String.format(
                        "append refused: disk use %.1f%% is above diskHardRatio %.1f%%; appends resume once"
                        + " retention or an operator frees space", retention.lastReport().diskUsedRatio() * 100,
                        config.retention().diskHardRatio() * 100), null));
            }
            return appendLocked(topic, queueId, topicBytes, (int) size, messages, keyHashes, durability);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(health.classify(e, "append"));
        } finally {
            appendLock.unlock();
        }
    }

    /** The key-index hashes of every key of every message, in order, computed before the append lock is taken. */
    private static int[] keyHashes(String topic, PreparedMessage[] messages) {
        int count = 0;
        for (PreparedMessage message : messages) {
            count += message.keys().size();
        }
        if (count == 0) {
            return NO_KEY_HASHES;
        }
        int[] hashes = new int[count];
        int at = 0;
        for (PreparedMessage message : messages) {
            for (String key : message.keys()) {
                hashes[at++] = KeyIndex.hash(topic, key);
            }
        }
        return hashes;
    }

    private CompletableFuture<AppendResult> appendLocked(String topic, int queueId, byte[] topicBytes, int size,
                                                         PreparedMessage[] messages, int[] keyHashes,
                                                         Durability durability) throws IOException {
        assert appendLock.isHeldByCurrentThread();
        QueueIndex index = indexes.getOrCreate(topic, queueId);
        long first = index.nextOffset();
        int count = PreparedMessage.offsetsCovered(messages);
        index.ensureCapacity(first + count);
        KeyIndex keys = indexes.keys();
        keys.ensureRoom(keyHashes.length);
        long now = config.clock().millis();
        long position = format.append(log, size, now, first, queueId, topicBytes, messages);
        for (int i = 0; i < count; i++) {
            index.put(first + i, position, now, size, count, i);
        }
        int hash = 0;
        for (int i = 0; i < messages.length; i++) {
            for (int k = 0; k < messages[i].keys().size(); k++) {
                keys.put(keyHashes[hash++], position, now, i);
            }
        }
        long end = position + size;
        log.publish(end);
        index.publish(first + count);
        changed.run();
        AppendResult result = new AppendResult(first, count, position, size, now);
        if (durability.forces(config)) {
            CompletableFuture<AppendResult> future = new CompletableFuture<>();
            flusher.enqueue(new FlushService.Waiter(end, result, future));
            return future;
        }
        if (end - log.flushedPosition() >= config.flushDirtyBytes()
                || log.uncommittedBytes() >= config.commitMinBytes() || flusher.writebackDue(log.committedPosition())) {
            flusher.wakeUp();
        } else {
            flusher.armTimer();
        }
        return CompletableFuture.completedFuture(result);
    }

    /**
     * Compacts a queue of this batch log ({@code Store.compact}, {@link Compaction}).
     *
     * @throws IllegalArgumentException if the log is not a batch log
     */
    CompactionReport compact(String topic, int queueId, long endOffset, BatchCleaner cleaner) {
        if (!(format instanceof BatchLogFormat)) {
            throw new IllegalArgumentException("only a BATCHES topic's queue can be compacted; " + topic + " is not one");
        }
        if (readOnly) {
            throw new IllegalStateException("store " + root + " is open for reading only");
        }
        compactionLock.lock();
        try {
            checkTakesWrites();
            QueueIndex index = indexes.get(topic, queueId);
            if (index == null) {
                return CompactionReport.NONE;
            }
            Compaction compaction = new Compaction(log, index, ledger, config.fileIO(), action -> {
                appendLock.lock();
                try {
                    if (compactionStopped() || health.refusal() != null) {
                        return false;
                    }
                    action.run();
                    // The log's bytes change: a slice chosen before is not sent from a later open of it.
                    contents = new Object();
                    return true;
                } finally {
                    appendLock.unlock();
                }
            }, this::compactionStopped);
            return compaction.run(endOffset, cleaner);
        } catch (Compaction.SwapFailedException e) {
            throw health.classify(e, "compaction");
        } catch (IOException e) {
            // Nothing of the log changed: the copy being written is gone, the log goes on as it was.
            if (LogHealth.isDiskFull(e)) {
                throw new DiskFullException("compaction of " + topic + "-" + queueId + " failed: disk full ("
                        + e.getMessage() + ")", e);
            }
            throw new StoreException("compaction of " + topic + "-" + queueId + " failed: " + e.getMessage(), e);
        } finally {
            compactionLock.unlock();
        }
    }

    private boolean compactionStopped() {
        return closed.get() || deleted || replaced || broken != null;
    }

    /** Waits for a compaction on its way to see that the log is closing and stop. */
    private void awaitCompaction() {
        compactionLock.lock();
        compactionLock.unlock();
    }

    /**
     * Runs {@code action} on the log's indexes under the append lock, once the log is open and takes writes: no
     * append runs meanwhile.
     *
     * @return what the action returned
     * @throws StoreException if the log does not take writes (it turned read-only)
     */
    <T> T underAppendLock(IndexAction<T> action) throws IOException {
        appendLock.lock();
        try {
            checkTakesWrites();
            return action.run(indexes);
        } finally {
            appendLock.unlock();
        }
    }

    /** Under the append lock: the log is open and takes writes (not read-only after a failed force). */
    private void checkTakesWrites() {
        checkOpen();
        StoreException refusal = health.refusal();
        if (refusal != null) {
            throw refusal;
        }
    }

    /** Turns the log read-only for a reason outside it (the store's registry could not be saved). */
    void stopWriting(String reason) {
        health.goReadOnly(reason);
    }

    private void onFlushFailure(IOException e) {
        health.goReadOnly("committing or forcing the commit log failed: " + e);
    }

    /** Once read-only: fail every append waiting for a force (under the append lock, so none slips in). */
    private void onReadOnly(String reason) {
        appendLock.lock();
        try {
            if (flusher != null) {
                flusher.failWaiters(new StoreException("store is read-only: " + reason));
            }
        } finally {
            appendLock.unlock();
        }
    }

    /**
     * The checkpoint's part: commits and forces the log up to its write position, forces every index file, key
     * file and directory written since the last call, and returns the position all of that covers. Nothing is
     * claimed past what was forced; if a force fails, the log turns read-only and keeps its last claim.
     *
     * @return the log's durable position
     */
    long makeDurable() {
        long target = durableTarget();
        if (target < 0) {
            return durablePosition;
        }
        try {
            long committed = Math.min(log.commit(target), target);
            log.flush(committed);
            ledger.forceAll();
            durablePosition = committed;
        } catch (IOException | RuntimeException e) {
            health.goReadOnly("forcing the log for a checkpoint failed: " + e);
        }
        return durablePosition;
    }

    /**
     * @return the write position a checkpoint makes durable, or -1 if there is nothing to (all of it is, and the ledger
     *     is clean) or it may not (read-only, closed)
     */
    private long durableTarget() {
        if (readOnly || !health.open() || closed.get()) {
            return -1;
        }
        long target = log.writePosition();
        return target == durablePosition && ledger.isClean() ? -1 : target;
    }

    /**
     * This log's part in a checkpoint that forces many logs with one sync of the file system ({@link Checkpoints}):
     * what it committed and took from its ledger before the sync.
     *
     * @param committed the log's bytes below this were in its files before the sync began
     * @param taken the ledger's items, forced by the sync
     */
    record SyncClaim(long committed, DurabilityLedger.Taken taken) {
    }

    /**
     * A checkpoint's first step when one sync of the file system is to force many logs: commits what is appended and
     * takes the ledger's items. The caller then syncs, and calls {@link #synced} or, if the sync failed,
     * {@link #syncFailed}, or if it was not made, {@link #makeDurableWithout}.
     *
     * @return the claim, or null if this log has nothing to force (or cannot: it turned read-only)
     */
    SyncClaim prepareSync() {
        long target = durableTarget();
        if (target < 0) {
            return null;
        }
        try {
            long committed = Math.min(log.commit(target), target);
            return new SyncClaim(committed, ledger.take());
        } catch (IOException | RuntimeException e) {
            health.goReadOnly("committing the log for a checkpoint failed: " + e);
            return null;
        }
    }

    /** The sync of the file system that followed {@link #prepareSync} returned. @return the durable position */
    long synced(SyncClaim claim) {
        ledger.settled(claim.taken());
        if (!health.open()) {
            // Turned read-only meanwhile: it claims nothing more, as makeDurable would not.
            return durablePosition;
        }
        log.flushed(claim.committed());
        if (claim.committed() > durablePosition) {
            durablePosition = claim.committed();
        }
        return durablePosition;
    }

    /** The sync that followed {@link #prepareSync} failed: nothing it took is claimed, and the log turns read-only. */
    void syncFailed(SyncClaim claim, IOException failure) {
        ledger.putBack(claim.taken());
        health.goReadOnly("syncing the file system for a checkpoint failed: " + failure);
    }

    /** Marks again what {@link #prepareSync} took from the ledger: the checkpoint stopped before its sync settled. */
    void putBack(SyncClaim claim) {
        ledger.putBack(claim.taken());
    }

    /** No sync followed {@link #prepareSync}: this log is forced by itself. @return the durable position */
    long makeDurableWithout(SyncClaim claim) {
        ledger.putBack(claim.taken());
        return makeDurable();
    }

    /** @return why the log refuses appends (it turned read-only or broke), or null if it takes them */
    StoreException refusal() {
        String why = broken;
        return why != null ? new StoreException("log " + name + " refuses appends: " + why) : health.refusal();
    }

    /** @return what the last checkpoint may claim for this log */
    long durablePosition() {
        return durablePosition;
    }

    /** @return the log's first stored position (retention moves it up) */
    long start() {
        return log.minPosition();
    }

    /** After a checkpoint recorded {@code recordedStart}: deletes index files retention took out below it. */
    void afterCheckpoint(long recordedStart) {
        if (retention == null) {
            return;
        }
        try {
            retention.deletePendingUpTo(recordedStart);
        } catch (IOException e) {
            LOG.warn("deleting index files retention took out of {} failed; will retry: {}", root, e.toString());
        }
    }

    /**
     * Runs one retention pass on this log.
     *
     * @param retentionMillis keep messages at least this long ({@link Long#MAX_VALUE}: for ever)
     * @param retentionBytes keep the log at most this large ({@link Long#MAX_VALUE}: no limit)
     * @return what it did
     */
    RetentionReport enforceRetention(DiskSpace space, long retentionMillis, long retentionBytes) throws IOException {
        checkOpen();
        if (readOnly) {
            throw new IllegalStateException("store " + root + " is open for reading only");
        }
        RetentionReport report = retention.run(space, retentionMillis, retentionBytes);
        if (report.segmentsDeleted() > 0) {
            changed.run();
        }
        return report;
    }

    /**
     * Runs a read of this log; a failure says why the log failed it when it is closed for good, truncated or its
     * topic deleted under it.
     *
     * @return what the read returned
     */
    <T> T read(Function<LogReader, T> read) {
        try {
            return read.apply(reader);
        } catch (RuntimeException e) {
            throw readFailed(e);
        }
    }

    /** {@link #read} for a read that returns a position or an offset. */
    long readLong(ToLongFunction<LogReader> read) {
        try {
            return read.applyAsLong(reader);
        } catch (RuntimeException e) {
            throw readFailed(e);
        }
    }

    /** @return the offset the queue's next append gets (past every append, forced or not); 0 for an unknown queue */
    long nextOffset(String topic, int queueId) {
        appendLock.lock();
        try {
            checkOpen();
            QueueIndex index = indexes.get(topic, queueId);
            return index == null ? 0 : index.nextOffset();
        } finally {
            appendLock.unlock();
        }
    }

    /** @return the topics, sorted */
    java.util.Set<String> topics() {
        checkOpen();
        return indexes.topics();
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    java.util.Set<Integer> queues(String topic) {
        checkOpen();
        return indexes.queues(topic);
    }

    /** @return a snapshot of the log's state and positions */
    StoreStatus status(int consumerPositions) {
        return new StoreStatus(closed.get() ? StoreStatus.State.CLOSED : health.state(), health.reason(),
                log.writePosition(), log.committedPosition(), log.flushedPosition(), log.minPosition(),
                log.segments().size(), config.writePath(), config.flushMode(), consumerPositions,
                retention != null && retention.appendsRefused(), retention == null ? null : retention.lastReport(),
                log.cacheStats(), log.mappedBytes(), log.pool() == null ? 0 : log.pool().allocatedBytes());
    }

    /** @return true if this open found a clean shutdown and skipped recovery */
    boolean openedClean() {
        return recovery().mode() == RecoveryReport.Mode.CLEAN;
    }

    /** @return the log's directory */
    Path directory() {
        return root;
    }

    /** @return what a failed read throws: {@link TopicDeletedException} if the log's topic was deleted under it */
    private RuntimeException readFailed(RuntimeException e) {
        if (broken != null && !(e instanceof IllegalArgumentException)) {
            return new StoreException("log " + name + " refuses reads: " + broken, e);
        }
        if (replaced && !(e instanceof IllegalArgumentException)) {
            return new StoreException("log " + name + " was truncated while being read: read again", e);
        }
        if (deleted && !(e instanceof IllegalArgumentException)) {
            int slash = name.indexOf('/');
            return new TopicDeletedException(slash < 0 ? name : name.substring(0, slash), e);
        }
        return e;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("store " + root + " is closed");
        }
    }

    /**
     * Close, first half: stops appends, waits for the flusher's running round, then commits and forces
     * everything appended and the ledger, acknowledging every pending SYNC append.
     *
     * @return the log's durable position now, or -1 if the log is not healthy (no clean-shutdown claim for it)
     */
    long quiesce() {
        if (!closed.compareAndSet(false, true)) {
            return -1;
        }
        awaitCompaction();
        boolean healthy;
        appendLock.lock();
        try {
            healthy = health.open();
        } finally {
            appendLock.unlock();
        }
        if (readOnly) {
            return durablePosition;
        }
        flusher.close();
        if (!healthy || flusher.failed()) {
            flusher.failWaiters(new StoreException("store closed before the append was durable"));
            return -1;
        }
        try {
            long end = flusher.finalRound();
            ledger.forceAll();
            durablePosition = end;
            return end;
        } catch (IOException | RuntimeException e) {
            health.goReadOnly("the final flush failed: " + e);
            flusher.failWaiters(new StoreException("store closed before the append was durable: " + e));
            return -1;
        }
    }

    /**
     * Closes the log for good after a truncation could not force it or open it again: appends and reads fail with
     * {@code reason} until the store is opened again.
     */
    void closeBroken(String reason) {
        appendLock.lock();
        try {
            broken = reason;
            replaced = false;
        } finally {
            appendLock.unlock();
        }
        close();
    }

    /** This log replaces {@code old} after a truncation: it reports what {@code old}'s open found. */
    void keepOpenReport(LogStore old) {
        openReport = old.recovery();
    }

    /**
     * Close, first half, for a log about to be truncated and opened again: appends still on their way are routed
     * again (to the log opened after the truncation), then {@link #quiesce}.
     *
     * @return as {@link #quiesce}
     */
    long quiesceForTruncation() {
        appendLock.lock();
        try {
            replaced = true;
        } finally {
            appendLock.unlock();
        }
        return quiesce();
    }

    /**
     * Closes the log of a topic being deleted, without forcing anything: an append in progress finishes first,
     * later ones are refused with {@link TopicDeletedException}, and appends waiting for a force fail.
     */
    void closeDeleted() {
        appendLock.lock();
        try {
            deleted = true;
        } finally {
            appendLock.unlock();
        }
        awaitCompaction();
        log.abandonRetired();
        if (retention != null) {
            retention.abandonPending();
        }
        close();
    }

    /** Close, second half: unmaps and closes every file. Idempotent. */
    @Override
    public void close() {
        if (!released.compareAndSet(false, true)) {
            return;
        }
        if (closed.compareAndSet(false, true) && flusher != null) {
            awaitCompaction();
            flusher.close();
            flusher.failWaiters(new StoreException("store closed before the append was durable"));
        }
        health.closed();
        List<Throwable> errors = new ArrayList<>();
        try {
            log.close();
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
        indexes.close();
        if (!errors.isEmpty()) {
            StoreException failure = new StoreException("closing log " + root + " failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
    }

    /** An action that may fail with an I/O error. */
    @FunctionalInterface
    interface IoAction {
        void run() throws IOException;
    }

    /** An action on a log's indexes that may fail with an I/O error. */
    @FunctionalInterface
    interface IndexAction<T> {
        T run(QueueIndexes indexes) throws IOException;
    }
}
