package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupNotEmptyException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The classic consumer-group protocol with stock Kafka consumers: members joining and leaving under load, every
 * record delivered at least once, committed offsets honoured, kept as store consumer positions across a restart,
 * and the groups as Kafka's admin client sees them.
 */
class ConsumerGroupTest {

    private static final int PARTITIONS = 6;

    @TempDir
    Path dir;

    private static KafkaConsumer<byte[], byte[]> member(Broker broker, String group) {
        return new KafkaConsumer<>(memberConfig(broker, group, 10_000), new ByteArrayDeserializer(),
                new ByteArrayDeserializer());
    }

    /** Manual commits, from the earliest offset, heartbeats every 300 ms. */
    private static Map<String, Object> memberConfig(Broker broker, String group, int sessionTimeoutMs) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.HEARTBEAT_INTERVAL_MS_CONFIG, 300);
        config.put(ConsumerConfig.SESSION_TIMEOUT_MS_CONFIG, sessionTimeoutMs);
        return config;
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()));
    }

    private static long key(ConsumerRecord<?, ?> record) {
        return ((long) record.partition() << 40) | record.offset();
    }

    /** A member polling and committing after each poll until told to stop. */
    private static Thread runMember(Broker broker, String group, Set<Long> seen, AtomicBoolean stop,
                                    AtomicReference<Throwable> failure) {
        return Thread.ofPlatform().start(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer = member(broker, group)) {
                consumer.subscribe(List.of("events"));
                while (!stop.get()) {
                    var records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        seen.add(key(record));
                    }
                    if (!records.isEmpty()) {
                        try {
                            consumer.commitSync();
                        } catch (org.apache.kafka.clients.consumer.CommitFailedException
                                 | org.apache.kafka.common.errors.RebalanceInProgressException e) {
                            // a rebalance took partitions away: their records come again to their next owner
                        }
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    @Test
    void membersJoiningAndLeavingUnderLoadGetEveryRecordAndCommittedOffsetsAreHonoured() throws Exception {
        int total = 30_000;
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "events", PARTITIONS);
            Set<Long> seen = ConcurrentHashMap.newKeySet();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<AtomicBoolean> stops = new ArrayList<>();
            List<Thread> members = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                stops.add(new AtomicBoolean());
                members.add(runMember(broker, "g", seen, stops.get(i), failure));
            }
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(ProduceFetchTest.producerConfig(broker,
                    "all", "none"), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < total; i++) {
                    producer.send(new ProducerRecord<>("events", i % PARTITIONS, null,
                            ("e" + i).getBytes(StandardCharsets.UTF_8)));
                    if (i == total / 3) {
                        // One member leaves, another joins, while records keep coming.
                        stops.get(0).set(true);
                        members.get(0).join(30_000);
                        stops.add(new AtomicBoolean());
                        members.add(runMember(broker, "g", seen, stops.getLast(), failure));
                    }
                    if (i % 5_000 == 0) {
                        Thread.sleep(50);
                    }
                }
                producer.flush();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen.size() < total && System.nanoTime() < deadline && failure.get() == null) {
                Thread.sleep(50);
            }
            // Let the last commits land before the members stop.
            Thread.sleep(500);
            stops.forEach(s -> s.set(true));
            for (Thread member : members) {
                member.join(30_000);
            }
            assertThat(failure.get()).isNull();
            assertThat(seen).as("every record delivered at least once").hasSize(total);

            try (Admin admin = admin(broker)) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g")
                        .partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
                for (int p = 0; p < PARTITIONS; p++) {
                    assertThat(committed.get(new TopicPartition("events", p)).offset())
                            .as("partition %d committed to its end", p).isEqualTo(total / PARTITIONS);
                }
                assertThat(admin.listGroups().all().get(20, TimeUnit.SECONDS)).extracting(GroupListing::groupId)
                        .contains("g");
                ConsumerGroupDescription description = admin.describeConsumerGroups(List.of("g")).all()
                        .get(20, TimeUnit.SECONDS).get("g");
                assertThat(description.groupState()).isEqualTo(GroupState.EMPTY);
            }
            // The group's offsets are the store's consumer positions.
            assertThat(store.consumerPositions()).filteredOn(p -> p.group().equals("g"))
                    .extracting(ConsumerPosition::nextOffset).containsOnly((long) total / PARTITIONS);

            // A new member of the group starts where the group left off.
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(ProduceFetchTest.producerConfig(broker,
                    "all", "none"), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 60; i++) {
                    producer.send(new ProducerRecord<>("events", i % PARTITIONS, null, "later".getBytes(StandardCharsets.UTF_8)));
                }
            }
            List<ConsumerRecord<byte[], byte[]>> later = new ArrayList<>();
            try (KafkaConsumer<byte[], byte[]> consumer = member(broker, "g")) {
                consumer.subscribe(List.of("events"));
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (later.size() < 60 && System.nanoTime() < until) {
                    consumer.poll(Duration.ofMillis(100)).forEach(later::add);
                }
            }
            assertThat(later).hasSize(60).allSatisfy(r -> {
                assertThat(r.offset()).isGreaterThanOrEqualTo(total / PARTITIONS);
                assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo("later");
            });
        }
    }

    @Test
    void committedOffsetsSurviveARestartAndEmptyGroupsCanBeDeleted() throws Exception {
        String group = "audit group/2";
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "events", 2);
            try (KafkaConsumer<byte[], byte[]> consumer = member(broker, group)) {
                consumer.assign(List.of(new TopicPartition("events", 0), new TopicPartition("events", 1)));
                consumer.commitSync(Map.of(new TopicPartition("events", 0), new OffsetAndMetadata(7),
                        new TopicPartition("events", 1), new OffsetAndMetadata(11)));
            }
            // A group id that is not a store name is kept under an escaped one.
            assertThat(store.consumerPositions()).extracting(ConsumerPosition::group).containsOnly("audit_20group_2F2");
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets(group)
                    .partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
            assertThat(committed.get(new TopicPartition("events", 0)).offset()).isEqualTo(7);
            assertThat(committed.get(new TopicPartition("events", 1)).offset()).isEqualTo(11);
            assertThat(admin.listGroups().all().get(20, TimeUnit.SECONDS)).extracting(GroupListing::groupId)
                    .containsExactly(group);

            // A group with a member cannot be deleted; once empty it can.
            try (KafkaConsumer<byte[], byte[]> consumer = member(broker, "busy")) {
                consumer.subscribe(List.of("events"));
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (consumer.assignment().isEmpty() && System.nanoTime() < until) {
                    consumer.poll(Duration.ofMillis(100));
                }
                assertThat(consumer.assignment()).isNotEmpty();
                assertThatThrownBy(() -> admin.deleteConsumerGroups(List.of("busy")).all().get(20, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(GroupNotEmptyException.class);
            }
            admin.deleteConsumerGroups(List.of(group)).all().get(20, TimeUnit.SECONDS);
            assertThat(store.consumerPositions()).isEmpty();
        }
    }

    private static KafkaConsumer<byte[], byte[]> staticMember(Broker broker, String group, String instance) {
        Map<String, Object> config = memberConfig(broker, group, 60_000);
        config.put(ConsumerConfig.GROUP_INSTANCE_ID_CONFIG, instance);
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static Set<TopicPartition> awaitAssignment(KafkaConsumer<byte[], byte[]> consumer, long seconds) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (consumer.assignment().isEmpty() && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(100));
        }
        return Set.copyOf(consumer.assignment());
    }

    /**
     * Static membership (group.instance.id): a member restarted under its instance id takes its place back at once,
     * with its partitions, while the group stays in its generation (no rebalance, the other member undisturbed);
     * without it the restarted member would wait for the old one's session (60 s here) to expire.
     */
    @Test
    void aStaticMemberRestartedUnderItsInstanceIdGetsItsPartitionsBackWithoutARebalance() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            store.createTopic("static", io.sluice.store.TopicLayout.QUEUE, 2);
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicReference<Integer> otherGeneration = new AtomicReference<>();
            KafkaConsumer<byte[], byte[]> first = staticMember(broker, "s", "a");
            first.subscribe(List.of("static"));
            java.util.concurrent.CountDownLatch otherAssigned = new java.util.concurrent.CountDownLatch(1);
            Thread other = Thread.ofPlatform().start(() -> {
                try (KafkaConsumer<byte[], byte[]> consumer = staticMember(broker, "s", "b")) {
                    consumer.subscribe(List.of("static"));
                    while (!stop.get()) {
                        consumer.poll(Duration.ofMillis(100));
                        if (consumer.assignment().size() == 1) {
                            otherGeneration.set(consumer.groupMetadata().generationId());
                            otherAssigned.countDown();
                        }
                    }
                } catch (Throwable e) {
                    failure.set(e);
                }
            });
            try {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while ((first.assignment().size() != 1 || otherAssigned.getCount() > 0)
                        && System.nanoTime() < deadline) {
                    first.poll(Duration.ofMillis(100));
                }
                Set<TopicPartition> before = Set.copyOf(first.assignment());
                assertThat(before).hasSize(1);
                int generation = first.groupMetadata().generationId();
                assertThat(otherGeneration.get()).isEqualTo(generation);
                first.close(); // a static member sends no LeaveGroup: its place waits for it

                try (KafkaConsumer<byte[], byte[]> restarted = staticMember(broker, "s", "a")) {
                    restarted.subscribe(List.of("static"));
                    assertThat(awaitAssignment(restarted, 15)).as("its partitions, at once").isEqualTo(before);
                    assertThat(restarted.groupMetadata().generationId()).isEqualTo(generation);
                    Thread.sleep(1_000);
                    assertThat(otherGeneration.get()).as("the other member saw no rebalance").isEqualTo(generation);
                }
            } finally {
                stop.set(true);
                other.join();
            }
            assertThat(failure.get()).isNull();
        }
    }
}
