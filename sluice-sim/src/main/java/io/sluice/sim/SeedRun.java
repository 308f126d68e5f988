package io.sluice.sim;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Runs a range of seeds of the {@link PowerLossSimulation}, on several threads: each seed runs alone on one
 * thread, so it is reproducible from its number whatever ran beside it.
 *
 * @param first the first seed
 * @param seeds how many
 * @param failed the seeds that failed, in seed order
 * @param acknowledged appends acknowledged across every seed
 * @param checked stored messages compared with what was appended, across every seed
 * @param configCuts power cuts that struck during a change of a topic's configs, across every seed
 * @param logStartCuts power cuts that struck while a record deletion saved the log starts, across every seed
 * @param nanos how long the run took
 */
public record SeedRun(long first, long seeds, List<PowerLossSimulation.Outcome> failed, long acknowledged,
                      long checked, long configCuts, long logStartCuts, long nanos) {

    /**
     * @param first the first seed
     * @param seeds how many
     * @param threads threads to run them on
     * @param onFailure told of each failing seed as it fails (from the thread that ran it)
     * @return what happened
     * @throws InterruptedException if interrupted while waiting for the threads
     */
    public static SeedRun run(long first, long seeds, int threads, Consumer<PowerLossSimulation.Outcome> onFailure)
            throws InterruptedException {
        long start = System.nanoTime();
        AtomicLong next = new AtomicLong(first);
        AtomicLong acknowledged = new AtomicLong();
        AtomicLong checked = new AtomicLong();
        AtomicLong configCuts = new AtomicLong();
        AtomicLong logStartCuts = new AtomicLong();
        List<PowerLossSimulation.Outcome> failed = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < Math.max(1, threads); t++) {
            workers.add(Thread.ofPlatform().name("sim-" + t).start(() -> {
                for (long seed = next.getAndIncrement(); seed < first + seeds; seed = next.getAndIncrement()) {
                    PowerLossSimulation.Outcome outcome = PowerLossSimulation.run(seed);
                    acknowledged.addAndGet(outcome.acknowledged());
                    checked.addAndGet(outcome.checked());
                    configCuts.addAndGet(outcome.configCuts());
                    logStartCuts.addAndGet(outcome.logStartCuts());
                    if (!outcome.passed()) {
                        synchronized (failed) {
                            failed.add(outcome);
                        }
                        onFailure.accept(outcome);
                    }
                }
            }));
        }
        for (Thread worker : workers) {
            worker.join();
        }
        failed.sort(Comparator.comparingLong(PowerLossSimulation.Outcome::seed));
        return new SeedRun(first, seeds, List.copyOf(failed), acknowledged.get(), checked.get(), configCuts.get(),
                logStartCuts.get(), System.nanoTime() - start);
    }

    /**
     * @return one line: seeds, failures, acknowledged appends, messages checked, cuts in config changes and in record
     *     deletions, time
     */
    public String summary() {
        return String.format("%,d seeds from %d, %d failed, %,d acknowledged appends, %,d stored messages checked,"
                + " %,d cuts in config changes, %,d cuts in record deletions, %.1f s", seeds, first, failed.size(),
                acknowledged, checked, configCuts, logStartCuts, nanos / 1e9);
    }
}
