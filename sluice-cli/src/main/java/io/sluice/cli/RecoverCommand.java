package io.sluice.cli;

import io.sluice.store.RecoveryReport;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sluice recover}: recovers a store that was not closed cleanly, or, with {@code --dry-run}, shows what
 * recovery would do. A log damaged below its durable position is refused unless {@code --truncate}.
 */
@Command(name = "recover", description = {
        "Recover a store that was not closed cleanly (what opening it for writing does), and report per log where"
                + " recovery scanned, where it cut and what it dropped.",
        "--dry-run changes nothing and lists, by queue, the valid records each cut would drop; exit 1 if a plain"
                + " recovery would refuse the store.",
        "A log damaged below its durable position (bytes that were forced) is refused: --truncate cuts it at the"
                + " damage, dropping every record from there, as the dry run shows."})
final class RecoverCommand implements Callable<Integer> {

    @Mixin
    ExistingStore location;

    @ArgGroup(exclusive = true)
    Action action = new Action();

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    /** At most one of the two. */
    static final class Action {
        @Option(names = "--dry-run", description = "Change nothing; show what recovery would do.")
        boolean dryRun;

        @Option(names = "--truncate", description = "Cut a log damaged below its durable position at the damage.")
        boolean truncate;
    }

    @Override
    public Integer call() {
        Path dir = location.require();
        StoreConfig config = StoreConfig.builder().truncateOnCorruption(action.truncate).build();
        Map<String, RecoveryReport> reports;
        if (action.dryRun) {
            reports = Store.planRecovery(dir, config);
        } else {
            try (Store store = Store.open(dir, config)) {
                reports = store.recoveryReports();
            }
        }
        boolean refused = reports.values().stream().anyMatch(r -> r.problem() != null);
        PrintWriter out = spec.commandLine().getOut();
        if (json) {
            List<Json> logs = new ArrayList<>();
            reports.forEach((name, r) -> logs.add(new Json().put("log", name)
                    .put("mode", r.mode().name().toLowerCase(Locale.ROOT)).put("durablePosition", r.durablePosition())
                    .put("scanFrom", r.scanFrom()).put("end", r.end()).put("records", r.records())
                    .put("cutAt", r.cutAt()).put("bytesDropped", r.bytesDropped())
                    .put("segmentsDropped", r.segmentsDropped()).put("dropped", r.dropped())
                    .put("problem", r.problem())));
            out.println(new Json().put("directory", dir.toString()).put("dryRun", action.dryRun)
                    .put("ok", !refused).put("logs", logs));
        } else {
            reports.forEach((name, r) -> print(out, name, r));
            if (action.dryRun) {
                out.println(refused ? "a plain recovery would refuse this store; --truncate cuts it as shown"
                        : "nothing changed (dry run)");
            } else {
                out.println("recovered");
            }
        }
        out.flush();
        return refused ? 1 : 0;
    }

    private void print(PrintWriter out, String name, RecoveryReport r) {
        String log = name.isEmpty() ? "shared log" : "log " + name;
        String verb = action.dryRun ? "would " : "";
        switch (r.mode()) {
            case CLEAN -> out.printf("%s: closed cleanly, ends at %,d%n", log, r.end());
            case READ_ONLY_TO_DURABLE -> out.printf("%s: shown to its durable position %,d%n", log, r.end());
            case CRASH, REBUILD -> {
                out.printf("%s: %s%s %,d records from %,d%s; %s %,d%n", log, verb,
                        r.mode() == RecoveryReport.Mode.REBUILD ? "rebuild every index, validating" : "validate",
                        r.records(), r.scanFrom(),
                        r.durablePosition() < 0 ? " (no checkpoint)" : " (durable to " + r.durablePosition() + ")",
                        action.dryRun ? "would end at" : "ends at", r.end());
                if (r.cutAt() >= 0) {
                    out.printf("  %scut at %,d: %,d bytes, %d later segment(s) dropped%n", verb, r.cutAt(),
                            r.bytesDropped(), r.segmentsDropped());
                }
            }
        }
        r.dropped().forEach(line -> out.println("  valid records past the cut: " + line));
        if (r.problem() != null) {
            out.println("  REFUSED: " + r.problem());
        }
    }
}
