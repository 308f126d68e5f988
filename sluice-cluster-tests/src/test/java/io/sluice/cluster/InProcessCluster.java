package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.ReadResult;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.IntFunction;
import java.util.stream.Stream;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;

/**
 * Three brokers of one cluster in the test's JVM, each in {@code b<id>} under a directory, with its store, Raft node
 * and Kafka listener on 127.0.0.1; what the in-process cluster tests share. Close it to stop those still running.
 */
final class InProcessCluster implements AutoCloseable {

    private final Path dir;
    private final ClusterNode.Tuning tuning;
    private final IntFunction<StoreConfig> stores;
    private final ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];
    private BrokerConfig brokerConfig = BrokerConfig.defaults();
    /** Each node's Raft TLS by its id; null for plain text. */
    private IntFunction<RaftTls> raftTls = id -> null;

    /**
     * @param stores each node's store configuration, by node id
     */
    InProcessCluster(Path dir, ClusterNode.Tuning tuning, IntFunction<StoreConfig> stores) throws IOException {
        this.dir = dir;
        this.tuning = tuning;
        this.stores = stores;
        this.cluster = TestClusters.threeOnLoopback();
    }

    /** Stores on the channel write path under ASYNC. */
    InProcessCluster(Path dir, ClusterNode.Tuning tuning) throws IOException {
        this(dir, tuning, id -> StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build());
    }

    /** @return the cluster's three nodes */
    ClusterSpec spec() {
        return cluster;
    }

    /** @return the clients' bootstrap string */
    String bootstrap() {
        return TestClusters.bootstrap(cluster);
    }

    /** @return node {@code id}'s data directory */
    Path directory(int id) {
        return dir.resolve("b" + id);
    }

    void start(int id) throws IOException {
        brokers[id] = ClusterBroker.start(directory(id), cluster, id, stores.apply(id), brokerConfig, tuning,
                raftTls.apply(id));
    }

    /** Nodes started from now on speak Raft over mutual TLS, each with {@code tls} of its id. */
    InProcessCluster withRaftTls(IntFunction<RaftTls> tls) {
        this.raftTls = tls;
        return this;
    }

    /** Brokers started from now on take {@code config} (its listener and node id aside). */
    InProcessCluster withBrokerConfig(BrokerConfig config) {
        this.brokerConfig = config;
        return this;
    }

    void startAll() throws IOException {
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
    }

    /** A clean stop of node {@code id}, if it runs. */
    void stop(int id) throws IOException {
        if (brokers[id] != null) {
            brokers[id].close();
            brokers[id] = null;
        }
    }

    /**
     * Stops node {@code id} after its store's file system lost its power: what the closing store fails to write (its
     * file system is gone) is ignored, as is the rest of a close that failed for it.
     */
    void stopAfterPowerCut(int id) {
        if (brokers[id] != null) {
            try {
                brokers[id].close();
            } catch (IOException | RuntimeException gone) {
                // The store's writes fail: the power is off.
            }
            brokers[id] = null;
        }
    }

    /** @return node {@code id}'s broker, or null if it is stopped */
    ClusterBroker broker(int id) {
        return brokers[id];
    }

    /** @return node {@code id}'s replica of {@code topic}'s partition 0 */
    ReplicatedPartition replica(int id, String topic) throws IOException {
        return brokers[id].node().partition(new ClusterNode.PartitionId(topic, 0));
    }

    /** Stops every node, then checks that none of their Raft groups runs on. */
    @Override
    public void close() throws IOException {
        for (int id = 1; id <= 3; id++) {
            stop(id);
        }
        TestClusters.assertNoRaftThreadsLeft();
    }

    /** Creates a topic through the clients' Admin, replication factor 3. */
    void createTopic(String topic, int partitions) throws Exception {
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(properties)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
    }

    /** Polls {@code condition} every 50 ms; fails the test if it does not hold within {@code seconds}. */
    static void await(String what, int seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + seconds + " s: " + what);
            }
            Thread.sleep(50);
        }
    }

    /**
     * Waits up to 30 s for every node to apply the record that each of the three took part (a node that then loses
     * its data rejoins rather than joins as new).
     */
    void awaitMembers() throws InterruptedException {
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " applied the three members", 30, () -> brokers[node].node().members()
                    .equals(java.util.Set.of(1, 2, 3)));
        }
    }

    /** @return the running node that leads {@code topic}'s partition 0 (waits up to 30 s for one) */
    int leaderOf(String topic) throws InterruptedException {
        int[] leader = new int[1];
        await("a leader of " + topic + "-0", 30, () -> {
            for (int id = 1; id <= 3; id++) {
                if (brokers[id] != null && brokers[id].node().leads(topic, 0)) {
                    leader[0] = id;
                    return true;
                }
            }
            return false;
        });
        return leader[0];
    }

    /** @return partition 0's batches in a store, below {@code end} */
    static List<byte[]> batches(Store store, String topic, long end) {
        return batches(store, topic, 0, store.minOffset(topic, 0), end);
    }

    /** @return a partition's batches in a store, from {@code from} to below {@code end} */
    static List<byte[]> batches(Store store, String topic, int partition, long from, long end) {
        List<byte[]> all = new ArrayList<>();
        long offset = from;
        while (offset < end) {
            try (ReadResult read = store.read(topic, partition, offset, 100, 1 << 20)) {
                if (read.messages().isEmpty()) {
                    break;
                }
                for (StoredMessage message : read.messages()) {
                    if (message.queueOffset() < end) {
                        all.add(message.bodyBytes());
                    }
                }
                offset = read.nextOffset();
            }
        }
        return all;
    }

    /** Asserts that two stores hold the same batches of partition 0 below {@code end}, byte for byte. */
    static void assertSameBatches(Store held, Store leader, String topic, long end) {
        assertSameBatches(held, leader, topic, leader.minOffset(topic, 0), end);
        assertThat(held.minOffset(topic, 0)).as("the replica's first offset").isEqualTo(leader.minOffset(topic, 0));
    }

    /** Asserts that two stores hold the same batches of partition 0 from {@code from} to below {@code end}. */
    static void assertSameBatches(Store held, Store leader, String topic, long from, long end) {
        List<byte[]> expected = batches(leader, topic, 0, from, end);
        List<byte[]> actual = batches(held, topic, 0, from, end);
        assertThat(actual).as("the replica's batches from %d below %d", from, end).hasSameSizeAs(expected);
        for (int i = 0; i < expected.size(); i++) {
            assertThat(actual.get(i)).as("batch %d", i).isEqualTo(expected.get(i));
        }
    }

    /** Deletes a directory and all it holds, as a lost disk would leave a node (nothing if it does not exist). */
    static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    /**
     * Sends records {@code <topic>-<from>} to {@code <topic>-<to - 1>} to partition 0, flushing every ten (small
     * batches: many Raft entries, so snapshots are taken and logs purged), and adds each to {@code sent} once
     * acknowledged (waiting up to 120 s for each).
     */
    static void send(KafkaProducer<byte[], byte[]> producer, String topic, List<String> sent, int from, int to)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < to; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, 0, null,
                    (topic + "-" + i).getBytes(StandardCharsets.UTF_8))));
            if (i % 10 == 9) {
                producer.flush();
            }
        }
        for (int i = 0; i < futures.size(); i++) {
            futures.get(i).get(120, TimeUnit.SECONDS);
            sent.add(topic + "-" + (from + i));
        }
    }

    /**
     * Stores on the channel write path under ASYNC whose retention keeps only the active segment of each log at each
     * pass ({@link Store#enforceRetention}; no pass runs by itself for an hour), in segments of 64 KiB and up.
     */
    static StoreConfig retainingLittle(int node) {
        return StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).maxMessageBytes(16_384)
                .retention(RetentionPolicy.defaults().withRetentionBytes(1).withCheckIntervalMillis(3_600_000))
                .build();
    }

    /**
     * As {@link #send}, with records of about 2 KiB ({@code <topic>-<i>} and padding, as added to {@code sent}), two
     * per batch: each Raft entry holds about 4 KiB, so a few dozen entries fill a store segment.
     */
    static void sendLarge(KafkaProducer<byte[], byte[]> producer, String topic, List<String> sent, int from, int to)
            throws Exception {
        String padding = "x".repeat(2048);
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < to; i++) {
            futures.add(producer.send(new ProducerRecord<>(topic, 0, null,
                    (topic + "-" + i + padding).getBytes(StandardCharsets.UTF_8))));
            if (i % 2 == 1) {
                producer.flush();
            }
        }
        for (int i = 0; i < futures.size(); i++) {
            futures.get(i).get(120, TimeUnit.SECONDS);
            sent.add(topic + "-" + (from + i) + padding);
        }
    }

    /** @return partition 0's record values as a stock consumer reads them from the start, up to {@code expected} */
    List<String> readValues(String topic, int expected) {
        return readValues(topic, 0, expected);
    }

    /** @return a partition's record values as a stock consumer reads them from the start, up to {@code expected} */
    List<String> readValues(String topic, int partitionId, int expected) {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            TopicPartition partition = new TopicPartition(topic, partitionId);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    read.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return read;
    }
}
