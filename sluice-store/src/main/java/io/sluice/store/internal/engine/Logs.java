package io.sluice.store.internal.engine;

import io.sluice.store.Calibration;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.TopicDeletedException;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.cache.MemoryBudget;
import io.sluice.store.internal.flush.ForceTogether;
import io.sluice.store.internal.io.AtomicFile;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.internal.io.StoreSync;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import java.util.function.Predicate;
import java.util.function.ToLongFunction;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.ReentrantReadWriteLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's logs, and which of them holds a topic queue: the shared log, and the logs of their own (by
 * {@code <topic>} for a TOPIC topic, {@code <topic>/<queueId>} for a QUEUE or BATCHES one), known from the topic
 * registry and created at a queue's first append.
 *
 * <h2>Open and closed logs</h2>
 * A log of its own is open (a {@link LogStore}, holding its files and mappings) or closed (a {@link ClosedLog}). At
 * most {@code maxOpenLogs} are open at once: opening one more first closes an idle one, chosen by a clock hand over
 * the open logs in the order they opened (a log used since the hand last passed it is passed again, once). A closed
 * log opens again on its next use, under the log-creation lock. A log is used between {@link #use} and
 * {@link #release}; one in use, or turned read-only, is never closed while idle, so the budget can be exceeded by
 * the logs in use at once. After a clean shutdown the store opens no log of its own until it is used; after a crash it
 * recovers each as before, closing idle ones as it goes. The shared log is always open.
 *
 * <h2>Locks</h2>
 * The log-creation lock ({@link #ownLock()}) is held to create, open, close, replace or remove a log of its own, and
 * to change the registry. The log-set lock ({@link #setLock()}) is held for reading by work that visits every log
 * (checkpoints, retention passes) and for writing by work that closes logs for good (deleting a topic, truncating a
 * queue). Readers and appenders take neither to find an open log.
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
    /**
     * Every log of its own, open or closed, by {@code <topic>} (TOPIC) or {@code <topic>/<queueId>} (QUEUE, BATCHES).
     * A slot is added and removed, and its log opened or closed, under the creation lock.
     */
    private final Map<String, Slot> own = new ConcurrentHashMap<>();
    /**
     * The open logs of their own that may be closed while idle, in the order the clock hand visits them; guarded by
     * the creation lock.
     */
    private final LinkedHashMap<String, LogStore> clock = new LinkedHashMap<>();
    /** How many logs of their own may be open at once ({@link StoreConfig#resolvedMaxOpenLogs()}). */
    private final int maxOpenLogs;
    /** What the last retention pass found of the disk: a log opened since refuses appends until the next pass. */
    private volatile boolean appendsRefused;
    /** Why every log stopped writing for good (a registry or log-starts save failed after its rename), or null. */
    private volatile String stoppedWriting;
    private final Object ownLock = new Object();
    private final ReentrantReadWriteLock setLock = new ReentrantReadWriteLock();
    private final AtomicBoolean closed = new AtomicBoolean();

    /**
     * One log of its own: open ({@link #open}), closed ({@link #closed}), or, while a truncation cuts it, neither.
     * Changed under the creation lock; read without it (a reader that finds neither takes the lock and looks again).
     */
    private static final class Slot {
        volatile LogStore open;
        volatile ClosedLog closed;

        Slot(LogStore open, ClosedLog closed) {
            this.open = open;
            this.closed = closed;
        }
    }

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
        this.storeSync = openStoreSync(root, config, readOnly);
        this.checkpoints = new Checkpoints(this, consumers, scheduler, gate, openedFrom);
        this.lent = new LogResources(config, directory, scheduler, new MemoryBudget(config.cacheBytes()),
                Calibration.read(config.fileIO(), root).readCrossoverBytes(), consumers, checkpoints::changed,
                readOnly, logStarts, !readOnly && config.flushMode() == FlushMode.SYNC && config.forceTogether()
                        ? new ForceTogether(storeSync, scheduler) : null);
        this.maxOpenLogs = config.resolvedMaxOpenLogs();
    }

    private final LogStarts logStarts;
    /** The store's syncs of its file system, when logs are forced together ({@link StoreConfig#forceTogether()}). */
    private final StoreSync storeSync;

    private static StoreSync openStoreSync(Path root, StoreConfig config, boolean readOnly) {
        if (readOnly || !config.forceTogether()) {
            return StoreSync.none();
        }
        try {
            return StoreSync.open(config.fileIO(), root);
        } catch (IOException e) {
            throw new StoreException("opening " + root + " to sync its file system failed: " + e, e);
        }
    }

    /** @return the store's syncs of its file system (which answer false when logs are not forced together) */
    StoreSync storeSync() {
        return storeSync;
    }

    /** @return the queues' first offsets raised on request */
    LogStarts logStarts() {
        return logStarts;
    }

    /**
     * At open, before anything is appended: a queue whose start lies past its end (a power cut took the records past
     * what was forced, or a truncation or emptying it interrupted cut the queue below its start) has its start
     * brought down to its end, durably, or the records appended there next would read as deleted at a later open.
     * This checks the shared log's queues and those whose log does not exist; a log of its own checks its own as it
     * first opens ({@link #lowerStartsPastEnds(LogStore)}).
     */
    void lowerStartsPastEnds() throws IOException {
        for (Map.Entry<LogStarts.Queue, Long> entry : logStarts.all().entrySet()) {
            String topic = entry.getKey().topic();
            int queueId = entry.getKey().queueId();
            TopicLayout layout = registry.layout(topic);
            if (layout == TopicLayout.SHARED) {
                lowerStartPastEnd(topic, queueId, entry.getValue(), shared.nextOffset(topic, queueId));
            } else if (!own.containsKey(LogDirectories.name(topic, layout, queueId))) {
                lowerStartPastEnd(topic, queueId, entry.getValue(), 0);
            }
        }
    }

    /** {@link #lowerStartsPastEnds()} for the queues of a log of its own, as it first opens (under the creation lock). */
    private void lowerStartsPastEnds(LogStore log) throws IOException {
        for (Map.Entry<LogStarts.Queue, Long> entry : logStarts.all().entrySet()) {
            String topic = entry.getKey().topic();
            int queueId = entry.getKey().queueId();
            TopicLayout layout = registry.layout(topic);
            if (layout != TopicLayout.SHARED && LogDirectories.name(topic, layout, queueId).equals(log.name())) {
                lowerStartPastEnd(topic, queueId, entry.getValue(), log.nextOffset(topic, queueId));
            }
        }
    }

    private void lowerStartPastEnd(String topic, int queueId, long start, long end) throws IOException {
        if (start > end) {
            LOG.warn("{}-{} ends at offset {}, below its start {} (what lay past it was lost): its start comes"
                    + " down to its end", topic, queueId, end, start);
            lowerStart(topic, queueId, end);
        }
    }

    /**
     * Brings a queue's start down to {@code offset} if it lies above it, durably, before the queue takes appends
     * there: the queue now ends below its start (it was truncated or emptied there). Under the log-creation lock, or
     * alone at open. A closed log takes the start from the file as it opens again.
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
            stopWriting("saving the log starts failed after their rename: " + e.getMessage());
            throw new StoreException("cannot lower the start of " + topic + "-" + queueId + " to " + offset + ": "
                    + e.getMessage() + "; the store is now read-only", e);
        }
        TopicLayout layout = registry.layout(topic);
        String name = layout == TopicLayout.SHARED ? LogDirectories.SHARED_LOG
                : LogDirectories.name(topic, layout, queueId);
        visit(name, log -> {
            log.lowerStart(topic, queueId, offset);
            return null;
        }, closedLog -> null);
    }

    /**
     * Every log, open or closed, and every log opened from now on, stops taking writes for good: the store cannot tell
     * which of two versions of a file a restart would read.
     */
    void stopWriting(String reason) {
        stoppedWriting = reason;
        for (String name : names()) {
            visit(name, log -> {
                log.stopWriting(reason);
                return null;
            }, closedLog -> null);
        }
    }

    /** Records what the last retention pass found: a log that opens from now on refuses appends as it said. */
    void appendsRefused(boolean refused) {
        appendsRefused = refused;
    }

    /** @return true if the last retention pass found the disk above the hard ratio */
    boolean appendsRefused() {
        return appendsRefused;
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

    /** @return the lock held to create, open, close, replace or remove a log of its own, and to change the registry */
    Object ownLock() {
        return ownLock;
    }

    /** @return held for reading to visit every log, for writing to close logs of a topic or queue for good */
    ReentrantReadWriteLock setLock() {
        return setLock;
    }

    /** @return the shared log */
    LogStore shared() {
        return shared;
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

    /**
     * Opens the shared log, and knows every log of its own the registry lists. After a clean shutdown those stay
     * closed until used; after a crash each is recovered now from its durable position (so a log damaged below it
     * refuses the open, and the clean-shutdown marker written at the next close speaks for every log), idle ones
     * closed as the budget requires.
     */
    void open(Checkpoint checkpoint, boolean clean) throws IOException {
        if (!readOnly) {
            removeOrphans();
        }
        for (Map.Entry<String, LogRoot> log : LogDirectories.of(config.fileIO(), root, registry).entrySet()) {
            String name = log.getKey();
            Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(name);
            long durable = checkpoint == null ? Recovery.UNKNOWN : positions == null ? 0 : positions.durablePosition();
            long start = positions == null ? -1 : positions.start();
            Path directory = log.getValue().directory();
            if (name.equals(LogDirectories.SHARED_LOG)) {
                shared = LogStore.open(name, directory, lent, durable, start, clean, log.getValue().format());
                shared.acceptOnly(topic -> registry.layout(topic) == TopicLayout.SHARED);
            } else if (clean) {
                own.put(name, new Slot(null, ClosedLog.notOpenedYet(directory, log.getValue().format(), durable, start)));
            } else {
                makeRoom();
                LogStore opened = LogStore.open(name, directory, lent, durable, start, false, log.getValue().format());
                placeOpen(name, opened);
                if (!readOnly) {
                    lowerStartsPastEnds(opened);
                }
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

    /**
     * Starts using the log holding a topic queue (opening it if it is closed); release it with {@link #release}.
     *
     * @return the log, in use; null if the queue has a log of its own not created yet
     */
    LogStore use(String topic, int queueId, boolean create) {
        return use(topic, registry.layout(topic), queueId, create);
    }

    /**
     * Starts using the log holding a topic queue, opening it if it is closed; release it with {@link #release}.
     *
     * @param layout what the caller read of the topic: a log is created only for a topic that still has it
     * @param create create the queue's log of its own if it has none yet
     * @return the log, in use; null if the queue has a log of its own not created yet (and not {@code create})
     * @throws TopicDeletedException if the topic no longer has {@code layout} or the queue
     */
    LogStore use(String topic, TopicLayout layout, int queueId, boolean create) {
        if (layout == TopicLayout.SHARED) {
            return shared;
        }
        String key = LogDirectories.name(topic, layout, queueId);
        Slot slot = own.get(key);
        if (slot == null && !create) {
            return null; // slots are only added, once their log exists, and removed with their topic
        }
        LogStore log = slot == null ? null : slot.open;
        if (log != null && log.tryUse()) {
            if (create) {
                // The entry read now is at least as new as this log (a log is put here after its topic is
                // registered): an append that checked its queue id against a topic deleted since must not land in a
                // topic created again with fewer queues.
                try {
                    checkStillDeclared(topic, layout, queueId);
                } catch (RuntimeException e) {
                    log.endUse();
                    throw e;
                }
            }
            return log;
        }
        if (create) {
            checkWritable();
        }
        synchronized (ownLock) {
            checkOpen();
            slot = own.get(key);
            if (create) {
                // Deleted while this call waited for the lock (and perhaps created again with fewer queues): do not
                // bring its log back.
                checkStillDeclared(topic, layout, queueId);
            }
            if (slot != null) {
                LogStore opened = useUnderLock(key, slot);
                if (opened != null) {
                    return opened;
                }
            }
            if (!create) {
                return null;
            }
            // A log with files that is not open (a truncation failed to open it again) opens from what the
            // checkpoint claims; a new one from nothing.
            Checkpoint.Log recorded = checkpoints.recorded(key);
            makeRoom();
            log = LogStore.open(key, LogDirectories.directory(root, topic, layout, queueId), lent,
                    recorded == null ? 0 : recorded.durablePosition(), recorded == null ? -1 : recorded.start(),
                    false, LogDirectories.format(topic, layout, queueId));
            log.startAs(appendsRefused, stoppedWriting);
            placeOpen(key, log);
            log.tryUse();
            return log;
        }
    }

    /**
     * Under the creation lock: the slot's log in use, opened first if it is closed.
     *
     * @return the log, or null if the slot has none (a truncation failed to open it again, or the lock holder cuts it)
     */
    private LogStore useUnderLock(String name, Slot slot) {
        assert Thread.holdsLock(ownLock);
        LogStore log = slot.open;
        if (log != null) {
            if (!log.tryUse()) {
                // Closing while idle happens under this lock, which takes the log out of its slot before letting go.
                throw new IllegalStateException("log " + name + " is closed but still in its slot");
            }
            return log;
        }
        ClosedLog closedLog = slot.closed;
        if (closedLog == null) {
            return null;
        }
        makeRoom();
        log = LogStore.open(name, lent, closedLog);
        log.startAs(appendsRefused, stoppedWriting);
        placeOpen(name, log);
        if (!readOnly && !closedLog.openedBefore()) {
            try {
                lowerStartsPastEnds(log);
            } catch (IOException e) {
                throw new StoreException("cannot open log " + name + ": " + e.getMessage(), e);
            }
        }
        log.tryUse();
        return log;
    }

    /** Ends a use that {@link #use} (or one of its kin) started; null is ignored. */
    void release(LogStore log) {
        if (log != null) {
            log.endUse();
        }
    }

    /**
     * Under the creation lock (or alone at open): puts {@code log} in place as the open log named {@code name}, in
     * its slot and behind the clock hand.
     */
    private void placeOpen(String name, LogStore log) {
        Slot slot = own.get(name);
        if (slot == null) {
            own.put(name, new Slot(log, null));
        } else {
            slot.open = log;
            slot.closed = null;
        }
        clock.remove(name);
        if (log.closableWhenIdle()) {
            clock.putLast(name, log);
        }
    }

    /**
     * Under the creation lock: closes idle logs of their own until one more may open without passing the budget, or
     * none is idle (each open one is in use, or may not close: the budget is then passed while they are).
     */
    private void makeRoom() {
        while (clock.size() >= maxOpenLogs && closeOneIdle()) {
            // closed one; look again
        }
    }

    /**
     * Moves the clock hand to the first open log not used since the hand last passed it, and closes it if idle. A log
     * that may not close any more (read-only, broken, deleted) leaves the clock.
     *
     * @return true if a log closed
     */
    private boolean closeOneIdle() {
        for (int looked = 0, most = 2 * clock.size(); looked < most; looked++) {
            Map.Entry<String, LogStore> head = clock.pollFirstEntry();
            if (head == null) {
                return false;
            }
            String name = head.getKey();
            LogStore log = head.getValue();
            if (!log.closableWhenIdle()) {
                continue;
            }
            if (log.takeSecondChance()) {
                clock.putLast(name, log);
                continue;
            }
            Checkpoint.Log recorded = checkpoints.recorded(name);
            ClosedLog closedLog = log.closeIfIdle(recorded == null ? -1 : recorded.start());
            if (closedLog == null) {
                if (log.closableWhenIdle()) {
                    clock.putLast(name, log); // in use now
                }
                continue;
            }
            Slot slot = own.get(name);
            slot.closed = closedLog;
            slot.open = null;
            LOG.debug("closed idle log {} ({} open, at most {})", name, clock.size(), maxOpenLogs);
            return true;
        }
        return false;
    }

    /** @throws TopicDeletedException unless the topic still has {@code layout} and a queue {@code queueId} */
    private void checkStillDeclared(String topic, TopicLayout layout, int queueId) {
        TopicRegistry.Entry now = registry.entry(topic);
        if (now.layout() != layout || (now.queues() > 0 && queueId >= now.queues())) {
            throw new TopicDeletedException(topic);
        }
    }

    /**
     * Starts using the log holding the topic queue to read it (opening it if it is closed), or the shared log if it
     * has a log of its own not created yet: such a queue is unknown there too, so the shared log answers as for an
     * unknown queue. Release it with {@link #release}.
     */
    LogStore useForReading(String topic, int queueId) {
        LogStore log = use(topic, queueId, false);
        return log == null ? shared : log;
    }

    /** Runs {@code read} on the log {@link #useForReading} finds, in use meanwhile. @return what it returned */
    <T> T reading(String topic, int queueId, Function<LogStore, T> read) {
        LogStore log = useForReading(topic, queueId);
        try {
            return read.apply(log);
        } finally {
            release(log);
        }
    }

    /** {@link #reading} for a read that returns a position or an offset. */
    long readingLong(String topic, int queueId, ToLongFunction<LogStore> read) {
        LogStore log = useForReading(topic, queueId);
        try {
            return read.applyAsLong(log);
        } finally {
            release(log);
        }
    }

    /**
     * Starts using the log named {@code name} if it is open, or opens it if it is closed and {@code worthOpening}
     * says so; release it with {@link #release}.
     *
     * @param worthOpening told a closed log, its directory listed ({@link ClosedLog#listed})
     * @return the log in use, or null if it is closed and stays so, or gone
     */
    LogStore use(String name, Predicate<ClosedLog> worthOpening) {
        if (name.equals(LogDirectories.SHARED_LOG)) {
            return shared;
        }
        Slot slot = own.get(name);
        if (slot == null) {
            return null;
        }
        LogStore log = slot.open;
        if (log != null && log.tryUse()) {
            return log;
        }
        ClosedLog closedLog = slot.closed;
        if (closedLog != null && !worthOpening.test(listed(name, closedLog))) {
            return null;
        }
        synchronized (ownLock) {
            checkOpen();
            slot = own.get(name);
            if (slot == null) {
                return null;
            }
            if (slot.open == null && slot.closed != null && !worthOpening.test(listed(name, slot.closed))) {
                return null;
            }
            return useUnderLock(name, slot);
        }
    }

    /**
     * Visits the log named {@code name} without opening it: {@code whenOpen} with the open log (in use meanwhile), or
     * {@code whenClosed} with what the store knows of it closed.
     *
     * @return what the visit returned, or null if there is no such log
     */
    <T> T visit(String name, Function<LogStore, T> whenOpen, Function<ClosedLog, T> whenClosed) {
        if (name.equals(LogDirectories.SHARED_LOG)) {
            return whenOpen.apply(shared);
        }
        Slot slot = own.get(name);
        if (slot == null) {
            return null;
        }
        LogStore log = slot.open;
        ClosedLog closedLog = null;
        if (log == null || !log.tryUse()) {
            log = null;
            closedLog = slot.closed;
            if (closedLog == null) {
                // Opening or closing right now, or cut by a truncation: the lock holder finishes first.
                synchronized (ownLock) {
                    slot = own.get(name);
                    if (slot == null) {
                        return null;
                    }
                    log = slot.open;
                    if (log != null && !log.tryUse()) {
                        throw new IllegalStateException("log " + name + " is closed but still in its slot");
                    }
                    closedLog = log == null ? slot.closed : null;
                    if (log == null && closedLog == null) {
                        return null;
                    }
                }
            }
        }
        if (log == null) {
            return whenClosed.apply(closedLog);
        }
        try {
            return whenOpen.apply(log);
        } finally {
            log.endUse();
        }
    }

    /**
     * @return {@code closedLog} with its segment count and queues known, read from its directory the first time and
     *     kept in its slot
     */
    ClosedLog listed(String name, ClosedLog closedLog) {
        if (closedLog.segmentCount() >= 0 && closedLog.queues() != null) {
            return closedLog;
        }
        ClosedLog listed;
        try {
            listed = closedLog.listed(config.fileIO());
        } catch (IOException e) {
            throw new StoreException("cannot list the files of log " + name + ": " + e.getMessage(), e);
        }
        synchronized (ownLock) {
            Slot slot = own.get(name);
            if (slot != null && slot.closed == closedLog) {
                slot.closed = listed;
            }
        }
        return listed;
    }

    /**
     * A queue of a log of its own that is closed, as it stood when the log closed, which it cannot leave while closed:
     * for reads that find nothing to read there, answered without opening the log.
     *
     * @return its offsets; {@link ClosedLog.Offsets#NO_QUEUE} if the closed log holds no such queue; null if the log is
     *     open, not known to be closed with its offsets (not opened since a clean restart), or the queue is in the
     *     shared log or has no log
     */
    ClosedLog.Offsets closedQueue(String topic, int queueId) {
        TopicLayout layout = registry.layout(topic);
        if (layout == TopicLayout.SHARED) {
            return null;
        }
        Slot slot = own.get(LogDirectories.name(topic, layout, queueId));
        ClosedLog closedLog = slot == null ? null : slot.closed;
        if (closedLog == null || closedLog.offsets() == null) {
            return null;
        }
        Map<Integer, ClosedLog.Offsets> queues = closedLog.offsets().get(topic);
        ClosedLog.Offsets offsets = queues == null ? null : queues.get(queueId);
        return offsets != null ? offsets : ClosedLog.Offsets.NO_QUEUE;
    }

    /** @return the names of the topic's logs of their own, open or closed, sorted */
    List<String> namesOf(String topic) {
        List<String> names = new ArrayList<>();
        for (String name : own.keySet()) {
            if (name.equals(topic) || name.startsWith(topic + "/")) {
                names.add(name);
            }
        }
        names.sort(null);
        return names;
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic (no log opens for it) */
    Set<Integer> queues(String topic) {
        checkOpen();
        if (registry.layout(topic) == TopicLayout.SHARED) {
            return shared.queues(topic);
        }
        Set<Integer> queues = new TreeSet<>();
        for (String name : namesOf(topic)) {
            Set<Integer> found = visit(name, log -> log.queues(topic),
                    closedLog -> listed(name, closedLog).queues().getOrDefault(topic, Set.of()));
            if (found != null) {
                queues.addAll(found);
            }
        }
        return queues;
    }

    /**
     * @return the name of every log, open or closed, the shared one first, then by name (a fixed order: checkpoints
     *     replay the same)
     */
    List<String> names() {
        List<String> names = new ArrayList<>();
        names.add(LogDirectories.SHARED_LOG);
        names.addAll(new TreeSet<>(own.keySet()));
        return names;
    }

    /**
     * @return every open log, the shared one first, then by name; for callers that hold the creation lock (or the
     *     log-set lock for writing) and so see no log close meanwhile, or that close the store
     */
    List<LogStore> openLogs() {
        List<LogStore> logs = new ArrayList<>();
        if (shared != null) {
            logs.add(shared);
        }
        new TreeMap<>(own).values().forEach(slot -> {
            LogStore log = slot.open;
            if (log != null) {
                logs.add(log);
            }
        });
        return logs;
    }

    /** @return the checkpoint's entry of every closed log, by name; under the creation lock */
    Map<String, Checkpoint.Log> closedEntries() {
        Map<String, Checkpoint.Log> entries = new TreeMap<>();
        own.forEach((name, slot) -> {
            ClosedLog closedLog = slot.closed;
            if (slot.open == null && closedLog != null) {
                entries.put(name, closedLog.checkpointEntry());
            }
        });
        return entries;
    }

    /** @return how many logs of their own are open now and may close while idle (what the budget counts) */
    int openCount() {
        synchronized (ownLock) {
            return clock.size();
        }
    }

    /**
     * Under the creation lock, for a truncation: takes the open log named {@code name} out of its slot, which stays
     * (readers and appenders that find it empty wait for the lock and find what the truncation put back).
     *
     * @return the log
     */
    LogStore takeOpen(String name) {
        assert Thread.holdsLock(ownLock);
        Slot slot = own.get(name);
        LogStore log = slot.open;
        slot.open = null;
        clock.remove(name);
        return log;
    }

    /** Under the creation lock: puts {@code log} in place as the open log named {@code name} (after a truncation). */
    void putOpen(String name, LogStore log) {
        assert Thread.holdsLock(ownLock);
        log.startAs(appendsRefused, stoppedWriting);
        placeOpen(name, log);
    }

    /**
     * Under the creation lock, as a topic is deleted: forgets its logs of their own, open and closed.
     *
     * @return the open ones, for the caller to close
     */
    List<LogStore> removeTopic(String topic) {
        assert Thread.holdsLock(ownLock);
        List<LogStore> open = new ArrayList<>();
        for (String name : namesOf(topic)) {
            Slot slot = own.remove(name);
            clock.remove(name);
            if (slot != null && slot.open != null) {
                open.add(slot.open);
            }
        }
        return open;
    }
}
