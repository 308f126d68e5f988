package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** DescribeLogDirs through the Admin client (what kafka-log-dirs prints): the store's directory and each partition. */
class LogDirsApiTest {

    @TempDir
    Path dir;

    @Test
    void theStoresDirectoryIsDescribedWithEachPartitionsBytes() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                     "127.0.0.1:" + broker.port()))) {
            admin.createTopics(List.of(new NewTopic("d", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()), new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < 100; i++) {
                    producer.send(new ProducerRecord<>("d", 0, null, new byte[1000]));
                }
                producer.flush();
            }
            Map<String, LogDirDescription> dirs = admin.describeLogDirs(List.of(BrokerConfig.defaults().nodeId())).allDescriptions()
                    .get(20, TimeUnit.SECONDS).get(BrokerConfig.defaults().nodeId());
            assertThat(dirs).containsOnlyKeys(dir.toAbsolutePath().toString());
            LogDirDescription description = dirs.get(dir.toAbsolutePath().toString());
            assertThat(description.error()).isNull();
            assertThat(description.totalBytes().orElseThrow()).isPositive();
            assertThat(description.usableBytes().orElseThrow()).isPositive();
            Map<TopicPartition, ReplicaInfo> replicas = description.replicaInfos();
            assertThat(replicas).containsKeys(new TopicPartition("d", 0), new TopicPartition("d", 1));
            assertThat(replicas.get(new TopicPartition("d", 0)).size()).isGreaterThanOrEqualTo(100_000);
            assertThat(replicas.get(new TopicPartition("d", 1)).size()).isZero();
            assertThat(replicas.get(new TopicPartition("d", 0)).offsetLag()).isZero();
        }
    }
}
