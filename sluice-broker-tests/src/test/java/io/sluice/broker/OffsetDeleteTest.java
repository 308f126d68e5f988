package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.GroupSubscribedToTopicException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OffsetDelete (Admin's deleteConsumerGroupOffsets, kafka-consumer-groups --delete-offsets): a group's offsets of
 * some partitions go, kept gone across a restart; a topic its members subscribe to is refused as Kafka refuses it
 * (GROUP_SUBSCRIBED_TO_TOPIC), another is not; an unknown group is GROUP_ID_NOT_FOUND.
 */
class OffsetDeleteTest {

    @TempDir
    Path dir;

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                20_000));
    }

    private static KafkaConsumer<String, String> consumer(Broker broker, String group) {
        return new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                ConsumerConfig.GROUP_ID_CONFIG, group, ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false),
                new StringDeserializer(), new StringDeserializer());
    }

    private static Map<TopicPartition, OffsetAndMetadata> committed(Admin admin, String group) throws Exception {
        return admin.listConsumerGroupOffsets(group).partitionsToOffsetAndMetadata().get(20, TimeUnit.SECONDS);
    }

    private static void delete(Admin admin, String group, TopicPartition... partitions) throws Exception {
        admin.deleteConsumerGroupOffsets(group, Set.of(partitions)).all().get(20, TimeUnit.SECONDS);
    }

    @Test
    void aGroupsOffsetsOfSomePartitionsGoUnlessItsMembersSubscribeToTheirTopic() throws Exception {
        TopicPartition t0 = new TopicPartition("t", 0);
        TopicPartition t1 = new TopicPartition("t", 1);
        TopicPartition u0 = new TopicPartition("u", 0);
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 2, (short) 1), new NewTopic("u", 1, (short) 1))).all()
                    .get(20, TimeUnit.SECONDS);
            try (KafkaConsumer<String, String> idle = consumer(broker, "idle")) {
                idle.assign(List.of(t0, t1, u0));
                idle.commitSync(Map.of(t0, new OffsetAndMetadata(5), t1, new OffsetAndMetadata(6), u0,
                        new OffsetAndMetadata(7)));
            }
            delete(admin, "idle", t0);
            assertThat(committed(admin, "idle")).containsOnlyKeys(t1, u0);
            delete(admin, "idle", new TopicPartition("t", 9)); // nothing committed there: answered NONE, as Kafka
            assertThat(committed(admin, "idle")).containsOnlyKeys(t1, u0);

            assertThatThrownBy(() -> delete(admin, "nobody", t0)).isInstanceOf(ExecutionException.class)
                    .hasCauseInstanceOf(GroupIdNotFoundException.class);

            try (KafkaConsumer<String, String> member = consumer(broker, "busy")) {
                member.subscribe(List.of("t"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (member.assignment().isEmpty() && System.nanoTime() < deadline) {
                    member.poll(Duration.ofMillis(100));
                }
                assertThat(member.assignment()).isNotEmpty();
                member.commitSync(Map.of(t0, new OffsetAndMetadata(1), u0, new OffsetAndMetadata(2)));
                assertThatThrownBy(() -> delete(admin, "busy", t0)).isInstanceOf(ExecutionException.class)
                        .hasCauseInstanceOf(GroupSubscribedToTopicException.class);
                delete(admin, "busy", u0);
                assertThat(committed(admin, "busy")).containsOnlyKeys(t0);
            }
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            assertThat(committed(admin, "idle")).as("after a restart").containsOnlyKeys(t1, u0);
            assertThat(committed(admin, "idle").get(t1).offset()).isEqualTo(6);
        }
    }
}
