package io.sluice.store.internal.engine;

import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.RecoveryReport;
import io.sluice.store.RetentionReport;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.StoreStatus;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.recovery.StoreSettings;
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
import java.util.Objects;
import java.util.TreeMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The engine behind {@code Store}: opens a store directory and its logs (recovering each as needed), and holds the
 * parts the store's API is made of, each over the same set of logs ({@link Logs}): appends, reads, topics, queue
 * truncation, consumer positions, and the store-wide background work (checkpoints, retention passes), which runs
 * inside one gate that close waits on.
 *
 * <p>Thread-safe.
 */
public final class StoreEngine implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(StoreEngine.class);

    private final Path root;
    private final StoreConfig config;
    private final boolean readOnly;
    private final StoreDirectory directory;
    /** Runs every log's background work; the store's own unless the configuration gave one. */
    private final Scheduler scheduler;
    /** The store's checkpoint and retention tasks run inside it; close waits for them. */
    private final TaskGate gate = new TaskGate();
    private final boolean openedClean;
    private final Logs logs;
    private final RetentionPasses retention;
    private final Appends appends;
    private final Reads reads;
    private final Topics topics;
    private final QueueTruncation truncation;
    private final ConsumerPositions consumers;
    private final RecordDeletion deletion;

    private StoreEngine(Path root, StoreConfig config, boolean readOnly, StoreDirectory directory,
                        TopicRegistry registry, ConsumerOffsets offsets, LogStarts logStarts, Scheduler scheduler,
                        Checkpoint openedFrom, boolean openedClean) {
        this.root = root;
        this.config = config;
        this.readOnly = readOnly;
        this.directory = directory;
        this.scheduler = scheduler;
        this.openedClean = openedClean;
        this.logs = new Logs(root, config, readOnly, directory, registry, offsets, logStarts, scheduler, gate,
                openedFrom);
        this.deletion = new RecordDeletion(logs);
        this.retention = new RetentionPasses(logs, scheduler, gate);
        this.appends = new Appends(logs);
        this.reads = new Reads(logs);
        this.topics = new Topics(logs);
        this.truncation = new QueueTruncation(logs);
        this.consumers = new ConsumerPositions(logs);
    }

    /**
     * Opens the store in {@code directory} ({@code Store.open}, {@code Store.openReadOnly}).
     *
     * @param readOnly create, change and delete nothing, and run no background work
     * @return the open engine
     */
    public static StoreEngine open(Path directory, StoreConfig config, boolean readOnly) {
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
        StoreEngine engine = null;
        try {
            config = StoreSettings.settle(config, storeDirectory, readOnly);
            Checkpoint checkpoint = Checkpoint.read(io, directory);
            boolean clean = checkpoint != null && storeDirectory.wasCleanlyShutDown();
            TopicRegistry registry = TopicRegistry.load(io, directory);
            ConsumerOffsets consumers = ConsumerOffsets.load(io, directory, config.clock().millis(), readOnly);
            LogStarts logStarts = LogStarts.load(io, directory);
            scheduler = config.scheduler() != null ? config.scheduler()
                    : readOnly ? Scheduler.threads(1) : Scheduler.threads(config.ioThreads());
            engine = new StoreEngine(directory, config, readOnly, storeDirectory, registry, consumers, logStarts,
                    scheduler, checkpoint, clean);
            engine.logs.open(storeDirectory.created() ? new Checkpoint(Map.of(), 0) : checkpoint, clean);
            if (!readOnly) {
                engine.logs.lowerStartsPastEnds();
                if (clean) {
                    storeDirectory.clearCleanShutdown();
                }
                if (storeDirectory.created() || !clean) {
                    engine.logs.checkpoints().writeCurrent();
                }
                engine.retention.schedule();
            }
            return engine;
        } catch (IOException | RuntimeException e) {
            closeAfterFailedOpen(engine, storeDirectory, scheduler, config, e);
            if (e instanceof IOException failure) {
                throw new StoreException("cannot open store " + directory + ": " + failure.getMessage(), failure);
            }
            throw (RuntimeException) e;
        }
    }

    private static void closeAfterFailedOpen(StoreEngine engine, StoreDirectory directory, Scheduler scheduler,
                                             StoreConfig config, Exception failure) {
        if (engine != null) {
            for (LogStore log : engine.logs.openLogs()) {
                try {
                    log.close();
                } catch (RuntimeException e) {
                    failure.addSuppressed(e);
                }
            }
            try {
                engine.logs.storeSync().close();
            } catch (IOException e) {
                failure.addSuppressed(e);
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

    /** @return the store's logs (for tests of the routing in this package) */
    Logs logs() {
        return logs;
    }

    /** @return the append side */
    public Appends appends() {
        return appends;
    }

    /** @return the read side */
    public Reads reads() {
        return reads;
    }

    /** @return topic creation, declaration and deletion */
    public Topics topics() {
        return topics;
    }

    /** @return records deleted on request (Kafka's DeleteRecords) */
    public RecordDeletion deletion() {
        return deletion;
    }

    /**
     * Compacts a BATCHES topic's queue ({@code Store.compact}).
     *
     * @return what it did; {@link CompactionReport#NONE} for a queue that has no log yet
     */
    public CompactionReport compact(String topic, int queueId, long endOffset, BatchCleaner cleaner) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logs.checkWritable();
        if (logs.registry().layout(topic) != TopicLayout.BATCHES) {
            throw new IllegalArgumentException("only a BATCHES topic can be compacted; " + topic + " is "
                    + logs.registry().layout(topic));
        }
        LogStore log = logs.use(topic, queueId, false);
        if (log == null) {
            return CompactionReport.NONE;
        }
        try {
            // A retention hold keeps the batches from its offset on as they are: their holder reads them back.
            long end = endOffset;
            for (Map.Entry<ConsumerOffsets.Key, Long> hold : logs.consumers().protectedPositions(false).entrySet()) {
                if (hold.getKey().topic().equals(topic) && hold.getKey().queueId() == queueId) {
                    end = Math.min(end, hold.getValue());
                }
            }
            return log.compact(topic, queueId, end, cleaner);
        } finally {
            logs.release(log);
        }
    }

    /** @return queue truncation */
    public QueueTruncation truncation() {
        return truncation;
    }

    /** @return registered consumer positions and retention holds */
    public ConsumerPositions consumers() {
        return consumers;
    }

    /** Runs one retention pass on every log now ({@code Store.enforceRetention}). @return what it did */
    public RetentionReport enforceRetention() {
        return retention.runNow();
    }

    /** Forces everything appended and records it in the checkpoint ({@code Store.sync}). */
    public void sync() {
        logs.checkWritable();
        logs.checkpoints().sync();
    }

    /** @return a snapshot of the shared log's state and positions */
    public StoreStatus status() {
        return logs.shared().status(consumers.count());
    }

    /**
     * @return the state of each log of its own, by {@code <topic>} or {@code <topic>/<queueId>}, sorted; a closed log
     *     is not opened for it ({@link ClosedLog#status})
     */
    public Map<String, StoreStatus> ownLogStatuses() {
        Map<String, StoreStatus> statuses = new TreeMap<>();
        int positions = consumers.count();
        for (String name : logs.names()) {
            if (!name.isEmpty()) {
                StoreStatus status = logs.visit(name, log -> log.status(positions),
                        closed -> logs.listed(name, closed).status(config, positions, logs.appendsRefused()));
                if (status != null) {
                    statuses.put(name, status);
                }
            }
        }
        return statuses;
    }

    /** @return true if the last open found every log cleanly shut down and skipped recovery */
    public boolean openedClean() {
        boolean clean = openedClean;
        for (RecoveryReport report : recoveryReports().values()) {
            clean &= report.mode() == RecoveryReport.Mode.CLEAN;
        }
        return clean;
    }

    /**
     * @return what recovery found and did to each log at open (or, for a log of its own not opened since, what a clean
     *     open finds), by log name ("" for the shared log)
     */
    public Map<String, RecoveryReport> recoveryReports() {
        Map<String, RecoveryReport> reports = new TreeMap<>();
        for (String name : logs.names()) {
            RecoveryReport report = logs.visit(name, LogStore::recovery, ClosedLog::recovery);
            if (report != null) {
                reports.put(name, report);
            }
        }
        return reports;
    }

    /** @return how many logs of their own are open now (at most {@code maxOpenLogs} but for those in use at once) */
    public int openLogCount() {
        return logs.openCount();
    }

    /** @return true if the store was opened for reading only */
    public boolean readOnly() {
        return readOnly;
    }

    /** @return the store's directory */
    public Path directory() {
        return root;
    }

    /** @return the configuration the store runs with */
    public StoreConfig config() {
        return config;
    }

    /**
     * Closes every log ({@code Store.close}): stops the background work, forces everything, writes the checkpoint
     * and the clean-shutdown marker (unless a log failed), then unmaps and closes every file. Idempotent.
     *
     * @throws StoreException if closing failed; every log is still closed
     */
    @Override
    public void close() {
        if (!logs.markClosed()) {
            return;
        }
        List<Throwable> errors = new ArrayList<>();
        retention.cancel();
        gate.closeAndAwait();
        synchronized (logs.ownLock()) {
            List<LogStore> closing = logs.openLogs();
            if (!readOnly) {
                logs.checkpoints().closeDurably(closing, logs.closedEntries(), directory, errors);
            }
            for (LogStore log : closing) {
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
            logs.storeSync().close();
        } catch (IOException e) {
            errors.add(e);
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
}
