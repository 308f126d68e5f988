package io.sluice.cli;

import io.sluice.broker.kafka.ProtocolFuzzer;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice fuzz}: the broker's protocol fuzzer, a long round. */
@Command(name = "fuzz", description = "Feed the broker's Kafka protocol adapter random frames and mutations of valid"
        + " requests (every served API and version) over a fresh store; fail if any is met with anything but an"
        + " answer or a refusal, or if the broker stops answering.")
final class FuzzCommand implements Callable<Integer> {

    @Option(names = "--dir", defaultValue = "sluice-data/fuzz", description = "Store directory (recreated).")
    Path dir;

    @Option(names = "--inputs", defaultValue = "1000000", description = "Frames to try (default 1,000,000).")
    long inputs;

    @Option(names = "--seed", defaultValue = "1", description = "The run's seed (default 1).")
    long seed;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        DemoCommand.recreate(dir);
        long started = System.nanoTime();
        Runtime runtime = Runtime.getRuntime();
        ProtocolFuzzer.Report report;
        try (Store store = Store.open(dir, StoreConfig.builder().maxQueuesPerTopic(16).build())) {
            report = ProtocolFuzzer.run(store, inputs, seed, done -> {
                if (done % 100_000 == 0) {
                    out.printf("%,d inputs, heap in use %,d MB%n", done,
                            (runtime.totalMemory() - runtime.freeMemory()) >> 20);
                    out.flush();
                }
            });
        }
        double seconds = (System.nanoTime() - started) / 1e9;
        out.printf("fuzz: %,d inputs (seed %d) in %.1f s: %,d answered, %,d refused, %,d still waiting at the end"
                        + " (long polls, joins), %d findings%n", report.inputs(), seed, seconds, report.answered(),
                report.refused(), report.pendingAtEnd(), report.findings().size());
        report.findings().forEach(f -> out.println("  " + f));
        out.println(report.ok() ? "FUZZ OK" : "FUZZ FOUND PROBLEMS");
        out.flush();
        return report.ok() ? 0 : 1;
    }
}
