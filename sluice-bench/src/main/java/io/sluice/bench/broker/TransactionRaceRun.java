package io.sluice.bench.broker;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Table;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * The transaction race: rounds in which each broker (the order alternating) is started on a fresh directory and put
 * through transactional produce (100 and 1,000 records of 1 KiB per transaction, one and ten producers) and a
 * read_committed consume; medians per scenario and broker; ratios Sluice/Kafka.
 */
public final class TransactionRaceRun {

    private static final String SLUICE = "sluice";
    private static final String KAFKA = "kafka";

    /** A transactional produce scenario: producers, records per transaction. */
    private record Scenario(String name, int producers, int perTransaction) {
    }

    private static final List<Scenario> PRODUCE = List.of(
            new Scenario("transactions of 100, 1 producer", 1, 100),
            new Scenario("transactions of 1,000, 1 producer", 1, 1_000),
            new Scenario("transactions of 100, 10 producers", 10, 100),
            new Scenario("transactions of 1,000, 10 producers", 10, 1_000));
    private static final String CONSUME = "read_committed consume";

    private final Lab lab;
    private final long records;
    private final int rounds;
    /** scenario -> broker -> one result per round */
    private final Map<String, Map<String, List<Load.Result>>> results = new LinkedHashMap<>();

    /**
     * @param records records of 1 KiB per scenario run
     * @param rounds interleaved rounds
     */
    public TransactionRaceRun(Lab lab, long records, int rounds) {
        this.lab = lab;
        this.records = records;
        this.rounds = rounds;
        List<String> names = new ArrayList<>(PRODUCE.stream().map(Scenario::name).toList());
        names.add(CONSUME);
        for (String name : names) {
            Map<String, List<Load.Result>> byBroker = new LinkedHashMap<>();
            byBroker.put(SLUICE, new ArrayList<>());
            byBroker.put(KAFKA, new ArrayList<>());
            results.put(name, byBroker);
        }
    }

    /** Runs every round, then publishes. */
    public void run() throws Exception {
        try (Progress progress = lab.progress("rounds", (long) rounds * 2)) {
            for (int round = 0; round < rounds; round++) {
                List<String> order = round % 2 == 0 ? List.of(KAFKA, SLUICE) : List.of(SLUICE, KAFKA);
                for (String broker : order) {
                    progress.say("round " + (round + 1) + " " + broker);
                    Path dir = lab.work().resolve("transactions-" + broker + "-" + round);
                    try (BrokerProcess process = broker.equals(SLUICE) ? Brokers.sluice(dir, false)
                            : Brokers.kafka(dir, false)) {
                        // Unmeasured: both brokers' code and the client's compiled before anything is timed.
                        long warm = Math.max(1_000, records / 5);
                        TransactionLoad.produce(process, "warm-up", 2, warm, 100, 1024);
                        TransactionLoad.consumeCommitted(process, "warm-up", 2, warm);
                        int topic = 0;
                        for (Scenario scenario : PRODUCE) {
                            Load.Result result = TransactionLoad.produce(process, "t" + topic++,
                                    scenario.producers(), records, scenario.perTransaction(), 1024);
                            long expected = Math.max(1, records / scenario.producers() / scenario.perTransaction())
                                    * scenario.producers() * scenario.perTransaction();
                            record(scenario.name(), broker, result, expected, "committed");
                        }
                        long expected = Math.max(1, records / 100) * 100;
                        record(CONSUME, broker, TransactionLoad.consumeCommitted(process, "t0", 1, expected),
                                expected, "read");
                    } finally {
                        Lab.deleteTree(dir);
                    }
                    progress.step(1);
                }
            }
        }
        publish();
    }

    private void record(String scenario, String broker, Load.Result result, long expected, String verb) {
        lab.check(result.records() == expected, broker + " " + scenario + ": " + result.records() + " of "
                + expected + " records " + verb);
        results.get(scenario).get(broker).add(result);
    }

