package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.FlushMode;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.IOException;
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
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three brokers of one cluster in this JVM, each with its store, Raft node and Kafka listener on 127.0.0.1, serve stock
 * Kafka clients: a topic created through one is known to all with replication factor 3, each partition led by one
 * broker; an idempotent acks=all producer's records are all read back once, in order, also after the broker leading a
 * partition is stopped and the producer moved to the new leader by itself.
 */
class ClusterBrokersTest {

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];

    private void start(int id) throws IOException {
        StoreConfig store = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
        brokers[id] = ClusterBroker.start(dir.resolve("b" + id), cluster, id, store, BrokerConfig.defaults());
    }

    /**
     * Starts three brokers and waits until each has applied the record of all three taking part: a topic created
     * before some node's record makes a node whose join comes later take itself for one that lost its data, and
     * rejoin (out of its groups' configurations until caught up).
     */
    private void startThree() throws Exception {
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("node " + node + " applied the three members", 60,
                    () -> brokers[node].node().members().equals(java.util.Set.of(1, 2, 3)));
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

    private String bootstrap() {
        return TestClusters.bootstrap(cluster);
    }

    /** A cluster broker's store is known as one (the command-line tools refuse to change it outside the broker). */
    @Test
    void aClusterBrokersStoreNamesItsNode() throws Exception {
        startThree();
        assertThat(ClusterBroker.nodeOwning(dir.resolve("b2").resolve("store")))
                .hasValueSatisfying(node -> assertThat(node).contains("node.id=2"));
        assertThat(ClusterBroker.nodeOwning(dir.resolve("b2").resolve("raft"))).isEmpty();
        assertThat(ClusterBroker.nodeOwning(dir.resolve("elsewhere").resolve("store"))).isEmpty();
    }

    @Test
    void stockClientsProduceAndConsumeThroughALeaderFailover() throws Exception {
        startThree();
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 3))).all().get(60, TimeUnit.SECONDS);
            TopicDescription description = admin.describeTopics(List.of("orders")).allTopicNames()
                    .get(30, TimeUnit.SECONDS).get("orders");
            assertThat(description.partitions()).hasSize(3);
            for (TopicPartitionInfo partition : description.partitions()) {
                assertThat(partition.replicas()).hasSize(3);
            }
        }

        Map<Integer, List<String>> sent = new HashMap<>();
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(bootstrap(), 120_000, 30_000)) {
            send(producer, sent, 0, 3_000);
            // Stop the broker leading partition 0.
            int leader = -1;
            for (int id = 1; id <= 3; id++) {
                if (brokers[id].node().leads("orders", 0)) {
                    leader = id;
                }
            }
            assertThat(leader).as("a leader of orders-0").isPositive();
            stop(leader);
            send(producer, sent, 3_000, 6_000);
        }

        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        consumerProperties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = List.of(new TopicPartition("orders", 0),
                    new TopicPartition("orders", 1), new TopicPartition("orders", 2));
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<Integer, List<String>> read = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            int total = 0;
            while (total < 6_000 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    read.computeIfAbsent(record.partition(), p -> new ArrayList<>())
                            .add(new String(record.value(), StandardCharsets.UTF_8));
                    total++;
                }
            }
            for (int p = 0; p < 3; p++) {
                assertThat(read.getOrDefault(p, List.of())).as("partition %d: every record once, in order", p)
                        .isEqualTo(sent.getOrDefault(p, List.of()));
            }
        }
    }

    /**
     * Topics of replication factor 1 and 2 on three brokers: a client that knows only a broker without a replica of the
     * partition (Metadata goes to the least loaded broker it is connected to, which may be that one each time) learns
     * the leader from it, produces acks=all and reads every record back through it; Admin, asked there, names the
     * leader too.
     */
    @Test
    void aTopicOnFewerBrokersThanTheClusterServesClientsThatKnowOnlyABrokerWithoutAReplica() throws Exception {
        startThree();
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("one", 1, (short) 1), new NewTopic("two", 1, (short) 2))).all()
                    .get(60, TimeUnit.SECONDS);
        }
        for (String topic : List.of("one", "two")) {
            List<Integer> replicas = brokers[1].node().replicasOf(topic, 0);
            assertThat(replicas).as("%s's replicas", topic).hasSize(topic.equals("one") ? 1 : 2);
            ClusterSpec.Node outside = cluster.nodes().stream().filter(node -> !replicas.contains(node.id()))
                    .findFirst().orElseThrow();
            String only = outside.host() + ":" + outside.clientPort();
            Properties askOutside = new Properties();
            askOutside.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, only);
            // A new partition's leader hands over to the preferred replica (PreferredLeaders): wait for that one.
            int leader = replicas.getFirst();
            InProcessCluster.await(topic + " led by its preferred replica", 30,
                    () -> brokers[leader].node().leads(topic, 0));
            try (Admin admin = Admin.create(askOutside)) {
                // The first question this broker is asked about the partition is answered with its leader.
                TopicPartitionInfo info = admin.describeTopics(List.of(topic)).allTopicNames()
                        .get(30, TimeUnit.SECONDS).get(topic).partitions().getFirst();
                assertThat(info.leader()).as("%s's leader as broker %d first names it", topic, outside.id())
                        .isNotNull();
                assertThat(info.leader().id()).as("%s's leader as broker %d first names it", topic, outside.id())
                        .isEqualTo(leader);
            }
            List<String> sent = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(only, 30_000, 10_000)) {
                List<Future<RecordMetadata>> futures = new ArrayList<>();
                for (int i = 0; i < 500; i++) {
                    sent.add(topic + "-" + i);
                    futures.add(producer.send(new ProducerRecord<>(topic, (topic + "-" + i)
                            .getBytes(StandardCharsets.UTF_8))));
                }
                for (Future<RecordMetadata> future : futures) {
                    future.get(60, TimeUnit.SECONDS);
                }
            }
            Properties consumerProperties = new Properties();
            consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, only);
            consumerProperties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                    new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                consumer.assign(List.of(new TopicPartition(topic, 0)));
                List<String> read = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (read.size() < sent.size() && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        read.add(new String(record.value(), StandardCharsets.UTF_8));
                    }
                }
                assertThat(read).as("%s read back through broker %d", topic, outside.id()).isEqualTo(sent);
            }
        }
    }

    /**
     * A consumer group commits, the broker coordinating it (the controller) is stopped, and the group's next member
     * starts at exactly the committed offsets, from the new coordinator, and reads the rest: at-least-once, with
     * committed offsets honoured.
     */
    @Test
    void committedGroupOffsetsOutliveTheirCoordinator() throws Exception {
        startThree();
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("events", 3, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        Properties producerProperties = new Properties();
        producerProperties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        producerProperties.put(ProducerConfig.ACKS_CONFIG, "all");
        List<String> all = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties,
                new ByteArraySerializer(), new ByteArraySerializer())) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (int i = 0; i < 3_000; i++) {
                all.add("e-" + i);
                futures.add(producer.send(new ProducerRecord<>("events", ("e-" + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (Future<RecordMetadata> future : futures) {
                future.get(60, TimeUnit.SECONDS);
            }
        }

        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        consumerProperties.put(ConsumerConfig.GROUP_ID_CONFIG, "g");
        consumerProperties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerProperties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        consumerProperties.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 100);
        List<String> before = new ArrayList<>();
        Map<TopicPartition, Long> committed = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("events"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (before.size() < 1_500 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    before.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
            consumer.commitSync(Duration.ofSeconds(30));
            for (TopicPartition partition : consumer.assignment()) {
                committed.put(partition, consumer.position(partition));
            }
        }
        assertThat(before).hasSizeGreaterThanOrEqualTo(1_500);

        int coordinator;
        try (Admin admin = Admin.create(adminProperties)) {
            coordinator = admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id();
        }
        stop(coordinator);

        List<String> after = new ArrayList<>();
        Map<TopicPartition, Long> firstRead = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.subscribe(List.of("events"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (before.size() + after.size() < all.size() && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    firstRead.putIfAbsent(new TopicPartition(record.topic(), record.partition()), record.offset());
                    after.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        for (Map.Entry<TopicPartition, Long> first : firstRead.entrySet()) {
            assertThat(first.getValue()).as("first offset read from %s after the coordinator moved", first.getKey())
                    .isEqualTo(committed.getOrDefault(first.getKey(), 0L));
        }
        List<String> union = new ArrayList<>(before);
        union.addAll(after);
        assertThat(union).as("every record once: nothing read again, nothing skipped").containsExactlyInAnyOrderElementsOf(all);
    }

    /**
     * A group deleted through its coordinator is gone from every broker's store, so the next coordinator does not
     * bring its offsets back; a commit after the deletion counts again everywhere.
     */
    @Test
    void aDeletedGroupStaysDeletedWhenItsCoordinatorMoves() throws Exception {
        startThree();
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        TopicPartition partition = new TopicPartition("events", 0);
        int coordinator;
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("events", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            admin.alterConsumerGroupOffsets("gone", Map.of(partition, new OffsetAndMetadata(5)))
                    .all().get(30, TimeUnit.SECONDS);
            admin.alterConsumerGroupOffsets("kept", Map.of(partition, new OffsetAndMetadata(7)))
                    .all().get(30, TimeUnit.SECONDS);
            awaitPositions(List.of("gone", "kept"));
            admin.deleteConsumerGroups(List.of("gone")).all().get(30, TimeUnit.SECONDS);
            awaitPositions(List.of("kept"));
            coordinator = admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id();
        }
        stop(coordinator);
        try (Admin admin = Admin.create(adminProperties)) {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Map<TopicPartition, OffsetAndMetadata> kept = Map.of();
            while (kept.isEmpty() && System.nanoTime() < deadline) {
                try {
                    kept = admin.listConsumerGroupOffsets("kept").partitionsToOffsetAndMetadata()
                            .get(10, TimeUnit.SECONDS);
                } catch (java.util.concurrent.ExecutionException e) {
                    Thread.sleep(200); // the next coordinator is being elected
                }
            }
            assertThat(kept).as("the group not deleted, from the next coordinator")
                    .containsEntry(partition, new OffsetAndMetadata(7));
            assertThat(admin.listConsumerGroupOffsets("gone").partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS))
                    .as("the deleted group, from the next coordinator").isEmpty();
            admin.alterConsumerGroupOffsets("gone", Map.of(partition, new OffsetAndMetadata(11)))
                    .all().get(30, TimeUnit.SECONDS);
            assertThat(admin.listConsumerGroupOffsets("gone").partitionsToOffsetAndMetadata().get(30, TimeUnit.SECONDS))
                    .containsEntry(partition, new OffsetAndMetadata(11));
        }
    }

    /**
     * A replicated topic gains partitions through Kafka's Admin: every broker hosts its replicas of the new ones, which
     * elect leaders and take records; a count not larger than the topic's is refused; a broker restarted keeps them.
     */
    @Test
    void aReplicatedTopicGainsPartitionsThatEveryBrokerHosts() throws Exception {
        startThree();
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic("grows", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            admin.createPartitions(Map.of("grows", NewPartitions.increaseTo(3))).all().get(60, TimeUnit.SECONDS);
            // The broker that answered has applied the change; the others apply it soon after.
            long applied = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < applied && !java.util.stream.IntStream.rangeClosed(1, 3)
                    .allMatch(id -> brokers[id].store().queueCount("grows") == 3)) {
                Thread.sleep(20);
            }
            for (int id = 1; id <= 3; id++) {
                assertThat(brokers[id].store().queueCount("grows")).as("partitions in node %d's store", id)
                        .isEqualTo(3);
            }
            assertThatThrownBy(() -> admin.createPartitions(Map.of("grows", NewPartitions.increaseTo(2))).all()
                    .get(30, TimeUnit.SECONDS)).hasCauseInstanceOf(InvalidPartitionsException.class);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            List<TopicPartitionInfo> partitions = List.of();
            while (System.nanoTime() < deadline) {
                partitions = admin.describeTopics(List.of("grows")).allTopicNames().get(30, TimeUnit.SECONDS)
                        .get("grows").partitions();
                if (partitions.size() == 3 && partitions.stream().allMatch(info -> info.leader() != null
                        && info.leader().id() >= 1 && info.isr().size() == 3)) {
                    break;
                }
                Thread.sleep(100);
            }
            assertThat(partitions).hasSize(3).allSatisfy(info -> {
                assertThat(info.replicas()).hasSize(3);
                assertThat(info.isr()).hasSize(3);
            });
        }
        Properties producerProperties = new Properties();
        producerProperties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        producerProperties.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties,
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int p = 0; p < 3; p++) {
                RecordMetadata written = producer.send(new ProducerRecord<>("grows", p, null,
                        ("to-" + p).getBytes(StandardCharsets.UTF_8))).get(60, TimeUnit.SECONDS);
                assertThat(written.partition()).isEqualTo(p);
                assertThat(written.offset()).isZero();
            }
        }
        stop(2);
        start(2);
        assertThat(brokers[2].store().queueCount("grows")).as("after a restart").isEqualTo(3);
        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        consumerProperties.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            List<TopicPartition> all = List.of(new TopicPartition("grows", 0), new TopicPartition("grows", 1),
                    new TopicPartition("grows", 2));
            consumer.assign(all);
            List<String> read = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read.size() < 3 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    assertThat(new String(record.value(), StandardCharsets.UTF_8)).isEqualTo("to-" + record.partition());
                    read.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
            assertThat(read).containsExactlyInAnyOrder("to-0", "to-1", "to-2");
        }
    }

    /** Waits until the store of every running broker has committed offsets of exactly these groups (store names). */
    private void awaitPositions(List<String> groups) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (true) {
            Map<Integer, List<String>> held = new HashMap<>();
            for (int id = 1; id <= 3; id++) {
                if (brokers[id] != null) {
                    held.put(id, brokers[id].store().consumerPositions().stream().map(ConsumerPosition::group)
                            .distinct().sorted().toList());
                }
            }
            if (held.values().stream().allMatch(groups::equals) || System.nanoTime() > deadline) {
                assertThat(held).as("each broker's groups with committed offsets").allSatisfy((id, names) ->
                        assertThat(names).containsExactlyElementsOf(groups));
                return;
            }
            Thread.sleep(50);
        }
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, Map<Integer, List<String>> sent, int from, int to)
            throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        List<String> values = new ArrayList<>();
        for (int i = from; i < to; i++) {
            String value = "record-" + i;
            values.add(value);
            futures.add(producer.send(new ProducerRecord<>("orders", null,
                    ("k" + i).getBytes(StandardCharsets.UTF_8), value.getBytes(StandardCharsets.UTF_8))));
        }
        for (int i = 0; i < futures.size(); i++) {
            RecordMetadata metadata = futures.get(i).get(120, TimeUnit.SECONDS);
            sent.computeIfAbsent(metadata.partition(), p -> new ArrayList<>()).add(values.get(i));
        }
    }
}
