package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ConsumerGroupDescription;
import org.apache.kafka.clients.admin.GroupListing;
import org.apache.kafka.clients.admin.MemberDescription;
import org.apache.kafka.clients.consumer.CommitFailedException;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.GroupState;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KIP-848 consumer groups (group.protocol=consumer) with Kafka 4.3.1's own consumer: members joining and leaving under
 * load get every record and never hold a partition two at a time, the server-side assignors place partitions as they
 * say, the groups read as Kafka's admin client expects, and committed offsets are the same ones the classic protocol
 * reads and writes.
 */
class ConsumerProtocolGroupTest {

    private static final int PARTITIONS = 6;

    @TempDir
    Path dir;

    private static Map<String, Object> config(Broker broker, String group, String protocol) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, protocol);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return config;
    }

    private static KafkaConsumer<byte[], byte[]> consumer(Map<String, Object> config) {
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()));
    }

    private static void produce(Broker broker, String topic, int count, String value) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(ProduceFetchTest.producerConfig(broker,
                "all", "none"), new ByteArraySerializer(), new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, i % PARTITIONS, null, value.getBytes(StandardCharsets.UTF_8)));
            }
        }
    }

    /**
     * Who holds which partition, as the members' rebalance listeners say: a partition assigned to one member while
     * another still has it is a double ownership the protocol must never allow.
     */
    private static final class Holders {
        final Map<TopicPartition, String> holder = new ConcurrentHashMap<>();
        final AtomicReference<String> conflict = new AtomicReference<>();

        ConsumerRebalanceListener listener(String member) {
            return new ConsumerRebalanceListener() {
                @Override
                public void onPartitionsRevoked(Collection<TopicPartition> partitions) {
                    partitions.forEach(p -> holder.remove(p, member));
                }

                @Override
                public void onPartitionsLost(Collection<TopicPartition> partitions) {
                    partitions.forEach(p -> holder.remove(p, member));
                }

                @Override
                public void onPartitionsAssigned(Collection<TopicPartition> partitions) {
                    for (TopicPartition p : partitions) {
                        String previous = holder.putIfAbsent(p, member);
                        if (previous != null && !previous.equals(member)) {
                            conflict.compareAndSet(null, p + " assigned to " + member + " while " + previous
                                    + " held it");
                        }
                    }
                }
            };
        }
    }

    /**
     * A member polling and committing after each poll until told to stop; a commit refused because the group moved on
     * is let go, as an application lets it go. Any other failure ends the member and is kept in {@code failure}.
     */
    private static Thread runMember(Broker broker, String name, Set<Long> seen, Holders holders, AtomicBoolean stop,
                                    AtomicReference<Throwable> failure) {
        return Thread.ofPlatform().start(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(config(broker, "g", "consumer"))) {
                consumer.subscribe(List.of("events"), holders.listener(name));
                while (!stop.get()) {
                    var records = consumer.poll(Duration.ofMillis(100));
                    for (ConsumerRecord<byte[], byte[]> record : records) {
                        seen.add(((long) record.partition() << 40) | record.offset());
                    }
                    if (!records.isEmpty()) {
                        try {
                            consumer.commitSync();
                        } catch (CommitFailedException e) {
                            // A commit sent with a member epoch the group has moved past (a member joined or left
                            // meanwhile) is refused with STALE_MEMBER_EPOCH, as Kafka refuses it; the client says
                            // so this way, and an application goes on polling: the records come again.
                        }
                    }
                }
            } catch (Throwable e) {
                failure.compareAndSet(null, e);
            }
        });
    }

    @Test
    void membersJoiningAndLeavingUnderLoadGetEveryRecordAndNeverShareAPartition() throws Exception {
        int total = 12_000;
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "events", PARTITIONS);
            Set<Long> seen = ConcurrentHashMap.newKeySet();
            Holders holders = new Holders();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<AtomicBoolean> stops = new ArrayList<>();
            List<Thread> members = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                stops.add(new AtomicBoolean());
                members.add(runMember(broker, "m" + i, seen, holders, stops.get(i), failure));
            }
            produce(broker, "events", total / 2, "e");
            // One member leaves, a third joins, while records keep coming.
            stops.getFirst().set(true);
            members.getFirst().join(30_000);
            stops.add(new AtomicBoolean());
            members.add(runMember(broker, "m2", seen, holders, stops.getLast(), failure));
            produce(broker, "events", total / 2, "e");

            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (seen.size() < total && System.nanoTime() < deadline && failure.get() == null) {
                Thread.sleep(50);
            }
            assertThat(failure.get()).isNull();
            assertThat(seen).as("every record delivered at least once").hasSize(total);
            assertThat(holders.conflict.get()).as("no partition held by two members").isNull();

            try (Admin admin = admin(broker)) {
                // The two members left share the six partitions, three each (uniform), once reconciled.
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                ConsumerGroupDescription description;
                do {
                    description = admin.describeConsumerGroups(List.of("g")).all().get(20, TimeUnit.SECONDS)
                            .get("g");
                } while ((description.groupState() != GroupState.STABLE || description.members().size() != 2)
                        && System.nanoTime() < until && failure.get() == null && sleep(100));
                assertThat(failure.get()).as("a member's failure").isNull();
                assertThat(description.type()).isEqualTo(GroupType.CONSUMER);
                assertThat(description.groupState()).isEqualTo(GroupState.STABLE);
                assertThat(description.partitionAssignor()).isEqualTo("uniform");
                assertThat(description.members()).hasSize(2).allSatisfy(member ->
                        assertThat(member.assignment().topicPartitions()).hasSize(PARTITIONS / 2));
                Set<TopicPartition> assigned = new HashSet<>();
                description.members().forEach(m -> assigned.addAll(m.assignment().topicPartitions()));
                assertThat(assigned).hasSize(PARTITIONS);
                assertThat(admin.listGroups().all().get(20, TimeUnit.SECONDS)).filteredOn(g -> g.groupId().equals("g"))
                        .singleElement().satisfies(g -> assertThat(g.type()).contains(GroupType.CONSUMER));
            }
            stops.forEach(s -> s.set(true));
            for (Thread member : members) {
                member.join(30_000);
            }
            assertThat(failure.get()).isNull();
            try (Admin admin = admin(broker)) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("g")
                        .partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
                for (int p = 0; p < PARTITIONS; p++) {
                    assertThat(committed.get(new TopicPartition("events", p)).offset())
                            .as("partition %d committed to its end", p).isEqualTo(total / PARTITIONS);
                }
            }
        }
    }

    private static boolean sleep(long millis) throws InterruptedException {
        Thread.sleep(millis);
        return true;
    }

    @Test
    void theRangeAssignorGivesEachMemberAContiguousRange() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "events", 4);
            List<KafkaConsumer<byte[], byte[]>> members = new ArrayList<>();
            try {
                for (int i = 0; i < 2; i++) {
                    Map<String, Object> config = config(broker, "ranged", "consumer");
                    config.put(ConsumerConfig.GROUP_REMOTE_ASSIGNOR_CONFIG, "range");
                    KafkaConsumer<byte[], byte[]> member = consumer(config);
                    member.subscribe(List.of("events"));
                    members.add(member);
                }
                long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                // Until both hold partitions: the first alone had all four before the second joined.
                while ((members.stream().mapToInt(m -> m.assignment().size()).sum() < 4
                        || members.stream().anyMatch(m -> m.assignment().isEmpty())) && System.nanoTime() < until) {
                    members.forEach(m -> m.poll(Duration.ofMillis(50)));
                }
                try (Admin admin = admin(broker)) {
                    ConsumerGroupDescription description = admin.describeConsumerGroups(List.of("ranged")).all()
                            .get(20, TimeUnit.SECONDS).get("ranged");
                    assertThat(description.partitionAssignor()).isEqualTo("range");
                    List<MemberDescription> byId = new ArrayList<>(description.members());
                    byId.sort(java.util.Comparator.comparing(MemberDescription::consumerId));
                    assertThat(byId.get(0).assignment().topicPartitions()).containsExactlyInAnyOrder(
                            new TopicPartition("events", 0), new TopicPartition("events", 1));
                    assertThat(byId.get(1).assignment().topicPartitions()).containsExactlyInAnyOrder(
                            new TopicPartition("events", 2), new TopicPartition("events", 3));
                }
            } finally {
                members.forEach(KafkaConsumer::close);
            }
        }
    }

    @Test
    void offsetsAreSharedWithTheClassicProtocolAndAnEmptyGroupChangesProtocol() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "events", PARTITIONS);
            produce(broker, "events", 60, "first");
            // A consumer-protocol member reads everything and commits.
            assertThat(readAll(broker, "consumer", 60, "first")).isEqualTo(60);
            produce(broker, "events", 30, "second");
            // A classic member of the same (now empty) group starts at those offsets, and commits further.
            assertThat(readAll(broker, "classic", 30, "second")).isEqualTo(30);
            produce(broker, "events", 12, "third");
            // And a consumer-protocol member again starts where the classic one stopped.
            assertThat(readAll(broker, "consumer", 12, "third")).isEqualTo(12);
            try (Admin admin = admin(broker)) {
                Map<TopicPartition, OffsetAndMetadata> committed = admin.listConsumerGroupOffsets("shared")
                        .partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
                assertThat(committed.values()).extracting(OffsetAndMetadata::offset).containsOnly(17L);
                // An empty group can be deleted whatever protocol it last had.
                admin.deleteConsumerGroups(List.of("shared")).all().get(20, TimeUnit.SECONDS);
                assertThat(admin.listGroups().all().get(20, TimeUnit.SECONDS)).extracting(GroupListing::groupId)
                        .doesNotContain("shared");
            }
        }
    }

    /** Reads {@code expected} records of group "shared" with the given protocol, each with {@code value}. */
    private static int readAll(Broker broker, String protocol, int expected, String value) {
        List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(config(broker, "shared", protocol))) {
            consumer.subscribe(List.of("events"));
            long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (read.size() < expected && System.nanoTime() < until) {
                consumer.poll(Duration.ofMillis(100)).forEach(read::add);
            }
            consumer.commitSync();
        }
        assertThat(read).allSatisfy(r -> assertThat(new String(r.value(), StandardCharsets.UTF_8)).isEqualTo(value));
        return read.size();
    }
}
