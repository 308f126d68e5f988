package io.sluice.bench.race;

import io.sluice.bench.lab.Experiment;
import picocli.CommandLine.Mixin;

/** An experiment that races stores: it takes the race options and needs disk for one run at a time. */
public abstract class RaceExperiment extends Experiment {

    /** The workload options. */
    @Mixin
    protected RaceOptions race = new RaceOptions();

    @Override
    public void validate() {
        race.validate();
    }

    @Override
    public long workBytes() {
        return race.bytesPerRun(options().quick);
    }
}
