package io.sluice.bench.race;

import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.UsageException;
import java.util.List;
import picocli.CommandLine.Option;

/** The workload options {@code store} and {@code peers} share (a picocli mixin). */
public final class RaceOptions {

    @Option(names = "--seconds", paramLabel = "S", description = "Measured seconds per run (default 3; 0.4 with --quick).")
    Double seconds;

    @Option(names = "--warm-up-seconds", paramLabel = "S", description = "Unmeasured sending first, on the same "
            + "store (default 1; 0.1 with --quick).")
    Double warmUpSeconds;

    @Option(names = "--producers", split = ",", paramLabel = "N", description = "Producer counts (default "
            + "1,16,64,256; 1,256 with --quick).")
    List<Integer> producers;

    @Option(names = "--body", split = ",", paramLabel = "SIZE", description = "Body sizes (default 100,1k; 1k with "
            + "--quick).")
    List<String> bodies;

    @Option(names = "--batch", paramLabel = "N", description = "Messages per send under ASYNC (default 32).")
    int batch = 32;

    @Option(names = "--segment-size", paramLabel = "SIZE", description = "Commit-log segment size for every "
            + "store (default 1g, the size Sluice and RocketMQ use by default; 256m with --quick).")
    String segmentSize;

    @Option(names = "--rounds", paramLabel = "N", description = "Runs of every cell; the median is reported "
            + "(default 1 for store, 3 for peers; 1 with --quick).")
    Integer rounds;

    /** Checks ranges. @throws UsageException naming the option */
    public void validate() {
        if (producers != null && (producers.isEmpty() || producers.stream().anyMatch(p -> p < 1 || p > 10_000))) {
            throw new UsageException("--producers must be between 1 and 10000");
        }
        for (String body : bodies != null ? bodies : List.<String>of()) {
            long bytes = Sizes.parse(body);
            if (bytes < 12 || bytes > (1 << 20)) {
                throw new UsageException("--body must be between 12 bytes and 1m, got " + body);
            }
        }
        if (batch < 1 || batch > 1024) {
            throw new UsageException("--batch must be between 1 and 1024");
        }
        if (seconds != null && !(seconds > 0) || warmUpSeconds != null && !(warmUpSeconds >= 0)) {
            throw new UsageException("--seconds must be positive and --warm-up-seconds not negative");
        }
        if (rounds != null && (rounds < 1 || rounds > 99)) {
            throw new UsageException("--rounds must be between 1 and 99");
        }
        long segment = segmentBytes(false);
        if (segment < (64 << 20) || segment > (1L << 30)) {
            throw new UsageException("--segment-size must be between 64m and 1g");
        }
    }

    /** @return measured seconds per run */
    public double seconds(boolean quick) {
        return seconds != null ? seconds : quick ? 0.4 : 3;
    }

    /** @return warm-up seconds per run */
    public double warmUpSeconds(boolean quick) {
        return warmUpSeconds != null ? warmUpSeconds : quick ? 0.1 : 1;
    }

    /**
     * @return body sizes in bytes: a smoke run ({@code --quick}) takes one, since each size doubles the cells (the
     *     test suite's runs of these experiments take both)
     */
    public List<Integer> bodyBytes(boolean quick) {
        List<String> sizes = bodies != null ? bodies : quick ? List.of("1k") : List.of("100", "1k");
        return sizes.stream().map(b -> (int) Sizes.parse(b)).toList();
    }

    /** @return producer counts */
    public List<Integer> producers(boolean quick) {
        return producers != null ? List.copyOf(producers) : quick ? List.of(1, 256) : List.of(1, 16, 64, 256);
    }

    /** @return the scenario for one cell: one message per send under SYNC, batches under ASYNC */
    public Race.Scenario scenario(Durability durability, int bodyBytes, int producers) {
        return new Race.Scenario(durability, bodyBytes, producers, durability == Durability.SYNC ? 1 : batch);
    }

    /** @return messages per ASYNC send */
    public int batch() {
        return batch;
    }

    /** @return segment size in bytes */
    public long segmentBytes(boolean quick) {
        return Sizes.parse(segmentSize != null ? segmentSize : quick ? "256m" : "1g");
    }

    /** @return rounds per cell */
    public int rounds(boolean quick, int fullDefault) {
        return rounds != null ? rounds : quick ? 1 : fullDefault;
    }

    /**
     * @return bytes of disk one run can fill: 2 GB/s (above anything measured here) for the run's seconds,
     *         plus two segments
     */
    public long bytesPerRun(boolean quick) {
        return (long) (2e9 * (seconds(quick) + warmUpSeconds(quick))) + 2 * segmentBytes(quick);
    }
}
