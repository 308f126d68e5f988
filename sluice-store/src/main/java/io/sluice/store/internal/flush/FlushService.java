package io.sluice.store.internal.flush;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.task.SerialTask;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A log's flusher: commits write buffers to the files and forces the log, as a task on the store's
 * {@link Scheduler} (one log is never flushed by two threads at once; many logs share the threads).
 *
 * <h2>SYNC: group commit</h2>
 * Appenders enqueue a {@link Waiter} (in log order: they do it under the append lock) and request a round.
 * A round takes the write position at that moment, commits and forces everything below it with one
 * fdatasync, then hands every waiter whose record ends at or below the forced position to the scheduler's
 * acknowledgement thread (never completing a future on the flusher: a callback that appends and waits would
 * deadlock it, and a slow one would delay everyone). Rounds repeat while waiters remain, so appenders that
 * arrive during a force ride on the next one, and forces per second stay bounded by the device while
 * throughput grows with the number of concurrent appenders.
 *
 * <p>Under SYNC a store may have its logs' rounds made by {@link ForceTogether} instead, which forces the waiting
 * appends of many logs with one sync of the file system; this flusher then commits for such a round and completes
 * its waiters after it, and makes its own rounds only for a forced append under ASYNC.
 *
 * <h2>ASYNC</h2>
 * Commits once {@code commitMinBytes} are buffered or {@code commitIntervalMillis} passed; forces once
 * {@code flushDirtyBytes} are dirty or {@code flushIntervalMillis} passed. Appenders request a round when a
 * threshold is crossed; a timer, armed only while something is unflushed, covers the intervals, so an idle log
 * costs nothing.
 *
 * <h2>Failure</h2>
 * A failed commit or force is never retried: the pages it covered may already be marked clean by the kernel,
 * so a later "successful" force would prove nothing. The flusher reports the failure once (the store turns
 * read-only and fails every waiting append) and does nothing from then on.
 *
 * <p>Thread-safe: {@link #enqueue} and {@link #wakeUp} may be called from any thread.
 */
public final class FlushService implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FlushService.class);

    /**
     * An append waiting for its force.
     *
     * @param end the log position after its record
     * @param result what the append will be told
     * @param future completed once the record is durable
     */
    public record Waiter(long end, AppendResult result, CompletableFuture<AppendResult> future) {
    }

    private final CommitLog log;
    private final StoreConfig config;
    private final Scheduler scheduler;
    private final Consumer<IOException> onFailure;
    private final ConcurrentLinkedQueue<Waiter> waiters = new ConcurrentLinkedQueue<>();
    private final SerialTask task;
    /** Makes the SYNC rounds of many logs together, or null when this flusher makes its own. */
    private final ForceTogether together;
    /** True while this flusher is among those asking {@link #together} for a round. */
    private final AtomicBoolean asking = new AtomicBoolean();
    private final TaskGate gate = new TaskGate();
    private final AtomicBoolean timerArmed = new AtomicBoolean();
    private volatile boolean failed;
    private volatile long forces;
    /** Writeback control's distance, 0 when off (SYNC, the DIRECT path, or not configured). */
    private final long writebackDistance;
    private final Writeback writeback;
    /** Where writeback has been started up to, published for {@link #writebackDue}. */
    private volatile long writebackStarted;
    /** Flusher-owned (ASYNC): clock millis of the last commit and the last force. */
    private long lastCommitMillis;
    private long lastFlushMillis;

    /**
     * @param log the log to flush
     * @param config the configuration
     * @param scheduler where rounds run and acknowledgements complete
     * @param onFailure told (once) when a commit or force fails
     * @param together makes the SYNC rounds of the store's logs together, or null for rounds of this log's own
     */
    public FlushService(CommitLog log, StoreConfig config, Scheduler scheduler, Consumer<IOException> onFailure,
                        ForceTogether together) {
        this.log = log;
        this.together = config.flushMode() == FlushMode.SYNC ? together : null;
        this.config = config;
        this.scheduler = scheduler;
        this.onFailure = onFailure;
        this.writebackDistance = config.flushMode() == FlushMode.ASYNC && config.writePath() != WritePath.DIRECT
                ? config.resolvedWritebackDistanceBytes() : 0;
        this.writeback = writebackDistance > 0 ? new Writeback(log, writebackDistance) : null;
        this.writebackStarted = log.flushedPosition();
        this.lastCommitMillis = config.clock().millis();
        this.lastFlushMillis = lastCommitMillis;
        this.task = new SerialTask(scheduler, this::round);
    }

    /** SYNC, or a forced append under ASYNC: registers an append to complete after its force. Call in log order. */
    public void enqueue(Waiter waiter) {
        waiters.add(waiter);
        if (together != null) {
            together.ask(this);
        } else {
            task.request();
        }
    }

    /** Has a round run soon (a threshold was crossed). Cheap when one is already pending. */
    public void wakeUp() {
        task.request();
    }

    /** ASYNC: arms the interval timer if it is not armed; call after an append left unflushed bytes. */
    public void armTimer() {
        if (!timerArmed.get() && timerArmed.compareAndSet(false, true)) {
            scheduler.schedule(() -> {
                timerArmed.set(false);
                task.request();
            }, Math.min(config.flushIntervalMillis(), config.commitIntervalMillis()));
        }
    }

    /**
     * @param committed the committed position
     * @return true if writeback control is on and a step's worth of pages past the distance awaits writeback
     */
    public boolean writebackDue(long committed) {
        return writebackDistance > 0 && committed - writebackDistance - writebackStarted >= Writeback.STEP_BYTES;
    }

    /** @return forces performed so far */
    public long forces() {
        return forces;
    }

    private void round() {
        if (failed || !gate.enter()) {
            return;
        }
        try {
            // Under ASYNC, appends that asked to be forced wait like SYNC ones and share one group commit.
            syncRounds();
            if (config.flushMode() == FlushMode.ASYNC) {
                asyncRound();
            }
        } finally {
            gate.exit();
        }
    }

    private void syncRounds() {
        if (together != null) {
            if (!waiters.isEmpty()) {
                together.ask(this);
            }
            return;
        }
        while (!waiters.isEmpty() && !failed) {
            if (!commitAndForce(log.writePosition())) {
                return;
            }
            completeDurable();
        }
    }

    /** Hands every waiter whose record is now durable to the acknowledgement thread. */
    private void completeDurable() {
        long flushed = log.flushedPosition();
        List<Waiter> batch = new ArrayList<>();
        Waiter waiter;
        while ((waiter = waiters.peek()) != null && waiter.end() <= flushed) {
            waiters.poll();
            batch.add(waiter);
        }
        if (!batch.isEmpty()) {
            scheduler.completeAcknowledgements(() -> {
                for (Waiter done : batch) {
                    done.future().complete(done.result());
                }
            });
        }
    }

    private void asyncRound() {
        long now = config.clock().millis();
        boolean buffered = config.writePath().buffered();
        try {
            long write = log.writePosition();
            if (buffered) {
                long uncommitted = write - log.committedPosition();
                if (uncommitted >= config.commitMinBytes()
                        || (uncommitted > 0 && now - lastCommitMillis >= config.commitIntervalMillis())) {
                    log.commit(write);
                    lastCommitMillis = now;
                }
            }
            long committed = log.committedPosition();
            if (writeback != null) {
                writeback.maybeStart(committed);
                writebackStarted = writeback.started();
            }
            long dirty = committed - log.flushedPosition();
            if (dirty >= config.flushDirtyBytes() || (dirty > 0 && now - lastFlushMillis >= config.flushIntervalMillis())) {
                log.flush(committed);
                forces++;
                lastFlushMillis = now;
            }
        } catch (IOException e) {
            fail(e);
            return;
        }
        if (log.writePosition() > log.flushedPosition()) {
            armTimer();
        }
    }

    /** Commits and forces everything below {@code target}. @return false if it failed (already reported) */
    private boolean commitAndForce(long target) {
        try {
            long committed = log.commit(target);
            log.flush(committed);
            forces++;
            return true;
        } catch (IOException e) {
            fail(e);
            return false;
        }
    }

    /** {@link ForceTogether}: @return true if this flusher was not already asking (it is now) */
    boolean markAsking() {
        return asking.compareAndSet(false, true);
    }

    /** {@link ForceTogether}: this flusher's request was taken for a round. */
    void clearAsking() {
        asking.set(false);
    }

    /** {@link ForceTogether}: @return true if this flusher takes part in the round (then {@link #exitRound} after) */
    boolean enterRound() {
        if (failed || !gate.enter()) {
            return false;
        }
        if (failed) {
            gate.exit();
            return false;
        }
        return true;
    }

    /** {@link ForceTogether}: leaves a round entered. */
    void exitRound() {
        gate.exit();
    }

    /** @return true if appends wait for a force */
    boolean hasWaiters() {
        return !waiters.isEmpty();
    }

    /** {@link ForceTogether}, the round's only log: forces it as this flusher's own round does. */
    void forceAlone() {
        if (commitAndForce(log.writePosition())) {
            completeDurable();
        }
    }

    /**
     * {@link ForceTogether}: commits what is appended to the files.
     *
     * @return the committed position, which the round's sync will make durable; -1 if the commit failed (reported)
     */
    long commitForRound() {
        try {
            return log.commit(log.writePosition());
        } catch (IOException e) {
            fail(e);
            return -1;
        } catch (RuntimeException e) {
            fail(new IOException("committing the log failed: " + e, e));
            return -1;
        }
    }

    /** {@link ForceTogether}: a sync of the file system that began after {@code committed} was committed returned. */
    void forced(long committed) {
        log.flushed(committed);
        forces++;
        completeDurable();
    }

    /** {@link ForceTogether}, where the file system cannot be synced: forces this log up to {@code committed}. */
    void forceAndComplete(long committed) {
        try {
            log.flush(committed);
        } catch (IOException e) {
            fail(e);
            return;
        }
        forces++;
        completeDurable();
    }

    void fail(IOException e) {
        failed = true;
        LOG.error("flushing the commit log failed; no further appends will be acknowledged", e);
        onFailure.accept(e);
    }

    /** Fails every waiting append with {@code cause}. Call with appends stopped. */
    public void failWaiters(Throwable cause) {
        List<Waiter> batch = new ArrayList<>();
        Waiter waiter;
        while ((waiter = waiters.poll()) != null) {
            batch.add(waiter);
        }
        if (!batch.isEmpty()) {
            scheduler.completeAcknowledgements(() -> {
                for (Waiter failedWaiter : batch) {
                    failedWaiter.future().completeExceptionally(cause);
                }
            });
        }
    }

    /** @return true if a commit or force failed */
    public boolean failed() {
        return failed;
    }

    /**
     * Close, after appends stopped: waits for a running round to end and runs no more. The caller then
     * commits and forces what remains ({@link #finalRound}).
     */
    @Override
    public void close() {
        gate.closeAndAwait();
    }

    /**
     * Close, on the closing thread after {@link #close()}: commits and forces everything appended and
     * acknowledges every waiter, unless a force failed before.
     *
     * @return the position everything below which is durable
     * @throws IOException if the commit or force failed (waiters are then left for {@link #failWaiters})
     */
    public long finalRound() throws IOException {
        if (failed) {
            throw new IOException("an earlier commit or force failed");
        }
        long end = log.writePosition();
        long committed = log.commit(end);
        if (committed < end) {
            throw new IOException("only " + committed + " of the log's " + end + " bytes could be committed to the"
                    + " files");
        }
        log.flush(committed);
        forces++;
        completeDurable();
        return committed;
    }
}
