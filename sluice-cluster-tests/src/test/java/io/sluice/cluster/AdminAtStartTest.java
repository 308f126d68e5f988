package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.testsupport.KafkaWire;
import io.sluice.testsupport.PythonClients;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A user's first command right after three brokers start: every broker takes CreateTopics and carries it to the
 * metadata's leader, waiting within the request's timeout for one to be elected. Before, a CreateTopics sent once
 * Metadata answered was refused NOT_CONTROLLER, which librdkafka's AdminClient reports rather than retries.
 */
class AdminAtStartTest {

    @TempDir
    Path dir;

    @Test
    void createTopicsRightAfterTheClusterStartsSucceedsOnEveryBroker() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            // At once, before anything was elected: one raw CreateTopics to each broker, and confluent-kafka's
            // AdminClient through all three.
            List<CompletableFuture<Short>> raw = new ArrayList<>();
            for (int id = 1; id <= 3; id++) {
                int port = cluster.broker(id).port();
                String topic = "first-" + id;
                // Not on the common pool, which Ratis uses too: a blocked socket read there holds up its work.
                CompletableFuture<Short> answer = new CompletableFuture<>();
                Thread.ofVirtual().start(() -> {
                    try {
                        answer.complete(createTopic(port, topic));
                    } catch (RuntimeException e) {
                        answer.completeExceptionally(e);
                    }
                });
                raw.add(answer);
            }
            PythonClients.Result librdkafka = PythonClients.run("python/confluent_kafka_clients.py",
                    Duration.ofMinutes(2), "create-topics", "--bootstrap", cluster.bootstrap(), "--brokers", "3",
                    "--replicas", "3", "--cluster-id", BrokerConfig.defaults().clusterId(), "--topic", "from-python",
                    "--partitions", "2");
            for (int id = 1; id <= 3; id++) {
                assertThat(Errors.forCode(raw.get(id - 1).join())).as("CreateTopics to broker " + id)
                        .isEqualTo(Errors.NONE);
            }
            assertThat(librdkafka.exitCode()).as(librdkafka.describe()).isZero();
            for (int id = 1; id <= 3; id++) {
                int node = id;
                InProcessCluster.await("broker " + node + " has every topic created", 30, () -> {
                    var store = cluster.broker(node).store();
                    return store.queueCount("first-1") == 3 && store.queueCount("first-2") == 3
                            && store.queueCount("first-3") == 3 && store.queueCount("from-python") == 2;
                });
            }
        }
    }

    /** @return the error code of one CreateTopics v7 (3 partitions, the default replication) sent to {@code port} */
    private static short createTopic(int port, String topic) {
        CreateTopicsRequestData.CreatableTopicCollection topics = new CreateTopicsRequestData.CreatableTopicCollection();
        topics.add(new CreateTopicsRequestData.CreatableTopic().setName(topic).setNumPartitions(3)
                .setReplicationFactor((short) -1));
        try {
            return new CreateTopicsResponseData(KafkaWire.call(port, ApiKeys.CREATE_TOPICS, (short) 7,
                    new CreateTopicsRequestData().setTopics(topics).setTimeoutMs(30_000), 40_000), (short) 7)
                    .topics().find(topic).errorCode();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
