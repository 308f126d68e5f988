package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreatePartitionsOptions;
import org.apache.kafka.clients.admin.CreateTopicsOptions;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidPartitionsException;
import org.apache.kafka.common.errors.InvalidReplicationFactorException;
import org.apache.kafka.common.errors.InvalidTopicException;
import org.apache.kafka.common.errors.PolicyViolationException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Topics through a stock Admin client: created as store topics with a declared partition count, kept by the store. */
class TopicAdminTest {

    @TempDir
    Path dir;

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    @Test
    void createdTopicsAreStoreTopicsAndOutliveTheBroker() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1),
                    new NewTopic("events", Optional.empty(), Optional.empty()))).all().get(20, TimeUnit.SECONDS);
            assertThat(admin.listTopics().names().get(20, TimeUnit.SECONDS)).containsExactlyInAnyOrder("orders", "events");
            assertThat(store.queueCount("orders")).isEqualTo(3);
            assertThat(store.queueCount("events")).as("the default partition count").isEqualTo(1);
            assertThat(store.layout("orders")).isEqualTo(TopicLayout.BATCHES);
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            TopicDescription orders = admin.describeTopics(List.of("orders")).allTopicNames().get(20, TimeUnit.SECONDS)
                    .get("orders");
            assertThat(orders.partitions()).hasSize(3);
            assertThat(orders.partitions().get(2).leader().id()).isZero();
            assertThat(orders.partitions().get(2).isr()).hasSize(1);
        }
    }

    @Test
    void topicAndBrokerConfigsAreDescribedFromTheStoresSettings() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().maxMessageBytes(2 << 20).build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            org.apache.kafka.common.config.ConfigResource topic = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, "orders");
            org.apache.kafka.common.config.ConfigResource node = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.BROKER, "0");
            var configs = admin.describeConfigs(List.of(topic, node)).all().get(20, TimeUnit.SECONDS);
            assertThat(configs.get(topic).get("max.message.bytes").value()).isEqualTo(String.valueOf(2 << 20));
            assertThat(configs.get(topic).get("retention.ms").value())
                    .isEqualTo(String.valueOf(store.config().retention().retentionMillis()));
            assertThat(configs.get(topic).get("cleanup.policy").value()).isEqualTo("delete");
            assertThat(configs.get(node).get("num.partitions").value()).isEqualTo("1");
            org.apache.kafka.common.config.ConfigResource missing = new org.apache.kafka.common.config.ConfigResource(
                    org.apache.kafka.common.config.ConfigResource.Type.TOPIC, "missing");
            assertThatThrownBy(() -> admin.describeConfigs(List.of(missing)).all().get(20, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
        }
    }

    @Test
    void aDeletedTopicGoesWithItsRecordsAndCommittedOffsetsAndComesBackEmpty() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1), new NewTopic("kept", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()),
                    new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("orders", i % 2, null, "order-" + i));
                    producer.send(new ProducerRecord<>("kept", 0, null, "kept-" + i));
                }
                producer.flush();
            }
            TopicPartition orders0 = new TopicPartition("orders", 0);
            TopicPartition kept0 = new TopicPartition("kept", 0);
            admin.alterConsumerGroupOffsets("g", Map.of(orders0, new OffsetAndMetadata(3),
                    kept0, new OffsetAndMetadata(4))).all().get(20, TimeUnit.SECONDS);

            admin.deleteTopics(List.of("orders")).all().get(20, TimeUnit.SECONDS);

            assertThat(admin.listTopics().names().get(20, TimeUnit.SECONDS)).containsExactly("kept");
            assertThatThrownBy(() -> admin.describeTopics(List.of("orders")).allTopicNames().get(20, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
            assertThat(admin.listConsumerGroupOffsets("g").partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS))
                    .containsOnlyKeys(kept0);
            assertThat(store.queueCount("orders")).isZero();
            assertThat(store.maxOffset("kept", 0)).isEqualTo(10);

            // Created again: empty, offsets from 0.
            admin.createTopics(List.of(new NewTopic("orders", 3, (short) 1))).all().get(20, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()),
                    new StringSerializer(), new StringSerializer())) {
                assertThat(producer.send(new ProducerRecord<>("orders", 0, null, "again")).get(20, TimeUnit.SECONDS)
                        .offset()).isZero();
            }
            assertThat(admin.listOffsets(Map.of(orders0, OffsetSpec.latest())).all().get(20, TimeUnit.SECONDS)
                    .get(orders0).offset()).isEqualTo(1);
        }
    }

    @Test
    void deletingASharedLayoutTopicIsRefusedInKafkasWordsAndKeepsIt() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            store.createTopic("interleaved", TopicLayout.SHARED, 2);
            store.append("interleaved", 1, Message.of(new byte[] {1})).join();
            assertThatThrownBy(() -> admin.deleteTopics(List.of("interleaved")).all().get(20, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(org.apache.kafka.common.errors.TopicDeletionDisabledException.class)
                    .hasMessageContaining("shared log");
            assertThatThrownBy(() -> admin.deleteTopics(List.of("missing")).all().get(20, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
            assertThat(store.queueCount("interleaved")).isEqualTo(2);
            assertThat(store.maxOffset("interleaved", 1)).isEqualTo(1);
        }
    }

    @Test
    void partitionsAreAddedNeverRemoved() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.createPartitions(Map.of("orders", NewPartitions.increaseTo(5))).all().get(20, TimeUnit.SECONDS);
            assertThat(store.queueCount("orders")).isEqualTo(5);
            assertThat(admin.describeTopics(List.of("orders")).allTopicNames().get(20, TimeUnit.SECONDS).get("orders")
                    .partitions()).hasSize(5);
            assertThatThrownBy(() -> admin.createPartitions(Map.of("orders", NewPartitions.increaseTo(3))).all()
                    .get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(InvalidPartitionsException.class);
            assertThatThrownBy(() -> admin.createPartitions(Map.of("missing", NewPartitions.increaseTo(3))).all()
                    .get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(UnknownTopicOrPartitionException.class);
            assertThat(store.queueCount("orders")).isEqualTo(5);
        }
    }

    @Test
    void refusalsCarryKafkasErrors() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1))).all()
                    .get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(TopicExistsException.class);
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("replicated", 2, (short) 3))).all()
                    .get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(InvalidReplicationFactorException.class);
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("bad name!", 1, (short) 1))).all()
                    .get(20, TimeUnit.SECONDS)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(InvalidTopicException.class);
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("compacted", 1, (short) 1)
                    .configs(Map.of("no.such.config", "1")))).all().get(20, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidConfigurationException.class);
            store.append("embedded", 0, Message.of(new byte[10])).join();
            assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("embedded", 1, (short) 1))).all()
                    .get(20, TimeUnit.SECONDS)).as("a store topic appended to through the store's API exists")
                    .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(TopicExistsException.class);
            assertThat(store.queueCount("compacted")).isZero();
            assertThat(store.queueCount("replicated")).isZero();
            assertThat(store.queueCount("orders")).isEqualTo(2);
        }
    }

    /**
     * Kafka's controller takes at most 10,000 metadata records from one request: a CreateTopics over it fails whole
     * with POLICY_VIOLATION, validating or not; a CreatePartitions fails the topic that would overflow it.
     */
    @Test
    void oneRequestCreatesAtMostKafkasTenThousandRecords() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            // 3 topics of 3,333 partitions: 3 + 9,999 = 10,002 records.
            List<NewTopic> tooMany = List.of(new NewTopic("a", 3_333, (short) 1), new NewTopic("b", 3_333, (short) 1),
                    new NewTopic("c", 3_333, (short) 1));
            for (boolean validateOnly : new boolean[] {true, false}) {
                var created = admin.createTopics(tooMany, new CreateTopicsOptions().validateOnly(validateOnly));
                for (String name : List.of("a", "b", "c")) {
                    assertThatThrownBy(() -> created.values().get(name).get(20, TimeUnit.SECONDS))
                            .isInstanceOf(ExecutionException.class).cause().isInstanceOf(PolicyViolationException.class)
                            .hasMessage("Unable to perform excessively large batch operation.");
                }
            }
            assertThat(store.queueCount("a") + store.queueCount("b") + store.queueCount("c")).isZero();
            // Exactly the bound: 3 topics, 4,000 + 4,000 + 1,996 partitions and one config.
            admin.createTopics(List.of(new NewTopic("a", 4_000, (short) 1), new NewTopic("b", 4_000, (short) 1),
                    new NewTopic("c", 1_996, (short) 1).configs(Map.of("retention.ms", "1000"))),
                    new CreateTopicsOptions().validateOnly(true)).all().get(20, TimeUnit.SECONDS);

            admin.createTopics(List.of(new NewTopic("x", 1, (short) 1), new NewTopic("y", 1, (short) 1),
                    new NewTopic("z", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            var grown = admin.createPartitions(Map.of("x", NewPartitions.increaseTo(4_001), "y",
                    NewPartitions.increaseTo(4_001), "z", NewPartitions.increaseTo(4_001)),
                    new CreatePartitionsOptions().validateOnly(true));
            int refused = 0;
            for (String name : List.of("x", "y", "z")) {
                try {
                    grown.values().get(name).get(20, TimeUnit.SECONDS);
                } catch (ExecutionException e) {
                    assertThat(e.getCause()).isInstanceOf(UnknownServerException.class);
                    refused++;
                }
            }
            assertThat(refused).as("the topic whose 4,000 partitions would pass 10,000").isEqualTo(1);
            assertThat(store.queueCount("x") + store.queueCount("y") + store.queueCount("z")).isEqualTo(3);
        }
    }
}
