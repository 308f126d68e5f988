package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Bad input exits 2 before anything is written. */
class BadInputTest {

    @TempDir
    Path temporary;

    private int bench(Path results, String... args) {
        String[] common = {"--results", results.toString(), "--no-progress"};
        String[] all = new String[args.length + common.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(common, 0, all, args.length, common.length);
        return BenchMain.run(all);
    }

    @Test
    void unknownExperimentIsUsageError() {
        assertThat(BenchMain.run("warp-speed")).isEqualTo(2);
    }

    @Test
    void badSizesAreUsageErrorsAndWriteNothing() {
        Path results = temporary.resolve("results");
        assertThat(bench(results, "io-copy", "--size", "12q")).isEqualTo(2);
        assertThat(bench(results, "io-copy", "--size", "6g")).isEqualTo(2);
        assertThat(bench(results, "small-io", "--size", "0")).isEqualTo(2);
        assertThat(bench(results, "mmap-vs-channel", "--cell-seconds", "-1")).isEqualTo(2);
        assertThat(bench(results, "store", "--producers", "0")).isEqualTo(2);
        assertThat(bench(results, "peers", "--body", "4")).isEqualTo(2);
        assertThat(bench(results, "mmap-modes", "--size", "1k")).isEqualTo(2);
        assertThat(results).doesNotExist();
    }

    @Test
    void resultsDirectoryThatCannotBeCreatedIsUsageError() throws IOException {
        Path file = Files.writeString(temporary.resolve("a-file"), "x");
        assertThat(bench(file.resolve("results"), "mmap-modes", "--size", "16m")).isEqualTo(2);
        assertThat(bench(file, "mmap-modes", "--size", "16m")).isEqualTo(2);
        assertThat(file).content().isEqualTo("x");
    }

    @Test
    void reportWithoutResultsIsUsageError() {
        Path results = temporary.resolve("empty");
        assertThat(bench(results, "report")).isEqualTo(2);
        assertThat(results).doesNotExist();
    }

    @Test
    void allChecksEveryExperimentBeforeStartingAny() throws IOException {
        Path file = Files.writeString(temporary.resolve("a-file"), "x");
        Path results = temporary.resolve("results");
        assertThat(bench(results, "all", "--quick", "--dir", file.resolve("work").toString())).isEqualTo(2);
        assertThat(results).doesNotExist();
    }
}
