package io.sluice.cli;

import io.sluice.store.RetentionReport;
import io.sluice.store.Store;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sluice retention}: runs one retention pass now and prints what it deleted. */
@Command(name = "retention", description = "Run one retention pass now (by age, size and disk use) and report it.")
final class RetentionCommand implements Callable<Integer> {

    @Mixin
    StoreOptions store;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        if (!Files.isDirectory(store.dir)) {
            throw new ParameterException(spec.commandLine(), "no store at " + store.dir);
        }
        store.refuseClusterStore("a retention pass outside the broker (which knows nothing of what they name)");
        PrintWriter out = spec.commandLine().getOut();
        try (Store opened = Store.open(store.dir, store.config())) {
            RetentionReport report = opened.enforceRetention();
            if (json) {
                out.println(new Json().put("segmentsDeleted", report.segmentsDeleted())
                        .put("bytesDeleted", report.bytesDeleted()).put("logBytes", report.logBytes())
                        .put("diskUsedRatio", report.diskUsedRatio()).put("appendsRefused", report.appendsRefused())
                        .put("heldBy", report.heldBy()).put("reason", report.reason()));
            } else {
                out.printf("deleted %d segments (%,d bytes%s); log now %,d bytes; disk %.1f%% used%s%s%n",
                        report.segmentsDeleted(), report.bytesDeleted(),
                        report.reason() == null ? "" : ", by " + report.reason(), report.logBytes(),
                        report.diskUsedRatio() * 100,
                        report.heldBy() == null ? "" : "; held back by " + report.heldBy(),
                        report.appendsRefused() ? "; APPENDS REFUSED (disk above the hard ratio)" : "");
            }
        }
        out.flush();
        return 0;
    }
}
