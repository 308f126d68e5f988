package io.sluice.bench.experiments;

import io.sluice.bench.broker.CompactionRaceRun;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.UsageException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code compaction}: the log cleaner of the Sluice broker against Apache Kafka's (4.3.1, one KRaft node), both in
 * child JVMs on 127.0.0.1 and the same disk, on the same updates from the same stock clients, interleaved.
 */
@Command(name = "compaction", mixinStandardHelpOptions = true,
        description = "Race the Sluice broker's log cleaner against Apache Kafka's on this machine: a compacted topic"
                + " loaded with 1 KiB updates to a fixed set of keys is cleaned while a paced producer writes to"
                + " another topic; bytes cleaned per second of the cleaner thread's CPU, the other producer's latency,"
                + " every key's latest value checked; medians of interleaved rounds.")
public final class CompactionRace extends Experiment {

    @Option(names = "--bytes", paramLabel = "SIZE", description = "Updates of 1 KiB to load, in bytes (default 1g;"
            + " --quick 48m).")
    String bytes;

    @Option(names = "--keys", paramLabel = "N", description = "Keys the updates are drawn over (default 10000).")
    Integer keys;

    @Option(names = "--segment-size", paramLabel = "SIZE", description = "Log segment size on both brokers"
            + " (default 64m; --quick 8m; at least 8m).")
    String segmentSize;

    @Option(names = "--live-rate", paramLabel = "N", description = "Records of 1 KiB a second sent to the other topic"
            + " during the cleaning (default 2000).")
    Integer liveRate;

    @Option(names = "--rounds", paramLabel = "N", description = "Interleaved rounds; medians are reported"
            + " (default 3; --quick 1).")
    Integer rounds;

    @Option(names = "--jfr", paramLabel = "DIR", description = "Record each broker with Java Flight Recorder"
            + " (settings=profile, Java stacks sampled every 1 ms) into DIR: for finding where the CPU goes, not for"
            + " figures to quote.")
    Path flightRecordings;

    @Override
    public String name() {
        return "compaction";
    }

    @Override
    public String title() {
        return "The log cleaner of the Sluice broker against Apache Kafka's, same updates, interleaved";
    }

    @Override
    public void validate() {
        long segment = segmentBytes(options().quick);
        if (segment < 8L << 20 || segment % 4096 != 0) {
            throw new UsageException("--segment-size must be at least 8m and a multiple of 4k");
        }
        if (records(options().quick) * 1024 < 2 * segment) {
            throw new UsageException("--bytes must be at least twice --segment-size, so a segment is sealed to clean");
        }
        if (keys != null && keys < 1) {
            throw new UsageException("--keys must be at least 1");
        }
        if (keys != null && keys > 1_000_000) {
            throw new UsageException("--keys must be at most 1000000, so every cleaning maps them in one pass");
        }
        if (liveRate != null && (liveRate < 1 || liveRate > 100_000)) {
            throw new UsageException("--live-rate must be between 1 and 100000");
        }
        if (rounds != null && rounds < 1) {
            throw new UsageException("--rounds must be at least 1");
        }
        if (flightRecordings != null && !Files.isDirectory(flightRecordings)) {
            throw new UsageException("--jfr " + flightRecordings + " is not a directory");
        }
    }

    long records(boolean quick) {
        return (bytes != null ? Sizes.parse(bytes) : quick ? 48L << 20 : 1L << 30) / 1024;
    }

    long segmentBytes(boolean quick) {
        return segmentSize != null ? Sizes.parse(segmentSize) : quick ? 8L << 20 : 64L << 20;
    }

    @Override
    public long workBytes() {
        // One broker's data at a time: the updates, its segments' room, and Kafka's copies while it cleans.
        boolean quick = options().quick;
        return 2 * records(quick) * 1_100L + 4 * segmentBytes(quick) + (1L << 30);
    }

    @Override
    public void run(Lab lab) throws Exception {
        boolean quick = lab.quick();
        new CompactionRaceRun(lab, new CompactionRaceRun.Sizes(records(quick), keys != null ? keys : 10_000,
                segmentBytes(quick), liveRate != null ? liveRate : 2_000, quick ? 3 : 10, quick ? 3 : 10,
                rounds != null ? rounds : quick ? 1 : 3, flightRecordings != null
                ? flightRecordings.toAbsolutePath() : null)).run();
    }
}