    private static Load.Result median(List<Load.Result> rounds) {
        List<Load.Result> sorted = new ArrayList<>(rounds);
        sorted.sort(Comparator.comparingDouble(Load.Result::perSecond));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private void publish() {
        Table table = lab.table("transactions", "Transactions: Sluice broker vs Apache Kafka 4.3.1 (medians of "
                + rounds + " rounds)", "scenario", "broker", "records/s", "broker CPU s / M records",
                "client CPU s / M records", "transaction p50 ms", "transaction p99 ms");
        Table ratios = lab.table("transactions-ratios", "Sluice / Kafka (medians)", "scenario", "throughput",
                "broker CPU per record", "transaction p99");
        List<String> categories = new ArrayList<>();
        Map<String, List<Double>> throughput = new LinkedHashMap<>();
        Map<String, List<Double>> cpu = new LinkedHashMap<>();
        for (String broker : List.of(SLUICE, KAFKA)) {
            throughput.put(broker, new ArrayList<>());
            cpu.put(broker, new ArrayList<>());
        }
        for (String scenario : results.keySet()) {
            Map<String, Load.Result> medians = new LinkedHashMap<>();
            for (String broker : List.of(SLUICE, KAFKA)) {
                Load.Result m = median(results.get(scenario).get(broker));
                medians.put(broker, m);
                table.add(scenario, broker, f0(m.perSecond()), f2(m.brokerCpuPerMillion()),
                        f2(m.clientCpuPerMillion()), Double.isNaN(m.p50Millis()) ? "" : f2(m.p50Millis()),
                        Double.isNaN(m.p99Millis()) ? "" : f2(m.p99Millis()));
                throughput.get(broker).add(m.perSecond());
                cpu.get(broker).add(m.brokerCpuPerMillion());
            }
            Load.Result s = medians.get(SLUICE);
            Load.Result k = medians.get(KAFKA);
            String p99 = Double.isNaN(s.p99Millis()) ? "" : f2(s.p99Millis() / k.p99Millis());
            ratios.add(scenario, f2(s.perSecond() / k.perSecond()),
                    f2(s.brokerCpuPerMillion() / k.brokerCpuPerMillion()), p99);
            String key = scenario.replaceAll("[^a-zA-Z0-9]+", "-").toLowerCase(Locale.ROOT);
            lab.figure(key + "-throughput-ratio", s.perSecond() / k.perSecond());
            lab.figure(key + "-broker-cpu-ratio", s.brokerCpuPerMillion() / k.brokerCpuPerMillion());
            categories.add(scenario);
        }
        lab.chart("transactions-throughput", Charts.bars("Records per second (median)", "scenario", "records/s",
                categories, throughput, false));
        lab.chart("transactions-cpu", Charts.bars("Broker CPU seconds per million records (median)", "scenario",
                "CPU s / M records", categories, cpu, false));
        lab.note("Each producer is a stock kafka-clients 4.3.1 transactional producer (acks=all, idempotent) with a"
                + " transactional id and a partition of its own, linger 5 ms, 16 KiB batches, no compression; it sends"
                + " a transaction's records as fast as it takes them and commits, over and over. Latency is a"
                + " transaction's, from its begin to its commit's return. The consumer is read_committed, over the"
                + " one-producer, 100-record topic, from the page cache.");
        lab.note("Kafka 4.3.1, formatted afresh, finalizes transaction.version 2, so its client adds partitions"
                + " implicitly; Sluice offers version 1, so against it the client sends AddPartitionsToTxn at each"
                + " transaction's first record. Both brokers run as in the broker race (child JVMs, -Xms1g -Xmx1g, G1;"
                + " Sluice ASYNC, acknowledged once in the page cache, as a single Kafka broker does), one at a time.");
    }

    private static String f0(double v) {
        return String.format(Locale.ROOT, "%,.0f", v);
    }

    private static String f2(double v) {
        return String.format(Locale.ROOT, "%.2f", v);
    }
}
