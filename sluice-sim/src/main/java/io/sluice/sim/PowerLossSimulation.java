package io.sluice.sim;

import io.sluice.store.RecoveryReport;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;

/**
 * One seeded run of the store on a {@link SimFileSystem} with a {@link ManualScheduler}: producers append to
 * topics of every layout (the BATCHES topic's queues truncated and emptied now and then, as a Raft replica does, and
 * its configs replaced, as a broker's AlterConfigs does; every topic's records deleted below an offset now and then,
 * as Kafka's DeleteRecords does), background tasks run in a seeded order, and the power is cut at a seeded file
 * system operation (inside a checkpoint, a roll, retention, a registry save, a log-starts save, recovery itself...).
 * After each cut the store is opened on what survived and checked:
 * <ul>
 * <li>it opens (a state a power cut can produce is never refused);</li>
 * <li>every queue holds a prefix of what was appended to it, message for message, from its first offset: nothing
 *     corrupt, reordered or resurrected from before an earlier cut is served;</li>
 * <li>no queue starts below the offset its last record deletion that returned asked for (deleted records never come
 *     back), nor, where retention takes records only below a queue's start, above that start, the one of the
 *     deletion the cut interrupted, or where retention had taken it before (no record at or above the start is lost,
 *     by recovery or by retention);</li>
 * <li>under SYNC, every acknowledged message is there;</li>
 * <li>the verifier finds no fault once the store was closed;</li>
 * <li>keys of stored messages are found by key lookup;</li>
 * <li>every topic keeps its layout, and the BATCHES topic its queue count and exactly the configs of its last change
 *     that returned or of the one the cut interrupted.</li>
 * </ul>
 * Everything runs on the calling thread, so a seed reproduces its run exactly.
 *
 * <p>This class runs the epochs, cuts and opens; the seed's settings are a {@link SimSettings}, what the producers
 * and consumers do a {@link SimWorkload}, what was appended a {@link QueueModel}, and the comparisons
 * {@link ModelChecks}.
 *
 * <p>Not thread-safe; one instance per run.
 */
public final class PowerLossSimulation {

    /** Where the store lives in the simulated file system. */
    static final Path ROOT = Path.of("/sim/store");
    private static final int EPOCHS = 3;

    /**
     * What one seed did.
     *
     * @param seed the seed
     * @param scenario write path, flush mode and crash models
     * @param appends messages appended
     * @param acknowledged appends acknowledged
     * @param checked stored messages compared with what was appended
     * @param configCuts power cuts that struck while a change of the BATCHES topic's configs was under way
     * @param logStartCuts power cuts that struck while a record deletion saved the log starts
     * @param failure what went wrong, or null
     */
    public record Outcome(long seed, String scenario, long appends, long acknowledged, long checked, int configCuts,
                          int logStartCuts, String failure) {
        /** @return true if every check held */
        public boolean passed() {
            return failure == null;
        }
    }

    private final long seed;
    private final SplittableRandom random;
    private final SimSettings settings;
    private final SimClock clock = new SimClock(1_700_000_000_000L);
    private final ModelChecks checks;
    private final SimWorkload workload;
    private final QueueModel model;
    private final StringBuilder scenario;
    private final List<SimFileSystem> released = new ArrayList<>();
    private SimFileSystem fs = new SimFileSystem();
    private ManualScheduler scheduler;
    private Store store;
    private int configCuts;
    private int logStartCuts;

    private PowerLossSimulation(long seed) {
        this.seed = seed;
        this.random = new SplittableRandom(seed);
        this.settings = new SimSettings(seed, random);
        this.scenario = new StringBuilder(settings.describe());
        this.model = new QueueModel(seed);
        this.checks = new ModelChecks(random, settings, model);
        this.workload = new SimWorkload(random, settings, clock, model, checks);
    }

