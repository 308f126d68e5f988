package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Compaction on a cluster of three: each replica compacts its own log (below what its Raft log still names), and
 * every replica keeps the latest record of each key; a wiped replica copies the compacted leader's batches, gaps and
 * all, and once the leader is gone the others serve the same latest records. A follower knows its replica's
 * transactions as its log has them: it cleans an aborted transaction's records away, not the committed records of
 * their keys.
 */
@Timeout(value = 5, unit = TimeUnit.MINUTES)
class ClusterCompactionTest {

    /** Small snapshots and Raft log segments, so that each replica's log is purged and its store can compact. */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(100, 8192, 1);
    private static final int KEYS = 200;
    private static final String PADDING = "x".repeat(400);

    @TempDir
    Path dir;

    private static StoreConfig store(int node) {
        return StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC)
                .segmentSizeBytes(1 << 20).maxMessageBytes(256 * 1024).build();
    }

    /** @return the value of each key's latest record in a store's partition 0 of {@code topic} (null: a tombstone) */
    private static Map<String, String> latestIn(Store store, String topic) {
        Map<String, String> latest = new HashMap<>();
        for (byte[] batch : InProcessCluster.batches(store, topic, store.nextOffset(topic, 0))) {
            for (RecordBatch each : MemoryRecords.readableRecords(ByteBuffer.wrap(batch)).batches()) {
                for (Record record : each) {
                    latest.put(StandardCharsets.UTF_8.decode(record.key()).toString(),
                            record.hasValue() ? StandardCharsets.UTF_8.decode(record.value()).toString() : null);
                }
            }
        }
        return latest;
    }

    /**
     * @return the value of each key's latest record in a store's partition 0 of {@code topic}, among the batches of no
     *     transaction
     */
    private static Map<String, String> latestOutsideTransactionsIn(Store store, String topic) {
        Map<String, String> latest = new HashMap<>();
        for (byte[] batch : InProcessCluster.batches(store, topic, store.nextOffset(topic, 0))) {
            for (RecordBatch each : MemoryRecords.readableRecords(ByteBuffer.wrap(batch)).batches()) {
                if (!each.isTransactional()) {
                    for (Record record : each) {
                        latest.put(StandardCharsets.UTF_8.decode(record.key()).toString(),
                                StandardCharsets.UTF_8.decode(record.value()).toString());
                    }
                }
            }
        }
        return latest;
    }

    private static Map<String, String> latestRead(String bootstrap, String topic) {
        return latestRead(bootstrap, topic, "read_uncommitted");
    }

    private static Map<String, String> latestRead(String bootstrap, String topic, String isolation) {
        TopicPartition p0 = new TopicPartition(topic, 0);
        Map<String, String> latest = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                "earliest", ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation), new StringDeserializer(),
                new StringDeserializer())) {
            consumer.assign(List.of(p0));
            long end = consumer.endOffsets(List.of(p0), Duration.ofSeconds(60)).get(p0);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (consumer.position(p0, Duration.ofSeconds(60)) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(record.key(), record.value());
                }
            }
            assertThat(consumer.position(p0)).isEqualTo(end);
        }
        return latest;
    }

    /**
     * @return an acks=all producer's settings with one request in flight: each batch then goes to the partition's Raft
     *     log as an entry of its own, hundreds of them, so that each replica snapshots (every 100 entries) and purges
     *     its log, below which it compacts. With requests in flight the leader puts the batches that arrive meanwhile
     *     in one entry, and how many entries a run writes depends on its speed.
     */
    private static Properties oneRequestAtATime(String bootstrap) {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        properties.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        return properties;
    }


    @Test
    void everyReplicaCompactsItsOwnLogAndServesTheLatestRecordOfEachKey() throws Exception {
        BrokerConfig brokers = BrokerConfig.defaults().withCleaner(CleanerSettings.DEFAULTS.withBackoffMillis(200));
        try (InProcessCluster cluster = new InProcessCluster(dir, TUNING, ClusterCompactionTest::store)
                .withBrokerConfig(brokers)) {
            cluster.startAll();
            cluster.awaitMembers();
            String bootstrap = cluster.bootstrap();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
                admin.createTopics(List.of(new NewTopic("c", 1, (short) 3).configs(Map.of("cleanup.policy",
                        "compact", "min.cleanable.dirty.ratio", "0.01")))).all().get(60, TimeUnit.SECONDS);
            }
            Map<String, String> expected = new HashMap<>();
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(oneRequestAtATime(bootstrap),
                    new StringSerializer(), new StringSerializer())) {
                List<Future<RecordMetadata>> sent = new ArrayList<>();
                for (int i = 0; i < 20_000; i++) {
                    String key = "k" + (i % KEYS);
                    String value = "v" + i + PADDING;
                    expected.put(key, value);
                    sent.add(producer.send(new ProducerRecord<>("c", 0, key, value)));
                }
                for (Future<RecordMetadata> each : sent) {
                    each.get(120, TimeUnit.SECONDS);
                }
            }
            int leader = cluster.leaderOf("c");
            long end = cluster.broker(leader).store().nextOffset("c", 0);
            for (int id = 1; id <= 3; id++) {
                Store replica = cluster.broker(id).store();
                await("node " + id + " compacted a quarter at least", 90,
                        () -> records(replica, "c", "k") < 20_000 * 3 / 4);
                assertThat(latestIn(replica, "c")).as("node %d's latest records", id).isEqualTo(expected);
            }
            assertThat(latestRead(bootstrap, "c")).isEqualTo(expected);

            // A follower loses its data: it copies the compacted leader's batches, gaps and all.
            int wiped = leader % 3 + 1;
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            cluster.start(wiped);
            int back = wiped;
            await("the wiped broker in sync", 120, () -> cluster.broker(leader).node().partition("c", 0).inSync()
                    .contains(back));
            await("the wiped broker committed to " + end, 60, () -> {
                try {
                    return cluster.replica(back, "c").highWatermark() >= end;
                } catch (Exception notYet) {
                    return false; // its replica of the partition rejoins the group
                }
            });
            assertThat(cluster.replica(back, "c").machine().snapshotsInstalled()).as("snapshots it installed")
                    .isPositive();
            assertThat(cluster.broker(wiped).store().nextOffset("c", 0)).isGreaterThanOrEqualTo(end);
            assertThat(latestIn(cluster.broker(wiped).store(), "c")).as("the wiped broker's latest records")
                    .isEqualTo(expected);

            // The leader goes: the others serve the same latest records.
            cluster.stop(leader);
            assertThat(latestRead(cluster.bootstrap(), "c")).isEqualTo(expected);
        }
    }

    /** @return the records of a store's partition 0 of {@code topic} whose key starts with {@code prefix} */
    private static long records(Store store, String topic, String prefix) {
        long records = 0;
        for (byte[] batch : InProcessCluster.batches(store, topic, store.nextOffset(topic, 0))) {
            for (RecordBatch each : MemoryRecords.readableRecords(ByteBuffer.wrap(batch)).batches()) {
                for (Record record : each) {
                    if (StandardCharsets.UTF_8.decode(record.key()).toString().startsWith(prefix)) {
                        records++;
                    }
                }
            }
        }
        return records;
    }

    /** @return the values without their {@link #PADDING}, for a failure's message to show */
    private static Map<String, String> unpadded(Map<String, String> values) {
        Map<String, String> shown = new HashMap<>();
        values.forEach((key, value) -> shown.put(key, value == null ? null : value.replace(PADDING, "")));
        return shown;
    }

    private static void createCompacted(String bootstrap, String topic) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 3).configs(Map.of("cleanup.policy",
                    "compact", "min.cleanable.dirty.ratio", "0.01")))).all().get(60, TimeUnit.SECONDS);
        }
    }

    /**
     * Produces {@code count} updates over {@link #KEYS} keys {@code <prefix><n>}; each key's latest value goes into
     * {@code latest}.
     */
    private static void update(String bootstrap, String topic, String prefix, int count, Map<String, String> latest)
            throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(oneRequestAtATime(bootstrap),
                new StringSerializer(), new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String key = prefix + (i % KEYS);
                String value = "v" + i + PADDING;
                latest.put(key, value);
                sent.add(producer.send(new ProducerRecord<>(topic, 0, key, value)));
            }
            for (Future<RecordMetadata> each : sent) {
                each.get(120, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A follower takes its batches from its Raft log, not through its broker's appends: its cleaner must read its
     * replica's transactions from its log. Here each follower's cleaner first looks at the partition before any
     * transaction, then a transaction overwrites every key and aborts: the follower drops the aborted records and keeps
     * the committed ones before them, as the leader does, and a read_committed consumer reads them once a follower
     * leads. (Its cleaner took the partition's transactions as they were at its first look, none: it kept the aborted
     * records as their keys' latest and dropped the committed ones.)
     */
    @Test
    void aFollowerCleansAnAbortedTransactionAwayAndKeepsTheCommittedRecordsItOverwrote() throws Exception {
        BrokerConfig brokers = BrokerConfig.defaults().withCleaner(new CleanerSettings(false, 15_000, 1 << 20,
                Double.MAX_VALUE));
        try (InProcessCluster cluster = new InProcessCluster(dir, TUNING, ClusterCompactionTest::store)
                .withBrokerConfig(brokers)) {
            cluster.startAll();
            cluster.awaitMembers();
            String bootstrap = cluster.bootstrap();
            createCompacted(bootstrap, "a");
            Map<String, String> expected = new HashMap<>();
            update(bootstrap, "a", "k", 2_000, expected);
            for (int id = 1; id <= 3; id++) {
                Store replica = cluster.broker(id).store();
                await("node " + id + " holds the first updates", 30, () -> replica.nextOffset("a", 0) >= 2_000);
                cluster.broker(id).cleaner().cleanRound(); // its cleaner looks at the partition, dirty now
            }
            Properties properties = new Properties();
            properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "overwriter");
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
                    new StringSerializer())) {
                producer.initTransactions();
                producer.beginTransaction();
                for (int k = 0; k < KEYS; k++) {
                    producer.send(new ProducerRecord<>("a", 0, "k" + k, "aborted" + PADDING));
                }
                producer.flush(); // in the log, then aborted
                producer.abortTransaction();
            }
            // Keys of their own past the abort: sealed segments to compact, and Raft entries enough for snapshots.
            update(bootstrap, "a", "f", 20_000, expected);
            for (int id = 1; id <= 3; id++) {
                ClusterBroker broker = cluster.broker(id);
                Store replica = broker.store();
                // Below the first batch its Raft log names: the first updates and the transaction, at least.
                await("node " + id + " compacted the first updates and the transaction", 90, () -> {
                    broker.cleaner().cleanRound();
                    return records(replica, "a", "k") < 2_200 / 2;
                });
                assertThat(unpadded(latestOutsideTransactionsIn(replica, "a"))).as("node %d's committed records", id)
                        .containsExactlyInAnyOrderEntriesOf(unpadded(expected));
            }
            cluster.stop(cluster.leaderOf("a"));
            assertThat(unpadded(latestRead(cluster.bootstrap(), "a", "read_committed"))).as("read from a follower led")
                    .isEqualTo(unpadded(expected));
        }
    }
}
