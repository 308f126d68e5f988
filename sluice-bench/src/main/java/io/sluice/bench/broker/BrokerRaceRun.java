package io.sluice.bench.broker;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Table;
import io.sluice.broker.Broker;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Stream;

/**
 * One broker race: rounds in which each broker (the order alternating) is started on a fresh directory and put
 * through every scenario, then a durable one likewise; medians per scenario and broker; ratios Sluice/Kafka.
 */
public final class BrokerRaceRun {

    private static final String SLUICE = "sluice";
    private static final String KAFKA = "kafka";

    private static final String P1K_ACKS1 = "produce 1 KiB acks=1";
    private static final String P1K_ACKSALL = "produce 1 KiB acks=all";
    private static final String P100_ACKS1 = "produce 100 B acks=1";
    private static final String CONSUME = "consume 1 KiB, page cache";
    private static final String E2E = "end-to-end 1 KiB acks=1";
    private static final String DURABLE = "durable produce 1 KiB acks=all";
    /** The producers of each single-message scenario, and the partitions they spread over. */
    private static final List<Integer> SINGLE_PRODUCERS = List.of(64, 256);
    static final int SINGLE_PARTITIONS = 8;
    private static final List<String> SCENARIOS = Stream.concat(
            Stream.of(P1K_ACKS1, P1K_ACKSALL, P100_ACKS1, CONSUME, E2E, DURABLE),
            SINGLE_PRODUCERS.stream().map(BrokerRaceRun::single)).toList();

    private final Lab lab;
    private final long records;
    private final int rounds;
    /** scenario -> broker -> one result per round */
    private final Map<String, Map<String, List<Load.Result>>> results = new LinkedHashMap<>();

    /**
     * @param lab where tables, charts and checks go
     * @param records records of 1 KiB per produce run
     * @param rounds interleaved rounds
     */
    public BrokerRaceRun(Lab lab, long records, int rounds) {
        this.lab = lab;
        this.records = records;
        this.rounds = rounds;
        for (String scenario : SCENARIOS) {
            Map<String, List<Load.Result>> byBroker = new LinkedHashMap<>();
            byBroker.put(SLUICE, new ArrayList<>());
            byBroker.put(KAFKA, new ArrayList<>());
            results.put(scenario, byBroker);
        }
    }

    private static String single(int producers) {
        return "single 1 KiB messages, sync flush, " + producers + " producers";
    }

    /** How long each single-message scenario runs. */
    private double singleSeconds() {
        return lab.quick() ? 2 : 20;
    }

    /** Runs every round, then publishes. */
    public void run() throws Exception {
        int e2eRate = lab.quick() ? 2_000 : 10_000;
        int e2eSeconds = lab.quick() ? 2 : 10;
        try (Progress progress = lab.progress("rounds", (long) rounds * 4)) {
            for (int round = 0; round < rounds; round++) {
                List<String> order = round % 2 == 0 ? List.of(KAFKA, SLUICE) : List.of(SLUICE, KAFKA);
                for (String broker : order) {
                    progress.say("round " + (round + 1) + " " + broker);
                    Path dir = lab.work().resolve(broker + "-" + round);
                    try (BrokerProcess process = start(broker, dir, false)) {
                        warmUp(process, "1");
                        record(P1K_ACKS1, broker, Load.produce(process, "p1k-acks1", records, 1024, "1"), records);
                        // A first, unmeasured pass: the fetch path's JIT compilation (the broker's and the
                        // consumer's) would otherwise dominate a pass of under a second.
                        Load.consume(process, "p1k-acks1", records);
                        record(CONSUME, broker, Load.consume(process, "p1k-acks1", records,
                                Load.measuredReadSeconds(lab.quick())), records);
                        record(P1K_ACKSALL, broker, Load.produce(process, "p1k-acksall", records, 1024, "all"),
                                records);
                        record(P100_ACKS1, broker, Load.produce(process, "p100-acks1", records * 4, 100, "1"),
                                records * 4);
                        record(E2E, broker, Load.endToEnd(process, "e2e", e2eRate, e2eSeconds, 1024),
                                (long) e2eRate * e2eSeconds);
                    } finally {
                        Lab.deleteTree(dir);
                    }
                    progress.step(1);
                    Path durableDir = lab.work().resolve(broker + "-durable-" + round);
                    try (BrokerProcess process = start(broker, durableDir, true)) {
                        warmUp(process, "all");
                        long durableRecords = Math.max(1_000, records / 2);
                        record(DURABLE, broker, Load.produce(process, "durable", durableRecords, 1024, "all"),
                                durableRecords);
                        for (int producers : SINGLE_PRODUCERS) {
                            Load.Result single = Load.singleMessages(process, "single-" + producers,
                                    SINGLE_PARTITIONS, producers, singleSeconds(), 1024);
                            lab.check(single.records() >= producers, broker + " " + producers + " single-message"
                                    + " producers: " + single.records() + " records acknowledged in "
                                    + String.format(Locale.ROOT, "%.1f", single.seconds()) + " s");
                            results.get(single(producers)).get(broker).add(single);
                        }
                    } finally {
                        Lab.deleteTree(durableDir);
                    }
                    progress.step(1);
                }
            }
        }
        publish(e2eRate);
    }

