package io.sluice.bench;

import io.sluice.bench.experiments.BrokerRace;
import io.sluice.bench.experiments.TransactionRace;
import io.sluice.bench.experiments.ClusterRace;
import io.sluice.bench.experiments.CompactionRace;
import io.sluice.bench.experiments.IoCopy;
import io.sluice.bench.experiments.MmapModes;
import io.sluice.bench.experiments.MmapVsChannel;
import io.sluice.bench.experiments.Peers;
import io.sluice.bench.experiments.Report;
import io.sluice.bench.experiments.SmallIo;
import io.sluice.bench.experiments.StoreRun;
import io.sluice.bench.experiments.TlsRace;
import io.sluice.bench.lab.Experiment;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.LabOptions;
import io.sluice.bench.lab.UsageException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Spec;

/**
 * {@code sluice bench all}: every experiment at its default sizes (or {@code --quick}), one after another,
 * then {@code report}. All inputs are checked before the first experiment starts.
 */
@Command(name = "all", mixinStandardHelpOptions = true,
        description = "Run every experiment (io-copy, mmap-vs-channel, small-io, store, peers, mmap-modes, broker, tls, transactions, "
                + "compaction, cluster), then report.")
final class All implements Callable<Integer> {

    @Mixin
    LabOptions options = new LabOptions();

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        var out = spec.commandLine().getOut();
        var err = spec.commandLine().getErr();
        List<Experiment> experiments = List.of(new IoCopy(), new MmapVsChannel(), new SmallIo(), new StoreRun(),
                new Peers(), new MmapModes(), new BrokerRace(), new TlsRace(), new TransactionRace(),
                new CompactionRace(), new ClusterRace());
        String command = "sluice bench " + String.join(" ", spec.commandLine().getParseResult().originalArgs());
        for (Experiment experiment : experiments) {
            experiment.options().copyFrom(options);
            experiment.command(command);
            try {
                Lab.precheck(experiment);
            } catch (UsageException e) {
                err.println("sluice bench all: " + experiment.name() + ": " + e.getMessage());
                err.flush();
                return 2;
            }
        }
        List<String> failed = new ArrayList<>();
        for (Experiment experiment : experiments) {
            // Experiments share this JVM: let the last one's buffers go (RocketMQ's pools are direct memory)
            // before the next one measures, and before mmap-modes samples this process's memory.
            System.gc();
            if (experiment.execute(out, err) != 0) {
                failed.add(experiment.name());
            }
        }
        Report report = new Report();
        report.options().copyFrom(options);
        report.command(command);
        int reported = report.execute(out, err);
        if (!failed.isEmpty()) {
            err.println("sluice bench all: failed: " + String.join(", ", failed)
                    + " (their earlier results, if any, are unchanged)");
            err.flush();
            return 1;
        }
        return reported;
    }
}
