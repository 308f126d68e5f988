package io.sluice.store.internal.flush;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.store.internal.log.CommitLog;
import java.io.IOException;
import java.util.ArrayDeque;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The flusher thread: commits write buffers to the files and forces the log.
 *
 * <h2>SYNC: group commit</h2>
 * Appenders enqueue a {@link Waiter} (in log order: they do it under the append lock) and wake the flusher.
 * The flusher takes the write position at that moment, commits and forces everything below it with one
 * fdatasync, then completes every waiter whose record ends at or below the forced position. Appenders that
 * arrive during a force are covered by the next one, so the number of forces per second stays bounded by
 * the device while throughput grows with the number of concurrent appenders.
 *
 * <h2>ASYNC</h2>
 * Commits once {@code commitMinBytes} are buffered or {@code commitIntervalMillis} passed; forces once
 * {@code flushDirtyBytes} are dirty or {@code flushIntervalMillis} passed.
 *
 * <h2>Failure</h2>
 * A failed commit or force is never retried: the pages it covered may already be marked clean by the kernel,
 * so a later "successful" force would prove nothing. The flusher reports the failure to the store (which
 * turns read-only and fails every waiting append) and stops.
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
    private final Consumer<IOException> onFailure;
    private final ConcurrentLinkedQueue<Waiter> waiters = new ConcurrentLinkedQueue<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile boolean sleeping;
    private volatile boolean failed;
    private volatile long forces;
    /** Writeback control's distance, 0 when off (SYNC, the DIRECT path, or not configured). */
    private final long writebackDistance;
    /** Where writeback has been started up to, published for {@link #writebackDue}. */
    private volatile long writebackStarted;

    /**
     * @param log the log to flush
     * @param config the configuration
     * @param onFailure told (once, on the flusher thread) when a commit or force fails
     */
    public FlushService(CommitLog log, StoreConfig config, Consumer<IOException> onFailure) {
        this.log = log;
        this.config = config;
        this.onFailure = onFailure;
        this.writebackDistance = config.flushMode() == FlushMode.ASYNC && config.writePath() != WritePath.DIRECT
                ? config.resolvedWritebackDistanceBytes() : 0;
        this.writebackStarted = log.flushedPosition();
        this.thread = Thread.ofPlatform().name("sluice-flusher").daemon(true).unstarted(
                config.flushMode() == FlushMode.SYNC ? this::runSync : this::runAsync);
    }

    /** Starts the flusher thread. */
    public void start() {
        thread.start();
    }

    /** SYNC: registers an append to complete after its force. Call in log order. */
    public void enqueue(Waiter waiter) {
        waiters.add(waiter);
        wakeUp();
    }

    /** Wakes the flusher if it sleeps. Cheap when it is awake. */
    public void wakeUp() {
        if (sleeping) {
            LockSupport.unpark(thread);
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

    private void runSync() {
        ArrayDeque<Waiter> batch = new ArrayDeque<>();
        while (running || !waiters.isEmpty()) {
            if (waiters.isEmpty()) {
                sleep(TimeUnit.MILLISECONDS.toNanos(config.flushIntervalMillis()));
                continue;
            }
            long target = log.writePosition();
            if (!commitAndForce(target)) {
                return;
            }
            long flushed = log.flushedPosition();
            Waiter waiter;
            while ((waiter = waiters.peek()) != null && waiter.end() <= flushed) {
                waiters.poll();
                batch.add(waiter);
            }
            // Complete outside the queue walk: completions may run caller code.
            while ((waiter = batch.poll()) != null) {
                waiter.future().complete(waiter.result());
            }
        }
    }

    private void runAsync() {
        long lastCommit = System.nanoTime();
        long lastFlush = lastCommit;
        long commitInterval = TimeUnit.MILLISECONDS.toNanos(config.commitIntervalMillis());
        long flushInterval = TimeUnit.MILLISECONDS.toNanos(config.flushIntervalMillis());
        boolean buffered = config.writePath().buffered();
        Writeback writeback = writebackDistance > 0 ? new Writeback(log, writebackDistance) : null;
        while (running) {
            long now = System.nanoTime();
            long write = log.writePosition();
            try {
                if (buffered) {
                    long uncommitted = write - log.committedPosition();
                    if (uncommitted >= config.commitMinBytes()
                            || (uncommitted > 0 && now - lastCommit >= commitInterval)) {
                        log.commit(write);
                        lastCommit = now;
                    }
                }
                long committed = log.committedPosition();
                if (writeback != null) {
                    writeback.maybeStart(committed);
                    writebackStarted = writeback.started();
                }
                long dirty = committed - log.flushedPosition();
                if (dirty >= config.flushDirtyBytes() || (dirty > 0 && now - lastFlush >= flushInterval)) {
                    log.flush(committed);
                    forces++;
                    lastFlush = now;
                    continue;
                }
            } catch (IOException e) {
                fail(e);
                return;
            }
            long wait = flushInterval - (now - lastFlush);
            if (buffered) {
                wait = Math.min(wait, commitInterval - (now - lastCommit));
            }
            if (!workPending()) {
                sleep(Math.max(wait, TimeUnit.MICROSECONDS.toNanos(100)));
            }
        }
    }

    /** @return true if a threshold is already crossed (so the flusher should not sleep) */
    private boolean workPending() {
        long write = log.writePosition();
        return write - log.committedPosition() >= config.commitMinBytes()
                || log.committedPosition() - log.flushedPosition() >= config.flushDirtyBytes()
                || writebackDue(log.committedPosition());
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

    private void fail(IOException e) {
        failed = true;
        LOG.error("flushing the commit log failed; no further appends will be acknowledged", e);
        onFailure.accept(e);
    }

    /** Fails every waiting append with {@code cause}. Call with appends stopped. */
    public void failWaiters(Throwable cause) {
        Waiter waiter;
        while ((waiter = waiters.poll()) != null) {
            waiter.future().completeExceptionally(cause);
        }
    }

    private void sleep(long nanos) {
        sleeping = true;
        if (waiters.isEmpty() && !workPending() && running) {
            LockSupport.parkNanos(this, nanos);
        }
        sleeping = false;
    }

    /** @return true if a commit or force failed */
    public boolean failed() {
        return failed;
    }

    /**
     * Stops the flusher after a last commit and force of everything appended. Call after appends stopped.
     */
    @Override
    public void close() {
        running = false;
        LockSupport.unpark(thread);
        try {
            thread.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
