package io.sluice.bench.experiments;

import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Sizes;
import io.sluice.bench.lab.Table;
import io.sluice.bench.peers.Listeners;
import io.sluice.bench.race.Durability;
import io.sluice.bench.race.Race;
import io.sluice.bench.race.RaceExperiment;
import io.sluice.bench.race.RaceTable;
import io.sluice.bench.race.Target;
import io.sluice.bench.race.Targets;
import io.sluice.store.WritePath;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Command;

/**
 * {@code peers}: the {@code store} scenarios against Apache RocketMQ's store (through its mapping and through
 * its transient store pool) and Chronicle Queue, with Sluice's matching write paths, interleaved in one
 * invocation, each run on a fresh directory; prints Sluice/peer ratios.
 */
@Command(name = "peers", mixinStandardHelpOptions = true,
        description = "Race Sluice against RocketMQ's store (mmap and transient store pool) and Chronicle Queue "
                + "at the same durability, interleaved; ratios Sluice/peer.")
public final class Peers extends RaceExperiment {

    /** A contender: a name, the durabilities it supports, and how to open it on a fresh directory. */
    private record Contender(String name, boolean syncToo, DurableOpener opener) {
    }

    @FunctionalInterface
    private interface DurableOpener {
        Target open(Path directory, Durability durability) throws Exception;
    }

    @Override
    public String name() {
        return "peers";
    }

    @Override
    public String title() {
        return "Sluice against RocketMQ's store and Chronicle Queue, same scenarios, same durability";
    }

    @Override
    public void run(Lab lab) throws Exception {
        boolean quick = lab.quick();
        long segment = race.segmentBytes(quick);
        int rounds = race.rounds(quick, 3);
        List<Contender> contenders = List.of(
                new Contender("sluice MMAP", true, (d, m) -> Targets.sluice(d, WritePath.MMAP, m, segment)),
                new Contender("sluice WRITE_BUFFER", true,
                        (d, m) -> Targets.sluice(d, WritePath.WRITE_BUFFER, m, segment)),
                new Contender("sluice CHANNEL", true, (d, m) -> Targets.sluice(d, WritePath.CHANNEL, m, segment)),
                new Contender("sluice DIRECT", true, (d, m) -> Targets.sluice(d, WritePath.DIRECT, m, segment)),
                new Contender("rocketmq mmap", true, (d, m) -> checkedRocketMq(lab, d, m, false, segment)),
                new Contender("rocketmq pool", false, (d, m) -> checkedRocketMq(lab, d, m, true, segment)),
                new Contender("chronicle", false, (d, m) -> Targets.chronicle(d)));
        Table table = RaceTable.table(lab, "peers", "Median of " + rounds + " interleaved round(s) of "
                + race.seconds(quick) + " s per run", "durability", "body", "producers", "store");
        Table ratios = lab.table("peers-ratios", "Sluice / peer throughput (above 1: Sluice is faster)",
                "durability", "body", "producers", "sluice MMAP / rocketmq mmap",
                "sluice WRITE_BUFFER / rocketmq pool", "sluice MMAP / chronicle", "best sluice / best peer",
                "best sluice path");
        long runs = 0;
        for (Durability durability : Durability.values()) {
            runs += contenders.stream().filter(c -> c.syncToo || durability == Durability.ASYNC).count();
        }
        runs *= (long) race.bodyBytes(quick).size() * race.producers(quick).size() * rounds;
        try (Progress progress = lab.progress("runs", runs)) {
            for (Durability durability : Durability.values()) {
                List<Contender> racing = contenders.stream()
                        .filter(c -> c.syncToo || durability == Durability.ASYNC).toList();
                for (int body : race.bodyBytes(quick)) {
                    Map<String, List<Double>> chart = new LinkedHashMap<>();
                    for (int producers : race.producers(quick)) {
                        Race.Scenario scenario = race.scenario(durability, body, producers);
                        Map<String, List<Race.Outcome>> outcomes = new LinkedHashMap<>();
                        // Interleaved: every contender runs once per round, so drift in the disk or the
                        // machine lands on all of them alike.
                        for (int round = 0; round < rounds; round++) {
                            for (Contender contender : racing) {
                                outcomes.computeIfAbsent(contender.name, k -> new ArrayList<>()).add(runFresh(lab,
                                        progress, contender.name, d -> contender.opener.open(d, durability),
                                        scenario));
                            }
                        }
                        Map<String, Double> rate = new LinkedHashMap<>();
                        for (Contender contender : racing) {
                            Race.Outcome median = RaceTable.median(outcomes.get(contender.name));
                            RaceTable.add(table, median, durability, Sizes.format(body), producers, contender.name);
                            rate.put(contender.name, median.messagesPerSecond());
                            chart.computeIfAbsent(contender.name, k -> new ArrayList<>())
                                    .add(median.messagesPerSecond());
                        }
                        ratios.add(durability, Sizes.format(body), producers,
                                ratio(rate, "sluice MMAP", "rocketmq mmap"),
                                ratio(rate, "sluice WRITE_BUFFER", "rocketmq pool"),
                                ratio(rate, "sluice MMAP", "chronicle"), best(rate), bestSluice(rate));
                    }
                    chartRates(lab, "peers-" + durability.name().toLowerCase() + "-" + Sizes.format(body),
                            durability + ", " + Sizes.format(body) + " bodies", chart);
                }
            }
        }
        notes(lab);
    }

