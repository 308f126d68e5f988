package io.sluice.cli;

import picocli.CommandLine;
import picocli.CommandLine.Command;

/**
 * The {@code sluice} command line. Every command inherits {@code --help} (usage, exit 0) and {@code --version}.
 */
@Command(name = "sluice", mixinStandardHelpOptions = true, version = "sluice 0.1.0",
        scope = CommandLine.ScopeType.INHERIT,
        description = "Sluice message store: produce, consume, inspect and verify a store directory.",
        subcommands = {ProduceCommand.class, ConsumeCommand.class, StatCommand.class, VerifyCommand.class,
                DemoCommand.class, PerfCommand.class, LookupCommand.class, RetentionCommand.class,
                CalibrateCommand.class, RecoverCommand.class, PowerlossCommand.class, BrokerCommand.class,
                ClusterCommand.class,
                FuzzCommand.class})
public final class Main {

    /**
     * gRPC (inside Apache Ratis, a cluster broker's Raft transport) logs through java.util.logging, at INFO by default,
     * where the rest of the command line logs warnings and errors only. Held here: java.util.logging keeps its loggers
     * weakly, and a collected one would forget the level.
     */
    private static final java.util.logging.Logger GRPC_LOG =
            java.util.logging.Logger.getLogger("org.apache.ratis.thirdparty.io.grpc");

    private Main() {
    }

    /** @param args command-line arguments */
    public static void main(String[] args) {
        GRPC_LOG.setLevel(java.util.logging.Level.WARNING);
        System.exit(run(args));
    }

    /** @return the exit code: 0 ok, 1 a fault was found or the command failed, 2 bad usage */
    public static int run(String... args) {
        CommandLine commandLine = new CommandLine(new Main());
        commandLine.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("sluice " + cmd.getCommandName() + ": " + e.getMessage());
            return e instanceof IllegalArgumentException ? 2 : 1;
        });
        return commandLine.execute(args);
    }
}
