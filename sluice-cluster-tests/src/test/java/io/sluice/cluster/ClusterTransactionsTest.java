package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transactions on a cluster of three: the controller coordinates them, writes its markers to partitions led by other
 * brokers (WriteTxnMarkers), and keeps each transactional id's state in the metadata group, so that when its broker
 * stops, the next controller resumes the id (the same producer id, a later epoch) and read_committed consumers see
 * every committed record once and no aborted one.
 */
class ClusterTransactionsTest {

    @TempDir
    Path dir;

    private static KafkaProducer<String, String> producer(String bootstrap, String transactionalId) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 60_000);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 60_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    private static List<String> readCommitted(String bootstrap, String topic, int partitions, int expected) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(props, new StringDeserializer(),
                new StringDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                parts.add(new TopicPartition(topic, p));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (values.size() < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
            // A moment more: nothing past the expected may come.
            for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(500))) {
                values.add(record.value());
            }
        }
        return values;
    }

    private static void transactions(KafkaProducer<String, String> producer, String topic, int partitions,
                                     String prefix, int rounds) {
        for (int round = 0; round < rounds; round++) {
            producer.beginTransaction();
            for (int i = 0; i < partitions * 2; i++) {
                producer.send(new ProducerRecord<>(topic, i % partitions, null, prefix + round + "-" + i));
            }
            if (round % 2 == 0) {
                producer.commitTransaction();
            } else {
                producer.flush();
                producer.abortTransaction();
            }
        }
    }

    @Test
    void theControllerCoordinatesAndItsSuccessorResumesTheTransactionalIds() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            String bootstrap = cluster.bootstrap();
            int controller;
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
                admin.createTopics(List.of(new NewTopic("tx", 3, (short) 3))).all().get(60, TimeUnit.SECONDS);
                controller = admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id();
            }
            try (KafkaProducer<String, String> producer = producer(bootstrap, "etl")) {
                producer.initTransactions();
                transactions(producer, "tx", 3, "a", 4);
            }
            assertThat(readCommitted(bootstrap, "tx", 3, 12)).hasSize(12)
                    .allMatch(v -> v.startsWith("a0-") || v.startsWith("a2-")).doesNotHaveDuplicates();
            // Admin asks every broker for its transactions (kafka-transactions list): the others answer none.
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
                assertThat(admin.listTransactions().all().get(60, TimeUnit.SECONDS))
                        .extracting(org.apache.kafka.clients.admin.TransactionListing::transactionalId)
                        .containsExactly("etl");
            }

            // The coordinator's broker stops: the next controller has the id's state from the metadata.
            byte[] before = cluster.broker(controller == 1 ? 2 : 1).node().savedTransactions().get("etl");
            assertThat(before).as("every broker has the id's state").isNotNull();
            cluster.stop(controller);
            String others = cluster.bootstrap();
            try (KafkaProducer<String, String> producer = producer(others, "etl")) {
                producer.initTransactions();
                transactions(producer, "tx", 3, "b", 2);
            }
            assertThat(readCommitted(others, "tx", 3, 18)).hasSize(18)
                    .allMatch(v -> v.startsWith("a0-") || v.startsWith("a2-") || v.startsWith("b0-"))
                    .doesNotHaveDuplicates();
            int next = controller == 1 ? 2 : 1;
            await("the state of the id moved on", 30, () -> {
                byte[] now = cluster.broker(next).node().savedTransactions().get("etl");
                return now != null && !java.util.Arrays.equals(now, before);
            });
        }
    }
}
