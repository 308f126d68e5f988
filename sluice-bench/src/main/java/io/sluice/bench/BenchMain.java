package io.sluice.bench;

import io.sluice.bench.experiments.BrokerRace;
import io.sluice.bench.experiments.TransactionRace;
import io.sluice.bench.experiments.ClusterRace;
import io.sluice.bench.experiments.CompactionRace;
import io.sluice.bench.experiments.IoCopy;
import io.sluice.bench.experiments.MmapModes;
import io.sluice.bench.experiments.MmapVsChannel;
import io.sluice.bench.experiments.SmallIo;
import io.sluice.bench.experiments.Peers;
import io.sluice.bench.experiments.Report;
import io.sluice.bench.experiments.StoreRun;
import io.sluice.bench.experiments.TlsRace;
import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * {@code sluice bench}: the bench lab. Each subcommand is one experiment that prints a table and writes CSV,
 * JSON and PNG charts under the results directory; {@code all} runs every one and then {@code report}.
 */
@Command(name = "sluice bench", mixinStandardHelpOptions = true, version = "sluice bench 0.1.0",
        description = "Reproduce the I/O experiments Sluice is designed from on this machine, and race Sluice "
                + "against peer stores.",
        subcommands = {All.class, IoCopy.class, MmapVsChannel.class, SmallIo.class, StoreRun.class, Peers.class, MmapModes.class, BrokerRace.class, TlsRace.class, TransactionRace.class, CompactionRace.class,
                ClusterRace.class,
                Report.class})
public final class BenchMain {

    private BenchMain() {
    }

    /** @param args command-line arguments */
    public static void main(String[] args) {
        System.exit(run(args));
    }

    /** @return the exit code: 0 done and verified, 1 failed or a self-check failed, 2 bad input */
    public static int run(String... args) {
        System.setProperty("java.awt.headless", "true");
        CommandLine commandLine = new CommandLine(new BenchMain());
        commandLine.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("sluice bench " + cmd.getCommandName() + ": " + e.getMessage());
            return e instanceof IllegalArgumentException ? 2 : 1;
        });
        return commandLine.execute(args);
    }
}
