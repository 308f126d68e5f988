package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code sluice consume} reads what Kafka producers wrote through the broker: records, not batches. */
class ConsumeKafkaBatchesTest {

    @TempDir
    Path dir;

    @Test
    void consumePrintsTheRecordsOfCompressedKafkaBatches() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            store.createTopic("k", TopicLayout.QUEUE, 1);
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
            config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "gzip");
            config.put(ProducerConfig.LINGER_MS_CONFIG, 50);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < 5; i++) {
                    producer.send(new ProducerRecord<>("k", 0, null, ("key-" + i).getBytes(StandardCharsets.UTF_8),
                            ("value-" + i).getBytes(StandardCharsets.UTF_8),
                            List.of(new RecordHeader("origin", "kafka".getBytes(StandardCharsets.UTF_8)))));
                }
            }
        }
        CliRun plain = CliRun.run("", "consume", "--dir", dir.toString(), "--topic", "k", "--queue", "0", "--from", "2");
        assertThat(plain.exit()).isZero();
        assertThat(plain.out().lines().toList()).containsExactly("2\tvalue-2", "3\tvalue-3", "4\tvalue-4");
        CliRun json = CliRun.run("", "consume", "--dir", dir.toString(), "--topic", "k", "--queue", "0", "--json");
        assertThat(json.out().lines().toList()).hasSize(5);
        assertThat(json.out().lines().toList().get(1)).contains("\"offset\":1").contains("\"keys\":[\"key-1\"]")
                .contains("\"origin\":\"kafka\"");
    }
}