    /**
     * Unmeasured: a fresh JVM interprets before it compiles, the broker's and the client's alike, so each broker
     * first takes a tenth of a run (at least 5,000 records) on a topic of its own, and gives it back to a consumer.
     */
    private void warmUp(BrokerProcess process, String acks) throws Exception {
        long warm = Math.max(5_000, records / 10);
        Load.produce(process, "warm-up", warm, 1024, acks);
        Load.consume(process, "warm-up", warm);
    }

    private static BrokerProcess start(String broker, Path dir, boolean durable) throws Exception {
        return broker.equals(SLUICE) ? Brokers.sluice(dir, durable) : Brokers.kafka(dir, durable);
    }

    private void record(String scenario, String broker, Load.Result result, long expected) {
        boolean read = scenario.startsWith("consume") || scenario.startsWith("end");
        lab.check(Load.complete(result, expected, scenario.equals(CONSUME)), broker + " " + scenario + ": "
                + Load.tally(result, expected, read));
        results.get(scenario).get(broker).add(result);
    }

    /** @return the round with the median throughput (end-to-end: the median p99) */
    private static Load.Result median(String scenario, List<Load.Result> rounds) {
        List<Load.Result> sorted = new ArrayList<>(rounds);
        sorted.sort(scenario.equals(E2E) ? Comparator.comparingDouble(Load.Result::p99Millis)
                : Comparator.comparingDouble(Load.Result::perSecond));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private void publish(int e2eRate) {
        Table table = lab.table("broker", "Sluice broker vs Apache Kafka 4.3.1 (medians of " + rounds + " rounds)",
                "scenario", "broker", "records/s", "MB/s", "broker CPU s / M records", "client CPU s / M records",
                "p50 ms", "p99 ms");
        Table ratios = lab.table("broker-ratios", "Sluice / Kafka (medians)", "scenario", "throughput",
                "broker CPU per record", "p99 latency");
        List<String> categories = new ArrayList<>();
        Map<String, List<Double>> throughput = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        throughput.put(SLUICE, new ArrayList<>());
        throughput.put(KAFKA, new ArrayList<>());
        cpu.put(SLUICE, new ArrayList<>());
        cpu.put(KAFKA, new ArrayList<>());
        for (String scenario : SCENARIOS) {
            Map<String, Load.Result> medians = new LinkedHashMap<>();
            for (String broker : List.of(SLUICE, KAFKA)) {
                Load.Result m = median(scenario, results.get(scenario).get(broker));
                medians.put(broker, m);
                int size = scenario.contains("100 B") ? 100 : 1024;
                table.add(scenario, broker, scenario.equals(E2E) ? e2eRate + " (paced)" : f0(m.perSecond()),
                        scenario.equals(E2E) ? "" : f1(m.perSecond() * size / 1e6),
                        Double.isNaN(m.brokerCpuSeconds()) ? "" : f2(m.brokerCpuPerMillion()),
                        Double.isNaN(m.clientCpuSeconds()) ? "" : f2(m.clientCpuPerMillion()),
                        Double.isNaN(m.p50Millis()) ? "" : f2(m.p50Millis()),
                        Double.isNaN(m.p99Millis()) ? "" : f2(m.p99Millis()));
            }
            Load.Result s = medians.get(SLUICE);
            Load.Result k = medians.get(KAFKA);
            String throughputRatio = scenario.equals(E2E) ? "" : f2(s.perSecond() / k.perSecond());
            String cpuRatio = Double.isNaN(s.brokerCpuSeconds()) ? ""
                    : f2(s.brokerCpuPerMillion() / k.brokerCpuPerMillion());
            String p99Ratio = Double.isNaN(s.p99Millis()) ? "" : f2(s.p99Millis() / k.p99Millis());
            ratios.add(scenario, throughputRatio, cpuRatio, p99Ratio);
            String key = scenario.replaceAll("[^a-zA-Z0-9]+", "-").toLowerCase(Locale.ROOT);
            if (!throughputRatio.isEmpty()) {
                lab.figure(key + "-throughput-ratio", s.perSecond() / k.perSecond());
            }
            if (!cpuRatio.isEmpty()) {
                lab.figure(key + "-broker-cpu-ratio", s.brokerCpuPerMillion() / k.brokerCpuPerMillion());
            }
            if (!p99Ratio.isEmpty()) {
                lab.figure(key + "-p99-ratio", s.p99Millis() / k.p99Millis());
            }
            if (!scenario.equals(E2E)) {
                categories.add(scenario);
                throughput.get(SLUICE).add(s.perSecond());
                throughput.get(KAFKA).add(k.perSecond());
                cpu.get(SLUICE).add(s.brokerCpuPerMillion());
                cpu.get(KAFKA).add(k.brokerCpuPerMillion());
            }
        }
        lab.chart("broker-throughput", Charts.bars("Records per second (median)", "scenario", "records/s",
                categories, throughput, false));
        lab.chart("broker-cpu", Charts.bars("Broker CPU seconds per million records (median)", "scenario",
                "CPU s / M records", categories, cpu, false));
        lab.note("Both brokers run in child JVMs with the same heap and collector (-Xms1g -Xmx1g, G1), one at a time,"
                + " on 127.0.0.1 and the work directory's disk; the client (stock kafka-clients 4.3.1, linger 5 ms,"
                + " 16 KiB batches, no compression, one partition) runs in this JVM. Broker CPU is read from"
                + " /proc/<pid>/stat, client CPU from this process's.");
        lab.note("Each broker, fresh, first takes an unmeasured warm-up (a tenth of a run, produced and consumed)"
                + " so that neither the broker's JIT nor the client's is timed; the consume scenario reads its topic"
                + " once unmeasured, then the measured time.");
        lab.note("Sluice runs ASYNC on the " + Broker.ASYNC_WRITE_PATH + " write path (an acks=all batch is acknowledged"
                + " once in the page cache, as a single Kafka broker does); the durable scenario runs Sluice SYNC on"
                + " MMAP (each acknowledged batch forced, group commit) against Kafka with"
                + " log.flush.interval.messages=1.");
        lab.note("The single-message scenarios (the JMQ4 article's \"single message, sync flush\") run on the durable"
                + " brokers: 64 or 256 producers in this JVM, a connection each, each sending one 1 KiB record"
                + " (acks=all, linger 0) to one of " + SINGLE_PARTITIONS + " partitions and waiting for its"
                + " acknowledgement before the next, for " + (int) singleSeconds() + " s; records/s is"
                + " acknowledgements per second, p50 and p99 each record's round trip.");
    }

    private static String f0(double v) {
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    private static String f1(double v) {
        return String.format(Locale.ROOT, "%.1f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