    private static Target checkedRocketMq(Lab lab, Path directory, Durability durability, boolean pool,
                                          long segment) throws Exception {
        Target target = Targets.rocketMq(directory, durability, pool, segment);
        List<String> listeners = Listeners.beyondLoopback();
        if (!listeners.isEmpty()) {
            target.close();
        }
        lab.check(listeners.isEmpty(), "RocketMQ's store listens on no address beyond loopback (found: "
                + (listeners.isEmpty() ? "none" : String.join(", ", listeners)) + ")");
        return target;
    }

    private static Object ratio(Map<String, Double> rate, String sluice, String peer) {
        Double a = rate.get(sluice);
        Double b = rate.get(peer);
        return a == null || b == null || b == 0 ? "n/a" : (Object) (a / b);
    }

    /** @return the faster Sluice path's rate over the fastest peer's, in this cell */
    private static double best(Map<String, Double> rate) {
        double sluice = 0;
        double peer = 0;
        for (Map.Entry<String, Double> entry : rate.entrySet()) {
            if (entry.getKey().startsWith("sluice")) {
                sluice = Math.max(sluice, entry.getValue());
            } else {
                peer = Math.max(peer, entry.getValue());
            }
        }
        return sluice / peer;
    }

    /** @return the name of the fastest Sluice path in this cell */
    private static String bestSluice(Map<String, Double> rate) {
        return rate.entrySet().stream().filter(e -> e.getKey().startsWith("sluice"))
                .max(Map.Entry.comparingByValue()).map(e -> e.getKey().substring("sluice ".length())).orElse("n/a");
    }

    private void notes(Lab lab) {
        lab.note("Ratios pair like designs: Sluice MMAP with RocketMQ's mapping and with Chronicle (both write "
                + "through a mapping), Sluice WRITE_BUFFER with RocketMQ's transient store pool (pooled direct "
                + "buffers committed with FileChannel). Every Sluice write path races (CHANNEL and DIRECT too); "
                + "\"best sluice / best peer\" sets the fastest of them against the fastest peer in each cell, and "
                + "the last column names that path.");
        lab.note("Same durability on both sides: SYNC races Sluice FlushMode.SYNC against RocketMQ SYNC_FLUSH "
                + "(group commit); each producer sends one message and waits for it to be forced. ASYNC races "
                + "Sluice FlushMode.ASYNC against RocketMQ ASYNC_FLUSH and Chronicle Queue; each send is a batch of "
                + race.batch() + " (RocketMQ: one MessageExtBatch; Chronicle, which has no batch append: "
                + race.batch() + " documents in a row), acknowledged once appended.");
        lab.note("Not raced: RocketMQ's transient store pool under SYNC (RocketMQ enables the pool only with "
                + "ASYNC_FLUSH), and Chronicle Queue under SYNC: it has no synchronous flush at all. Its appends "
                + "reach the disk when the kernel writes the mapping back, so its ASYNC acknowledgement promises "
                + "less than Sluice's or RocketMQ's, which also force in the background (Sluice every 500 ms, "
                + "RocketMQ's flush thread every 500 ms).");
        lab.note("Chronicle Queue has one stream, not queues: its producers all append to it, and the queue number "
                + "is only in the body. RocketMQ's replication service is replaced by one that opens no socket (its "
                + "default listens on every interface); a check after each start confirms nothing listens beyond "
                + "127.0.0.1. RocketMQ runs as ASYNC_MASTER, so no send waits for a replica.");
    }
}
