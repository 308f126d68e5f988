package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * OffsetDelete on a cluster of three: the deletion goes through the metadata group like a commit, so every broker's
 * store forgets the offset, and the next coordinator answers without it.
 */
@Timeout(value = 3, unit = TimeUnit.MINUTES)
class ClusterOffsetDeleteTest {

    @TempDir
    Path dir;

    private static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000));
    }

    @Test
    void everyBrokerForgetsTheDeletedOffsetAndTheNextCoordinatorToo() throws Exception {
        TopicPartition t0 = new TopicPartition("t", 0);
        TopicPartition t1 = new TopicPartition("t", 1);
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            int controller;
            try (Admin admin = admin(cluster.bootstrap())) {
                admin.createTopics(List.of(new NewTopic("t", 2, (short) 3))).all().get(60, TimeUnit.SECONDS);
                controller = admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id();
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(), ConsumerConfig.GROUP_ID_CONFIG,
                        "g", ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false), new StringDeserializer(),
                        new StringDeserializer())) {
                    consumer.assign(List.of(t0, t1));
                    consumer.commitSync(Map.of(t0, new OffsetAndMetadata(3), t1, new OffsetAndMetadata(4)));
                }
                admin.deleteConsumerGroupOffsets("g", Set.of(t0)).all().get(60, TimeUnit.SECONDS);
                assertThat(admin.listConsumerGroupOffsets("g").partitionsToOffsetAndMetadata()
                        .get(60, TimeUnit.SECONDS)).containsOnlyKeys(t1);
            }
            for (int id = 1; id <= 3; id++) {
                io.sluice.store.Store store = cluster.broker(id).store();
                await("node " + id + " forgot the offset", 30, () -> store.committedOffset("g", "t", 0).isEmpty()
                        && store.committedOffset("g", "t", 1).isPresent());
            }
            cluster.stop(controller);
            try (Admin admin = admin(cluster.bootstrap())) {
                assertThat(admin.listConsumerGroupOffsets("g").partitionsToOffsetAndMetadata()
                        .get(60, TimeUnit.SECONDS)).as("from the next coordinator").containsOnlyKeys(t1);
            }
        }
    }
}
