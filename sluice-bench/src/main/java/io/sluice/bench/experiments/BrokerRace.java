package io.sluice.bench.experiments;

import io.sluice.bench.broker.BrokerRaceRun;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.UsageException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code broker}: the Sluice broker against Apache Kafka (4.3.1, one KRaft node), both in child JVMs on 127.0.0.1
 * and the same disk, driven in turn by the same stock Kafka client with the same settings, interleaved over rounds.
 */
@Command(name = "broker", mixinStandardHelpOptions = true,
        description = "Race the Sluice broker against Apache Kafka on this machine: produce (1 KiB and 100 B, acks=1"
                + " and all), consume from the page cache, end-to-end latency, every record durable before its"
                + " ack, and single durable messages from 64 and 256 producers; throughput, latency and broker CPU per"
                + " record, medians of interleaved rounds.")
public final class BrokerRace extends Experiment {

    @Option(names = "--records", paramLabel = "N", description = "Records of 1 KiB per produce run (default 500000;"
            + " --quick 20000); 100 B runs send four times as many.")
    Long records;

    @Option(names = "--rounds", paramLabel = "N", description = "Interleaved rounds; medians are reported"
            + " (default 3; --quick 1).")
    Integer rounds;

    @Override
    public String name() {
        return "broker";
    }

    @Override
    public String title() {
        return "The Sluice broker against Apache Kafka, same client, same settings, interleaved";
    }

    @Override
    public void validate() {
        if (records != null && records < 1_000) {
            throw new UsageException("--records must be at least 1000");
        }
        if (rounds != null && rounds < 1) {
            throw new UsageException("--rounds must be at least 1");
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
        // One broker's data at a time: the 1 KiB runs, the 100 B run, the end-to-end run, and room for Kafka.
        long perRun = records(options().quick) * 1_100L;
        return 4 * perRun + (1L << 30);
    }

    @Override
    public void run(Lab lab) throws Exception {
        new BrokerRaceRun(lab, records(lab.quick()), rounds(lab.quick())).run();
    }
}
