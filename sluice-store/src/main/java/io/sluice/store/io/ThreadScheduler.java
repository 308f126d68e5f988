package io.sluice.store.io;

import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** {@link Scheduler#threads}: a pool of platform threads, and virtual threads for acknowledgements. */
final class ThreadScheduler implements Scheduler {

    private static final Logger LOG = LoggerFactory.getLogger(ThreadScheduler.class);

    private final ScheduledThreadPoolExecutor pool;

    ThreadScheduler(int ioThreads) {
        if (ioThreads < 1) {
            throw new IllegalArgumentException("ioThreads must be 1 or more, was " + ioThreads);
        }
        AtomicInteger next = new AtomicInteger();
        this.pool = new ScheduledThreadPoolExecutor(ioThreads,
                r -> Thread.ofPlatform().name("sluice-io-" + next.incrementAndGet()).daemon(true).unstarted(r));
        pool.setRemoveOnCancelPolicy(true);
        pool.setExecuteExistingDelayedTasksAfterShutdownPolicy(false);
    }

    @Override
    public void execute(Runnable task) {
        try {
            pool.execute(() -> runLogged(task));
        } catch (RejectedExecutionException e) {
            LOG.debug("scheduler shut down; dropped a task");
        }
    }

    @Override
    public Timer schedule(Runnable task, long delayMillis) {
        try {
            ScheduledFuture<?> future = pool.schedule(() -> runLogged(task), delayMillis, TimeUnit.MILLISECONDS);
            return () -> future.cancel(false);
        } catch (RejectedExecutionException e) {
            LOG.debug("scheduler shut down; dropped a timer");
            return () -> { };
        }
    }

    @Override
    public void completeAcknowledgements(Runnable completions) {
        Thread.ofVirtual().name("sluice-ack").start(completions);
    }

    private static void runLogged(Runnable task) {
        try {
            task.run();
        } catch (RuntimeException e) {
            LOG.error("background task failed", e);
        }
    }

    @Override
    public void shutdown() {
        pool.shutdown();
        try {
            if (!pool.awaitTermination(60, TimeUnit.SECONDS)) {
                LOG.warn("background tasks did not end within 60 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
