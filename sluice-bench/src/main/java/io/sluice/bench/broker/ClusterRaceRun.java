package io.sluice.bench.broker;

import io.sluice.bench.lab.Charts;
import io.sluice.bench.lab.Lab;
import io.sluice.bench.lab.Progress;
import io.sluice.bench.lab.Table;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The cluster race: three Sluice brokers (Raft) against three Apache Kafka nodes (KRaft), replication factor 3 (Kafka
 * with min.insync.replicas=2), each cluster started afresh per round, the order alternating: produce 1 KiB with
 * acks=all (throughput, p99, broker CPU summed over the three processes), then failovers: a producer sends steadily,
 * the leader of its partition is killed with SIGKILL, and the time from the kill to the first acknowledgement of a
 * record sent after it is measured; the killed node is started again before the next failover.
 */
public final class ClusterRaceRun {

    private static final String SLUICE = "sluice";
    private static final String KAFKA = "kafka";
    private static final String PRODUCE = "produce 1 KiB acks=all, RF 3";

    private final Lab lab;
    private final long records;
    private final int rounds;
    private final int failovers;
    private final double warmUpSeconds;
    private final Map<String, List<Load.Result>> produce = new LinkedHashMap<>();
    private final Map<String, List<Double>> failoverMillis = new LinkedHashMap<>();

    /**
     * @param lab where tables, charts and checks go
     * @param records records of 1 KiB per produce run
     * @param rounds interleaved rounds (each starts both clusters afresh)
     * @param failovers leader kills per cluster per round
     * @param warmUpSeconds unmeasured sending before the produce run, on a topic of its own (and at least a tenth of
     *     {@code records})
     */
    public ClusterRaceRun(Lab lab, long records, int rounds, int failovers, double warmUpSeconds) {
        this.lab = lab;
        this.warmUpSeconds = warmUpSeconds;
        this.records = records;
        this.rounds = rounds;
        this.failovers = failovers;
        for (String system : List.of(SLUICE, KAFKA)) {
            produce.put(system, new ArrayList<>());
            failoverMillis.put(system, new ArrayList<>());
        }
    }

    /** Runs every round, then publishes. */
    public void run() throws Exception {
        try (Progress progress = lab.progress("rounds", (long) rounds * 2)) {
            for (int round = 0; round < rounds; round++) {
                List<String> order = round % 2 == 0 ? List.of(KAFKA, SLUICE) : List.of(SLUICE, KAFKA);
                for (String system : order) {
                    progress.say("round " + (round + 1) + " " + system);
                    Path dir = lab.work().resolve("cluster-" + system + "-" + round);
                    try (ThreeNodes cluster = system.equals(SLUICE) ? ThreeNodes.sluice(dir) : ThreeNodes.kafka(dir)) {
                        long warm = Math.max(5_000, records / 10);
                        Load.produceFor(cluster, "warm-up", warmUpSeconds, warm, 1024, "all");
                        Load.Result result = Load.produce(cluster, "p1k-acksall", records, 1024, "all");
                        lab.check(result.records() == records, system + " " + PRODUCE + ": " + result.records()
                                + " of " + records + " records acknowledged");
                        produce.get(system).add(result);
                        failovers(cluster, system, round);
                    } finally {
                        Lab.deleteTree(dir);
                    }
                    progress.step(1);
                }
            }
        }
        publish();
    }

