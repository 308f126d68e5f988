package io.sluice.bench.experiments;

import io.sluice.bench.broker.ClusterRaceRun;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.UsageException;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

/**
 * {@code cluster}: three Sluice brokers (Raft) against three Apache Kafka 4.3.1 nodes (KRaft), replication factor 3,
 * in child JVMs on 127.0.0.1 and the same disk, driven in turn by the same stock Kafka client, interleaved over rounds.
 */
@Command(name = "cluster", mixinStandardHelpOptions = true,
        description = "Race three Sluice brokers against a three-node Apache Kafka cluster on this machine,"
                + " replication factor 3: acks=all throughput, latency and broker CPU per record (summed over the"
                + " nodes), and failover time from SIGKILL of a partition's leader to the first acknowledged produce.")
public final class ClusterRace extends Experiment {

    @Option(names = "--records", paramLabel = "N", description = "Records of 1 KiB per produce run (default 500000;"
            + " --quick 10000).")
    Long records;

    @Option(names = "--rounds", paramLabel = "N", description = "Interleaved rounds; medians are reported"
            + " (default 3; --quick 1).")
    Integer rounds;

    @Option(names = "--failovers", paramLabel = "N", description = "Leader kills per cluster per round (default 5;"
            + " --quick 1).")
    Integer failovers;

    @Option(names = "--warm-up-seconds", paramLabel = "S", description = "Unmeasured sending before each produce run,"
            + " at least a tenth of --records (default 120: on two cores three broker JVMs take about that long to"
            + " compile their hot code; --quick 0).")
    Double warmUpSeconds;

    @Override
    public String name() {
        return "cluster";
    }

    @Override
    public String title() {
        return "Three Sluice brokers against a three-node Apache Kafka cluster, replication factor 3, interleaved";
    }

    @Override
    public void validate() {
        if (records != null && records < 1_000) {
            throw new UsageException("--records must be at least 1000");
        }
        if (rounds != null && rounds < 1) {
            throw new UsageException("--rounds must be at least 1");
        }
        if (failovers != null && failovers < 1) {
            throw new UsageException("--failovers must be at least 1");
        }
        if (warmUpSeconds != null && !(warmUpSeconds >= 0)) {
            throw new UsageException("--warm-up-seconds must not be negative");
        }
    }

    long records(boolean quick) {
        return records != null ? records : quick ? 10_000 : 500_000;
    }

    int rounds(boolean quick) {
        return rounds != null ? rounds : quick ? 1 : 3;
    }

    double warmUpSeconds(boolean quick) {
        return warmUpSeconds != null ? warmUpSeconds : quick ? 0 : 120;
    }

    int failovers(boolean quick) {
        return failovers != null ? failovers : quick ? 1 : 5;
    }

    @Override
    public long workBytes() {
        // Three replicas of one cluster's data at a time, and room for Kafka.
        return 3 * (records(options().quick) * 1_200L) + (2L << 30);
    }

    @Override
    public void run(Lab lab) throws Exception {
        new ClusterRaceRun(lab, records(lab.quick()), rounds(lab.quick()), failovers(lab.quick()),
                warmUpSeconds(lab.quick())).run();
    }
}
