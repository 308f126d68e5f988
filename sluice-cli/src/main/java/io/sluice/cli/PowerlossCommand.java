package io.sluice.cli;

import io.sluice.sim.PowerLossSimulation;
import io.sluice.sim.SeedRun;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sluice powerloss}: runs seeds of the power-loss simulation; exit 1 if any fails. */
@Command(name = "powerloss", description = {
        "Run the store through seeded power cuts on a simulated file system (unforced pages lost, kept, reordered"
                + " or torn; names lost until their directory is forced), reopen it after each and check it:"
                + " it opens, every queue holds a prefix of what was appended, SYNC acknowledgements survive,"
                + " records deleted below a queue's start do not come back, verify finds no fault, keys are found.",
        "Each seed is reproducible alone: a failing seed is printed with the command that reruns it."})
final class PowerlossCommand implements Callable<Integer> {

    @Option(names = "--seeds", defaultValue = "1000", description = "How many seeds (default 1000).")
    long seeds;

    @Option(names = "--from", defaultValue = "0", description = "The first seed (default 0).")
    long from;

    @Option(names = "--seed", description = "Run this one seed and describe it.")
    Long seed;

    @Option(names = "--threads", description = "Threads to run seeds on (default: one per core).")
    Integer threads;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws InterruptedException {
        if (seeds < 1 || (threads != null && threads < 1)) {
            throw new ParameterException(spec.commandLine(), "--seeds and --threads must be 1 or more");
        }
        // Every seed cuts the power under a running store, which it logs as errors; the outcome of each seed
        // says what matters.
        System.setProperty("org.slf4j.simpleLogger.log.io.sluice", "off");
        PrintWriter out = spec.commandLine().getOut();
        long first = seed != null ? seed : from;
        long count = seed != null ? 1 : seeds;
        int threadCount = threads != null ? threads : Runtime.getRuntime().availableProcessors();
        List<PowerLossSimulation.Outcome> outcomes = new ArrayList<>();
        SeedRun run;
        if (seed != null) {
            PowerLossSimulation.Outcome outcome = PowerLossSimulation.run(seed);
            outcomes.add(outcome);
            run = new SeedRun(seed, 1, outcome.passed() ? List.of() : List.of(outcome), outcome.acknowledged(),
                    outcome.checked(), outcome.configCuts(), outcome.logStartCuts(), 0);
        } else {
            run = SeedRun.run(first, count, threadCount, failure -> {
                if (!json) {
                    synchronized (out) {
                        out.println(describe(failure));
                        out.flush();
                    }
                }
            });
        }
        if (json) {
            List<Json> failed = new ArrayList<>();
            for (PowerLossSimulation.Outcome f : run.failed()) {
                failed.add(new Json().put("seed", f.seed()).put("scenario", f.scenario()).put("failure", f.failure()));
            }
            out.println(new Json().put("first", run.first()).put("seeds", run.seeds()).put("failed", failed)
                    .put("acknowledged", run.acknowledged()).put("checked", run.checked())
                    .put("configCuts", run.configCuts()).put("logStartCuts", run.logStartCuts())
                    .put("seconds", run.nanos() / 1e9).put("ok", run.failed().isEmpty()));
        } else if (seed != null) {
            PowerLossSimulation.Outcome o = outcomes.getFirst();
            out.printf("seed %d: %s; %,d appends, %,d acknowledged, %,d stored messages checked: %s%n", o.seed(),
                    o.scenario(), o.appends(), o.acknowledged(), o.checked(), o.passed() ? "passed" : "FAILED");
            if (!o.passed()) {
                out.println(o.failure());
            }
        } else {
            out.println(run.summary());
            out.println(run.failed().isEmpty() ? "OK" : run.failed().size() + " seed(s) failed");
        }
        out.flush();
        return run.failed().isEmpty() ? 0 : 1;
    }

    private static String describe(PowerLossSimulation.Outcome failure) {
        return "seed " + failure.seed() + " FAILED (" + failure.scenario() + "): " + failure.failure()
                + "\n  rerun: sluice powerloss --seed " + failure.seed();
    }
}
