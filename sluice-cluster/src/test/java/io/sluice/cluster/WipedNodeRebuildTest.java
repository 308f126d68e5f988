package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.ReadResult;
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
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker whose whole data directory (store and Raft logs) is lost comes back empty: it rejoins the metadata group
 * and its partitions' groups (out of their configurations, caught up, back in), copies what the leader's purged log
 * no longer has from the leader's store (a snapshot) and takes the rest from the log, ends with the same batches as
 * the others, and then serves as a full replica: with the old leader stopped, it and the third broker elect a leader
 * and every acknowledged record is read back once, in order.
 */
class WipedNodeRebuildTest {

    /** Small snapshots and log segments, so the leader's log is purged well past where the wiped broker stopped. */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(100, 8192);

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];

    private void start(int id) throws IOException {
        StoreConfig store = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
        brokers[id] = ClusterBroker.start(dir.resolve("b" + id), cluster, id, store, BrokerConfig.defaults(), TUNING);
    }

    private void stop(int id) throws IOException {
        if (brokers[id] != null) {
            brokers[id].close();
            brokers[id] = null;
        }
    }

    @AfterEach
    void stopAll() throws IOException {
        for (int id = 1; id <= 3; id++) {
            stop(id);
        }
    }

    private static void await(String what, int seconds, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within " + seconds + " s: " + what);
            }
            Thread.sleep(50);
        }
    }

    private int leaderOf(String topic) throws InterruptedException {
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

    /** Three brokers and topic w: one partition, replication factor 3. */
    private void startWithTopic() throws Exception {
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster));
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("w", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return TestClusters.idempotentProducer(TestClusters.bootstrap(cluster), 120_000, 30_000);
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, List<String> sent, int from, int to)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < to; i++) {
            futures.add(producer.send(new ProducerRecord<>("w", 0, null, ("w-" + i).getBytes(StandardCharsets.UTF_8))));
            if (i % 10 == 9) {
                // Small batches: many Raft entries, so snapshots are taken and the log purged.
                producer.flush();
            }
        }
        for (int i = 0; i < futures.size(); i++) {
            futures.get(i).get(120, TimeUnit.SECONDS);
            sent.add("w-" + (from + i));
        }
    }

    /** @return the partition's batches in a store, below {@code end} */
    private static List<byte[]> batches(Store store, long end) {
        List<byte[]> all = new ArrayList<>();
        long offset = store.minOffset("w", 0);
        while (offset < end) {
            try (ReadResult read = store.read("w", 0, offset, 100, 1 << 20)) {
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

    private static void assertSameBatches(Store held, Store leader, long end) {
        List<byte[]> expected = batches(leader, end);
        List<byte[]> actual = batches(held, end);
        assertThat(actual).as("the replica's batches below %d", end).hasSameSizeAs(expected);
        for (int i = 0; i < expected.size(); i++) {
            assertThat(actual.get(i)).as("batch %d", i).isEqualTo(expected.get(i));
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path path : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(path);
            }
        }
    }

    @Test
    void aBrokerWhoseDataDirectoryWasWipedRebuildsFromTheOthersAndServesAsAReplica() throws Exception {
        startWithTopic();
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, sent, 0, 1_000);

            // A follower loses its whole data directory.
            int leader = leaderOf("w");
            int wiped = leader % 3 + 1;
            stop(wiped);
            deleteTree(dir.resolve("b" + wiped));
            send(producer, sent, 1_000, 3_000);
            ReplicatedPartition leading = brokers[leader].node().partition(new ClusterNode.PartitionId("w", 0));
            await("the leader's log purged", 30, () -> leading.division().getRaftLog().getStartIndex() > 0);

            // It comes back empty, and the cluster goes on taking records while it rebuilds.
            start(wiped);
            send(producer, sent, 3_000, 3_500);
            int back = wiped;
            await("the rebuilt broker in sync", 90, () -> brokers[leader].node().partition("w", 0).inSync()
                    .contains(back));
            await("the rejoin finished", 60, () -> Files.notExists(dir.resolve("b" + back).resolve("raft")
                    .resolve(ClusterNode.REJOIN_FILE)));
            ReplicatedPartition rebuilt = brokers[wiped].node().partition(new ClusterNode.PartitionId("w", 0));
            assertThat(rebuilt.machine().snapshotsInstalled()).as("snapshots the rebuilt broker installed")
                    .isPositive();
            long end = leading.highWatermark();
            await("the rebuilt broker committed to " + end, 30, () -> rebuilt.highWatermark() >= end);
            assertSameBatches(brokers[wiped].store(), brokers[leader].store(), end);

            // It is a full replica: with the leader gone, it and the third broker take acknowledged records on.
            stop(leader);
            send(producer, sent, 3_500, 4_000);
        }

        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster));
        consumerProperties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition partition = new TopicPartition("w", 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read.size() < sent.size() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    read.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        assertThat(read).as("every acknowledged record once, in order").isEqualTo(sent);
    }

    /**
     * A node stopped while rejoining starts with its groups (partly caught up) and the rejoin marker: it goes on, each
     * group out of the configuration and back (Ratis shuts down a member out of the configuration that stands for
     * election; it is started again, empty), and ends in sync with the marker gone.
     */
    @Test
    void aRejoinResumedAfterARestartFinishes() throws Exception {
        startWithTopic();
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            send(producer, sent, 0, 500);
            int leader = leaderOf("w");
            int resumed = leader % 3 + 1;
            stop(resumed);
            Path marker = dir.resolve("b" + resumed).resolve("raft").resolve(ClusterNode.REJOIN_FILE);
            Files.writeString(marker, "rejoining\n");
            send(producer, sent, 500, 1_000);
            start(resumed);
            send(producer, sent, 1_000, 1_500);
            await("the resumed broker in sync", 90, () -> brokers[leader].node().partition("w", 0).inSync()
                    .contains(resumed));
            await("the rejoin finished", 60, () -> Files.notExists(marker));
            ReplicatedPartition leading = brokers[leader].node().partition(new ClusterNode.PartitionId("w", 0));
            ReplicatedPartition back = brokers[resumed].node().partition(new ClusterNode.PartitionId("w", 0));
            long end = leading.highWatermark();
            await("the resumed broker committed to " + end, 30, () -> back.highWatermark() >= end);
            assertSameBatches(brokers[resumed].store(), brokers[leader].store(), end);
        }
    }
}
