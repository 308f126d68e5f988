package io.sluice.bench.experiments;

import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.Table;
import io.sluice.bench.race.Durability;
import io.sluice.bench.race.Race;
import io.sluice.bench.race.RaceExperiment;
import io.sluice.bench.race.RaceTable;
import io.sluice.bench.race.Target;
import io.sluice.bench.race.Targets;
import io.sluice.store.WritePath;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;

/**
 * {@code store} (seed 004's scenarios, on Sluice alone): SYNC, one message per send and wait for its ack, and
 * ASYNC, batched; 1 to 256 producers on virtual threads; each write path.
 */
@Command(name = "store", mixinStandardHelpOptions = true,
        description = "Sluice under seed 004's scenarios: SYNC one-by-one and ASYNC batched sends, 1-256 "
                + "producers, every write path; throughput, latency percentiles, CPU.")
public final class StoreRun extends RaceExperiment {

    @Override
    public String name() {
        return "store";
    }

    @Override
    public String title() {
        return "Sluice: SYNC and ASYNC sends by 1-256 producers on each write path";
    }

    @Override
    public void run(Lab lab) throws Exception {
        boolean quick = lab.quick();
        int rounds = race.rounds(quick, 1);
        List<WritePath> paths = List.of(WritePath.values());
        Table table = RaceTable.table(lab, "store", "Sluice, median of " + rounds + " round(s) of "
                + race.seconds(quick) + " s per cell", "durability", "body", "producers", "write path");
        long cells = 2L * race.bodyBytes(quick).size() * race.producers(quick).size() * paths.size() * rounds;
        try (Progress progress = lab.progress("runs", cells)) {
            for (Durability durability : Durability.values()) {
                for (int body : race.bodyBytes(quick)) {
                    Map<String, List<Double>> throughput = new LinkedHashMap<>();
                    for (int producers : race.producers(quick)) {
                        Race.Scenario scenario = race.scenario(durability, body, producers);
                        for (WritePath path : paths) {
                            List<Race.Outcome> outcomes = new ArrayList<>();
                            for (int round = 0; round < rounds; round++) {
                                outcomes.add(runFresh(lab, progress, "sluice " + path, directory -> Targets.sluice(
                                        directory, path, durability, race.segmentBytes(quick)), scenario));
                            }
                            Race.Outcome median = RaceTable.median(outcomes);
                            RaceTable.add(table, median, durability, Sizes.format(body), producers, path);
                            throughput.computeIfAbsent(path.toString(), k -> new ArrayList<>())
                                    .add(median.messagesPerSecond());
                        }
                    }
                    chartRates(lab, "store-" + durability.name().toLowerCase() + "-" + Sizes.format(body),
                            "Sluice " + durability + ", " + Sizes.format(body) + " bodies"
                                    + (durability == Durability.ASYNC ? ", batches of " + race.batch() : ""),
                            throughput);
                }
            }
        }
        lab.note("SYNC: each producer sends one message and waits until it is forced to disk. ASYNC: each send "
                + "is a batch of " + race.batch() + " messages, acknowledged once appended; the store forces in "
                + "the background. Latency is per send. Producers are virtual threads spread over "
                + Target.QUEUES + " queues of one topic; each run starts on an empty "
                + "directory after " + race.warmUpSeconds(quick) + " s of unmeasured sending.");
        lab.note("CPU cores = process CPU seconds per wall second during the measured part (this machine has "
                + lab.machine().cores() + ").");
    }
}
