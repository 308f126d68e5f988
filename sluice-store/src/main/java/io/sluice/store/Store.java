package io.sluice.store;

import io.sluice.store.internal.cache.MemoryBudget;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.LogDirectories.LogRoot;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.recovery.StoreSettings;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.internal.retention.ConsumerOffsets;
import io.sluice.store.internal.task.SerialTask;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An embeddable message store: commit logs in segment files, a dense index per topic queue, a key index, and
 * every topic in the layout it was created with ({@link TopicLayout}): the shared log by default, or a log of
 * its own per topic or per queue.
 *
 * <h2>Appending</h2>
 * {@link #append} and {@link #appendBatch} encode the messages into one log record, index it, and return a
 * future that completes when the record is as durable as the {@link FlushMode} promises. Bad input (a bad
 * topic name, a negative queue id, an oversize message) throws {@link IllegalArgumentException}; a closed
 * store throws {@link IllegalStateException}; I/O failures complete the future exceptionally with a
 * {@link StoreException} ({@link DiskFullException} when the disk is full). A topic first appended to
 * without {@link #createTopic} lives in the shared log. Under SYNC, futures complete on the scheduler's
 * acknowledgement thread (a virtual thread per group commit by default), never on a store thread.
 *
 * <h2>Reading</h2>
 * A message is readable only once indexed, and under {@link FlushMode#SYNC} only once durable. Bodies are
 * views of store memory, valid until the {@link ReadResult} is closed.
 *
 * <h2>Durability</h2>
 * The store's {@code checkpoint} file holds each log's durable position: everything below it (the log's bytes,
 * its index entries, the names of its files) was forced first. Recovery trusts what lies below it and cuts
 * (and erases) an interrupted tail past it. One {@code clean-shutdown} marker covers every log.
 *
 * <h2>Layouts on disk</h2>
 * The shared log is the store directory's {@code log/}, {@code index/} and {@code keys/}; a TOPIC log lives in
 * {@code logs/<topic>/}, a QUEUE log in {@code logs/<topic>/<queueId>/}, each with its own three directories.
 * The file {@code topics} records which topics have logs of their own.
 *
 * <h2>Thread-safety</h2>
 * Every method is thread-safe. Appends to one log are serialised by that log's lock; appends to different
 * logs run in parallel; reads take no lock. Do not use read results after {@link #close()}.
 */
public final class Store implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Store.class);

    /** The directory under the store that holds the logs of TOPIC and QUEUE topics. */
    static final String OWN_LOGS_DIRECTORY = LogDirectories.OWN_LOGS_DIRECTORY;
    /** The shared log's name in the checkpoint. */
    static final String SHARED_LOG = LogDirectories.SHARED_LOG;

    private final Path root;
    private final StoreConfig config;
    private final boolean readOnly;
    private final StoreDirectory directory;
    private final TopicRegistry registry;
    private final ConsumerOffsets consumers;
    /** Runs every log's background work; the store's own unless the configuration gave one. */
    private final Scheduler scheduler;
    /** What the checkpoint that opened the store said, or null if there was none. */
    private final Checkpoint openedFrom;
    private final boolean openedClean;
    private LogStore shared;
    /** Open logs of their own, by {@code <topic>} (TOPIC) or {@code <topic>/<queueId>} (QUEUE). */
    private final Map<String, LogStore> own = new ConcurrentHashMap<>();
    /** Logs closed for a truncation and not open again yet: their readers wait for them (under {@link #ownLock}). */
    private final Set<String> truncating = ConcurrentHashMap.newKeySet();
    private final Object ownLock = new Object();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** The store's checkpoint and retention tasks run inside it; close waits for them. */
    private final TaskGate gate = new TaskGate();
    private final SerialTask checkpointTask;
    /** What every log of the store shares: scheduler, cache memory, calibration, consumer positions. */
    private final LogStore.Shared lent;
    private final AtomicBoolean checkpointArmed = new AtomicBoolean();
    private volatile Scheduler.Timer retentionTimer;
    /** What the last checkpoint written holds; guarded by {@link #checkpointLock}. */
    private Map<String, Checkpoint.Log> lastCheckpoint = Map.of();
    private final Object checkpointLock = new Object();
    /** Held while a checkpoint forces the logs and writes its file. */
    private final Object checkpointRun = new Object();
    /**
     * Checkpoints and retention passes, which visit every log, hold it for reading; deleting a topic, which closes
     * logs, holds it for writing.
     */
    private final ReentrantReadWriteLock logSet = new ReentrantReadWriteLock();

    private Store(Path root, StoreConfig config, boolean readOnly, StoreDirectory directory, TopicRegistry registry,
                  ConsumerOffsets consumers, Scheduler scheduler, Checkpoint openedFrom, boolean openedClean) {
        this.root = root;
        this.config = config;
        this.readOnly = readOnly;
        this.directory = directory;
        this.registry = registry;
        this.consumers = consumers;
        this.scheduler = scheduler;
        this.openedFrom = openedFrom;
        this.openedClean = openedClean;
        // What the checkpoint file says until the next one is written: a log it names must not be forgotten.
        this.lastCheckpoint = openedFrom == null ? Map.of() : openedFrom.logs();
        this.checkpointTask = new SerialTask(scheduler, this::checkpoint);
        this.lent = new LogStore.Shared(config, directory, scheduler, new MemoryBudget(config.cacheBytes()),
                Calibration.read(config.fileIO(), root).readCrossoverBytes(), consumers, this::changed, readOnly);
    }

    /**
     * Opens the store in {@code directory}, creating it if the directory is absent or empty, and recovering
     * every log that was not closed cleanly.
     *
     * @param directory the store's directory
     * @param config the configuration, for every log of the store
     * @return the open store
     * @throws StoreCorruptedException if the directory is not a store, has an unknown format, a log is
     *     corrupt below its durable position, or the topic registry is damaged
     * @throws StoreException on I/O errors, or if the store is already open
     */
    public static Store open(Path directory, StoreConfig config) {
        return open(directory, config, false);
    }

    /**
     * Opens an existing store to read it, creating, changing and deleting nothing, and running no background
     * work: no recovery, no retention, no checkpoint. A store that was not closed cleanly is shown up to each
     * log's durable position (what the last checkpoint claims); opening it for writing recovers the rest.
     * Appends and other changes throw {@link IllegalStateException}.
     *
     * @param directory the store's directory
     * @param config how to read it (the write path decides how segments are mapped)
     * @return the store, open for reading
     * @throws StoreException if there is no store, or it cannot be read without recovery (no checkpoint)
     */
    public static Store openReadOnly(Path directory, StoreConfig config) {
        return open(directory, config, true);
    }

    private static Store open(Path directory, StoreConfig config, boolean readOnly) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(config, "config");
        FileIO io = config.fileIO();
        StoreDirectory storeDirectory;
        try {
            storeDirectory = StoreDirectory.open(directory, io, IndexGeometry.growingTo(config.queueIndexEntriesPerFile()),
                    KeyGeometry.growingTo(config.keyIndexSlotsPerFile(), config.keyIndexEntriesPerFile()), readOnly);
        } catch (IOException e) {
            throw new StoreException("cannot open store " + directory + ": " + e.getMessage(), e);
        }
        Scheduler scheduler = null;
        Store store = null;
        try {
            config = settle(config, storeDirectory, readOnly);
            Checkpoint checkpoint = Checkpoint.read(io, directory);
            boolean clean = checkpoint != null && storeDirectory.wasCleanlyShutDown();
            TopicRegistry registry = TopicRegistry.load(io, directory);
            ConsumerOffsets consumers = ConsumerOffsets.load(io, directory, config.clock().millis(), readOnly);
            scheduler = config.scheduler() != null ? config.scheduler()
                    : readOnly ? Scheduler.threads(1) : Scheduler.threads(config.ioThreads());
            store = new Store(directory, config, readOnly, storeDirectory, registry, consumers, scheduler, checkpoint,
                    clean);
            store.openLogs(storeDirectory.created() ? new Checkpoint(Map.of(), 0) : checkpoint, clean);
            if (!readOnly) {
                if (clean) {
                    storeDirectory.clearCleanShutdown();
                }
                if (storeDirectory.created() || !clean) {
                    store.writeCheckpoint(store.durablePositions());
                }
                store.scheduleRetention();
            }
            return store;
        } catch (IOException | RuntimeException e) {
            closeAfterFailedOpen(store, storeDirectory, scheduler, config, e);
            if (e instanceof IOException io2) {
                throw new StoreException("cannot open store " + directory + ": " + io2.getMessage(), io2);
            }
            throw (RuntimeException) e;
        }
    }

    /**
     * The store's own settings (segment size, retention) win over the opener's, unless the opener overrides
     * them; a new store, or an override, saves them. A message limit the store's segments cannot hold is lowered
     * to fit.
     *
     * @return the configuration the store runs with
     */
    private static StoreConfig settle(StoreConfig config, StoreDirectory directory, boolean readOnly)
            throws IOException {
        StoreSettings saved;
        try {
            saved = StoreSettings.read(config.fileIO(), directory.root());
        } catch (StoreCorruptedException e) {
            if (!config.overrideStoreSettings() || readOnly) {
                throw e;
            }
            saved = null; // replaced below
        }
        StoreSettings wanted = new StoreSettings(config.segmentSizeBytes(), config.retention());
        StoreSettings effective = saved == null || config.overrideStoreSettings() ? wanted : saved;
        if (!readOnly && !effective.equals(saved)) {
            effective.write(config.fileIO(), directory.root());
        }
        if (effective.segmentSizeBytes() == config.segmentSizeBytes() && effective.retention().equals(config.retention())) {
            return config;
        }
        long largest = effective.segmentSizeBytes() - StoreConfig.RECORD_OVERHEAD_BYTES;
        return config.toBuilder().segmentSizeBytes(effective.segmentSizeBytes()).retention(effective.retention())
                .maxMessageBytes((int) Math.min(config.maxMessageBytes(), largest)).build();
    }

    private static void closeAfterFailedOpen(Store store, StoreDirectory directory, Scheduler scheduler,
                                             StoreConfig config, Exception failure) {
        if (store != null) {
            for (LogStore log : store.allLogs()) {
                try {
                    log.close();
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
        }
        if (scheduler != null && config.scheduler() == null) {
            scheduler.shutdown();
        }
        try {
            directory.close();
        } catch (IOException | RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    /** Opens the shared log and every log of its own the registry lists, each from its durable position. */
    private void openLogs(Checkpoint checkpoint, boolean clean) throws IOException {
        if (!readOnly) {
            removeOrphanLogs();
        }
        for (Map.Entry<String, LogRoot> log : LogDirectories.of(config.fileIO(), root, registry).entrySet()) {
            LogStore opened = openLog(log.getKey(), log.getValue(), checkpoint, clean);
            if (log.getKey().equals(SHARED_LOG)) {
                shared = opened;
                shared.acceptOnly(topic -> registry.layout(topic) == TopicLayout.SHARED);
            } else {
                own.put(log.getKey(), opened);
            }
        }
    }

    /** Removes what a deletion cut short by a crash left: directories under {@code logs/} of unregistered topics. */
    private void removeOrphanLogs() throws IOException {
        FileIO io = config.fileIO();
        Path logs = root.resolve(OWN_LOGS_DIRECTORY);
        if (!io.isDirectory(logs)) {
            return;
        }
        if (!io.exists(root.resolve(TopicRegistry.FILE_NAME))) {
            // Without a registry nothing says these directories are orphans: leave them for an operator.
            LOG.warn("{} holds logs but the store has no topic registry; nothing under it is removed", logs);
            return;
        }
        Map<String, TopicLayout> registered = registry.ownLogs();
        for (Path child : io.list(logs)) {
            String name = child.getFileName().toString();
            if (!registered.containsKey(name)) {
                LOG.info("removing {}: its topic is not in the registry (deleted before a crash)", child);
                if (consumers.removeTopic(name)) {
                    synchronized (checkpointLock) {
                        consumers.saveIfDirty(io, root);
                    }
                }
                removeOrphanFiles(name);
            }
        }
    }

    /**
     * What opening the store for writing would do to each log, changing nothing: where recovery would scan from
     * and cut, how many bytes and segments it would drop, which valid records lie past each cut (by queue), and,
     * for a log a plain open would refuse (corruption below its durable position), why. With
     * {@code truncateOnCorruption} an open would cut such a log where the plan says.
     *
     * @param directory the store's directory
     * @param config how the store would be opened
     * @return the plan, by log name ("" for the shared log)
     * @throws StoreException if there is no store there, it is open, or it cannot be read
     */
    public static Map<String, RecoveryReport> planRecovery(Path directory, StoreConfig config) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(config, "config");
        FileIO io = config.fileIO();
        try (StoreDirectory storeDirectory = StoreDirectory.open(directory, io,
                IndexGeometry.growingTo(config.queueIndexEntriesPerFile()),
                KeyGeometry.growingTo(config.keyIndexSlotsPerFile(), config.keyIndexEntriesPerFile()), true);
             java.io.Closeable lock = io.tryLock(directory.resolve(StoreDirectory.LOCK_FILE))) {
            if (lock == null) {
                throw new StoreException("store " + directory + " is open (in this or another process): a recovery"
                        + " plan of a store in use would describe files that are changing");
            }
            StoreConfig settled = settle(config, storeDirectory, true);
            Checkpoint checkpoint = Checkpoint.read(io, directory);
            boolean clean = checkpoint != null && storeDirectory.wasCleanlyShutDown();
            Map<String, RecoveryReport> plan = new LinkedHashMap<>();
            for (Map.Entry<String, LogRoot> log : LogDirectories.of(io, directory, TopicRegistry.load(io, directory)).entrySet()) {
                Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(log.getKey());
                long durable = checkpoint == null ? Recovery.UNKNOWN
                        : positions == null ? 0 : positions.durablePosition();
                long start = positions == null ? -1 : positions.start();
                Recovery.Result result = new Recovery(settled, new Recovery.Target(log.getValue().directory(), durable,
                        start, clean, false, true, log.getValue().format()), storeDirectory.indexGeometry(),
                        storeDirectory.keyGeometry(),
                        new DurabilityLedger(io)).run();
                result.close();
                plan.put(log.getKey(), result.report());
            }
            return plan;
        } catch (IOException e) {
            throw new StoreException("cannot plan the recovery of " + directory + ": " + e.getMessage(), e);
        }
    }

    /**
     * @param checkpoint the store's checkpoint, or null if it has none (every log's durable position unknown)
     */
    private LogStore openLog(String name, LogRoot logRoot, Checkpoint checkpoint, boolean clean) {
        Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(name);
        long durable = checkpoint == null ? Recovery.UNKNOWN : positions == null ? 0 : positions.durablePosition();
        long start = positions == null ? -1 : positions.start();
        return LogStore.open(name, logRoot.directory(), lent, durable, start, clean, logRoot.format());
    }

    /**
     * Creates a topic in a layout: where its messages will live, for good. Creating a SHARED topic is
     * optional (appending to a new topic creates it so). The layout is in force only once the registry that
     * records it is durable.
     *
     * @param topic the topic name
     * @param layout the layout
     * @throws IllegalArgumentException if the topic already exists in another layout
     * @throws StoreException if the registry cannot be written
     */
    public void createTopic(String topic, TopicLayout layout) {
        Names.checkTopic(topic);
        Objects.requireNonNull(layout, "layout");
        checkWritable();
        synchronized (ownLock) {
            TopicLayout existing = registry.layout(topic);
            if (existing != TopicLayout.SHARED) {
                if (existing != layout) {
                    throw new IllegalArgumentException("topic " + topic + " already exists with layout " + existing);
                }
                return;
            }
            if (layout != TopicLayout.SHARED) {
                register(topic, layout, registry.queues(topic));
            }
        }
    }

    /**
     * Creates a topic with a declared number of queues (Kafka's partitions): appends then take queue ids below
     * it, and {@link #queueCount} reports it. The declaration is durable before this returns.
     *
     * @param topic the topic name
     * @param layout the layout
     * @param queueCount the number of queues, 1 to {@link StoreConfig#maxQueuesPerTopic}
     * @return true if created; false if the topic already had a declared queue count (nothing changes)
     * @throws IllegalArgumentException if the topic already exists in another layout, or holds messages in a queue
     *     at or above {@code queueCount}
     * @throws StoreException if the registry cannot be written
     */
    public boolean createTopic(String topic, TopicLayout layout, int queueCount) {
        Names.checkTopic(topic);
        Objects.requireNonNull(layout, "layout");
        checkQueueCount(queueCount);
        checkWritable();
        synchronized (ownLock) {
            if (registry.queues(topic) > 0) {
                return false;
            }
            TopicLayout existing = registry.layout(topic);
            if (existing != TopicLayout.SHARED && existing != layout) {
                throw new IllegalArgumentException("topic " + topic + " already exists with layout " + existing);
            }
            for (int queue : queues(topic)) {
                if (queue >= queueCount) {
                    throw new IllegalArgumentException("topic " + topic + " holds messages in queue " + queue
                            + ", so it cannot be declared with " + queueCount + " queues");
                }
            }
            register(topic, layout, queueCount);
            return true;
        }
    }

    /**
     * Raises a topic's declared queue count (Kafka's CreatePartitions). Counts never go down.
     *
     * @param topic a topic created with a queue count
     * @param queueCount the new count, above the current one and at most {@link StoreConfig#maxQueuesPerTopic}
     * @throws IllegalArgumentException if the topic has no declared count, or the new one is not larger
     * @throws StoreException if the registry cannot be written
     */
    public void increaseQueueCount(String topic, int queueCount) {
        Names.checkTopic(topic);
        checkQueueCount(queueCount);
        checkWritable();
        synchronized (ownLock) {
            int current = registry.queues(topic);
            if (current == 0) {
                throw new IllegalArgumentException("topic " + topic + " was not created with a queue count");
            }
            if (queueCount <= current) {
                throw new IllegalArgumentException("topic " + topic + " has " + current + " queues; a new count must be"
                        + " larger, was " + queueCount);
            }
            register(topic, registry.layout(topic), queueCount);
        }
    }

    /** @return the topic's declared queue count; 0 for a topic created without one, or unknown */
    public int queueCount(String topic) {
        Names.checkTopic(topic);
        return registry.queues(topic);
    }

    /** @return every topic with a declared queue count, and that count, sorted by name */
    public Map<String, Integer> declaredTopics() {
        checkOpen();
        return registry.declared();
    }

    private void checkQueueCount(int queueCount) {
        if (queueCount < 1 || queueCount > config.maxQueuesPerTopic()) {
            throw new IllegalArgumentException("a queue count must be between 1 and maxQueuesPerTopic ("
                    + config.maxQueuesPerTopic() + "), was " + queueCount);
        }
    }

    /** Saves the registry with the topic's entry; called under {@code ownLock}. */
    private void register(String topic, TopicLayout layout, int queueCount) {
        try {
            boolean created;
            if (layout != TopicLayout.SHARED && registry.layout(topic) == TopicLayout.SHARED) {
                // Files a deletion could not remove must not come back as the new topic's messages.
                removeOrphanFiles(topic);
                // Nor may a checkpoint entry of the deleted logs speak for the new ones.
                forgetCheckpointEntries(topic);
                // A log of its own only for a topic the shared log holds nothing of, checked and recorded under the
                // shared log's append lock so that no append slips in between.
                created = shared.ifTopicAbsent(topic, () -> registry.register(config.fileIO(), root, topic, layout,
                        queueCount));
            } else {
                registry.register(config.fileIO(), root, topic, layout, queueCount);
                created = true;
            }
            if (!created) {
                throw new IllegalArgumentException("topic " + topic + " already exists with layout SHARED");
            }
        } catch (TopicRegistry.UncertainSaveException e) {
            throw stopWritingAfter(e, "cannot record topic " + topic);
        } catch (IOException e) {
            throw new StoreException("cannot record topic " + topic + ": " + e.getMessage(), e);
        }
    }

    /**
     * The registry file may or may not hold the change now: appending anywhere could strand messages where the
     * next open does not look. Every log stops writing.
     *
     * @return the exception to throw
     */
    private StoreException stopWritingAfter(TopicRegistry.UncertainSaveException e, String what) {
        for (LogStore log : allLogs()) {
            log.stopWriting("saving the topic registry failed after its rename: " + e.getMessage());
        }
        return new StoreException(what + ": " + e.getMessage() + "; the store is now read-only", e);
    }

    /**
     * Deletes a topic that has a log of its own (TOPIC or QUEUE layout), for good: its messages, indexes, declared
     * queue count and every consumer position on it. Durable when this returns: the topic registry no longer
     * names it, and its directory is gone (a crash part way removes the rest at the next open). Appends on their
     * way to the topic fail with {@link TopicDeletedException}; reads in progress may fail. An append after this
     * returns creates the topic anew, in the shared log, as for any new topic.
     *
     * <p>A SHARED topic cannot be deleted: its messages lie between other topics' in the shared log, and leave
     * with retention only.
     *
     * @param topic the topic
     * @return false if there is no such topic
     * @throws IllegalArgumentException if the topic lives in the shared log
     * @throws StoreException if the registry could not be saved (the topic is still there), or if the topic was
     *     deleted but some of its files could not be removed (the next open removes them)
     */
    public boolean deleteTopic(String topic) {
        Names.checkTopic(topic);
        checkWritable();
        logSet.writeLock().lock();
        try {
            synchronized (ownLock) {
                checkWritable();
                TopicRegistry.Entry entry = registry.entry(topic);
                if (entry.layout() == TopicLayout.SHARED) {
                    if (entry.queues() == 0 && !shared.topics().contains(topic)) {
                        return false;
                    }
                    throw new IllegalArgumentException("topic " + topic + " lives in the shared log, between other"
                            + " topics' messages: only a topic with a log of its own (TOPIC or QUEUE layout) can be"
                            + " deleted; its messages leave with retention");
                }
                deleteOwnTopic(topic);
                return true;
            }
        } finally {
            logSet.writeLock().unlock();
        }
    }

    /**
     * The registry first: its save is the deletion's commit point, and a failure before it changes nothing. Then the
     * logs close, the positions on the topic go, a checkpoint without the logs is written, and the topic's directory
     * is deleted. A crash after the commit point leaves the directory: the next open removes it and
     * the positions on its topic ({@link #removeOrphanLogs}).
     */
    private void deleteOwnTopic(String topic) {
        FileIO io = config.fileIO();
        List<LogStore> logs = logsOf(topic); // while the registry still names the topic's layout
        try {
            registry.unregister(io, root, topic);
        } catch (TopicRegistry.UncertainSaveException e) {
            throw stopWritingAfter(e, "cannot delete topic " + topic);
        } catch (IOException e) {
            throw new StoreException("cannot delete topic " + topic + ": " + e.getMessage(), e);
        }
        List<Throwable> errors = new ArrayList<>();
        for (LogStore log : logs) {
            own.remove(log.name());
            try {
                log.closeDeleted();
            } catch (RuntimeException e) {
                errors.add(e);
            }
        }
        try {
            consumers.removeTopic(topic);
            // Positions and checkpoint durable before the files go: until then the directory marks the deletion
            // as unfinished for the next open.
            writeCheckpoint(durablePositions());
            removeOrphanFiles(topic);
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
        if (!errors.isEmpty()) {
            StoreException failure = new StoreException("topic " + topic + " is deleted, but removing its files"
                    + " or positions failed; the next open removes them");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
        LOG.info("deleted topic {} ({} logs)", topic, logs.size());
    }

    /**
     * Removes the batches of a queue of a BATCHES topic from {@code offset} on, as a Raft follower cuts its log back to
     * its leader's: the queue's next offset becomes {@code offset}, and the next append gets it. Durable when this
     * returns; a crash part way leaves the queue either as it was or cut at {@code offset}, never between. The
     * bytes are erased and later segments deleted (recovery's torn-tail cut), so no truncated batch can come back.
     *
     * <p>The queue's log closes (everything appended is forced), the checkpoint is lowered to the cut, the batch
     * header at the cut is erased and forced, and the log opens again through recovery, which finds its end there.
     * Appends to the queue wait meanwhile and go to the truncated log; a read of the queue in progress may fail with
     * a {@link StoreException} that says to read again. Consumer positions past the cut are left as they are.
     *
     * @param offset the first offset to remove: the first offset of a batch, from the queue's first stored offset
     *     up to its next offset (which removes nothing)
     * @throws IllegalArgumentException if the topic is not BATCHES or no batch of the queue starts at {@code offset}
     * @throws StoreException if the log is not writable or a file operation failed (the queue is then as it was, or
     *     cut, and opens again by recovery at its next use)
     */
    public void truncateQueue(String topic, int queueId, long offset) {
        try {
            truncateQueueChecked(topic, queueId, offset);
        } catch (IOException e) {
            throw new StoreException("cannot truncate " + topic + "-" + queueId + ": " + e.getMessage(), e);
        }
    }

    private void truncateQueueChecked(String topic, int queueId, long offset) throws IOException {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkWritable();
        if (registry.layout(topic) != TopicLayout.BATCHES) {
            throw new IllegalArgumentException("only a queue of a BATCHES topic can be truncated; " + topic + " has"
                    + " layout " + registry.layout(topic));
        }
        String key = topic + "/" + queueId;
        logSet.writeLock().lock();
        try {
            synchronized (ownLock) {
                checkWritable();
                LogStore log = own.get(key);
                if (log == null && config.fileIO().isDirectory(root.resolve(OWN_LOGS_DIRECTORY).resolve(topic)
                        .resolve(Integer.toString(queueId)))) {
                    log = logFor(topic, TopicLayout.BATCHES, queueId, true); // has files, not opened yet
                }
                long position = log == null ? truncationOfUnopened(topic, queueId, offset)
                        : log.truncationPoint(topic, queueId, offset);
                if (position < 0) {
                    return;
                }
                truncating.add(key);
                try {
                    truncate(log, key, LogFormat.batches(topic, queueId), position);
                } finally {
                    truncating.remove(key);
                }
                LOG.info("truncated {} at offset {} (log position {})", key, offset, position);
            }
        } finally {
            logSet.writeLock().unlock();
        }
    }

    /**
     * Removes every batch of a queue of a BATCHES topic and makes {@code offset} its next offset, as a Raft follower
     * starts again at its leader's first offset once the leader's retention removed the batches before it. The
     * queue's first offset is then {@code offset} too: offsets below it read as removed by retention. Durable when
     * this returns. A crash part way leaves the queue as it was or empty, its next offset then at most the greater of
     * {@code offset} and the queue's first offset before the call, never holding a batch it did not hold.
     *
     * <p>The queue is first truncated at its first stored offset ({@link #truncateQueue}), then its index starts
     * again at {@code offset}, and the store is forced and checkpointed ({@link #sync}).
     *
     * @param offset the queue's next offset; any offset from 0, below or past its current next offset
     * @throws IllegalArgumentException if the topic is not BATCHES or {@code offset} is negative
     * @throws IllegalStateException if a batch was appended to the queue while it was emptied
     * @throws StoreException if the log is not writable or a file operation failed
     */
    public void emptyQueueAt(String topic, int queueId, long offset) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (offset < 0) {
            throw new IllegalArgumentException("cannot start " + topic + "-" + queueId + " at offset " + offset);
        }
        checkWritable();
        if (registry.layout(topic) != TopicLayout.BATCHES) {
            throw new IllegalArgumentException("only a queue of a BATCHES topic can be emptied; " + topic + " has"
                    + " layout " + registry.layout(topic));
        }
        for (int tries = 1; ; tries++) {
            long first = minOffset(topic, queueId);
            if (first == nextOffset(topic, queueId)) {
                break;
            }
            try {
                truncateQueue(topic, queueId, first);
                break;
            } catch (IllegalArgumentException e) {
                if (tries == 3 || minOffset(topic, queueId) == first) {
                    throw e;
                }
                // Retention moved the first offset meanwhile: cut at the new one.
            }
        }
        logSet.writeLock().lock();
        try {
            synchronized (ownLock) {
                checkWritable();
                logFor(topic, TopicLayout.BATCHES, queueId, true).startEmptyQueueAt(topic, queueId, offset);
            }
        } catch (IOException e) {
            throw new StoreException("cannot start " + topic + "-" + queueId + " at offset " + offset + ": "
                    + e.getMessage(), e);
        } finally {
            logSet.writeLock().unlock();
        }
        sync();
        LOG.info("emptied {}-{}: its next offset is {}", topic, queueId, offset);
    }

    private static long truncationOfUnopened(String topic, int queueId, long offset) {
        if (offset != 0) {
            throw new IllegalArgumentException("cannot truncate " + topic + "-" + queueId + " at offset " + offset
                    + ": the queue holds nothing");
        }
        return -1;
    }

    /**
     * {@link #truncateQueue}'s steps, in the order that keeps a crash at any point from leaving a third state. If a
     * step fails, the log opens again (by recovery) from what the checkpoint claims, as it or cut; if forcing it
     * failed, it stays closed, refusing appends and reads, rather than be opened trusting bytes whose write-back
     * failed.
     */
    private void truncate(LogStore log, String key, LogFormat format, long position) {
        Path logRoot = log.directory();
        long start = log.start();
        own.remove(key);
        long end = log.quiesceForTruncation();
        if (end < 0) {
            log.closeBroken("forcing it for a truncation failed; it opens again, by recovery, when the store does");
            own.put(key, log);
            throw new StoreException("cannot truncate " + key + ": its log could not be forced; it refuses appends"
                    + " and reads until the store is opened again");
        }
        long claimed = end;
        LogStore reopened = null;
        try {
            // 1. The checkpoint claims no byte past the cut, so the erasure below is a torn tail to recovery.
            Map<String, Checkpoint.Log> positions = durablePositions();
            positions.put(key, new Checkpoint.Log(Math.min(end, position), start));
            writeCheckpoint(positions);
            claimed = Math.min(end, position);
            // Index files retention took out are deleted once a checkpoint records the new start: this was one.
            log.afterCheckpoint(start);
            closeQuietly(log, key);
            // 2. The batch at the cut stops being one, durably: from here a crash recovers the queue cut there.
            LogStore.eraseBatchAt(config.fileIO(), logRoot, position);
            // 3. Recovery cuts the log there: erases the rest, deletes later segments, drops their index entries.
            reopened = LogStore.open(key, logRoot, lent, position, start, false, format);
            reopened.keepOpenReport(log);
            own.put(key, reopened);
            writeCheckpoint(durablePositions());
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
            LogStore again = LogStore.open(key, logRoot, lent, claimed, start, false, format);
            again.keepOpenReport(old);
            own.put(key, again);
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
            old.closeBroken("a truncation failed and its log could not be opened again: " + e.getMessage());
            own.put(key, old);
        }
    }

    /** Writes a checkpoint without the topic's logs if the last one written still names any of them. */
    private void forgetCheckpointEntries(String topic) throws IOException {
        synchronized (checkpointLock) {
            boolean stale = lastCheckpoint.keySet().stream()
                    .anyMatch(name -> name.equals(topic) || name.startsWith(topic + "/"));
            if (stale) {
                writeCheckpoint(durablePositions());
            }
        }
    }

    /** Removes {@code logs/<topic>}, the files of a topic the registry no longer names, if there are any. */
    private void removeOrphanFiles(String topic) throws IOException {
        FileIO io = config.fileIO();
        Path logs = root.resolve(OWN_LOGS_DIRECTORY);
        if (FileTree.deleteTree(io, logs.resolve(topic))) {
            io.syncDirectory(logs);
        }
    }

    /** @return the topic's layout (SHARED for a topic never created otherwise) */
    public TopicLayout layout(String topic) {
        Names.checkTopic(topic);
        return registry.layout(topic);
    }

    /** @return the log holding the topic queue; null if it has a log of its own not created yet */
    private LogStore logFor(String topic, int queueId, boolean create) {
        return logFor(topic, registry.layout(topic), queueId, create);
    }

    /** Package-private for a test of the race it closes; {@code layout} is what the caller read of the topic. */
    LogStore logFor(String topic, TopicLayout layout, int queueId, boolean create) {
        if (layout == TopicLayout.SHARED) {
            return shared;
        }
        String key = layout == TopicLayout.TOPIC ? topic : topic + "/" + queueId;
        LogStore log = own.get(key);
        if (log != null && create) {
            // The entry read now is at least as new as this log (a log is put here after its topic is registered):
            // an append that checked its queue id against a topic deleted since must not land in a topic created
            // again with fewer queues.
            checkStillDeclared(topic, layout, queueId);
        }
        if (log == null && !create) {
            if (truncating.contains(key)) {
                synchronized (ownLock) {
                    return own.get(key); // open again once the truncation is done
                }
            }
            log = own.get(key); // a truncation may have ended between the two looks
        }
        if (log != null || !create) {
            return log;
        }
        checkWritable();
        synchronized (ownLock) {
            checkOpen();
            // Deleted while this call waited for the lock (and perhaps created again with fewer queues): do not bring
            // its log back.
            checkStillDeclared(topic, layout, queueId);
            log = own.get(key);
            if (log == null) {
                Path logRoot = root.resolve(OWN_LOGS_DIRECTORY).resolve(topic);
                if (layout != TopicLayout.TOPIC) {
                    logRoot = logRoot.resolve(Integer.toString(queueId));
                }
                // A log with files that is not open (a truncation failed to open it again) opens from what the
                // checkpoint claims; a new one from nothing.
                Checkpoint.Log recorded;
                synchronized (checkpointLock) {
                    recorded = lastCheckpoint.get(key);
                }
                log = LogStore.open(key, logRoot, lent, recorded == null ? 0 : recorded.durablePosition(),
                        recorded == null ? -1 : recorded.start(), false,
                        LogDirectories.format(topic, layout, queueId));
                own.put(key, log);
            }
            return log;
        }
    }

    /** @throws TopicDeletedException unless the topic still has {@code layout} and a queue {@code queueId} */
    private void checkStillDeclared(String topic, TopicLayout layout, int queueId) {
        TopicRegistry.Entry now = registry.entry(topic);
        if (now.layout() != layout || (now.queues() > 0 && queueId >= now.queues())) {
            throw new TopicDeletedException(topic);
        }
    }

    /**
     * @return {@code log}, or the shared log when it is null: a queue whose log of its own does not exist yet
     *     is unknown there too, so the shared log answers as for an unknown queue (and checks the arguments)
     */
    private LogStore orShared(LogStore log) {
        return log == null ? shared : log;
    }

    /** @return the logs that hold the topic: one, or every queue's for a QUEUE topic */
    private List<LogStore> logsOf(String topic) {
        TopicLayout layout = registry.layout(topic);
        if (layout == TopicLayout.SHARED) {
            return List.of(shared);
        }
        List<LogStore> logs = new ArrayList<>();
        new TreeMap<>(own).forEach((key, log) -> {
            if (key.equals(topic) || key.startsWith(topic + "/")) {
                logs.add(log);
            }
        });
        return logs;
    }

    /** @return every open log, the shared one first, then by name (a fixed order: checkpoints replay the same) */
    private List<LogStore> allLogs() {
        List<LogStore> logs = new ArrayList<>();
        if (shared != null) {
            logs.add(shared);
        }
        logs.addAll(new TreeMap<>(own).values());
        return logs;
    }

    /**
     * Appends one message to a topic queue.
     *
     * @param topic topic name: 1-249 characters of {@code [a-zA-Z0-9._-]}, not "." or ".."
     * @param queueId queue id: zero or more, below {@link StoreConfig#maxQueuesPerTopic}
     * @param message the message
     * @return completes with the message's queue offset and log position once durable per the flush mode
     */
    public CompletableFuture<AppendResult> append(String topic, int queueId, Message message) {
        Objects.requireNonNull(message, "message");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.prepare(message, config.maxMessageBytes())},
                false, false);
    }

    /**
     * Appends messages as one record covering consecutive queue offsets: all or none are stored.
     *
     * @param topic topic name
     * @param queueId queue id
     * @param messages one or more messages
     * @return completes with the first message's queue offset once durable per the flush mode
     */
    public CompletableFuture<AppendResult> appendBatch(String topic, int queueId, List<Message> messages) {
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            throw new IllegalArgumentException("a batch must hold at least one message");
        }
        PreparedMessage[] prepared = new PreparedMessage[messages.size()];
        for (int i = 0; i < prepared.length; i++) {
            prepared[i] = PreparedMessage.prepare(Objects.requireNonNull(messages.get(i), "message"),
                    config.maxMessageBytes());
        }
        return append(topic, queueId, prepared, false, false);
    }

    /**
     * Appends an opaque batch: one body in its producer's own framing (a Kafka record batch, say) that covers
     * {@code count} consecutive queue offsets and is kept as it is, except that the store writes the first of
     * those offsets into the body's first 8 bytes (big-endian) as it appends, as a broker stamps offsets into the
     * batches it stores. Reads return it as one {@link StoredMessage} whose {@link StoredMessage#opaqueCount()}
     * is {@code count}; {@link #sliceOpaque} sends such bodies to a socket with no copy. It has no keys.
     *
     * @param topic topic name
     * @param queueId queue id
     * @param body the batch, 8 bytes or more and at most {@link StoreConfig#maxMessageBytes()}; read during the
     *     call only
     * @param count offsets the batch covers, 1 or more
     * @return completes with the first offset once durable per the flush mode
     */
    public CompletableFuture<AppendResult> appendOpaque(String topic, int queueId, MemorySegment body, int count) {
        return appendOpaque(topic, queueId, body, count, false);
    }

    /**
     * {@link #appendOpaque(String, int, MemorySegment, int)}, and with {@code force} the returned future completes
     * only once the record is durable (committed and forced), whatever the flush mode: under ASYNC such appends
     * share one group commit with every other forced append waiting, as all appends do under SYNC.
     *
     * @param force complete once durable rather than per the flush mode
     */
    public CompletableFuture<AppendResult> appendOpaque(String topic, int queueId, MemorySegment body, int count,
                                                        boolean force) {
        Objects.requireNonNull(body, "body");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.opaque(body, count,
                config.maxMessageBytes())}, force, false);
    }

    /**
     * {@link #appendOpaque(String, int, MemorySegment, int, boolean)} to a topic created with a declared queue count
     * only, as a broker appends to its topics: an append to a topic that is not declared (never created, or deleted
     * while the append was on its way) fails with {@link TopicDeletedException} and creates nothing.
     */
    public CompletableFuture<AppendResult> appendOpaqueToDeclared(String topic, int queueId, MemorySegment body,
                                                                  int count, boolean force) {
        Objects.requireNonNull(body, "body");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.opaque(body, count,
                config.maxMessageBytes())}, force, true);
    }

    private CompletableFuture<AppendResult> append(String topic, int queueId, PreparedMessage[] messages,
                                                   boolean force, boolean declaredOnly) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (queueId >= config.maxQueuesPerTopic()) {
            throw new IllegalArgumentException("queue id " + queueId + " is not below maxQueuesPerTopic ("
                    + config.maxQueuesPerTopic() + ")");
        }
        // One registry lookup per append: the declared count and the layout come from the same entry.
        TopicRegistry.Entry entry = registry.entry(topic);
        if (entry.queues() > 0 && queueId >= entry.queues()) {
            throw new IllegalArgumentException("topic " + topic + " has " + entry.queues() + " queues; queue id "
                    + queueId + " is not below it");
        }
        checkWritable();
        if (declaredOnly && entry.queues() == 0) {
            // Read after a deletion's commit point (or never created): the topic is not recreated here.
            return CompletableFuture.failedFuture(new TopicDeletedException(topic));
        }
        try {
            CompletableFuture<AppendResult> result = logFor(topic, entry.layout(), queueId, true)
                    .append(topic, queueId, messages, force);
            while (result == null) {
                // The topic was created with a log of its own while this append was on its way to the shared log,
                // or its log closed for a truncation: the log to use now is found again.
                result = logFor(topic, queueId, true).append(topic, queueId, messages, force);
            }
            return result;
        } catch (TopicDeletedException e) {
            return CompletableFuture.failedFuture(e);
        }
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
     * @throws StoreCorruptedException if the index or the log is damaged where the messages should be
     */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        Names.checkTopic(topic);
        // A queue whose log of its own does not exist yet is unknown to the shared log too: NO_SUCH_QUEUE.
        return orShared(logFor(topic, queueId, false)).read(topic, queueId, fromOffset, maxMessages, maxBytes);
    }

    /**
     * Sends a queue's records, as stored, to a channel with no copy through the Java heap (see
     * docs/design.md, "Zero-copy transfer"). Whole records are sent, so the first may be a batch that starts
     * before {@code fromOffset}: the receiver skips messages below it. A BATCHES topic's records are its Kafka
     * record batches, with no store framing.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most bytes to send, 1 or more; at least one record is sent if any is readable
     * @param target a blocking channel (a socket, a pipe, a file)
     * @return what was sent and the offset to continue from
     * @throws StoreException if writing to the channel or reading the log failed
     */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).transferTo(topic, queueId, fromOffset, maxBytes, target);
    }

    /**
     * Chooses the opaque batches ({@link #appendOpaque}) to send from a queue, from the one holding
     * {@code fromOffset} on, up to {@code maxBytes} of bodies (at least one batch if any is readable), stopping
     * before a record of messages. Send them with {@link OpaqueSlice#transferTo}: with no copy through the Java
     * heap when the target is a socket (see docs/design.md, "Zero-copy transfer").
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most body bytes, 1 or more
     * @return the slice: its status, the batches' total size and the offset to continue from
     * @throws StoreCorruptedException if the index or the log is damaged where the batches should be
     */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes) {
        return sliceOpaque(topic, queueId, fromOffset, maxBytes, Long.MAX_VALUE);
    }

    /**
     * As {@link #sliceOpaque(String, int, long, long)}, taking no batch that starts at or past {@code untilOffset}
     * (a replicated partition's high watermark: what lies past it is not committed yet).
     */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).sliceOpaque(topic, queueId, fromOffset, maxBytes, untilOffset);
    }

    /**
     * Reads the record stored at a position of the shared log (as returned in {@link AppendResult#logPosition()}
     * for a SHARED topic; positions of logs of their own are read through {@link #read}).
     *
     * @param logPosition the record's position
     * @return the record's messages
     * @throws IllegalArgumentException if the position is not readable or no record starts there
     */
    public ReadResult readAt(long logPosition) {
        return shared.readAt(logPosition);
    }

    /**
     * Finds the messages of a topic that carry a key (RocketMQ's query by key), newest first, through the key
     * index: no log scan. Every candidate record is re-read and its topic and keys compared, so a hash
     * collision never returns another key's message. For a QUEUE topic every queue's log is asked.
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
        LogReader.checkLookup(key, maxResults, fromMillis, toMillis);
        checkOpen();
        List<LogStore> logs = logsOf(topic);
        if (logs.size() == 1) {
            return logs.getFirst().lookupByKey(topic, key, maxResults, fromMillis, toMillis);
        }
        List<LookupResult> parts = new ArrayList<>();
        try {
            for (LogStore log : logs) {
                parts.add(log.lookupByKey(topic, key, maxResults, fromMillis, toMillis));
            }
        } catch (RuntimeException e) {
            parts.forEach(LookupResult::close);
            throw e;
        }
        return DefaultReadResult.merged(parts, Comparator.comparingLong(StoredMessage::storeTimestamp).reversed(),
                maxResults);
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).minOffset(topic, queueId);
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).maxOffset(topic, queueId);
    }

    /**
     * @return the offset the queue's next append gets: past every message appended, forced or not ({@link #maxOffset}
     *     shows what readers may see, which under SYNC is what was forced); 0 for an unknown queue
     */
    public long nextOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        return orShared(logFor(topic, queueId, false)).nextOffset(topic, queueId);
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
        return orShared(logFor(topic, queueId, false)).offsetForTimestamp(topic, queueId, epochMillis);
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        checkOpen();
        Set<String> topics = new TreeSet<>();
        for (LogStore log : allLogs()) {
            topics.addAll(log.topics());
        }
        return topics;
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        checkOpen();
        Set<Integer> queues = new TreeSet<>();
        for (LogStore log : logsOf(topic)) {
            queues.addAll(log.queues(topic));
        }
        return queues;
    }

    /**
     * Registers (or moves) a consumer group's position on a queue: the next offset it will read. Retention
     * keeps every segment holding messages at or after a registered position (and the last saved one),
     * unless the disk passes the emergency ratio. Positions are saved with each checkpoint and at close;
     * after a crash a group resumes at most one checkpoint interval back.
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
        checkWritable();
        consumers.commit(group, topic, queueId, nextOffset, config.clock().millis());
        changed();
    }

    /**
     * Holds retention back on a queue: every segment holding its messages at or after {@code offset} is kept (unless
     * the disk passes the emergency ratio), as for a consumer group's position, until the holder moves the hold. Kept
     * in memory only and not a consumer position (no group lists it): a Raft replica holds the batches its log still
     * names, and sets the hold again when it starts.
     *
     * @param holder who holds, named in retention's log lines when the hold stops a deletion
     * @param offset the first offset to keep; {@link Long#MAX_VALUE} holds nothing
     */
    public void holdRetention(String holder, String topic, int queueId, long offset) {
        Objects.requireNonNull(holder, "holder");
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        if (offset < 0) {
            throw new IllegalArgumentException("a retention hold must not be negative, was " + offset);
        }
        checkOpen();
        consumers.hold(holder, topic, queueId, offset);
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
                .map(e -> new ConsumerPosition(e.getKey().group(), e.getKey().topic(), e.getKey().queueId(),
                        e.getValue(), consumers.committedMillis(e.getKey())))
                .sorted(Comparator.comparing(ConsumerPosition::group).thenComparing(ConsumerPosition::topic)
                        .thenComparingInt(ConsumerPosition::queueId))
                .toList();
    }

    /** Forgets every position of a consumer group, so retention no longer holds data for it. @return true if it had any */
    public boolean removeConsumerGroup(String group) {
        Names.checkGroup(group);
        checkWritable();
        boolean removed = consumers.removeGroup(group);
        changed();
        return removed;
    }

    /**
     * Forgets every position of a consumer group that has committed none since {@code cutoffMillis} (store clock), as
     * one step with respect to {@link #commitOffset}: a commit at or after the cutoff keeps the whole group. For
     * expiring the positions of groups nobody uses any more, which would otherwise hold retention back for ever.
     *
     * @return true if the group had positions and they are gone
     */
    public boolean removeConsumerGroupIfIdle(String group, long cutoffMillis) {
        Names.checkGroup(group);
        checkWritable();
        boolean removed = consumers.removeGroupIfIdle(group, cutoffMillis);
        if (removed) {
            changed();
        }
        return removed;
    }

    /**
     * Runs one retention pass on every log now, as the store does every
     * {@link RetentionPolicy#checkIntervalMillis()}. {@code retentionBytes} applies to each log.
     *
     * @return what the passes did together: counts summed, the first reason and holding group found
     * @throws StoreException if deleting files failed
     */
    public RetentionReport enforceRetention() {
        checkWritable();
        try {
            return retentionPass();
        } catch (IOException e) {
            throw new StoreException("retention pass failed: " + e.getMessage(), e);
        }
    }

    private RetentionReport retentionPass() throws IOException {
        logSet.readLock().lock();
        try {
            return retentionPassLocked();
        } finally {
            logSet.readLock().unlock();
        }
    }

    private RetentionReport retentionPassLocked() throws IOException {
        DiskSpace space = config.fileIO().diskSpace(root);
        int segments = 0;
        long bytes = 0;
        long logBytes = 0;
        double ratio = 0;
        boolean refused = false;
        String heldBy = null;
        String reason = null;
        for (LogStore log : allLogs()) {
            RetentionReport report = log.enforceRetention(space);
            segments += report.segmentsDeleted();
            bytes += report.bytesDeleted();
            logBytes += report.logBytes();
            ratio = Math.max(ratio, report.diskUsedRatio());
            refused |= report.appendsRefused();
            heldBy = heldBy != null ? heldBy : report.heldBy();
            reason = reason != null ? reason : report.reason();
        }
        return new RetentionReport(segments, bytes, logBytes, ratio, refused, heldBy, reason);
    }

    private void scheduleRetention() {
        retentionTimer = scheduler.schedule(this::scheduledRetention, config.retention().checkIntervalMillis());
    }

    private void scheduledRetention() {
        if (!gate.enter()) {
            return;
        }
        try {
            retentionPass();
        } catch (IOException | RuntimeException e) {
            LOG.error("retention pass on {} failed; will retry: {}", root, e.toString());
        } finally {
            gate.exit();
        }
        scheduleRetention();
    }

    /** A log changed (or a consumer position moved): schedules a checkpoint unless one is scheduled. */
    private void changed() {
        if (!checkpointArmed.get() && checkpointArmed.compareAndSet(false, true)) {
            scheduler.schedule(checkpointTask::request, config.checkpointIntervalMillis());
        }
    }

    /**
     * One checkpoint: every log that changed makes itself durable, then the checkpoint file records every
     * log's durable position, and the consumer positions are saved if they moved. Nothing runs if nothing
     * changed since the last one, so an idle store writes nothing.
     */
    private void checkpoint() {
        checkpointArmed.set(false);
        if (!gate.enter()) {
            return;
        }
        try {
            forceAndCheckpoint(false);
        } catch (IOException | RuntimeException e) {
            LOG.error("writing the checkpoint of {} failed; the logs' durable positions stay where the last one"
                    + " put them, and it is tried again after the next change: {}", root, e.toString());
        } finally {
            gate.exit();
        }
    }

    /**
     * Forces everything appended before the call, in every log with its index files, and records it in the
     * checkpoint: what a scheduled checkpoint does, now and waited for. Once it returns, a power cut loses none of
     * it, whatever the flush mode. For a caller that must not claim data as kept before it is (a replica's
     * snapshot).
     *
     * @throws StoreException if the store is closed or read-only, a log could not be forced (it turned read-only),
     *     or the checkpoint could not be written
     */
    public void sync() {
        checkWritable();
        if (!gate.enter()) {
            throw new StoreException("store " + root + " is closed");
        }
        try {
            forceAndCheckpoint(true);
        } catch (IOException e) {
            throw new StoreException("writing the checkpoint of " + root + " failed: " + e, e);
        } finally {
            gate.exit();
        }
    }

    /**
     * One checkpoint at a time (a scheduled one and {@link #sync} may meet): an older set of positions never
     * replaces a newer one.
     *
     * @param strict fail if a log could not be forced, rather than record its last durable position
     */
    private void forceAndCheckpoint(boolean strict) throws IOException {
        synchronized (checkpointRun) {
            logSet.readLock().lock();
            try {
                Map<String, Checkpoint.Log> positions = new TreeMap<>();
                for (LogStore log : allLogs()) {
                    long start = log.start();
                    positions.put(log.name(), new Checkpoint.Log(log.makeDurable(), start));
                    StoreException refusal = strict ? log.refusal() : null;
                    if (refusal != null) {
                        throw refusal;
                    }
                }
                writeCheckpoint(positions);
            } finally {
                logSet.readLock().unlock();
            }
        }
    }

    private Map<String, Checkpoint.Log> durablePositions() {
        Map<String, Checkpoint.Log> positions = new TreeMap<>();
        for (LogStore log : allLogs()) {
            positions.put(log.name(), new Checkpoint.Log(log.durablePosition(), log.start()));
        }
        return positions;
    }

    /**
     * Writes the checkpoint if any position moved, then the consumer positions if they moved; then each log may
     * delete the index files retention took out below the start just recorded.
     */
    private void writeCheckpoint(Map<String, Checkpoint.Log> positions) throws IOException {
        synchronized (checkpointLock) {
            if (!positions.equals(lastCheckpoint)) {
                new Checkpoint(positions, config.clock().millis()).write(config.fileIO(), root);
                lastCheckpoint = positions;
            }
            consumers.saveIfDirty(config.fileIO(), root);
        }
        for (LogStore log : allLogs()) {
            Checkpoint.Log recorded = positions.get(log.name());
            if (recorded != null) {
                log.afterCheckpoint(recorded.start());
            }
        }
    }

    /** @return a snapshot of the shared log's state and positions (see {@link #ownLogStatuses()} for the rest) */
    public StoreStatus status() {
        return shared.status(consumers.snapshot().size());
    }

    /** @return the state of each log of its own, by {@code <topic>} or {@code <topic>/<queueId>}, sorted */
    public Map<String, StoreStatus> ownLogStatuses() {
        Map<String, StoreStatus> statuses = new TreeMap<>();
        int positions = consumers.snapshot().size();
        own.forEach((key, log) -> statuses.put(key, log.status(positions)));
        return statuses;
    }

    /** @return true if the last open found every log cleanly shut down and skipped recovery */
    public boolean openedClean() {
        boolean clean = openedClean;
        for (LogStore log : allLogs()) {
            clean &= log.openedClean();
        }
        return clean;
    }

    /** @return what recovery found and did to each log at open, by log name ("" for the shared log) */
    public Map<String, RecoveryReport> recoveryReports() {
        Map<String, RecoveryReport> reports = new TreeMap<>();
        for (LogStore log : allLogs()) {
            reports.put(log.name(), log.recovery());
        }
        return reports;
    }

    /** @return true if the store was opened with {@link #openReadOnly} */
    public boolean readOnly() {
        return readOnly;
    }

    /** @return the store's directory */
    public Path directory() {
        return root;
    }

    /** @return the configuration */
    public StoreConfig config() {
        return config;
    }

    /** @return the checkpoint the store opened from, or null if it had none */
    Checkpoint openedFrom() {
        return openedFrom;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("store " + root + " is closed");
        }
    }

    private void checkWritable() {
        checkOpen();
        if (readOnly) {
            throw new IllegalStateException("store " + root + " is open for reading only");
        }
    }

    /**
     * Closes every log: stops appends, waits for pending SYNC appends, forces everything, writes the checkpoint
     * and the clean-shutdown marker (unless a log failed), then unmaps and closes every file. Idempotent.
     *
     * @throws StoreException if closing failed; every log is still closed
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<Throwable> errors = new ArrayList<>();
        Scheduler.Timer timer = retentionTimer;
        if (timer != null) {
            timer.cancel();
        }
        gate.closeAndAwait();
        synchronized (ownLock) {
            List<LogStore> logs = allLogs();
            if (!readOnly) {
                closeDurably(logs, errors);
            }
            for (LogStore log : logs) {
                try {
                    log.close();
                } catch (RuntimeException e) {
                    errors.add(e);
                }
            }
        }
        if (config.scheduler() == null) {
            scheduler.shutdown();
        }
        try {
            directory.close();
        } catch (IOException e) {
            errors.add(e);
        }
        if (!errors.isEmpty()) {
            StoreException failure = new StoreException("closing store " + root + " failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
        LOG.debug("closed store {}", root);
    }

    /** Every log forces what it holds; then the checkpoint, and the marker if every log was healthy. */
    private void closeDurably(List<LogStore> logs, List<Throwable> errors) {
        Map<String, Checkpoint.Log> positions = new TreeMap<>();
        boolean healthy = true;
        for (LogStore log : logs) {
            long end = log.quiesce();
            healthy &= end >= 0;
            positions.put(log.name(), new Checkpoint.Log(end >= 0 ? end : log.durablePosition(), log.start()));
        }
        try {
            writeCheckpoint(positions);
            if (healthy) {
                directory.markCleanShutdown();
            }
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
    }
}
