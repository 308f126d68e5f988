package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The Prometheus endpoint: request counts and latencies per API, bytes, offsets and group lag, on 127.0.0.1. */
class MetricsTest {

    @TempDir
    Path dir;

    @Test
    void theEndpointReportsRequestsOffsetsAndLag() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withMetricsPort(0))) {
            assertThat(broker.metricsPort()).isPositive();
            ProduceFetchTest.createTopic(broker, "m", 2);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(ProduceFetchTest.producerConfig(broker,
                    "all", "none"), new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("m", 0, null, "v".getBytes(StandardCharsets.UTF_8))).get();
                }
            }
            Map<String, Object> config = new java.util.HashMap<>();
            config.put("bootstrap.servers", "127.0.0.1:" + broker.port());
            config.put("group.id", "lag-group");
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config,
                    new org.apache.kafka.common.serialization.ByteArrayDeserializer(),
                    new org.apache.kafka.common.serialization.ByteArrayDeserializer())) {
                consumer.commitSync(Map.of(new TopicPartition("m", 0), new OffsetAndMetadata(4)));
            }
            String text;
            try (HttpClient client = HttpClient.newHttpClient()) {
                text = client.send(HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + broker.metricsPort()
                        + "/metrics")).build(), HttpResponse.BodyHandlers.ofString()).body();
            }
            List<String> lines = text.lines().toList();
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("sluice_broker_requests_total{api=\"Produce\"} 10"));
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("sluice_broker_request_duration_seconds_bucket{api=\"Produce\""));
            assertThat(lines).anySatisfy(l -> assertThat(l).matches("sluice_broker_log_end_offset\\{partition=\"0\",topic=\"m\"} 10(\\.0)?"));
            assertThat(lines).anySatisfy(l -> assertThat(l).matches("sluice_broker_group_lag\\{group=\"lag-group\",partition=\"0\",topic=\"m\"} 6(\\.0)?"));
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("sluice_broker_append_ack_seconds_count 10"));
            assertThat(lines).anySatisfy(l -> assertThat(l).startsWith("sluice_broker_received_bytes_total"));
        }
    }
}
