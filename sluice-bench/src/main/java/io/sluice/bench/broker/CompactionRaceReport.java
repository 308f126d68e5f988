package io.sluice.bench.broker;

import static io.sluice.bench.broker.CompactionRaceRun.KAFKA;
import static io.sluice.bench.broker.CompactionRaceRun.SLUICE;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Table;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;

/**
 * Publishes the compaction race: every round's figures, each figure's median per broker, the ratios Sluice/Kafka
 * against the targets (bytes cleaned per cleaner CPU second at least 2x, the other topic's produce p99 during
 * cleaning no worse), two charts, and notes saying what was measured.
 */
final class CompactionRaceReport {

    private static final double MIB = 1 << 20;

    private final Lab lab;
    private final CompactionRaceRun.Sizes sizes;
    private final Map<String, List<CompactionRaceRun.Round>> results;

    CompactionRaceReport(Lab lab, CompactionRaceRun.Sizes sizes, Map<String, List<CompactionRaceRun.Round>> results) {
        this.lab = lab;
        this.sizes = sizes;
        this.results = results;
    }

    void publish() {
        rounds();
        Map<String, Map<String, Double>> medians = medians();
        ratios(medians);
        charts(medians);
        notes();
    }

    private void rounds() {
        Table cleaning = lab.table("compaction-rounds", "Every round: the cleaning", "round", "broker",
                "load MiB/s", "log MiB (DescribeLogDirs)", "MiB cleaned (sealed segments)", "cleaner CPU s",
                "MiB per cleaner CPU s", "broker CPU s above the live load", "MiB per broker CPU s", "wall s",
                "on disk before MiB", "on disk after MiB", "records read back", "cleaner cores after",
                "the cleaner's own report", "rounds reading again");
        Table live = lab.table("compaction-live", "Every round: the paced producer on the other topic", "round",
                "broker", "p50 ms before", "p99 ms before", "p50 ms during cleaning", "p99 ms during cleaning");
        for (String broker : List.of(SLUICE, KAFKA)) {
            for (CompactionRaceRun.Round r : results.get(broker)) {
                cleaning.add(r.round(), broker, f1(r.records() * (double) CompactionRaceRun.RECORD_BYTES / MIB
                                / r.loadSeconds()), f1(r.logBytes() / MIB), f1(r.cleanedBytes() / MIB),
                        f2(r.cleanerCpuSeconds()), f1(r.bytesPerCleanerCpuSecond() / MIB),
                        f2(r.brokerCpuAboveLiveSeconds()), f1(r.bytesPerBrokerCpuSecond() / MIB),
                        f2(r.wallSeconds()), f1(r.diskBefore() / MIB), f1(r.diskAfter() / MIB),
                        String.format(Locale.ROOT, "%,d", r.readBack()), f2(r.idleCleanerCores()),
                        r.report().first() + (r.report().cleanings() > 1 ? " (+" + (r.report().cleanings() - 1)
                                + " more)" : ""), r.report().roundsWithoutRewrite());
                live.add(r.round(), broker, f2(r.p50BeforeMillis()), f2(r.p99BeforeMillis()),
                        f2(r.p50DuringMillis()), f2(r.p99DuringMillis()));
            }
        }
    }

    /** The figures taken a median of, each on its own: the median round of one need not be another's. */
    private static final Map<String, ToDoubleFunction<CompactionRaceRun.Round>> FIGURES = figures();

    private static Map<String, ToDoubleFunction<CompactionRaceRun.Round>> figures() {
        Map<String, ToDoubleFunction<CompactionRaceRun.Round>> figures = new LinkedHashMap<>();
        figures.put("MiB cleaned", r -> r.cleanedBytes() / MIB);
        figures.put("cleaner CPU s", CompactionRaceRun.Round::cleanerCpuSeconds);
        figures.put("MiB per cleaner CPU s", r -> r.bytesPerCleanerCpuSecond() / MIB);
        figures.put("MiB per broker CPU s", r -> r.bytesPerBrokerCpuSecond() / MIB);
        figures.put("wall s", CompactionRaceRun.Round::wallSeconds);
        figures.put("on disk after MiB", r -> r.diskAfter() / MIB);
        figures.put("live p99 ms before", CompactionRaceRun.Round::p99BeforeMillis);
        figures.put("live p50 ms during", CompactionRaceRun.Round::p50DuringMillis);
        figures.put("live p99 ms during", CompactionRaceRun.Round::p99DuringMillis);
        return figures;
    }

