package io.sluice.bench.experiments;

import io.sluice.bench.broker.TlsRaceRun;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.UsageException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code tls}: the broker race's produce and consume over TLS and SASL_SSL, beside PLAINTEXT in the same rounds: the
 * Sluice broker against Apache Kafka (4.3.1, one KRaft node) with the same listeners, certificates, protocol, cipher
 * suite and client settings, both in child JVMs on 127.0.0.1 and the same disk, interleaved.
 */
@Command(name = "tls", mixinStandardHelpOptions = true,
        description = "Race the Sluice broker against Apache Kafka on this machine over PLAINTEXT, SSL and SASL_SSL"
                + " (SCRAM-SHA-512) listeners, TLS 1.3 on both with certificates made at run time: produce 1 KiB"
                + " acks=1 and consume from the page cache on each; throughput and broker CPU per record, medians of"
                + " interleaved rounds, and what TLS costs each broker against its own PLAINTEXT figures.")
public final class TlsRace extends Experiment {

    @Option(names = "--records", paramLabel = "N", description = "Records of 1 KiB per produce run, on each listener"
            + " (default 500000; --quick 20000).")
    Long records;

    @Option(names = "--rounds", paramLabel = "N", description = "Interleaved rounds; medians are reported"
            + " (default 3; --quick 1).")
    Integer rounds;

    @Option(names = "--jfr", paramLabel = "DIR", description = "Record each broker with Java Flight Recorder"
            + " (settings=profile, Java stacks sampled every 1 ms) into DIR, with phases.csv saying when each measured"
            + " run ran: for finding where the CPU goes, not for figures to quote.")
    Path flightRecordings;

    @Override
    public String name() {
        return "tls";
    }

    @Override
    public String title() {
        return "The Sluice broker against Apache Kafka over PLAINTEXT, TLS and SASL_SSL, same client, interleaved";
    }

    @Override
    public void validate() {
        if (records != null && records < 1_000) {
            throw new UsageException("--records must be at least 1000");
        }
        if (rounds != null && rounds < 1) {
            throw new UsageException("--rounds must be at least 1");
        }
        if (flightRecordings != null && !Files.isDirectory(flightRecordings)) {
            throw new UsageException("--jfr " + flightRecordings + " is not a directory");
        }
    }

    long records(boolean quick) {
        return records != null ? records : quick ? 20_000 : 500_000;
    }

    int rounds(boolean quick) {
        return rounds != null ? rounds : quick ? 1 : 3;
    }

    @Override
    public long workBytes() {
        // One broker's data at a time: a run and a warm-up on each of three listeners (at least 5 s of produce at full
        // size: up to about 1.5 GiB each on a fast machine), and room for Kafka.
        long perRun = records(options().quick) * 1_100L;
        long warmUp = options().quick ? Math.max(5_000 * 1_100L, perRun / 10) : Math.max(3L << 29, perRun / 10);
        return 3 * (perRun + warmUp) + (1L << 30);
    }

    @Override
    public void run(Lab lab) throws Exception {
        new TlsRaceRun(lab, records(lab.quick()), rounds(lab.quick()),
                flightRecordings != null ? flightRecordings.toAbsolutePath() : null).run();
    }
}
