package io.sluice.cluster;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.PriorityQueue;

/**
 * {@link Tasks} for unit tests: a clock the test moves ({@link #advance}), and the rounds that fall due run on the
 * test's thread, in the order they are due. Nothing runs by itself, so a test of a duty decides exactly when each of
 * its rounds comes. A round that throws ends its task, as in production; the failure is kept for the test to see.
 */
final class ManualTasks implements Tasks {

    private long now = 1_000_000_000L;
    private long sequence;
    private boolean closed;
    private final PriorityQueue<Due> due = new PriorityQueue<>(Comparator.comparingLong(Due::atNanos)
            .thenComparingLong(Due::sequence));
    private final List<Throwable> failures = new ArrayList<>();

    private record Due(long atNanos, long sequence, Manual task) {
    }

    private final class Manual implements Task {
        final String name;
        final Round round;
        boolean ended;

        Manual(String name, Round round) {
            this.name = name;
            this.round = round;
        }

        @Override
        public void cancel() {
            end();
        }

        void end() {
            if (!ended) {
                ended = true;
                round.ended();
            }
        }

        @Override
        public boolean ended() {
            return ended;
        }
    }

    @Override
    public synchronized Task start(String name, Duration delay, Round round) {
        Manual task = new Manual(name, round);
        if (closed) {
            task.end();
        } else {
            due.add(new Due(now + delay.toNanos(), sequence++, task));
        }
        return task;
    }

    @Override
    public synchronized long nanoTime() {
        return now;
    }

    /** Moves the clock by {@code by}, running every round that falls due meanwhile, each at its time. */
    void advance(Duration by) {
        long until;
        synchronized (this) {
            until = now + by.toNanos();
        }
        while (true) {
            Due next;
            synchronized (this) {
                next = due.peek();
                if (next == null || next.atNanos() > until) {
                    now = until;
                    return;
                }
                due.poll();
                now = Math.max(now, next.atNanos());
            }
            run(next.task());
        }
    }

    /** Runs the rounds due now, without moving the clock. */
    void runDue() {
        advance(Duration.ZERO);
    }

    private void run(Manual task) {
        if (task.ended) {
            return;
        }
        Next after;
        try {
            after = task.round.run();
        } catch (Exception e) {
            synchronized (this) {
                failures.add(e);
            }
            after = Next.DONE;
        }
        synchronized (this) {
            if (after.done() || task.ended) {
                task.end();
            } else {
                due.add(new Due(now + after.delayNanos(), sequence++, task));
            }
        }
    }

    /** @return the names of the tasks with a round to come, in the order they are due */
    synchronized List<String> pending() {
        List<Due> all = new ArrayList<>(due);
        all.sort(due.comparator());
        return all.stream().filter(d -> !d.task().ended).map(d -> d.task().name).toList();
    }

    /** @return what rounds threw, in order */
    synchronized List<Throwable> failures() {
        return List.copyOf(failures);
    }

    @Override
    public synchronized void close() {
        closed = true;
        due.forEach(d -> d.task().end());
        due.clear();
    }
}
