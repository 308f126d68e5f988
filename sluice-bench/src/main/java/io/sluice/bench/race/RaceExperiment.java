package io.sluice.bench.race;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Mixin;

/**
 * An experiment that races stores: it takes the race options, runs each measurement on a fresh directory
 * (one at a time, so it needs disk for one run), and charts messages per second by producer count.
 */
public abstract class RaceExperiment extends Experiment {

    /** The workload options. */
    @Mixin
    protected RaceOptions race = new RaceOptions();

    private int runs;

    /** Opens a target on the directory it is given. */
    @FunctionalInterface
    protected interface Opener {
        /** @return the target, opened on {@code directory} */
        Target open(Path directory) throws Exception;
    }

    @Override
    public void validate() {
        race.validate();
    }

    @Override
    public long workBytes() {
        return race.bytesPerRun(options().quick);
    }

    /** Runs {@code scenario} once against a target opened on a new directory, which is deleted afterwards. */
    protected Race.Outcome runFresh(Lab lab, Progress progress, String name, Opener opener, Race.Scenario scenario)
            throws Exception {
        progress.say(scenario.label() + " " + name);
        Path directory = lab.work().resolve("run-" + runs++);
        try {
            return Race.run(lab, name, () -> opener.open(directory), scenario, race.warmUpSeconds(lab.quick()),
                    race.seconds(lab.quick()));
        } finally {
            Lab.deleteTree(directory);
            progress.step(1);
        }
    }

    /** Charts {@code rates} (messages per second per contender, one value per producer count). */
    protected void chartRates(Lab lab, String name, String title, Map<String, List<Double>> rates) {
        lab.chart(name, Charts.bars(title + ": messages/s (higher is better)", "producers", "messages/s (log)",
                race.producers(lab.quick()).stream().map(String::valueOf).toList(), rates, true));
    }
}
