package io.sluice.cli;

import io.sluice.store.StoreVerifier;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice verify}: checks every record CRC and every index entry; exit 1 on any fault. */
@Command(name = "verify", description = "Check every record's CRC and every index entry of a closed store without changing anything;"
        + " exit 1 and a report on any fault.")
final class VerifyCommand implements Callable<Integer> {

    @Mixin
    ExistingStore location;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        Path dir = location.require();
        StoreVerifier.Report report = StoreVerifier.verify(dir);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            out.println(new Json().put("ok", report.ok()).put("faults", report.faults()).put("notes", report.notes())
                    .put("segments", report.segments()).put("records", report.records())
                    .put("messages", report.messages()).put("logEnd", report.logEnd())
                    .put("indexEntries", report.indexEntries()).put("queues", report.queueMessages()));
        } else {
            out.printf("%s: %d segments, %,d records, %,d messages, %,d index entries checked, log ends at %,d%n",
                    dir, report.segments(), report.records(), report.messages(), report.indexEntries(), report.logEnd());
            report.notes().forEach(note -> out.println("note: " + note));
            report.faults().forEach(fault -> out.println("FAULT: " + fault));
            out.println(report.ok() ? "OK" : report.faults().size() + " fault(s)");
        }
        out.flush();
        return report.ok() ? 0 : 1;
    }
}
