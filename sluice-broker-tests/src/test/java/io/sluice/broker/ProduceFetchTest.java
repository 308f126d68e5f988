package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Future;
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
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/** Produce and Fetch through stock Kafka clients over 127.0.0.1: batches kept as sent, one offset per record. */
class ProduceFetchTest {

    @TempDir
    Path dir;

    static Map<String, Object> producerConfig(Broker broker, String acks, String compression) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        config.put(ProducerConfig.ACKS_CONFIG, acks);
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        config.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 20_000);
        return config;
    }

    static KafkaConsumer<byte[], byte[]> consumer(Broker broker) {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    static void createTopic(Broker broker, String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
    }

    static byte[] value(int partition, long sequence) {
        return ("p" + partition + "-" + sequence + "-" + "x".repeat((int) (sequence % 50))).getBytes(StandardCharsets.UTF_8);
    }

    /** Reads every record of the partitions from offset 0 until {@code expected} arrived, in order per partition. */
    static Map<Integer, List<ConsumerRecord<byte[], byte[]>>> consumeAll(Broker broker, String topic, int partitions,
                                                                         int expected) {
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> received = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker)) {
            List<TopicPartition> assigned = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                assigned.add(new TopicPartition(topic, p));
            }
            consumer.assign(assigned);
            consumer.seekToBeginning(assigned);
            int count = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (count < expected && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    received.computeIfAbsent(record.partition(), k -> new ArrayList<>()).add(record);
                    count++;
                }
            }
        }
        return received;
    }

    @ParameterizedTest
    @CsvSource({"1, none", "all, none", "0, none", "1, gzip", "1, snappy", "1, lz4", "1, zstd", "all, zstd"})
    void recordsProducedAreConsumedInOrderWithOneOffsetEach(String acks, String compression) throws Exception {
        int partitions = 3;
        int perPartition = 1_000;
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "orders", partitions);
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, acks, compression),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                for (long i = 0; i < perPartition; i++) {
                    for (int p = 0; p < partitions; p++) {
                        sent.add(producer.send(new ProducerRecord<>("orders", p, ("k" + i).getBytes(StandardCharsets.UTF_8),
                                value(p, i))));
                    }
                }
                producer.flush();
                for (int i = 0; i < sent.size(); i++) {
                    RecordMetadata metadata = sent.get(i).get(30, TimeUnit.SECONDS);
                    if (!acks.equals("0")) {
                        assertThat(metadata.offset()).as("record %d", i).isEqualTo(i / partitions);
                    }
                }
            }
            // With acks=0 the producer does not know when the broker has stored what it sent: wait for the store.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            for (int p = 0; p < partitions; p++) {
                while (store.maxOffset("orders", p) < perPartition && System.nanoTime() < deadline) {
                    Thread.sleep(10);
                }
                assertThat(store.maxOffset("orders", p)).isEqualTo(perPartition);
            }
            Map<Integer, List<ConsumerRecord<byte[], byte[]>>> received = consumeAll(broker, "orders", partitions,
                    partitions * perPartition);
            for (int p = 0; p < partitions; p++) {
                List<ConsumerRecord<byte[], byte[]>> records = received.get(p);
                assertThat(records).as("partition %d", p).hasSize(perPartition);
                for (int i = 0; i < perPartition; i++) {
                    assertThat(records.get(i).offset()).isEqualTo(i);
                    assertThat(records.get(i).value()).isEqualTo(value(p, i));
                    assertThat(new String(records.get(i).key(), StandardCharsets.UTF_8)).isEqualTo("k" + i);
                }
            }
        }
    }

    @Test
    void aMillionIdempotentRecordsComeBackInOrderPerPartition() throws Exception {
        int partitions = 4;
        int total = 1_000_000;
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "million", partitions);
            Map<String, Object> config = producerConfig(broker, "all", "lz4");
            config.put(org.apache.kafka.clients.producer.ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            config.put(org.apache.kafka.clients.producer.ProducerConfig.BATCH_SIZE_CONFIG, 128 * 1024);
            java.util.concurrent.atomic.AtomicReference<Exception> failure = new java.util.concurrent.atomic.AtomicReference<>();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                byte[] padding = "y".repeat(80).getBytes(StandardCharsets.UTF_8);
                for (int i = 0; i < total; i++) {
                    int partition = i % partitions;
                    java.nio.ByteBuffer value = java.nio.ByteBuffer.allocate(8 + padding.length).putLong(i / partitions)
                            .put(padding);
                    producer.send(new ProducerRecord<>("million", partition, null, value.array()), (m, e) -> {
                        if (e != null) {
                            failure.compareAndSet(null, e);
                        }
                    });
                }
                producer.flush();
            }
            assertThat(failure.get()).isNull();
            long[] next = new long[partitions];
            long received = 0;
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker)) {
                List<TopicPartition> assigned = new ArrayList<>();
                for (int p = 0; p < partitions; p++) {
                    assigned.add(new TopicPartition("million", p));
                }
                consumer.assign(assigned);
                consumer.seekToBeginning(assigned);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                while (received < total && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        int p = record.partition();
                        // In order, with no gap and no duplicate: each partition's sequence is its offset.
                        assertThat(record.offset()).isEqualTo(next[p]);
                        assertThat(java.nio.ByteBuffer.wrap(record.value()).getLong()).isEqualTo(next[p]);
                        next[p]++;
                        received++;
                    }
                }
            }
            assertThat(received).isEqualTo(total);
        }
    }

    @Test
    void messagesAppendedThroughTheStoreApiAreFetchedAsRecords() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            // QUEUE, not the broker's BATCHES: store messages, then a producer's batches, then store messages again.
            store.createTopic("mixed", io.sluice.store.TopicLayout.QUEUE, 1);
            for (int i = 0; i < 10; i++) {
                store.append("mixed", 0, Message.builder().body(("store-" + i).getBytes(StandardCharsets.UTF_8))
                        .keys(List.of("key-" + i)).property("origin", "api").build()).get();
            }
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, "1", "none"),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 10; i < 20; i++) {
                    producer.send(new ProducerRecord<>("mixed", 0, null, ("kafka-" + i).getBytes(StandardCharsets.UTF_8)));
                }
                producer.flush();
            }
            for (int i = 20; i < 25; i++) {
                store.append("mixed", 0, Message.of(("store-" + i).getBytes(StandardCharsets.UTF_8))).get();
            }
            List<ConsumerRecord<byte[], byte[]>> records = consumeAll(broker, "mixed", 1, 25).get(0);
            assertThat(records).hasSize(25);
            for (int i = 0; i < 25; i++) {
                ConsumerRecord<byte[], byte[]> record = records.get(i);
                assertThat(record.offset()).isEqualTo(i);
                String expected = (i >= 10 && i < 20 ? "kafka-" : "store-") + i;
                assertThat(new String(record.value(), StandardCharsets.UTF_8)).isEqualTo(expected);
            }
            assertThat(new String(records.get(3).key(), StandardCharsets.UTF_8)).isEqualTo("key-3");
            assertThat(new String(records.get(3).headers().lastHeader("origin").value(), StandardCharsets.UTF_8))
                    .isEqualTo("api");
            // And the store reads a producer's batch back whole, its first offset stamped in.
            try (ReadResult read = store.read("mixed", 0, 12, 1, Long.MAX_VALUE)) {
                StoredMessage batch = read.messages().getFirst();
                assertThat(batch.opaque()).isTrue();
                assertThat(batch.queueOffset()).isLessThanOrEqualTo(12);
                assertThat(batch.bodyBuffer().getLong(0)).isEqualTo(batch.queueOffset());
            }
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"1", "all"})
    void aLongPollAnswersAsSoonAsARecordArrives(String acks) throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "waits", 1);
            Map<String, Object> config = new HashMap<>();
            config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
            config.put(ConsumerConfig.FETCH_MAX_WAIT_MS_CONFIG, 30_000);
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer());
                 KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, acks, "none"),
                         new ByteArraySerializer(), new ByteArraySerializer())) {
                TopicPartition partition = new TopicPartition("waits", 0);
                consumer.assign(List.of(partition));
                consumer.seek(partition, 0);
                assertThat(consumer.poll(Duration.ofMillis(300)).count()).isZero();
                producer.send(new ProducerRecord<>("waits", 0, null, "now".getBytes(StandardCharsets.UTF_8))).get();
                long start = System.nanoTime();
                int received = 0;
                while (received == 0 && System.nanoTime() - start < TimeUnit.SECONDS.toNanos(20)) {
                    received = consumer.poll(Duration.ofMillis(100)).count();
                }
                // A fetch that waited for the 30 s maximum would not have answered within 20 s.
                assertThat(received).isEqualTo(1);
                // The consumer's next fetch is parked for up to 30 s, and a close's last request on that connection
                // is answered after it (requests on a connection are answered in order, as Kafka's broker does):
                // closing without waiting saves the test those 30 s.
                consumer.close(org.apache.kafka.clients.consumer.CloseOptions.timeout(Duration.ZERO));
            }
        }
    }
}
