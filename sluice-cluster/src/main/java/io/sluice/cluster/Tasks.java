package io.sluice.cluster;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.LoggerFactory;

/**
 * The node's recurring duties, each a named task: moving the retention holds, handing partitions to their preferred
 * leaders, watching for hand-overs stuck pending, joining and rejoining the cluster, restarting a replica whose log
 * failed. A task runs in rounds; each round does one step of its duty and says when the next is due (or that the duty
 * is done), so a duty that waits for something (a leader, a metadata entry, a free disk) asks again a round later
 * rather than sleeping. In production ({@link ScheduledTasks}) a timer starts each round when it is due, on a virtual
 * thread named after the task, since a round may block on a round trip to another node; a test substitutes a scheduler
 * whose clock it moves, and runs the rounds that fall due on its own thread.
 *
 * <p>A task runs one round at a time, and its next round is timed from the end of the one before (a fixed delay, as
 * the loops it replaced slept between their steps). Implementations are thread-safe.
 */
interface Tasks extends AutoCloseable {

    /**
     * What a round asks for: another round after a wait, or none.
     *
     * @param delayNanos the wait before the next round; negative: the task is done
     */
    record Next(long delayNanos) {

        /** The task is done: no more rounds. */
        static final Next DONE = new Next(-1);

        /** @return another round after {@code wait} */
        static Next in(Duration wait) {
            return new Next(wait.toNanos());
        }

        /** @return another round after {@code millis} */
        static Next inMillis(long millis) {
            return new Next(TimeUnit.MILLISECONDS.toNanos(millis));
        }

        /** @return whether the task is done */
        boolean done() {
            return delayNanos < 0;
        }
    }

    /** One round of a task. */
    @FunctionalInterface
    interface Round {

        /**
         * Does one step of the task's duty.
         *
         * @return when the next round is due, or {@link Next#DONE}
         * @throws Exception a failure the round did not handle: it is logged, and the task ends
         */
        Next run() throws Exception;

        /**
         * Called once when the task ends, whether done, failed or cancelled (the scheduler closing): the round lets go
         * of what it held across rounds (a client, a slot). Never while a round runs.
         */
        default void ended() {
        }
    }

    /** A task started on the scheduler. */
    interface Task {

        /** Ends the task: no round starts after this, and a round under way is interrupted. Idempotent. */
        void cancel();

        /** @return whether the task ended (done, failed or cancelled) */
        boolean ended();
    }

    /**
     * Starts a task.
     *
     * @param name what it does, for its thread and the log (e.g. {@code node-1-retention-holds})
     * @param delay the wait before its first round
     * @param round each round
     * @return the task; once the scheduler is closed, one that has ended without a round
     */
    Task start(String name, Duration delay, Round round);

    /**
     * Starts a task that does {@code work} every {@code period}, the first time a period from now, until the scheduler
     * closes. A failure of one round is logged and the next round comes as usual.
     *
     * @param name what it does, for its thread and the log
     * @param period the wait before each round
     * @param work one round's work
     * @return the task
     */
    default Task every(String name, Duration period, Runnable work) {
        return start(name, period, () -> {
            try {
                work.run();
            } catch (RuntimeException e) {
                LoggerFactory.getLogger(Tasks.class).warn("{} failed (runs again in {} ms): {}", name,
                        period.toMillis(), e.toString());
            }
            return Next.in(period);
        });
    }

    /** @return the clock the tasks are timed by, in nanoseconds (for rounds that measure how long they waited) */
    long nanoTime();

    /**
     * Cancels every task and waits a while for the rounds under way to end; tasks started afterwards end at once.
     * Idempotent.
     */
    @Override
    void close();
}
