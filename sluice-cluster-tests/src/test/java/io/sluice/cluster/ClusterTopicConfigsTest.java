package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.config.ConfigResource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A topic's configs in a cluster: given at creation and changed through any broker, kept by every broker's store
 * (a broker that was down gets them when it comes back), and changes made at once through several brokers all count.
 */
class ClusterTopicConfigsTest {

    @TempDir
    Path dir;

    private static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000));
    }

    private static String only(InProcessCluster cluster, int id) {
        return "127.0.0.1:" + cluster.broker(id).port();
    }

    @Test
    void configsReachEveryBrokerAndConcurrentChangesAllCount() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "c");
            try (Admin first = admin(only(cluster, 1)); Admin second = admin(only(cluster, 2))) {
                first.createTopics(List.of(new NewTopic("c", 2, (short) 3).configs(Map.of("cleanup.policy", "compact",
                        "retention.ms", "1000")))).all().get(60, TimeUnit.SECONDS);
                for (int id = 1; id <= 3; id++) {
                    int node = id;
                    await("broker " + node + "'s store has the configs", 30, () -> cluster.broker(node).store()
                            .topicConfigs("c").equals(Map.of("cleanup.policy", "compact", "retention.ms", "1000")));
                }

                // Ten changes, each of another config, half through each of two brokers, all sent at once.
                List<String> names = List.of("segment.ms", "delete.retention.ms", "file.delete.delay.ms",
                        "flush.messages", "flush.ms", "index.interval.bytes", "max.compaction.lag.ms",
                        "min.cleanable.dirty.ratio", "segment.jitter.ms", "retention.bytes");
                List<KafkaFuture<Void>> changes = new ArrayList<>();
                Map<String, String> expected = new HashMap<>(Map.of("cleanup.policy", "compact",
                        "retention.ms", "1000"));
                for (int i = 0; i < names.size(); i++) {
                    String value = names.get(i).equals("min.cleanable.dirty.ratio") ? "0.25" : String.valueOf(
                            1000 + i);
                    expected.put(names.get(i), value);
                    changes.add((i % 2 == 0 ? first : second).incrementalAlterConfigs(Map.of(topic, List.of(
                            new AlterConfigOp(new ConfigEntry(names.get(i), value), AlterConfigOp.OpType.SET))))
                            .all());
                }
                for (KafkaFuture<Void> change : changes) {
                    change.get(60, TimeUnit.SECONDS);
                }
                for (int id = 1; id <= 3; id++) {
                    int node = id;
                    await("broker " + node + " has every change", 30, () -> cluster.broker(node).store()
                            .topicConfigs("c").equals(expected));
                }

                cluster.stop(3);
                first.incrementalAlterConfigs(Map.of(topic, List.of(
                        new AlterConfigOp(new ConfigEntry("retention.ms", null), AlterConfigOp.OpType.DELETE))))
                        .all().get(60, TimeUnit.SECONDS);
                expected.remove("retention.ms");
                await("broker 1 has the change", 30, () -> cluster.broker(1).store().topicConfigs("c")
                        .equals(expected));
            }
            cluster.start(3);
            await("broker 3, back, has the change made while it was down", 60, () -> cluster.broker(3).store()
                    .topicConfigs("c").equals(Map.copyOf(cluster.broker(1).store().topicConfigs("c"))));
            try (Admin third = admin(only(cluster, 3))) {
                var described = third.describeConfigs(List.of(topic)).all().get(60, TimeUnit.SECONDS).get(topic);
                assertThat(described.get("cleanup.policy").value()).isEqualTo("compact");
                assertThat(described.get("cleanup.policy").source())
                        .isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
                assertThat(described.get("retention.ms").source()).isNotEqualTo(
                        ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
            }
        }
    }
}