    /**
     * Runs one seed.
     *
     * @param seed the seed; the same seed runs the same way
     * @return what happened
     */
    public static Outcome run(long seed) {
        PowerLossSimulation simulation = new PowerLossSimulation(seed);
        String failure = null;
        try {
            simulation.execute();
        } catch (SimulationFailure e) {
            failure = e.getMessage() + (e.getCause() != null ? ": " + describe(e.getCause()) : "");
        } catch (RuntimeException | Error e) {
            failure = "unexpected " + describe(e);
        } finally {
            simulation.cleanUp();
        }
        return new Outcome(seed, simulation.scenario.toString(), simulation.workload.appends(),
                simulation.workload.acknowledged(), simulation.checks.checked(), simulation.configCuts,
                simulation.logStartCuts, failure);
    }

    private static String describe(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (StackTraceElement frame : e.getStackTrace()) {
            if (frame.getClassName().startsWith("io.sluice")) {
                text.append(" at ").append(frame);
                break;
            }
        }
        return text.toString();
    }

    private StoreConfig config() {
        return settings.config(random, fs, scheduler, clock);
    }

    private void execute() {
        for (int epoch = 0; epoch < EPOCHS; epoch++) {
            open(epoch);
            CrashModel model = CrashModel.pick(random);
            scenario.append(", ").append(model.name());
            // Some cuts come soon after the open, while the log is still over what the last cut left behind.
            fs.armPowerCut(1 + random.nextInt(random.nextInt(3) == 0 ? 200 : 4000), random, model);
            int steps = 300 + random.nextInt(1200);
            for (int step = 0; step < steps && fs.afterPowerCut() == null; step++) {
                step();
            }
            if (fs.afterPowerCut() == null) {
                // The cut did not fall within the steps: cut now.
                abandon(fs.crash(random, model));
            } else {
                if (this.model.topicConfigsInDoubt != null) {
                    configCuts++;
                    scenario.append(" in a config change");
                }
                if (!this.model.startsInDoubt.isEmpty()) {
                    logStartCuts++;
                    scenario.append(" in a record deletion");
                }
                abandon(fs.afterPowerCut());
            }
        }
        open(EPOCHS);
        closeCleanly("final close");
        StoreVerifier.Report report = verify();
        if (!report.ok()) {
            throw new SimulationFailure("the verifier found faults after a clean close: " + report.faults());
        }
    }

    /**
     * Opens the store on the current file system (recovering it) and checks it against the model. After a power
     * cut, the image is verified first (the verifier must fault nothing a power cut can leave), and sometimes the
     * power is cut again during recovery itself.
     */
    private void open(int epoch) {
        if (epoch > 0) {
            StoreVerifier.Report crashed = verify();
            if (!crashed.ok()) {
                throw new SimulationFailure("epoch " + epoch + ": the verifier faults what a power cut left: "
                        + crashed.faults());
            }
            if (random.nextInt(4) == 0 && cutDuringRecovery(epoch)) {
                return;
            }
        }
        scheduler = new ManualScheduler(clock);
        try {
            store = Store.open(ROOT, config());
        } catch (RuntimeException e) {
            throw new SimulationFailure("epoch " + epoch + ": the store refused to open after a power cut", e);
        }
        afterOpen(epoch);
    }

