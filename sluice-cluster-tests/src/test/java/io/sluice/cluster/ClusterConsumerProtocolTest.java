package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A KIP-848 consumer group (group.protocol=consumer) on three brokers: two members of Kafka 4.3.1's consumer share a
 * topic's partitions through the controller, which coordinates groups; the controller is stopped while they read,
 * the members find the next one, which takes them over as they were (membership lives in the coordinator's memory;
 * their full heartbeats tell it) without failing a fetch or commit of theirs, they read every record, and the offsets
 * they committed are the cluster's.
 */
class ClusterConsumerProtocolTest {

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];

    private void startThree() throws Exception {
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            StoreConfig store = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
            brokers[id] = ClusterBroker.start(dir.resolve("b" + id), cluster, id, store, BrokerConfig.defaults());
        }
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("node " + node + " applied the three members", 60,
                    () -> brokers[node].node().members().equals(Set.of(1, 2, 3)));
        }
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
        TestClusters.assertNoRaftThreadsLeft();
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster)));
    }

    private void produce(int from, int to) throws Exception {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster));
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(properties, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = from; i < to; i++) {
                futures.add(producer.send(new ProducerRecord<>("events", ("e-" + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (Future<RecordMetadata> future : futures) {
                future.get(90, TimeUnit.SECONDS);
            }
        }
    }

    /** Partitions the members lost (fenced, or their session over), counted by their rebalance listeners. */
    private final java.util.concurrent.atomic.AtomicInteger lost = new java.util.concurrent.atomic.AtomicInteger();

    private Thread member(Set<String> seen, AtomicBoolean stop, AtomicReference<Throwable> failure) {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster));
        properties.put(ConsumerConfig.GROUP_ID_CONFIG, "g");
        properties.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        properties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return Thread.ofPlatform().start(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.subscribe(List.of("events"), new org.apache.kafka.clients.consumer.ConsumerRebalanceListener() {
                    @Override
                    public void onPartitionsRevoked(java.util.Collection<TopicPartition> partitions) {
                    }

                    @Override
                    public void onPartitionsAssigned(java.util.Collection<TopicPartition> partitions) {
                    }

                    @Override
                    public void onPartitionsLost(java.util.Collection<TopicPartition> partitions) {
                        lost.addAndGet(partitions.size());
                    }
                });
                while (!stop.get()) {
                    var records = consumer.poll(Duration.ofMillis(200));
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        seen.add(new String(record.value(), StandardCharsets.UTF_8));
                    }
                    if (!records.isEmpty()) {
                        try {
                            consumer.commitSync(Duration.ofSeconds(30));
                        } catch (org.apache.kafka.common.KafkaException e) {
                            // A commit in flight when the coordinator went: its records come again; not a failure.
                        }
                    }
                }
                // What it read last, should its last commit in the loop have failed (its records are not read again
                // when it keeps its partitions): as an application commits on its way out.
                consumer.commitSync(Duration.ofSeconds(30));
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    /** @return group "g" as the admin client describes it, or null if it could not (a coordinator moving) */
    private static ConsumerGroupDescription describe(Admin admin) {
        try {
            return admin.describeConsumerGroups(List.of("g")).all().get(20, TimeUnit.SECONDS).get("g");
        } catch (java.util.concurrent.ExecutionException | java.util.concurrent.TimeoutException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }

    @Test
    void membersOutliveTheirCoordinatorAndReadEveryRecord() throws Exception {
        startThree();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("events", 4, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        produce(0, 2_000);
        Set<String> seen = ConcurrentHashMap.newKeySet();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> members = List.of(member(seen, stop, failure), member(seen, stop, failure));
        int coordinator;
        try (Admin admin = admin()) {
            InProcessCluster.await("the two members share the partitions", 60, () -> {
                ConsumerGroupDescription group = describe(admin);
                return group != null && group.type() == GroupType.CONSUMER && group.groupState() == GroupState.STABLE
                        && group.members().size() == 2
                        && group.members().stream().allMatch(m -> m.assignment().topicPartitions().size() == 2);
            });
            coordinator = admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id();
        }
        stop(coordinator);
        produce(2_000, 4_000);
        InProcessCluster.await("every record read", 120, () -> seen.size() == 4_000 || failure.get() != null);
        assertThat(failure.get()).isNull();
        for (int i = 0; i < 4_000; i++) {
            assertThat(seen).contains("e-" + i);
        }
        try (Admin admin = admin()) {
            // Both members are the new coordinator's, and committed there.
            InProcessCluster.await("the group stable again on the new coordinator", 60, () -> {
                ConsumerGroupDescription group = describe(admin);
                return group != null && group.groupState() == GroupState.STABLE && group.members().size() == 2
                        && group.coordinator().id() != coordinator;
            });
            stop.set(true);
            for (Thread member : members) {
                member.join(60_000);
            }
            assertThat(failure.get()).as("the members' last commits").isNull();
            assertThat(lost.get()).as("partitions lost: the new coordinator took the members over as they were")
                    .isZero();
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g")
                    .partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS);
            assertThat(committed.values().stream().mapToLong(OffsetAndMetadata::offset).sum())
                    .as("every record committed").isEqualTo(4_000);
        }
    }
}
