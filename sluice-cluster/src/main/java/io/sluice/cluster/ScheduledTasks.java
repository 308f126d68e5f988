package io.sluice.cluster;

import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The production {@link Tasks}: a {@link ScheduledExecutorService} of one daemon thread times the rounds, and each round
 * runs on a virtual thread of its own, named after its task, so that a round blocked on another node (a Raft client's
 * request, a group's info) holds up no other task. Unlike the store's scheduler (whose tasks must not block), a round
 * here may wait seconds.
 *
 * <p>{@link #close} cancels every task, interrupts the rounds under way, and waits up to
 * {@link #CLOSE_WAIT_MILLIS} for each.
 */
final class ScheduledTasks implements Tasks {

    private static final Logger LOG = LoggerFactory.getLogger(ScheduledTasks.class);

    /** How long {@link #close} waits for each round under way once interrupted. */
    static final long CLOSE_WAIT_MILLIS = 2_000;

    private final ScheduledExecutorService timer;
    private final Set<Scheduled> tasks = ConcurrentHashMap.newKeySet();
    private volatile boolean closed;

    /** @param name the timer thread's name */
    ScheduledTasks(String name) {
        this.timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().daemon().name(name).factory());
    }

    @Override
    public Task start(String name, Duration delay, Round round) {
        Scheduled task = new Scheduled(name, round);
        tasks.add(task);
        if (closed) {
            task.end();
        } else {
            task.schedule(delay.toNanos());
        }
        return task;
    }

    @Override
    public long nanoTime() {
        return System.nanoTime();
    }

    @Override
    public void close() {
        closed = true;
        List<Scheduled> all = List.copyOf(tasks);
        all.forEach(Scheduled::cancel);
        for (Scheduled task : all) {
            Thread running = task.running;
            if (running == null) {
                continue;
            }
            try {
                if (!running.join(Duration.ofMillis(CLOSE_WAIT_MILLIS))) {
                    LOG.warn("task {} still running {} ms after it was cancelled", task.name, CLOSE_WAIT_MILLIS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                break;
            }
        }
        timer.shutdownNow();
    }

    /** A task: its next round timed, or one running; never both. */
    private final class Scheduled implements Task {

        private final String name;
        private final Round round;
        private final AtomicBoolean ended = new AtomicBoolean();
        private volatile boolean cancelled;
        private volatile ScheduledFuture<?> next;
        /** The thread of the round under way, or null. */
        private volatile Thread running;

        Scheduled(String name, Round round) {
            this.name = name;
            this.round = round;
        }

        void schedule(long delayNanos) {
            try {
                next = timer.schedule(() -> Thread.ofVirtual().name(name).start(this::runRound),
                        Math.max(0, delayNanos), TimeUnit.NANOSECONDS);
            } catch (RejectedExecutionException e) {
                end(); // closed meanwhile
                return;
            }
            if (cancelled) {
                next.cancel(false);
                end();
            }
        }

        private void runRound() {
            running = Thread.currentThread();
            Next after = Next.DONE;
            try {
                if (!cancelled) {
                    after = round.run();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (Exception e) {
                if (!cancelled) {
                    LOG.error("task {} failed, and stops: {}", name, e.toString(), e);
                }
            } finally {
                running = null;
            }
            if (after.done() || cancelled) {
                end();
            } else {
                schedule(after.delayNanos());
            }
        }

        @Override
        public void cancel() {
            cancelled = true;
            ScheduledFuture<?> timed = next;
            if (timed != null) {
                timed.cancel(false);
            }
            Thread thread = running;
            if (thread != null) {
                thread.interrupt();
            } else {
                end();
            }
        }

        /** The task is over: it lets go of what its rounds held, once. */
        void end() {
            if (!ended.compareAndSet(false, true)) {
                return;
            }
            tasks.remove(this);
            try {
                round.ended();
            } catch (RuntimeException e) {
                LOG.warn("task {}: letting go of what it held failed: {}", name, e.toString());
            }
        }

        @Override
        public boolean ended() {
            return ended.get();
        }
    }
}
