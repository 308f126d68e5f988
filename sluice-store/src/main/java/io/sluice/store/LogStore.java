package io.sluice.store;

import io.sluice.store.internal.flush.FlushService;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.RecordView;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.log.SegmentRetiredException;
import io.sluice.store.internal.retention.ConsumerOffsets;
import io.sluice.store.internal.retention.RetentionService;
import io.sluice.store.internal.task.SerialTask;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One commit log with its queue indexes, key index, flusher, checkpoint, retention and consumer positions,
 * in one directory: the unit {@link Store} is made of. The shared log lives in the store's own directory;
 * a topic or queue with a log of its own ({@link TopicLayout}) has a {@code LogStore} under {@code logs/}.
 *
 * <h2>Thread-safety</h2>
 * Every method is thread-safe. Appends are serialised by one lock (the log has a single writer at a time);
 * reads take no lock.
 */
final class LogStore implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LogStore.class);

    private final StoreConfig config;
    private final StoreDirectory directory;
    private final CommitLog log;
    private final QueueIndexes indexes;
    private final FlushService flusher;
    private final Scheduler scheduler;
    /** Checkpoint and retention tasks run inside it; close waits for them. */
    private final TaskGate gate = new TaskGate();
    /** Set while a checkpoint is scheduled: something changed since the last one. */
    private final AtomicBoolean checkpointArmed = new AtomicBoolean();
    /** Checkpoints run one at a time. */
    private final SerialTask checkpointTask;
    private volatile Scheduler.Timer retentionTimer;
    private final ConsumerOffsets consumers;
    private final RetentionService retention;
    private final ReentrantLock appendLock = new ReentrantLock();
    private final AtomicBoolean closed = new AtomicBoolean();
    private final boolean recoveredClean;
    private volatile StoreStatus.State state = StoreStatus.State.OPEN;
    private volatile String readOnlyReason;

    private LogStore(StoreConfig config, Scheduler scheduler, StoreDirectory directory, Recovery.Result recovered,
                     ConsumerOffsets consumers) throws IOException {
        this.config = config;
        this.scheduler = scheduler;
        this.directory = directory;
        this.indexes = recovered.indexes();
        this.recoveredClean = recovered.clean();
        this.log = new CommitLog(config, directory.logDirectory(), recovered.segments(), recovered.endPosition(),
                Calibration.read(config.fileIO(), directory.root()).readCrossoverBytes(), scheduler);
        this.flusher = new FlushService(log, config, scheduler, this::onFlushFailure);
        this.checkpointTask = new SerialTask(scheduler, this::checkpoint);
        this.consumers = consumers;
        this.retention = new RetentionService(config.retention(), config.fileIO(), config.clock(), log, indexes,
                consumers, appendLock);
        // Entries that point below the log's first segment (deleted by retention before a crash) are not stored.
        for (QueueIndex index : indexes.all()) {
            index.advanceMinOffset(log.minPosition());
        }
    }

    /**
     * Opens the store in {@code directory}, creating it if the directory is absent or empty, and recovering
     * it if it was not closed cleanly.
     *
     * @param directory the store's directory
     * @param config the configuration
     * @return the open store
     * @throws StoreCorruptedException if the directory is not a store, has an unknown format, or its log is
     *     corrupt before its tail
     * @throws StoreException on I/O errors, or if the store is already open
     */
    static LogStore open(Path directory, StoreConfig config, Scheduler scheduler) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(config, "config");
        StoreDirectory storeDirectory = null;
        try {
            storeDirectory = StoreDirectory.open(directory, config.fileIO(), config.queueIndexEntriesPerFile());
            Recovery.Result recovered = new Recovery(config, storeDirectory).run();
            ConsumerOffsets consumers = ConsumerOffsets.load(config.fileIO(), storeDirectory.root(),
                    config.clock().millis());
            storeDirectory.clearCleanShutdown();
            LogStore store = new LogStore(config, scheduler, storeDirectory, recovered, consumers);
            store.start();
            return store;
        } catch (IOException e) {
            closeQuietly(storeDirectory);
            throw new StoreException("cannot open store " + directory + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeQuietly(storeDirectory);
            throw e;
        }
    }

    private void start() {
        scheduleRetention();
        LOG.info("opened store {} ({}, {}, log ends at {})", directory.root(), config.writePath(),
                config.flushMode(), log.writePosition());
    }

    /**
     * Decides, under the append lock, whether a topic's appends belong here (the shared log refuses topics
     * created with a log of their own meanwhile); null accepts every topic.
     */
    private volatile java.util.function.Predicate<String> accepts;

    void acceptOnly(java.util.function.Predicate<String> filter) {
        this.accepts = filter;
    }

    /**
     * Runs {@code action} under the append lock if the log holds no message of {@code topic}, so no append
     * of the topic can slip in between the check and the action.
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

    /** @return the append's future, or null if {@link #acceptOnly} turned the topic away (route it again) */
    CompletableFuture<AppendResult> append(String topic, int queueId, PreparedMessage[] messages) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        byte[] topicBytes = topic.getBytes(StandardCharsets.US_ASCII);
        long size = RecordFormat.recordSize(topicBytes.length, messages);
        boolean buffered = config.writePath().buffered();
        long limit = Math.min(config.segmentSizeBytes(), buffered
                ? StoreConfig.largestBufferedRecord(config.writePath(), config.writeBufferBytes()) : Integer.MAX_VALUE);
        if (size > limit) {
            throw new IllegalArgumentException("a record of " + size + " bytes exceeds the largest record this store"
                    + " can hold (" + limit + " bytes: segmentSizeBytes" + (buffered ? " and writeBufferBytes)" : ")"));
        }
        int[] keyHashes = keyHashes(topic, messages);
        appendLock.lock();
        try {
            checkOpen();
            if (state == StoreStatus.State.READ_ONLY) {
                return CompletableFuture.failedFuture(new StoreException("store is read-only: " + readOnlyReason));
            }
            java.util.function.Predicate<String> filter = accepts;
            if (filter != null && !filter.test(topic)) {
                return null;
            }
            if (retention.appendsRefused()) {
                return CompletableFuture.failedFuture(new DiskFullException(String.format(
                        "append refused: disk use %.1f%% is above diskHardRatio %.1f%%; appends resume once"
                        + " retention or an operator frees space", retention.lastReport().diskUsedRatio() * 100,
                        config.retention().diskHardRatio() * 100), null));
            }
            return appendLocked(topic, queueId, topicBytes, (int) size, messages, keyHashes);
        } catch (IOException e) {
            return CompletableFuture.failedFuture(classify(e));
        } finally {
            appendLock.unlock();
        }
    }

    private static final int[] NO_KEY_HASHES = new int[0];

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
                                                         PreparedMessage[] messages, int[] keyHashes)
            throws IOException {
        assert appendLock.isHeldByCurrentThread();
        QueueIndex index = indexes.getOrCreate(topic, queueId);
        long first = index.nextOffset();
        index.ensureCapacity(first + messages.length);
        indexes.keys().ensureRoom(keyHashes.length);
        long now = config.clock().millis();
        long position = log.append(size, now, first, queueId, topicBytes, messages);
        for (int i = 0; i < messages.length; i++) {
            index.put(first + i, position, now, size, messages.length, i, messages[i].tagHash());
        }
        KeyIndex keys = indexes.keys();
        int hash = 0;
        for (int i = 0; i < messages.length; i++) {
            for (int k = 0; k < messages[i].keys().size(); k++) {
                keys.put(keyHashes[hash++], position, now, i);
            }
        }
        long end = position + size;
        log.publish(end);
        index.publish(first + messages.length);
        AppendResult result = new AppendResult(first, messages.length, position, size, now);
        armCheckpoint();
        if (config.flushMode() == FlushMode.SYNC) {
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

    private StoreException classify(IOException e) {
        if (isDiskFull(e)) {
            return new DiskFullException("append failed: disk full (" + e.getMessage() + "); acknowledged messages"
                    + " are intact and appends resume once space is freed", e);
        }
        if (e instanceof io.sluice.store.internal.log.WriteBufferExhaustedException) {
            return new StoreException("append failed: " + e.getMessage(), e);
        }
        goReadOnly("write failed: " + e);
        return new StoreException("append failed and the store is now read-only: " + e.getMessage(), e);
    }

    private static boolean isDiskFull(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause()) {
            if (t.getMessage() != null && t.getMessage().contains("No space left on device")) {
                return true;
            }
        }
        return false;
    }

    private void onFlushFailure(IOException e) {
        goReadOnly("committing or forcing the commit log failed: " + e);
    }

    private void goReadOnly(String reason) {
        appendLock.lock();
        try {
            if (state == StoreStatus.State.OPEN) {
                readOnlyReason = reason;
                state = StoreStatus.State.READ_ONLY;
                LOG.error("store {} is now read-only: {}", directory.root(), reason);
            }
            flusher.failWaiters(new StoreException("store is read-only: " + readOnlyReason));
        } finally {
            appendLock.unlock();
        }
    }

    /** Schedules a checkpoint one interval from now unless one is scheduled: something changed. */
    private void armCheckpoint() {
        if (!checkpointArmed.get() && checkpointArmed.compareAndSet(false, true)) {
            scheduler.schedule(checkpointTask::request, config.checkpointIntervalMillis());
        }
    }

    private void checkpoint() {
        checkpointArmed.set(false);
        if (state != StoreStatus.State.OPEN || !gate.enter()) {
            return;
        }
        try {
            long indexed = log.writePosition();
            indexes.forceDirty();
            new Checkpoint(log.flushedPosition(), indexed, config.clock().millis())
                    .write(config.fileIO(), directory.root());
            consumers.saveIfDirty(config.fileIO(), directory.root());
        } catch (IOException | RuntimeException e) {
            goReadOnly("writing the checkpoint failed: " + e);
        } finally {
            gate.exit();
        }
    }

    private void scheduleRetention() {
        retentionTimer = scheduler.schedule(this::retentionPass, config.retention().checkIntervalMillis());
    }

    private void retentionPass() {
        if (!gate.enter()) {
            return;
        }
        try {
            retention.run();
        } catch (IOException | RuntimeException e) {
            LOG.error("retention pass on {} failed; will retry: {}", directory.root(), e.toString());
        } finally {
            gate.exit();
        }
        scheduleRetention();
    }

    /**
     * Runs one retention pass now, as the store does every {@link RetentionPolicy#checkIntervalMillis()}:
     * deletes expired segments per the policy and updates whether appends are refused for lack of disk.
     *
     * @return what the pass did
     * @throws StoreException if deleting files failed
     */
    public RetentionReport enforceRetention() {
        checkOpen();
        try {
            return retention.run();
        } catch (IOException e) {
            throw new StoreException("retention pass failed: " + e.getMessage(), e);
        }
    }

    /**
     * Registers (or moves) a consumer group's position on a queue: the next offset it will read. Retention
     * keeps every segment holding messages at or after a registered position, unless the disk passes the
     * emergency ratio. Positions are saved with each checkpoint and at close; after a crash a group resumes at
     * most one checkpoint interval back.
     *
     * @param group the consumer group: 1-249 characters of {@code [a-zA-Z0-9._-]}
     * @param topic the topic
     * @param queueId the queue
     * @param nextOffset the next offset the group will read, 0 or more
     */
    public void commitOffset(String group, String topic, int queueId, long nextOffset) {
        Names.checkGroup(group);
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (nextOffset < 0) {
            throw new IllegalArgumentException("nextOffset must not be negative, was " + nextOffset);
        }
        checkOpen();
        consumers.commit(group, topic, queueId, nextOffset);
        armCheckpoint();
    }

    /** @return the group's registered position on the queue, if any */
    public OptionalLong committedOffset(String group, String topic, int queueId) {
        Names.checkGroup(group);
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkOpen();
        return consumers.get(group, topic, queueId);
    }

    /** @return every registered consumer position, sorted by group, topic and queue */
    public List<ConsumerPosition> consumerPositions() {
        checkOpen();
        return consumers.snapshot().entrySet().stream()
                .map(e -> new ConsumerPosition(e.getKey().group(), e.getKey().topic(), e.getKey().queueId(), e.getValue()))
                .sorted(java.util.Comparator.comparing(ConsumerPosition::group).thenComparing(ConsumerPosition::topic)
                        .thenComparingInt(ConsumerPosition::queueId))
                .toList();
    }

    /** Forgets every position of a consumer group, so retention no longer holds data for it. @return true if it had any */
    public boolean removeConsumerGroup(String group) {
        Names.checkGroup(group);
        checkOpen();
        boolean removed = consumers.removeGroup(group);
        armCheckpoint();
        return removed;
    }

    /**
     * Reads messages from a queue.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxMessages most messages to return, 1 or more
     * @param maxBytes most body bytes to return, 1 or more; the first message is returned even if larger
     * @return the messages (views of store memory) and the offset to continue from; close it when done
     */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (fromOffset < 0 || maxMessages < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("fromOffset must be >= 0 and maxMessages, maxBytes >= 1; were "
                    + fromOffset + ", " + maxMessages + ", " + maxBytes);
        }
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return DefaultReadResult.empty(ReadResult.Status.NO_SUCH_QUEUE, 0);
        }
        long min = index.minOffset();
        long end = visibleEnd(index);
        if (fromOffset < min) {
            return DefaultReadResult.empty(ReadResult.Status.OFFSET_TOO_SMALL, min);
        }
        if (fromOffset >= end) {
            return DefaultReadResult.empty(fromOffset == end ? ReadResult.Status.NO_NEW_MESSAGES
                    : ReadResult.Status.OFFSET_OVERFLOW, end);
        }
        try {
            return new QueueReader(topic, queueId, index, log).read(fromOffset, end, maxMessages, maxBytes);
        } catch (SegmentRetiredException e) {
            // Retention deleted the segment after the offset was checked against the queue's first offset.
            return DefaultReadResult.empty(ReadResult.Status.OFFSET_TOO_SMALL, Math.max(index.minOffset(), fromOffset + 1));
        }
    }

    /**
     * Sends a queue's records, as stored (docs/format.md, "Messages record"), to a channel with no copy
     * through the Java heap: {@code sendfile} from the segment file, or a write straight from the write-buffer
     * page for bytes not yet in the file. Whole records are sent, so the first may be a batch that starts
     * before {@code fromOffset}: the receiver skips messages below it (each record names its first queue
     * offset and message count). Records adjacent in the log go in one call. At least one record is sent if
     * any is readable, even one larger than {@code maxBytes}.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most bytes to send, 1 or more
     * @param target a blocking channel (a socket, a pipe, a file)
     * @return what was sent and the offset to continue from
     * @throws StoreException if writing to the channel or reading the log failed; some records may have been
     *     sent
     */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        Objects.requireNonNull(target, "target");
        if (fromOffset < 0 || maxBytes < 1) {
            throw new IllegalArgumentException("fromOffset must be >= 0 and maxBytes >= 1; were " + fromOffset + ", "
                    + maxBytes);
        }
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return new TransferResult(ReadResult.Status.NO_SUCH_QUEUE, 0, 0, 0);
        }
        long min = index.minOffset();
        long end = visibleEnd(index);
        if (fromOffset < min) {
            return new TransferResult(ReadResult.Status.OFFSET_TOO_SMALL, min, 0, 0);
        }
        if (fromOffset >= end) {
            return new TransferResult(fromOffset == end ? ReadResult.Status.NO_NEW_MESSAGES
                    : ReadResult.Status.OFFSET_OVERFLOW, end, 0, 0);
        }
        try {
            return RecordTransfer.run(index, log, fromOffset, end, maxBytes, target);
        } catch (SegmentRetiredException e) {
            return new TransferResult(ReadResult.Status.OFFSET_TOO_SMALL, Math.max(index.minOffset(), fromOffset + 1),
                    0, 0);
        } catch (IOException e) {
            throw new StoreException("transfer of " + topic + "-" + queueId + " from offset " + fromOffset
                    + " failed: " + e.getMessage(), e);
        }
    }

    /**
     * Reads the record stored at a log position (as returned in {@link AppendResult#logPosition()}).
     *
     * @param logPosition the record's position
     * @return the record's messages
     * @throws IllegalArgumentException if the position is not readable or no record starts there
     */
    public ReadResult readAt(long logPosition) {
        checkOpen();
        long limit = readLimit();
        if (logPosition < log.minPosition() || logPosition + RecordFormat.FILLER_BYTES > limit) {
            throw new IllegalArgumentException("log position " + logPosition + " is not readable (readable range ["
                    + log.minPosition() + ", " + limit + "))");
        }
        int length;
        try (RecordView header = log.read(logPosition, RecordFormat.FILLER_BYTES)) {
            length = RecordFormat.length(header.bytes());
        } catch (SegmentRetiredException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        if (length < RecordFormat.TOPIC_OFFSET || logPosition + length > limit) {
            throw new IllegalArgumentException("no record starts at log position " + logPosition);
        }
        RecordView view = log.read(logPosition, length);
        MemorySegment record = view.bytes();
        if (RecordFormat.validate(record, 0, logPosition) < 0 || RecordFormat.isFiller(record)) {
            view.close();
            throw new IllegalArgumentException("no record starts at log position " + logPosition);
        }
        return QueueReader.wholeRecord(view);
    }

    /**
     * Finds the messages of a topic that carry a key (RocketMQ's query by key), newest first, through the key
     * index: no log scan. Every candidate record is re-read and its topic and keys compared, so a hash
     * collision never returns another key's message.
     *
     * @param topic the topic
     * @param key the key, not empty
     * @param maxResults most messages to return, 1 or more
     * @param fromMillis earliest store time, epoch ms, 0 or more
     * @param toMillis latest store time, epoch ms, at or after {@code fromMillis}
     * @return the messages (views of store memory); close it when done
     */
    public LookupResult lookupByKey(String topic, String key, int maxResults, long fromMillis, long toMillis) {
        Names.checkTopic(topic);
        checkLookup(key, maxResults, fromMillis, toMillis);
        checkOpen();
        return KeyLookup.run(indexes.keys(), log, topic, key, maxResults, fromMillis, toMillis, readLimit());
    }

    /** @throws IllegalArgumentException naming the rule a key lookup's arguments break */
    static void checkLookup(String key, int maxResults, long fromMillis, long toMillis) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty()) {
            throw new IllegalArgumentException("key must not be empty");
        }
        if (maxResults < 1) {
            throw new IllegalArgumentException("maxResults must be 1 or more, was " + maxResults);
        }
        if (fromMillis < 0 || toMillis < fromMillis) {
            throw new IllegalArgumentException("the time range must satisfy 0 <= fromMillis <= toMillis, was ["
                    + fromMillis + ", " + toMillis + "]");
        }
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        return index == null ? 0 : index.minOffset();
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        return index == null ? 0 : visibleEnd(index);
    }

    /**
     * Finds the first message stored at or after a time, by binary search over the queue index.
     *
     * @param epochMillis the time
     * @return the offset of the first readable message whose store timestamp is at or after the time, or
     *     {@link #maxOffset} if there is none
     */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return 0;
        }
        long low = index.minOffset();
        long high = visibleEnd(index);
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (index.storeTimestamp(mid) < epochMillis) {
                low = mid + 1;
            } else {
                high = mid;
            }
        }
        return low;
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        checkOpen();
        return indexes.topics();
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        checkOpen();
        return indexes.queues(topic);
    }

    /** @return a snapshot of the store's state and positions */
    public StoreStatus status() {
        return new StoreStatus(state, readOnlyReason, log.writePosition(), log.committedPosition(),
                log.flushedPosition(), log.minPosition(), log.segments().size(), config.writePath(),
                config.flushMode(), consumers.snapshot().size(), retention.appendsRefused(), retention.lastReport(),
                log.cacheStats(), log.mappedBytes());
    }

    /** @return true if the last open found a clean shutdown and skipped recovery */
    public boolean openedClean() {
        return recoveredClean;
    }

    /** @return the store's directory */
    public Path directory() {
        return directory.root();
    }

    /** @return the configuration */
    public StoreConfig config() {
        return config;
    }

    /** Offsets below the returned one are readable: indexed, and durable under SYNC. */
    private long visibleEnd(QueueIndex index) {
        long end = index.publishedEnd();
        if (config.flushMode() != FlushMode.SYNC) {
            return end;
        }
        long flushed = log.flushedPosition();
        long low = index.minOffset();
        if (end <= low || index.recordEnd(end - 1) <= flushed) {
            return end;
        }
        long high = end - 1;
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (index.recordEnd(mid) > flushed) {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        return low;
    }

    private long readLimit() {
        return config.flushMode() == FlushMode.SYNC ? log.flushedPosition() : log.writePosition();
    }

    private void checkOpen() {
        if (state == StoreStatus.State.CLOSED) {
            throw new IllegalStateException("store " + directory.root() + " is closed");
        }
    }

    /**
     * Stops appends, waits for pending SYNC appends, forces everything, writes the checkpoint and the
     * clean-shutdown marker (unless a force failed), then unmaps and closes every file. Idempotent.
     *
     * @throws StoreException if closing failed; every step is still attempted
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        appendLock.lock();
        boolean healthy;
        try {
            healthy = state == StoreStatus.State.OPEN;
            state = StoreStatus.State.CLOSED;
        } finally {
            appendLock.unlock();
        }
        List<Throwable> errors = new ArrayList<>();
        gate.closeAndAwait();
        Scheduler.Timer timer = retentionTimer;
        if (timer != null) {
            timer.cancel();
        }
        flusher.close();
        if (healthy && !flusher.failed()) {
            try {
                long end = flusher.finalRound();
                indexes.forceDirty();
                new Checkpoint(end, end, config.clock().millis()).write(config.fileIO(), directory.root());
                consumers.saveIfDirty(config.fileIO(), directory.root());
                directory.markCleanShutdown();
            } catch (IOException | RuntimeException e) {
                errors.add(e);
            }
        }
        flusher.failWaiters(new StoreException("store closed before the append was durable"));
        run(errors, log::close);
        run(errors, indexes::close);
        run(errors, directory::close);
        if (!errors.isEmpty()) {
            StoreException failure = new StoreException("closing store " + directory.root() + " failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
        LOG.info("closed store {}", directory.root());
    }

    @FunctionalInterface
    interface IoAction {
        void run() throws IOException;
    }

    private static void run(List<Throwable> errors, IoAction action) {
        try {
            action.run();
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
    }

    private static void closeQuietly(StoreDirectory directory) {
        if (directory != null) {
            try {
                directory.close();
            } catch (IOException e) {
                LOG.warn("releasing store lock failed", e);
            }
        }
    }
}