    /** Kills the leader of a partition under a steady producer, {@link #failovers} times. */
    private void failovers(ThreeNodes cluster, String system, int round) throws Exception {
        String topic = "failover-" + round;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
            AtomicLong firstAckAfter = new AtomicLong(Long.MAX_VALUE);
            AtomicLong killedAt = new AtomicLong(Long.MAX_VALUE);
            AtomicReference<Exception> failure = new AtomicReference<>();
            AtomicLong acked = new AtomicLong();
            Thread sender;
            java.util.concurrent.atomic.AtomicBoolean stop = new java.util.concurrent.atomic.AtomicBoolean();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                sender = Thread.ofPlatform().name("failover-producer").start(() -> {
                    byte[] value = "failover".getBytes(StandardCharsets.UTF_8);
                    while (!stop.get()) {
                        long sent = System.nanoTime();
                        producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                                return;
                            }
                            acked.incrementAndGet();
                            if (sent > killedAt.get()) {
                                firstAckAfter.accumulateAndGet(System.nanoTime(), Math::min);
                            }
                        });
                        try {
                            Thread.sleep(1);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                for (int i = 0; i < failovers; i++) {
                    awaitInSync(admin, topic);
                    Thread.sleep(1_000);
                    int leader = leader(admin, topic);
                    firstAckAfter.set(Long.MAX_VALUE);
                    killedAt.set(System.nanoTime());
                    cluster.kill(leader);
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (firstAckAfter.get() == Long.MAX_VALUE && System.nanoTime() < deadline) {
                        Thread.sleep(2);
                    }
                    lab.check(firstAckAfter.get() != Long.MAX_VALUE, system + ": a record acknowledged within 60 s"
                            + " of killing the leader (failover " + (i + 1) + ")");
                    failoverMillis.get(system).add((firstAckAfter.get() - killedAt.get()) / 1e6);
                    cluster.restart(leader);
                }
                stop.set(true);
                sender.join(10_000);
                producer.flush();
            }
            lab.check(failure.get() == null, system + ": the failover producer's sends all succeeded ("
                    + (failure.get() == null ? acked.get() + " acknowledged" : failure.get()) + ")");
        }
    }

    /** @return the leader of partition 0, once one is known */
    private static int leader(Admin admin, String topic) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (System.nanoTime() < deadline) {
            Node leader = describe(admin, topic).partitions().getFirst().leader();
            if (leader != null && leader.id() >= 1) {
                return leader.id();
            }
            Thread.sleep(50);
        }
        throw new IllegalStateException("no leader of " + topic + "-0 within 60 s");
    }

    /** Waits until every replica of partition 0 is in sync (the node killed last has caught up). */
    private static void awaitInSync(Admin admin, String topic) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            TopicPartitionInfo partition = describe(admin, topic).partitions().getFirst();
            if (partition.leader() != null && partition.isr().size() == 3) {
                return;
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException(topic + "-0 did not get three in-sync replicas within 120 s");
    }

    private static TopicDescription describe(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get(30, TimeUnit.SECONDS).get(topic);
    }

    private static Load.Result median(List<Load.Result> results) {
        List<Load.Result> sorted = new ArrayList<>(results);
        sorted.sort(java.util.Comparator.comparingDouble(Load.Result::perSecond));
        return sorted.get((sorted.size() - 1) / 2);
    }

    private static double percentile(List<Double> values, double p) {
        List<Double> sorted = new ArrayList<>(values);
        sorted.sort(Double::compare);
        int index = (int) Math.ceil(p / 100 * sorted.size()) - 1;
        return sorted.get(Math.max(0, Math.min(sorted.size() - 1, index)));
    }

    private void publish() {
        Table table = lab.table("cluster", "Three Sluice brokers vs three Apache Kafka 4.3.1 nodes, replication factor 3"
                + " (medians of " + rounds + " rounds)", "system", "records/s", "MB/s",
                "broker CPU s / M records (3 nodes)", "p50 ms", "p99 ms", "failover p50 ms", "failover p99 ms",
                "failovers");
        Map<String, Double> throughput = new LinkedHashMap<>();
        for (String system : List.of(SLUICE, KAFKA)) {
            Load.Result m = median(produce.get(system));
            List<Double> times = failoverMillis.get(system);
            table.add(system, f0(m.perSecond()), f1(m.perSecond() * 1024 / 1e6), f2(m.brokerCpuPerMillion()),
                    f2(m.p50Millis()), f2(m.p99Millis()), f0(percentile(times, 50)), f0(percentile(times, 99)),
                    String.valueOf(times.size()));
            throughput.put(system, m.perSecond());
        }
        Load.Result s = median(produce.get(SLUICE));
        Load.Result k = median(produce.get(KAFKA));
        Table ratios = lab.table("cluster-ratios", "Sluice / Kafka (medians)", "measure", "ratio");
        ratios.add("acks=all throughput", f2(s.perSecond() / k.perSecond()));
        ratios.add("broker CPU per record", f2(s.brokerCpuPerMillion() / k.brokerCpuPerMillion()));
        ratios.add("produce p99", f2(s.p99Millis() / k.p99Millis()));
        ratios.add("failover p50", f2(percentile(failoverMillis.get(SLUICE), 50)
                / percentile(failoverMillis.get(KAFKA), 50)));
        lab.figure("cluster-throughput-ratio", s.perSecond() / k.perSecond());
        lab.figure("cluster-broker-cpu-ratio", s.brokerCpuPerMillion() / k.brokerCpuPerMillion());
        lab.figure("cluster-p99-ratio", s.p99Millis() / k.p99Millis());
        lab.figure("cluster-failover-p50-ms-sluice", percentile(failoverMillis.get(SLUICE), 50));
        lab.figure("cluster-failover-p99-ms-sluice", percentile(failoverMillis.get(SLUICE), 99));
        lab.figure("cluster-failover-p50-ms-kafka", percentile(failoverMillis.get(KAFKA), 50));
        lab.figure("cluster-failover-p99-ms-kafka", percentile(failoverMillis.get(KAFKA), 99));
        Map<String, List<Double>> failoverSeries = new LinkedHashMap<>();
        failoverSeries.put(SLUICE, List.of(percentile(failoverMillis.get(SLUICE), 50),
                percentile(failoverMillis.get(SLUICE), 99)));
        failoverSeries.put(KAFKA, List.of(percentile(failoverMillis.get(KAFKA), 50),
                percentile(failoverMillis.get(KAFKA), 99)));
        lab.chart("cluster-failover", Charts.bars("From SIGKILL of the leader to the first acknowledged produce",
                "percentile", "ms", List.of("p50", "p99"), failoverSeries, false));
        lab.note("Each cluster is three child JVMs on 127.0.0.1 (-Xms1g -Xmx1g, G1 each), started afresh per round,"
                + " one cluster at a time, the order alternating. The client is stock kafka-clients 4.3.1 in this JVM"
                + " (linger 5 ms, 16 KiB batches, no compression, one partition, acks=all). Each produce run follows "
                + String.format(Locale.ROOT, "%.0f", warmUpSeconds) + " s (and at least " + f0(Math.max(5_000,
                records / 10)) + " records) of unmeasured sending to another topic. Broker CPU is the sum over"
                + " the three processes, from /proc/<pid>/stat, over the produce run.");
        lab.note("Sluice: a Raft group per partition (Apache Ratis), ASYNC stores (a batch is acknowledged once a"
                + " majority has it in its page cache; the Raft log of entry headers is forced in the background),"
                + " election timeout 150-300 ms. Kafka: KRaft with every node broker and controller,"
                + " min.insync.replicas=2, its defaults otherwise (broker.session.timeout.ms 9 s decides when a dead"
                + " leader is replaced).");
        lab.note("Failover: a producer sends a record every millisecond to one partition; its leader is killed with"
                + " SIGKILL; the time is from the kill to the first acknowledgement of a record sent after it. The"
                + " killed node is started again and caught up before the next kill.");
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
