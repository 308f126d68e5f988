package io.sluice.sim;

import io.sluice.store.io.Scheduler;
import java.util.ArrayList;
import java.util.List;
import java.util.PriorityQueue;
import java.util.SplittableRandom;

/**
 * A {@link Scheduler} that runs nothing by itself: tasks wait until the simulation runs them, on its own
 * thread, in an order a seeded random generator picks; timers fire when the simulated clock passes them. So
 * a whole run of the store (appends, flushes, checkpoints, retention, acknowledgements) is one thread and
 * reproducible from its seed.
 *
 * <p>Not thread-safe: the store calls it from the simulation's thread only, since nothing else runs.
 */
public final class ManualScheduler implements Scheduler {

    private final SimClock clock;
    private final List<Runnable> ready = new ArrayList<>();
    private final PriorityQueue<Delayed> timers = new PriorityQueue<>();
    private long sequence;
    private boolean shutDown;

    private record Delayed(long dueMillis, long sequence, Runnable task, boolean[] cancelled)
            implements Comparable<Delayed> {
        @Override
        public int compareTo(Delayed other) {
            int byTime = Long.compare(dueMillis, other.dueMillis);
            return byTime != 0 ? byTime : Long.compare(sequence, other.sequence);
        }
    }

    /** @param clock the simulated clock timers follow */
    public ManualScheduler(SimClock clock) {
        this.clock = clock;
    }

    @Override
    public void execute(Runnable task) {
        if (!shutDown) {
            ready.add(task);
        }
    }

    @Override
    public Timer schedule(Runnable task, long delayMillis) {
        if (shutDown) {
            return () -> { };
        }
        boolean[] cancelled = new boolean[1];
        timers.add(new Delayed(clock.millis() + Math.max(0, delayMillis), sequence++, task, cancelled));
        return () -> cancelled[0] = true;
    }

    @Override
    public void completeAcknowledgements(Runnable completions) {
        execute(completions);
    }

    @Override
    public void shutdown() {
        shutDown = true;
        ready.clear();
        timers.clear();
    }

    /**
     * Runs one ready task, chosen by {@code random}.
     *
     * @return false if none was ready
     */
    public boolean runOne(SplittableRandom random) {
        if (ready.isEmpty()) {
            return false;
        }
        Runnable task = ready.remove(random.nextInt(ready.size()));
        task.run();
        return true;
    }

    /** Runs ready tasks until none is left (tasks may make more ready). @return how many ran */
    public int runAll(SplittableRandom random) {
        int ran = 0;
        while (runOne(random)) {
            ran++;
        }
        return ran;
    }

    /** Moves the clock on by {@code millis}, making the timers that fall due ready. */
    public void advance(long millis) {
        clock.advance(millis);
        long now = clock.millis();
        while (!timers.isEmpty() && timers.peek().dueMillis <= now) {
            Delayed due = timers.poll();
            if (!due.cancelled[0]) {
                ready.add(due.task);
            }
        }
    }

    /** @return the delay until the next timer, or -1 if none is armed */
    public long nextTimerMillis() {
        while (!timers.isEmpty() && timers.peek().cancelled[0]) {
            timers.poll();
        }
        return timers.isEmpty() ? -1 : Math.max(0, timers.peek().dueMillis - clock.millis());
    }

    /**
     * Runs every ready task and every timer, advancing the clock to each, until nothing is armed or
     * {@code rounds} rounds have run: flushes, checkpoints and acknowledgements settle.
     */
    public void settle(SplittableRandom random, int rounds) {
        for (int round = 0; round < rounds; round++) {
            runAll(random);
            long next = nextTimerMillis();
            if (next < 0) {
                return;
            }
            advance(Math.max(1, next));
        }
    }

    /** Forgets every pending task and timer (the process they belonged to died). */
    public void discardAll() {
        ready.clear();
        timers.clear();
    }
}
