package io.sluice.store.internal.task;

import io.sluice.store.io.Scheduler;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A task that runs on a {@link Scheduler} at most once at a time, and again after it ends if it was requested
 * while running: requests coalesce, none is lost. A log's flusher is one, so one log is never flushed by two
 * threads at once, while many logs share the scheduler's threads.
 *
 * <p>Thread-safe.
 */
public final class SerialTask implements Runnable {

    private static final int IDLE = 0;
    private static final int QUEUED = 1;
    private static final int RUNNING = 2;
    private static final int RUNNING_REQUESTED = 3;

    private final Scheduler scheduler;
    private final Runnable body;
    private final AtomicInteger state = new AtomicInteger(IDLE);

    /**
     * @param scheduler where it runs
     * @param body what it does; must not throw (exceptions are the body's to handle)
     */
    public SerialTask(Scheduler scheduler, Runnable body) {
        this.scheduler = scheduler;
        this.body = body;
    }

    /** Has the body run soon: now if idle, or once more after the current run. Cheap when already pending. */
    public void request() {
        while (true) {
            int current = state.get();
            if (current == IDLE) {
                if (state.compareAndSet(IDLE, QUEUED)) {
                    scheduler.execute(this);
                    return;
                }
            } else if (current == RUNNING) {
                if (state.compareAndSet(RUNNING, RUNNING_REQUESTED)) {
                    return;
                }
            } else {
                return;
            }
        }
    }

    /** For the scheduler only. */
    @Override
    public void run() {
        state.set(RUNNING);
        try {
            body.run();
        } finally {
            if (!state.compareAndSet(RUNNING, IDLE)) {
                state.set(QUEUED);
                scheduler.execute(this);
            }
        }
    }
}
