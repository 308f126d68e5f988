package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Topic ids (KIP-516) in a cluster of three brokers: a topic's id goes through the metadata group with its creation, so
 * every broker answers the same one, across a broker's restart and changes of controller; a topic created before ids
 * (its creation logged without one) is given one by the controller, once, through the metadata. Kafka's Java clients
 * then fetch and produce naming topics by id, through every broker, and a topic deleted by its id goes from every one.
 */
class ClusterTopicIdsTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** @return the topic's id as the broker of node {@code id} answers Metadata v12 (the zero id if unknown) */
    private Uuid answeredId(int id, String topic) {
        MetadataRequestData request = new MetadataRequestData().setAllowAutoTopicCreation(false);
        request.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(topic));
        try {
            MetadataResponseData.MetadataResponseTopic answer = new MetadataResponseData(KafkaWire.call(
                    cluster.broker(id).port(), ApiKeys.METADATA, (short) 12, request), (short) 12).topics().find(topic);
            return answer == null || answer.errorCode() != 0 ? Uuid.ZERO_UUID : answer.topicId();
        } catch (IOException e) {
            return Uuid.ZERO_UUID;
        }
    }

    /** Waits until every running broker answers {@code id} for the topic, and its store keeps it. */
    private void awaitSameIdEverywhere(String topic, Uuid id) throws InterruptedException {
        UUID kept = new UUID(id.getMostSignificantBits(), id.getLeastSignificantBits());
        for (int node = 1; node <= 3; node++) {
            int broker = node;
            if (cluster.broker(broker) == null) {
                continue;
            }
            await("node " + broker + " answers " + topic + "'s id " + id, 60,
                    () -> answeredId(broker, topic).equals(id));
            assertThat(cluster.broker(broker).store().topicId(topic)).as("node %d's store", broker).isEqualTo(kept);
        }
    }

    private int controller() throws InterruptedException {
        int[] found = new int[1];
        await("a controller", 60, () -> {
            for (int id = 1; id <= 3; id++) {
                if (cluster.broker(id) != null && cluster.broker(id).node().controllerReady()) {
                    found[0] = id;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    /** Hands the metadata group's leadership (the controller) to node {@code next}. */
    private void moveControllerTo(int next) throws Exception {
        RaftGroup metadata = cluster.broker(next).node().metadataDivision().getGroup();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(metadata)
                .build()) {
            await("node " + next + " is the controller", 60, () -> {
                try {
                    if (cluster.broker(next).node().controllerReady()) {
                        return true;
                    }
                    client.admin().transferLeadership(ClusterNode.peerId(next), 5_000);
                } catch (IOException | RuntimeException e) {
                    // An election is on: asked again.
                }
                return false;
            });
        }
    }

    /** Logs a topic's creation as a cluster from before ids logged it: without an id. */
    private void createWithoutId(String command) throws Exception {
        RaftGroup metadata = cluster.broker(1).node().metadataDivision().getGroup();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(metadata)
                .build()) {
            assertThat(client.io().send(Message.valueOf(command)).getMessage().getContent().toStringUtf8())
                    .isEqualTo("created");
        }
    }

    @Test
    void everyBrokerNamesATopicByOneIdThroughRestartsAndControllerChanges() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT);
        cluster.startAll();
        cluster.awaitMembers();
        Uuid orders;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            orders = admin.createTopics(List.of(new NewTopic("orders", 2, (short) 3))).topicId("orders")
                    .get(60, TimeUnit.SECONDS);
        }
        assertThat(orders).isNotIn(Uuid.ZERO_UUID, Uuid.METADATA_TOPIC_ID);
        awaitSameIdEverywhere("orders", orders);

        // A topic the log created before ids: the controller gives it one, and every broker keeps the same.
        createWithoutId("topic legacy 1 1,2,3");
        Uuid[] legacy = new Uuid[1];
        await("the controller gives legacy an id", 30, () -> {
            legacy[0] = answeredId(controller(1), "legacy");
            return !legacy[0].equals(Uuid.ZERO_UUID);
        });
        awaitSameIdEverywhere("legacy", legacy[0]);

        produceAndConsume("orders", "readers");
        produceAndConsume("legacy", "legacy-readers");
        long fetchesById = 0;
        long producesById = 0;
        for (int id = 1; id <= 3; id++) {
            var metrics = cluster.broker(id).broker().metrics();
            fetchesById += metrics.requests("Fetch", ApiKeys.FETCH.latestVersion());
            producesById += metrics.requests("Produce", 13);
            for (int version = 4; version < 13; version++) {
                assertThat(metrics.requests("Fetch", version)).as("node %d's fetches of v%d", id, version).isZero();
                assertThat(metrics.requests("Produce", version)).as("node %d's produces of v%d", id, version)
                        .isZero();
            }
        }
        assertThat(fetchesById).as("fetches naming topics by id").isPositive();
        assertThat(producesById).as("produce requests naming topics by id").isPositive();

        // Another controller, then the old controller's node stopped and started again.
        int first = controller();
        int next = first % 3 + 1;
        moveControllerTo(next);
        awaitSameIdEverywhere("orders", orders);
        awaitSameIdEverywhere("legacy", legacy[0]);
        cluster.stop(next);
        int successor = controller();
        assertThat(successor).isNotEqualTo(next);
        cluster.start(next);
        cluster.awaitMembers();
        awaitSameIdEverywhere("orders", orders);
        awaitSameIdEverywhere("legacy", legacy[0]);

        // Ids no topic has; deletion by id (DeleteTopics v6), through any broker, deletes the topic on every one.
        Uuid unknown = Uuid.randomUuid();
        FetchRequestData fetch = new FetchRequestData().setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20)
                .setSessionEpoch(-1);
        fetch.topics().add(new FetchRequestData.FetchTopic().setTopicId(unknown).setPartitions(List.of(
                new FetchRequestData.FetchPartition().setPartition(0).setPartitionMaxBytes(1 << 20))));
        for (int id = 1; id <= 3; id++) {
            FetchResponseData answer = new FetchResponseData(KafkaWire.call(cluster.broker(id).port(),
                    ApiKeys.FETCH, (short) 17, fetch), (short) 17);
            assertThat(answer.responses().getFirst().partitions().getFirst().errorCode())
                    .isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
        }
        DeleteTopicsResponseData deleted = new DeleteTopicsResponseData(KafkaWire.call(cluster.broker(1).port(),
                ApiKeys.DELETE_TOPICS, (short) 6, new DeleteTopicsRequestData().setTimeoutMs(10_000).setTopics(List.of(
                        new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(orders),
                        new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(unknown)))),
                (short) 6);
        assertThat(deleted.responses()).extracting(DeleteTopicsResponseData.DeletableTopicResult::errorCode)
                .containsExactlyInAnyOrder(Errors.NONE.code(), Errors.UNKNOWN_TOPIC_ID.code());
        for (int id = 1; id <= 3; id++) {
            int broker = id;
            await("node " + broker + " no longer has orders", 60, () -> answeredId(broker, "orders")
                    .equals(Uuid.ZERO_UUID) && cluster.broker(broker).store().queueCount("orders") == 0);
        }
        awaitSameIdEverywhere("legacy", legacy[0]);
    }

    /** @return the controller, asked of node {@code id}'s view, or {@code id} itself while none is known */
    private int controller(int id) {
        int known = cluster.broker(id).node().controller();
        return known > 0 && cluster.broker(known) != null ? known : id;
    }

    /** Produces 20 records with the Java producer and reads them back in a group, committing its offsets. */
    private void produceAndConsume(String topic, String group) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(), ProducerConfig.ACKS_CONFIG, "all"),
                new StringSerializer(), new StringSerializer())) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>(topic, topic + "-" + i)).get(60, TimeUnit.SECONDS);
            }
        }
        List<String> read = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(), ConsumerConfig.GROUP_ID_CONFIG, group,
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false),
                new StringDeserializer(), new StringDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read.size() < 20 && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    read.add(record.value());
                }
            }
            consumer.commitSync(Duration.ofSeconds(60));
            Set<TopicPartition> partitions = consumer.assignment();
            long committed = 0;
            for (OffsetAndMetadata offset : consumer.committed(partitions, Duration.ofSeconds(60)).values()) {
                committed += offset == null ? 0 : offset.offset();
            }
            assertThat(committed).as("offsets committed of " + topic).isEqualTo(20);
        }
        assertThat(read).as("records read of " + topic).hasSize(20);
    }
}
