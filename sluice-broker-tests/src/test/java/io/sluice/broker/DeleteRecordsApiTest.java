package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeleteRecords through the stock Admin client: the log start offset moves, kept across a restart; ListOffsets
 * earliest and a consumer starting from the beginning find it; an offset past the high watermark is refused.
 */
class DeleteRecordsApiTest {

    @TempDir
    Path dir;

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    private static long deleteBefore(Admin admin, TopicPartition partition, long offset) throws Exception {
        return admin.deleteRecords(Map.of(partition, RecordsToDelete.beforeOffset(offset))).lowWatermarks()
                .get(partition).get(20, TimeUnit.SECONDS).lowWatermark();
    }

    private static long earliest(Admin admin, TopicPartition partition) throws Exception {
        return admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).partitionResult(partition)
                .get(20, TimeUnit.SECONDS).offset();
    }

    @Test
    void theLogStartMovesAndStaysAcrossARestart() throws Exception {
        TopicPartition p0 = new TopicPartition("t", 0);
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 2, (short) 1))).all().get(20, TimeUnit.SECONDS);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()), new StringSerializer(),
                    new StringSerializer())) {
                for (int i = 0; i < 100; i++) {
                    producer.send(new ProducerRecord<>("t", 0, null, "v" + i));
                }
                producer.flush();
            }
            assertThat(deleteBefore(admin, p0, 40)).isEqualTo(40);
            assertThat(earliest(admin, p0)).isEqualTo(40);
            assertThat(deleteBefore(admin, p0, 10)).as("a log start never goes down").isEqualTo(40);
            assertThatThrownBy(() -> deleteBefore(admin, p0, 101)).hasCauseInstanceOf(OffsetOutOfRangeException.class);
            assertThat(deleteBefore(admin, new TopicPartition("t", 1), 0)).as("an empty partition").isZero();
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            assertThat(earliest(admin, p0)).as("after a restart").isEqualTo(40);
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"), new StringDeserializer(),
                    new StringDeserializer())) {
                consumer.assign(List.of(p0));
                consumer.seek(p0, 5); // below the log start: out of range, reset to the earliest
                List<ConsumerRecord<String, String>> read = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (read.size() < 60 && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(read::add);
                }
                assertThat(read).hasSize(60);
                assertThat(read.getFirst().offset()).isEqualTo(40);
                assertThat(read.getFirst().value()).isEqualTo("v40");
            }
            assertThat(deleteBefore(admin, p0, -1)).as("-1: the high watermark").isEqualTo(100);
        }
    }
}