    private Map<String, Map<String, Double>> medians() {
        List<String> columns = new ArrayList<>(List.of("broker"));
        columns.addAll(FIGURES.keySet());
        Table table = lab.table("compaction", "Compaction: Sluice broker vs Apache Kafka 4.3.1 (medians of "
                + sizes.rounds() + " rounds, each figure's own)", columns.toArray(String[]::new));
        Map<String, Map<String, Double>> medians = new LinkedHashMap<>();
        for (String broker : List.of(SLUICE, KAFKA)) {
            Map<String, Double> byFigure = new LinkedHashMap<>();
            List<Object> row = new ArrayList<>(List.of(broker));
            FIGURES.forEach((name, figure) -> {
                double median = median(results.get(broker).stream().mapToDouble(figure).sorted().toArray());
                byFigure.put(name, median);
                row.add(f2(median));
            });
            medians.put(broker, byFigure);
            table.add(row.toArray());
        }
        return medians;
    }

    private void ratios(Map<String, Map<String, Double>> medians) {
        Map<String, Double> s = medians.get(SLUICE);
        Map<String, Double> k = medians.get(KAFKA);
        Table table = lab.table("compaction-ratios", "Sluice / Kafka (medians)", "figure", "ratio", "target",
                "met");
        double perCleanerCpu = s.get("MiB per cleaner CPU s") / k.get("MiB per cleaner CPU s");
        double perBrokerCpu = s.get("MiB per broker CPU s") / k.get("MiB per broker CPU s");
        double p99 = s.get("live p99 ms during") / k.get("live p99 ms during");
        double wall = s.get("wall s") / k.get("wall s");
        table.add("bytes cleaned per cleaner-thread CPU second", f2(perCleanerCpu), ">= 2", perCleanerCpu >= 2);
        table.add("bytes cleaned per broker CPU second above the live load", f2(perBrokerCpu), "", "");
        table.add("live produce p99 during cleaning", f2(p99), "<= 1", p99 <= 1);
        table.add("cleaning wall time", f2(wall), "", "");
        lab.figure("compaction-bytes-per-cleaner-cpu-ratio", perCleanerCpu);
        lab.figure("compaction-bytes-per-broker-cpu-ratio", perBrokerCpu);
        lab.figure("compaction-live-p99-during-ratio", p99);
        lab.figure("compaction-wall-ratio", wall);
        for (String broker : List.of(SLUICE, KAFKA)) {
            Map<String, Double> m = medians.get(broker);
            lab.figure("compaction-mib-per-cleaner-cpu-second-" + broker, m.get("MiB per cleaner CPU s"));
            lab.figure("compaction-live-p99-ms-during-" + broker, m.get("live p99 ms during"));
        }
    }

    private void charts(Map<String, Map<String, Double>> medians) {
        List<String> categories = new ArrayList<>();
        for (int round = 1; round <= sizes.rounds(); round++) {
            categories.add("round " + round);
        }
        categories.add("median");
        Map<String, List<Double>> rate = new LinkedHashMap<>();
        Map<String, List<Double>> p99 = new LinkedHashMap<>();
        for (String broker : List.of(SLUICE, KAFKA)) {
            List<Double> rates = new ArrayList<>(results.get(broker).stream()
                    .map(r -> r.bytesPerCleanerCpuSecond() / MIB).toList());
            rates.add(medians.get(broker).get("MiB per cleaner CPU s"));
            rate.put(broker, rates);
            List<Double> p99s = new ArrayList<>(results.get(broker).stream().map(r -> r.p99DuringMillis()).toList());
            p99s.add(medians.get(broker).get("live p99 ms during"));
            p99.put(broker, p99s);
        }
        lab.chart("compaction-rate", Charts.bars("MiB cleaned per second of the cleaner thread's CPU", "round",
                "MiB / cleaner CPU s", categories, rate, false));
        lab.chart("compaction-live-p99", Charts.bars("Produce p99 on another topic during cleaning", "round", "ms",
                categories, p99, false));
    }

