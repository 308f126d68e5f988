package io.sluice.store.internal.engine;

import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.retention.ConsumerOffsets;
import io.sluice.store.internal.task.SerialTask;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's checkpoint (docs/store.md, "Durability"): every log makes itself durable, then the {@code checkpoint}
 * file records each log's durable position and start, and the consumer positions are saved if they moved. A
 * checkpoint is scheduled {@code checkpointIntervalMillis} after a log changes, and only then, so an idle store writes
 * nothing; {@link #sync} runs one now. After each, a log may delete the index files retention took out below the
 * start just recorded.
 *
 * <p>Thread-safe: one checkpoint at a time, and an older set of positions never replaces a newer one.
 */
final class Checkpoints {

    private static final Logger LOG = LoggerFactory.getLogger(Checkpoints.class);

    private final Logs logs;
    private final Path root;
    private final StoreConfig config;
    private final ConsumerOffsets consumers;
    private final Scheduler scheduler;
    private final TaskGate gate;
    private final SerialTask task;
    private final AtomicBoolean armed = new AtomicBoolean();
    /** What the last checkpoint written holds; guarded by {@link #fileLock}. */
    private Map<String, Checkpoint.Log> last;
    /** Held to write the checkpoint or consumer files, and to read {@link #last}. */
    private final Object fileLock = new Object();
    /** Held while a checkpoint forces the logs and writes its file. */
    private final Object run = new Object();

    /**
     * @param logs the logs it records
     * @param gate scheduled checkpoints run inside it
     * @param openedFrom the checkpoint the store opened from, or null if it had none
     */
    Checkpoints(Logs logs, ConsumerOffsets consumers, Scheduler scheduler, TaskGate gate, Checkpoint openedFrom) {
        this.logs = logs;
        this.root = logs.root();
        this.config = logs.config();
        this.consumers = consumers;
        this.scheduler = scheduler;
        this.gate = gate;
        this.task = new SerialTask(scheduler, this::scheduled);
        // What the checkpoint file says until the next one is written: a log it names must not be forgotten.
        this.last = openedFrom == null ? Map.of() : openedFrom.logs();
    }

    /** A log changed (or a consumer position moved): schedules a checkpoint unless one is scheduled. */
    void changed() {
        if (!armed.get() && armed.compareAndSet(false, true)) {
            scheduler.schedule(task::request, config.checkpointIntervalMillis());
        }
    }

    /** The scheduled checkpoint: nothing runs if nothing changed since the last one. */
    private void scheduled() {
        armed.set(false);
        if (!gate.enter()) {
            return;
        }
        try {
            forceAndWrite(false);
        } catch (IOException | RuntimeException e) {
            LOG.error("writing the checkpoint of {} failed; the logs' durable positions stay where the last one"
                    + " put them, and it is tried again after the next change: {}", root, e.toString());
        } finally {
            gate.exit();
        }
    }

    /**
     * Forces everything appended before the call, in every log with its index files, and records it in the
     * checkpoint ({@code Store.sync}).
     *
     * @throws StoreException if the store is closed, a log could not be forced, or the checkpoint could not be written
     */
    void sync() {
        if (!gate.enter()) {
            throw new StoreException("store " + root + " is closed");
        }
        try {
            forceAndWrite(true);
        } catch (IOException e) {
            throw new StoreException("writing the checkpoint of " + root + " failed: " + e, e);
        } finally {
            gate.exit();
        }
    }

    /** @param strict fail if a log could not be forced, rather than record its last durable position */
    private void forceAndWrite(boolean strict) throws IOException {
        synchronized (run) {
            logs.setLock().readLock().lock();
            List<Held> held = new ArrayList<>();
            boolean done = false;
            try {
                Map<String, Checkpoint.Log> positions = new TreeMap<>();
                for (String name : logs.names()) {
                    // A closed log was forced whole as it closed: its entry stands, and it is not opened for this.
                    Checkpoint.Log entry = logs.visit(name, log -> {
                        long start = log.start();
                        // Kept in use (so open) until the sync: it is recorded after it.
                        if (config.forceTogether() && log.tryUse()) {
                            LogStore.SyncClaim claim = log.prepareSync();
                            if (claim != null) {
                                held.add(new Held(name, log, claim, start));
                                return null;
                            }
                            log.endUse();
                        }
                        return durableEntry(log, log.makeDurable(), start, strict);
                    }, ClosedLog::checkpointEntry);
                    if (entry != null) {
                        positions.put(name, entry);
                    }
                }
                syncTogether(held, positions, strict);
                done = true;
                write(positions);
            } finally {
                if (!done) {
                    // A log refused (strict) before every claim was settled: what was taken is marked again, so a
                    // later checkpoint forces it (twice at worst) rather than claims it unforced.
                    held.forEach(h -> h.log().putBack(h.claim()));
                }
                held.forEach(h -> h.log().endUse());
                logs.setLock().readLock().unlock();
            }
        }
    }

    /** A log a checkpoint holds in use from its commit until the sync of the file system that forces it. */
    private record Held(String name, LogStore log, LogStore.SyncClaim claim, long start) {
    }

    /**
     * Forces the held logs: with one sync of the file system when there are several (a force each costs the device
     * about what one sync does), else each by itself; then records each in {@code positions}.
     */
    private void syncTogether(List<Held> held, Map<String, Checkpoint.Log> positions, boolean strict)
            throws IOException {
        boolean synced = false;
        if (held.size() > 1) {
            try {
                synced = logs.storeSync().sync();
            } catch (IOException e) {
                for (Held h : held) {
                    h.log().syncFailed(h.claim(), e);
                }
                LOG.error("syncing the file system of {} for a checkpoint failed; its {} logs turned read-only: {}",
                        root, held.size(), e.toString());
                for (Held h : held) {
                    positions.put(h.name(), durableEntry(h.log(), h.log().durablePosition(), h.start(), strict));
                }
                return;
            }
        }
        for (Held h : held) {
            long durable = synced ? h.log().synced(h.claim()) : h.log().makeDurableWithout(h.claim());
            positions.put(h.name(), durableEntry(h.log(), durable, h.start(), strict));
        }
    }

    /** @return the log's checkpoint entry @throws StoreException if {@code strict} and the log refuses appends */
    private static Checkpoint.Log durableEntry(LogStore log, long durable, long start, boolean strict) {
        StoreException refusal = strict ? log.refusal() : null;
        if (refusal != null) {
            throw refusal;
        }
        return new Checkpoint.Log(durable, start);
    }

    /** @return every log's durable position and start, as a checkpoint would record them now, forcing nothing */
    Map<String, Checkpoint.Log> durablePositions() {
        Map<String, Checkpoint.Log> positions = new TreeMap<>();
        for (String name : logs.names()) {
            Checkpoint.Log entry = logs.visit(name, log -> new Checkpoint.Log(log.durablePosition(), log.start()),
                    ClosedLog::checkpointEntry);
            if (entry != null) {
                positions.put(name, entry);
            }
        }
        return positions;
    }

    /** Writes a checkpoint of every log's durable position: one without the logs deleted since. */
    void writeCurrent() throws IOException {
        write(durablePositions());
    }

    /**
     * Writes the checkpoint if any position moved, then the consumer positions if they moved; then each log may
     * delete the index files retention took out below the start just recorded.
     */
    void write(Map<String, Checkpoint.Log> positions) throws IOException {
        synchronized (fileLock) {
            if (!positions.equals(last)) {
                new Checkpoint(positions, config.clock().millis()).write(config.fileIO(), root);
                last = positions;
            }
            consumers.saveIfDirty(config.fileIO(), root);
        }
        for (Map.Entry<String, Checkpoint.Log> recorded : positions.entrySet()) {
            logs.visit(recorded.getKey(), log -> {
                log.afterCheckpoint(recorded.getValue().start());
                return null;
            }, closedLog -> null);
        }
    }

    /** @return what the checkpoint file records for the log named {@code name}, or null */
    Checkpoint.Log recorded(String name) {
        synchronized (fileLock) {
            return last.get(name);
        }
    }

    /** Saves the consumer positions if they changed. */
    void saveConsumers() throws IOException {
        synchronized (fileLock) {
            consumers.saveIfDirty(config.fileIO(), root);
        }
    }

    /** Writes a checkpoint without the topic's logs if the last one written still names any of them. */
    void forget(String topic) throws IOException {
        synchronized (fileLock) {
            boolean stale = last.keySet().stream().anyMatch(name -> name.equals(topic) || name.startsWith(topic + "/"));
            if (stale) {
                writeCurrent();
            }
        }
    }

    /**
     * Close: every open log forces what it holds; then the checkpoint (with the entries of the closed logs, forced as
     * they closed), and the clean-shutdown marker if every log was healthy.
     *
     * @param closedEntries the checkpoint's entries of the logs that are closed
     * @param errors collects what failed
     */
    void closeDurably(List<LogStore> closing, Map<String, Checkpoint.Log> closedEntries, StoreDirectory directory,
                      List<Throwable> errors) {
        Map<String, Checkpoint.Log> positions = new TreeMap<>(closedEntries);
        boolean healthy = true;
        for (LogStore log : closing) {
            long end = log.quiesce();
            healthy &= end >= 0;
            positions.put(log.name(), new Checkpoint.Log(end >= 0 ? end : log.durablePosition(), log.start()));
        }
        try {
            write(positions);
            if (healthy) {
                directory.markCleanShutdown();
            }
        } catch (IOException | RuntimeException e) {
            errors.add(e);
        }
    }
}
