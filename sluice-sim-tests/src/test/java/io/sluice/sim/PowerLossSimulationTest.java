package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The power-loss simulation over many seeds: every seed must pass. Seeds: {@code -Dsluice.sim.seeds} (1,000 by
 * default) from {@code -Dsluice.sim.first} (0). A failing seed is printed with its failure and reproduces alone
 * with {@code -Dsluice.sim.first=<seed> -Dsluice.sim.seeds=1} (or {@code sluice powerloss --seed <seed>}).
 */
class PowerLossSimulationTest {

    @Test
    void everySeedKeepsEveryPromise() throws InterruptedException {
        long first = Long.getLong("sluice.sim.first", 0);
        int seeds = Integer.getInteger("sluice.sim.seeds", 1000);
        SeedRun run = SeedRun.run(first, seeds, Runtime.getRuntime().availableProcessors(),
                outcome -> System.out.println("seed " + outcome.seed() + " FAILED (" + outcome.scenario() + "): "
                        + outcome.failure()));
        System.out.println("power-loss simulation: " + run.summary());
        List<PowerLossSimulation.Outcome> failed = run.failed();
        assertThat(failed).isEmpty();
        assertThat(run.acknowledged()).as("acknowledged appends across the seeds").isPositive();
        if (seeds >= 100) {
            assertThat(run.configCuts()).as("power cuts during a config change across the seeds").isPositive();
            assertThat(run.logStartCuts()).as("power cuts while a record deletion saved the log starts, across the"
                    + " seeds").isPositive();
        }
    }
}
