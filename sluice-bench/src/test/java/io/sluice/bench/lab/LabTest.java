package io.sluice.bench.lab;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What a run leaves behind when it succeeds, when its self-check fails, and when it throws. */
class LabTest {

    @TempDir
    Path temporary;

    /** An experiment that writes a file, reports one row, and then passes or fails its check, or throws. */
    private static final class Probe extends Experiment {
        private final String outcome;

        Probe(String outcome, Path results) {
            this.outcome = outcome;
            options().results = results;
            options().noProgress = true;
        }

        @Override
        public String name() {
            return "probe";
        }

        @Override
        public String title() {
            return "probe";
        }

        @Override
        public long workBytes() {
            return 1024;
        }

        @Override
        public void run(Lab lab) throws IOException {
            Files.writeString(lab.work().resolve("data"), "x");
            lab.table("probe", "Probe", "a", "b").add("one", 1.5);
            if (outcome.equals("throw")) {
                throw new IOException("disk on fire");
            }
            lab.check(outcome.equals("pass"), "the probe passes");
        }
    }

    private int execute(Probe probe, StringWriter err) {
        return Lab.execute(probe, new PrintWriter(new StringWriter()), new PrintWriter(err));
    }

    private static long entries(Path directory) throws IOException {
        try (Stream<Path> files = Files.list(directory)) {
            return files.count();
        }
    }

    @Test
    void successPublishesAndCleansTheWorkDirectory() throws IOException {
        Path results = temporary.resolve("results");
        assertThat(execute(new Probe("pass", results), new StringWriter())).isZero();
        assertThat(results.resolve("probe/probe.csv")).content().isEqualTo("a,b\none,1.5\n");
        assertThat(results.resolve("probe/result.json")).content().contains("\"the probe passes\"");
        assertThat(results.resolve(".work")).doesNotExist();
        assertThat(entries(results)).isEqualTo(1);
    }

    @Test
    void failedCheckLeavesNothingAndKeepsEarlierResults() throws IOException {
        Path results = temporary.resolve("results");
        assertThat(execute(new Probe("pass", results), new StringWriter())).isZero();
        String earlier = Files.readString(results.resolve("probe/result.json"));
        StringWriter err = new StringWriter();
        assertThat(execute(new Probe("fail", results), err)).isEqualTo(1);
        assertThat(err.toString()).contains("check failed: the probe passes");
        assertThat(results.resolve("probe/result.json")).content().isEqualTo(earlier);
        assertThat(entries(results)).isEqualTo(1);
    }

    @Test
    void failureInAFreshResultsDirectoryLeavesNoDirectory() {
        Path results = temporary.resolve("fresh");
        StringWriter err = new StringWriter();
        assertThat(execute(new Probe("throw", results), err)).isEqualTo(1);
        assertThat(err.toString()).contains("disk on fire");
        assertThat(results).doesNotExist();
    }

    @Test
    void notEnoughSpaceIsAUsageErrorNamingTheSizes() {
        assertThatThrownBy(() -> Lab.checkFreeSpace(temporary, Long.MAX_VALUE / 4, "probe"))
                .isInstanceOf(UsageException.class).hasMessageContaining("probe needs")
                .hasMessageContaining("is available");
    }

    @Test
    void sizesParseBinaryUnitsAndRejectNonsense() {
        assertThat(Sizes.parse("64")).isEqualTo(64);
        assertThat(Sizes.parse("8k")).isEqualTo(8192);
        assertThat(Sizes.parse("512M")).isEqualTo(512L << 20);
        assertThat(Sizes.parse("1GiB")).isEqualTo(1L << 30);
        assertThat(Sizes.format(10 << 10)).isEqualTo("10K");
        assertThat(Sizes.format(100)).isEqualTo("100B");
        assertThatThrownBy(() -> Sizes.parse("12q")).isInstanceOf(UsageException.class);
        assertThatThrownBy(() -> Sizes.parse("-1")).isInstanceOf(UsageException.class);
    }
}