    private void notes() {
        lab.note(String.format(Locale.ROOT, "Each round, each broker fresh: a topic of one partition with"
                + " cleanup.policy=compact and min.compaction.lag.ms a day (nothing cleanable) gets %,d updates of %d"
                + " bytes over %,d keys (drawn with seed %d, the same every round; key key-NNNNN, value its sequence"
                + " number and a filler), from the stock producer, acks=1, 16 KiB batches, linger 5 ms, no"
                + " compression. Segments of %s on both (Kafka log.segment.bytes, Sluice the store's segment size);"
                + " the cleaner's backoff 1 s on both (log.cleaner.backoff.ms; Kafka's default is 15 s); every other"
                + " cleaner setting each broker's default (one thread, 128 MiB key map).", sizes.records(),
                CompactionRaceRun.RECORD_BYTES, sizes.keys(), CompactionRaceRun.SEED,
                io.sluice.bench.lab.Sizes.format(sizes.segmentBytes())));
        lab.note(String.format(Locale.ROOT, "Then the file system is synced (sync -f: the load's writeback done,"
                + " Kafka's left to the kernel, Sluice's forced as it went) and a paced producer sends %,d records of"
                + " 1 KiB a second to another topic (acks=1; latency from when each was due to its"
                + " acknowledgement); after its first second and %d s more (\"before\"), IncrementalAlterConfigs"
                + " sets min.compaction.lag.ms=0 and min.cleanable.dirty.ratio=%s on the compacted topic, and the"
                + " cleaning starts (\"during\": from that call to the cleaning's end).", sizes.liveRate(),
                sizes.baselineSeconds(), CompactionRaceRun.DIRTY_RATIO));
        lab.note(String.format(Locale.ROOT, "The cleaning's end: the partition directory's blocks on disk (du,"
                + " Kafka's *.deleted files left out) are polled every 0.2 s; the end is the first poll that saw"
                + " the final size, once the size fell, the cleaner logged a cleaning of the partition, and the size"
                + " then stayed put %d s. CPU is read from /proc at the start and at that poll: the cleaner thread's"
                + " (sluice-log-cleaner; kafka-log-cleaner-thread-0), and the whole broker's less what the paced"
                + " load took a second before the start. \"cleaner cores after\" is the cleaner thread's CPU a"
                + " second over the settle time after the end. A cleaner that starts another round at once after its"
                + " last swap (Sluice's does) has up to one poll of that round counted in.", sizes.settleSeconds()));
        lab.note("MiB cleaned: the bytes in the partition's sealed segments before cleaning (all but the active one,"
                + " which neither cleaner rewrites): Kafka's .log files' sizes; Sluice's segment positions (fillers"
                + " at the segments' ends included). Log MiB is the whole partition as each broker reports it"
                + " (DescribeLogDirs). The cleaner's own report is its log line (Kafka's MB are MiB). Sluice's"
                + " cleaner maps the keys of the active segment too, and reads the partition again in later rounds"
                + " (\"rounds reading again\": those it logged to the round's end, read-back included) while its dirty"
                + " bytes stay above the ratio.");
        lab.note("After each cleaning the compacted topic is read back from its start: every key's value must be"
                + " its last acknowledged update (by offset), or the run fails. Both brokers in child JVMs"
                + " (-Xms1g -Xmx1g, G1), one at a time, on 127.0.0.1 and the same disk; Sluice ASYNC on its CHANNEL"
                + " write path, Kafka with flushing left to the OS.");
    }

    private static double median(double[] sorted) {
        return sorted.length == 0 ? Double.NaN : sorted.length % 2 == 1 ? sorted[sorted.length / 2]
                : (sorted[sorted.length / 2 - 1] + sorted[sorted.length / 2]) / 2;
    }

    private static String f1(double v) {
        return String.format(Locale.ROOT, "%,.1f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
