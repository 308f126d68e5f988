package io.sluice.bench.experiments;

import io.sluice.bench.broker.TransactionRaceRun;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.UsageException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code transactions}: transactional produce and read_committed consume on the Sluice broker against Apache Kafka
 * (4.3.1, one KRaft node), both in child JVMs on 127.0.0.1 and the same disk, the same stock clients, interleaved.
 */
@Command(name = "transactions", mixinStandardHelpOptions = true,
        description = "Race the Sluice broker against Apache Kafka on this machine with transactions: 100 and 1,000"
                + " records of 1 KiB per transaction, one and ten producers, and a read_committed consumer;"
                + " throughput, transaction latency and broker CPU per record, medians of interleaved rounds.")
public final class TransactionRace extends Experiment {

    @Option(names = "--records", paramLabel = "N", description = "Records of 1 KiB per scenario (default 200000;"
            + " --quick 2000).")
    Long records;

    @Option(names = "--rounds", paramLabel = "N", description = "Interleaved rounds; medians are reported"
            + " (default 3; --quick 1).")
    Integer rounds;

    @Override
    public String name() {
        return "transactions";
    }

    @Override
    public String title() {
        return "Transactions on the Sluice broker against Apache Kafka, same clients, interleaved";
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
        return records != null ? records : quick ? 2_000 : 200_000;
    }

    int rounds(boolean quick) {
        return rounds != null ? rounds : quick ? 1 : 3;
    }

    @Override
    public long workBytes() {
        // One broker's data at a time: four produce runs and a warm-up, and room for Kafka.
        long perRun = records(options().quick) * 1_100L;
        return 5 * perRun + (1L << 30);
    }

    @Override
    public void run(Lab lab) throws Exception {
        new TransactionRaceRun(lab, records(lab.quick()), rounds(lab.quick())).run();
    }
}
