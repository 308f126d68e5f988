package io.sluice.bench.lab;

import java.nio.file.Path;
import picocli.CommandLine.Option;

/** Options every experiment takes (a picocli mixin). */
public final class LabOptions {

    /** Smoke-sized run. */
    @Option(names = "--quick", description = "Small sizes and short runs: a smoke test of the experiment, "
            + "not figures to quote.")
    public boolean quick;

    /** Where results go. */
    @Option(names = "--results", defaultValue = "bench-results", paramLabel = "DIR",
            description = "Results directory (default ./bench-results); each experiment writes <DIR>/<name>/.")
    public Path results = Path.of("bench-results");

    /** Where the experiment's files go. */
    @Option(names = "--dir", paramLabel = "DIR", description = "Directory for the files the experiment reads and "
            + "writes (default <results>/.work); its filesystem is the one measured. Deleted afterwards.")
    public Path work;

    /** No progress bars. */
    @Option(names = "--no-progress", description = "Do not draw progress bars on standard error.")
    public boolean noProgress;

    /** @return the directory experiments make their work directories in */
    public Path workDirectory() {
        return work != null ? work : results.resolve(".work");
    }

    /** Copies every field from {@code other} (so {@code all} can hand its options to each experiment). */
    public void copyFrom(LabOptions other) {
        quick = other.quick;
        results = other.results;
        work = other.work;
        noProgress = other.noProgress;
    }
}
