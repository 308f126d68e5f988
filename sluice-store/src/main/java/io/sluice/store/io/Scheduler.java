package io.sluice.store.io;

/**
 * The store's seam for background work: flushing, checkpoints, retention, segment preparation and cache
 * prefetch run as tasks here, shared by every log of a store, and acknowledgements are completed here. The
 * default ({@link #threads}) is a small pool of platform threads plus a virtual thread per batch of
 * acknowledgements; a simulation substitutes one that runs every task on its own thread, in an order it
 * chooses, so that a run is reproducible from a seed.
 *
 * <p>Tasks must not block for long: a task waiting on another task would starve a small pool. Implementations
 * must be thread-safe.
 */
public interface Scheduler {

    /** A delayed task that may still be called off. */
    interface Timer {
        /** Calls the task off if it has not started; harmless afterwards. */
        void cancel();
    }

    /**
     * Runs {@code task} on a background thread as soon as one is free.
     *
     * @param task the task; an exception it throws is logged and does not stop the scheduler
     */
    void execute(Runnable task);

    /**
     * Runs {@code task} once, after {@code delayMillis}.
     *
     * @param task the task
     * @param delayMillis the delay, 0 or more
     * @return a handle that calls it off
     */
    Timer schedule(Runnable task, long delayMillis);

    /**
     * Runs code that completes callers' futures. The default runs each batch on a new virtual thread: a
     * callback attached to a future (which runs where the future completes) may block, append again and wait,
     * without stalling the store's threads or other callers' acknowledgements.
     *
     * @param completions completes a batch of futures, in order
     */
    void completeAcknowledgements(Runnable completions);

    /** Stops the threads after the running tasks end; tasks not yet started are dropped. Idempotent. */
    void shutdown();

    /**
     * @param ioThreads platform threads for background work, 1 or more
     * @return the default scheduler: {@code ioThreads} daemon threads named {@code sluice-io-<n>}, and a virtual
     *     thread per batch of acknowledgements
     */
    static Scheduler threads(int ioThreads) {
        return new ThreadScheduler(ioThreads);
    }
}
