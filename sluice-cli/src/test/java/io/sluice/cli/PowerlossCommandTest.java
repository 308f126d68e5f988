package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.junit.jupiter.api.Test;

/** {@code sluice powerloss} runs seeds of the simulation and reports them. */
class PowerlossCommandTest {

    @Test
    void runsARangeOfSeedsAndSummarises() {
        CliRun run = CliRun.run("", "powerloss", "--seeds", "6", "--from", "100", "--threads", "2");

        assertThat(run.exit()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).contains("6 seeds from 100, 0 failed").contains("OK");
    }

    @Test
    void describesOneSeed() {
        CliRun run = CliRun.run("", "powerloss", "--seed", "7");

        assertThat(run.exit()).as(run.out() + run.err()).isZero();
        assertThat(run.out()).startsWith("seed 7: ").contains("passed");
    }

    @Test
    void jsonSaysHowManyRanAndThatNoneFailed() {
        CliRun run = CliRun.run("", "powerloss", "--seeds", "3", "--json");

        Map<String, Object> result = CliOutputTest.StrictJson.parseObject(run.out().strip());
        assertThat(result).containsEntry("seeds", 3L).containsEntry("ok", true).containsEntry("first", 0L);
        assertThat((Long) result.get("acknowledged")).isPositive();
        assertThat(run.exit()).isZero();
    }

    @Test
    void zeroSeedsIsBadUsage() {
        CliRun run = CliRun.run("", "powerloss", "--seeds", "0");

        assertThat(run.exit()).isEqualTo(2);
    }
}