    /**
     * Opens with a power cut armed a few operations in: if it strikes during recovery, opens again on what
     * survived; if recovery finished first, carries on with the store it opened.
     *
     * @return true if the store is open and checked
     */
    private boolean cutDuringRecovery(int epoch) {
        CrashModel model = CrashModel.pick(random);
        fs.armPowerCut(1 + random.nextInt(80), random, model);
        scheduler = new ManualScheduler(clock);
        try {
            store = Store.open(ROOT, config());
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure("epoch " + epoch + ": the store refused to open after a power cut", e);
            }
        }
        if (fs.afterPowerCut() == null) {
            fs.disarmPowerCut();
            afterOpen(epoch);
            return true;
        }
        scenario.append(", cut in recovery (").append(model.name()).append(')');
        abandon(fs.afterPowerCut());
        return false;
    }

    private void afterOpen(int epoch) {
        if (epoch == 0) {
            workload.createTopics(store);
        }
        // A rebuild means recovery found an index missing entries the checkpoint claimed were forced: a broken
        // durability claim that the rebuild merely papers over.
        if (Boolean.getBoolean("sluice.sim.reports")) {
            store.recoveryReports().forEach((log, report) -> System.out.println("seed " + seed + " epoch " + epoch
                    + " log '" + log + "' " + report));
        }
        store.recoveryReports().forEach((log, report) -> {
            if (report.mode() == RecoveryReport.Mode.REBUILD) {
                throw new SimulationFailure("epoch " + epoch + ": log '" + log + "' had to rebuild its indexes after a"
                        + " power cut: the checkpoint claimed entries that were not durable");
            }
        });
        checks.checkAgainstModel(store, epoch, true);
    }

    /** The power is back: the old process is gone; its store is closed only to free its memory. */
    private void abandon(SimFileSystem after) {
        Store dead = store;
        store = null;
        scheduler.discardAll();
        if (dead != null) {
            try {
                dead.close();
            } catch (RuntimeException e) {
                // The file system is gone: closing only frees the dead process's memory.
            }
        }
        workload.forgetPending();
        released.add(fs);
        fs = after;
    }

    private void cleanUp() {
        if (store != null) {
            try {
                store.close();
            } catch (RuntimeException e) {
                // reported already, or the run failed before
            }
        }
        released.forEach(SimFileSystem::release);
        fs.release();
    }

    private void closeCleanly(String what) {
        try {
            store.close();
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure(what + " failed", e);
            }
        } finally {
            store = null;
        }
        workload.settle(fs.afterPowerCut() != null);
    }

    private void step() {
        int roll = random.nextInt(100);
        workload.beforeStep();
        try {
            if (roll < 41) {
                workload.append(store);
            } else if (roll < 65) {
                scheduler.runOne(random);
            } else if (roll < 80) {
                scheduler.advance(1 + random.nextInt(40));
            } else if (roll < 86) {
                workload.readSomething(store);
            } else if (roll < 89) {
                // Often enough for a few percent of the cuts to strike inside a registry save.
                workload.changeConfigs(store);
            } else if (roll < 92) {
                // Likewise inside a log-starts save.
                workload.deleteRecords(store);
            } else if (roll < 95) {
                workload.commitOffset(store);
            } else if (roll < 97) {
                store.enforceRetention();
            } else if (roll < 98) {
                reopen();
            } else if (roll < 99) {
                if (random.nextInt(4) == 0) {
                    workload.empty(store);
                } else {
                    workload.truncate(store);
                }
            } else {
                scheduler.runAll(random);
            }
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure("step failed before any power cut", e);
            }
        }
        workload.settle(fs.afterPowerCut() != null);
        if (fs.afterPowerCut() == null) {
            try {
                workload.afterStep(store);
                checks.checkFirstOffsets(store, "a running store");
            } catch (RuntimeException e) {
                // A read opens a closed log, and may close an idle one (forcing it) to make room: the power may go
                // out in either.
                if (fs.afterPowerCut() == null) {
                    throw e;
                }
            }
        }
    }

    private void reopen() {
        closeCleanly("a clean close");
        if (fs.afterPowerCut() != null) {
            return;
        }
        scheduler = new ManualScheduler(clock);
        store = Store.open(ROOT, config());
        checks.checkAgainstModel(store, -1, false);
    }

    private StoreVerifier.Report verify() {
        try {
            return StoreVerifier.verify(ROOT, fs);
        } catch (IOException | RuntimeException e) {
            // A damaged registry, say, which the verifier cannot read past.
            throw new SimulationFailure("the verifier could not read the store", e);
        }
    }
}
