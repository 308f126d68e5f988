package io.sluice.store.internal.engine;

import io.sluice.store.Calibration;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.TopicDeletedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.cache.MemoryBudget;
import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.LogDirectories.LogRoot;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.recovery.LogStarts;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.internal.retention.ConsumerOffsets;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's open logs, and which of them holds a topic queue: the shared log, and the logs of their own (by
 * {@code <topic>} for a TOPIC topic, {@code <topic>/<queueId>} for a QUEUE or BATCHES one), opened as the topic
 * registry names them and created at a queue's first append.
 *
 * <h2>Locks</h2>
 * The log-creation lock ({@link #ownLock()}) is held to create, replace or remove a log of its own, and to change
 * the registry. The log-set lock ({@link #setLock()}) is held for reading by work that visits every log
 * (checkpoints, retention passes) and for writing by work that closes logs (deleting a topic, truncating a queue).
 *
 * <p>Thread-safe.
 */
final class Logs {

    private static final Logger LOG = LoggerFactory.getLogger(Logs.class);

    private final Path root;
    private final StoreConfig config;
    private final boolean readOnly;
    private final TopicRegistry registry;
    private final ConsumerOffsets consumers;
    private final Checkpoints checkpoints;
    /** What every log of the store shares. */
    private final LogResources lent;
    private LogStore shared;
    /** Open logs of their own, by {@code <topic>} (TOPIC) or {@code <topic>/<queueId>} (QUEUE, BATCHES). */
    private final Map<String, LogStore> own = new ConcurrentHashMap<>();
    /** Logs closed for a truncation and not open again yet: their readers wait for them (under the creation lock). */
    private final Set<String> truncating = ConcurrentHashMap.newKeySet();
    private final Object ownLock = new Object();
    private final ReentrantReadWriteLock setLock = new ReentrantReadWriteLock();
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * The logs are opened by {@link #open}.
     *
     * @param directory the store's directory file (identity, geometry, markers)
     * @param scheduler runs every log's background work and the checkpoints
     * @param gate the store's background tasks run inside it
     * @param openedFrom the checkpoint the store opened from, or null if it had none
     */
    Logs(Path root, StoreConfig config, boolean readOnly, StoreDirectory directory, TopicRegistry registry,
         ConsumerOffsets consumers, LogStarts logStarts, Scheduler scheduler, TaskGate gate, Checkpoint openedFrom) {
        this.root = root;
        this.logStarts = logStarts;
        this.config = config;
        this.readOnly = readOnly;
        this.registry = registry;
        this.consumers = consumers;
        this.checkpoints = new Checkpoints(this, consumers, scheduler, gate, openedFrom);
        this.lent = new LogResources(config, directory, scheduler, new MemoryBudget(config.cacheBytes()),
                Calibration.read(config.fileIO(), root).readCrossoverBytes(), consumers, checkpoints::changed,
                readOnly, logStarts);
    }

    private final LogStarts logStarts;

    /** @return the queues' first offsets raised on request */
    LogStarts logStarts() {
        return logStarts;
    }

    /**
     * At open, before anything is appended: a queue whose start lies past its end (a power cut took the records past
     * what was forced, or a truncation or emptying it interrupted cut the queue below its start) has its start
     * brought down to its end, durably, or the records appended there next would read as deleted at a later open.
     */
    void lowerStartsPastEnds() throws IOException {
        for (Map.Entry<LogStarts.Queue, Long> entry : logStarts.all().entrySet()) {
            String topic = entry.getKey().topic();
            int queueId = entry.getKey().queueId();
            LogStore log = logFor(topic, queueId, false);
            long end = log == null ? 0 : log.nextOffset(topic, queueId);
            if (entry.getValue() > end) {
                LOG.warn("{}-{} ends at offset {}, below its start {} (what lay past it was lost): its start comes"
                        + " down to its end", topic, queueId, end, entry.getValue());
                lowerStart(topic, queueId, end);
            }
        }
    }

    /**
     * Brings a queue's start down to {@code offset} if it lies above it, durably, before the queue takes appends
     * there: the queue now ends below its start (it was truncated or emptied there). Under the log-creation lock, or
     * alone at open.
     *
     * @throws StoreException if saving failed at or after the rename: every log then stops taking writes, since the
     *     file may still hold the higher start
     */
    void lowerStart(String topic, int queueId, long offset) throws IOException {
        try {
            if (!logStarts.lower(config.fileIO(), root, topic, queueId, offset)) {
                return;
            }
        } catch (AtomicFile.UncertainReplaceException e) {
            for (LogStore each : all()) {
                each.stopWriting("saving the log starts failed after their rename: " + e.getMessage());
            }
            throw new StoreException("cannot lower the start of " + topic + "-" + queueId + " to " + offset + ": "
                    + e.getMessage() + "; the store is now read-only", e);
        }
        LogStore log = logFor(topic, queueId, false);
        if (log != null) {
            log.lowerStart(topic, queueId, offset);
        }
    }

    /** @return the store's checkpoints, which record these logs */
    Checkpoints checkpoints() {
        return checkpoints;
    }

    ConsumerOffsets consumers() {
        return consumers;
    }

    boolean readOnly() {
        return readOnly;
    }

    Path root() {
        return root;
    }

    StoreConfig config() {
        return config;
    }

    TopicRegistry registry() {
        return registry;
    }

    LogResources lent() {
        return lent;
    }

    /** @return the lock held to create, replace or remove a log of its own, and to change the registry */
    Object ownLock() {
        return ownLock;
    }

    /** @return held for reading to visit every log, for writing to close logs of a topic or queue */
    ReentrantReadWriteLock setLock() {
        return setLock;
    }

    /** @return the shared log */
    LogStore shared() {
        return shared;
    }

    /** @return the open log of its own named {@code name}, or null */
    LogStore own(String name) {
        return own.get(name);
    }

    /** Puts {@code log} in place as the open log named {@code name} (after a truncation). */
    void putOwn(String name, LogStore log) {
        own.put(name, log);
    }

    /** Takes the log named {@code name} out of the open ones (its topic is deleted, or it is truncated). */
    void removeOwn(String name) {
        own.remove(name);
    }

    /** Marks a log as closed for a truncation, or open again: readers wait for it meanwhile. */
    void truncating(String name, boolean truncating) {
        if (truncating) {
            this.truncating.add(name);
        } else {
            this.truncating.remove(name);
        }
    }

    /** @throws IllegalStateException if the store is closed */
    void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("store " + root + " is closed");
        }
    }

    /** @throws IllegalStateException if the store is closed or open for reading only */
    void checkWritable() {
        checkOpen();
        if (readOnly) {
            throw new IllegalStateException("store " + root + " is open for reading only");
        }
    }

    /** @return false if the store was closed already; from now on every call but reads of state fails */
    boolean markClosed() {
        return closed.compareAndSet(false, true);
    }

    /** Opens the shared log and every log of its own the registry lists, each from its durable position. */
    void open(Checkpoint checkpoint, boolean clean) throws IOException {
        if (!readOnly) {
            removeOrphans();
        }
        for (Map.Entry<String, LogRoot> log : LogDirectories.of(config.fileIO(), root, registry).entrySet()) {
            Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(log.getKey());
            long durable = checkpoint == null ? Recovery.UNKNOWN : positions == null ? 0 : positions.durablePosition();
            long start = positions == null ? -1 : positions.start();
            LogStore opened = LogStore.open(log.getKey(), log.getValue().directory(), lent, durable, start, clean,
                    log.getValue().format());
            if (log.getKey().equals(LogDirectories.SHARED_LOG)) {
                shared = opened;
                shared.acceptOnly(topic -> registry.layout(topic) == TopicLayout.SHARED);
            } else {
                own.put(log.getKey(), opened);
            }
        }
    }

    /** Removes what a deletion cut short by a crash left: directories under {@code logs/} of unregistered topics. */
    private void removeOrphans() throws IOException {
        FileIO io = config.fileIO();
        Path logs = root.resolve(LogDirectories.OWN_LOGS_DIRECTORY);
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
                    checkpoints.saveConsumers();
                }
                removeFilesOf(name);
            }
        }
    }

    /** Removes {@code logs/<topic>}, the files of a topic the registry no longer names, if there are any. */
    void removeFilesOf(String topic) throws IOException {
        FileIO io = config.fileIO();
        Path logs = root.resolve(LogDirectories.OWN_LOGS_DIRECTORY);
        if (FileTree.deleteTree(io, logs.resolve(topic))) {
            io.syncDirectory(logs);
        }
    }

    /** @return the log holding the topic queue; null if it has a log of its own not created yet */
    LogStore logFor(String topic, int queueId, boolean create) {
        return logFor(topic, registry.layout(topic), queueId, create);
    }

    /**
     * @param layout what the caller read of the topic: a log is created only for a topic that still has it
     * @param create create the queue's log of its own if it has none yet
     * @return the log holding the topic queue; null if it has a log of its own not created yet (and not
     *     {@code create})
     * @throws TopicDeletedException if the topic no longer has {@code layout} or the queue
     */
    LogStore logFor(String topic, TopicLayout layout, int queueId, boolean create) {
        if (layout == TopicLayout.SHARED) {
            return shared;
        }
        String key = LogDirectories.name(topic, layout, queueId);
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
                // A log with files that is not open (a truncation failed to open it again) opens from what the
                // checkpoint claims; a new one from nothing.
                Checkpoint.Log recorded = checkpoints.recorded(key);
                log = LogStore.open(key, LogDirectories.directory(root, topic, layout, queueId), lent,
                        recorded == null ? 0 : recorded.durablePosition(), recorded == null ? -1 : recorded.start(),
                        false, LogDirectories.format(topic, layout, queueId));
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
     * @return the log holding the topic queue to read it, or the shared log if it has a log of its own not created
     *     yet: such a queue is unknown there too, so the shared log answers as for an unknown queue
     */
    LogStore forReading(String topic, int queueId) {
        LogStore log = logFor(topic, queueId, false);
        return log == null ? shared : log;
    }

    /** @return the logs that hold the topic: one, or every queue's for a QUEUE or BATCHES topic */
    List<LogStore> of(String topic) {
        if (registry.layout(topic) == TopicLayout.SHARED) {
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

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    Set<Integer> queues(String topic) {
        checkOpen();
        Set<Integer> queues = new TreeSet<>();
        for (LogStore log : of(topic)) {
            queues.addAll(log.queues(topic));
        }
        return queues;
    }

    /** @return every open log, the shared one first, then by name (a fixed order: checkpoints replay the same) */
    List<LogStore> all() {
        List<LogStore> logs = new ArrayList<>();
        if (shared != null) {
            logs.add(shared);
        }
        logs.addAll(new TreeMap<>(own).values());
        return logs;
    }

    /** @return every open log of its own by name, sorted */
    Map<String, LogStore> own() {
        return new TreeMap<>(own);
    }
}
