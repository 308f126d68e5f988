package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
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
 * Defects of the log cleaner found in review, each a failing test: what a Kafka cleaner does with the same log, and
 * what this one does not.
 */
class CleanerReviewTest {

    private static final String PADDING = "x".repeat(400);

    @TempDir
    Path dir;

    private static StoreConfig store() {
        return StoreConfig.builder().segmentSizeBytes(1 << 20).maxMessageBytes(256 * 1024).build();
    }

    /** The cleaner runs only when the test calls it, with the smallest key map Kafka allows (1 MiB). */
    private static BrokerConfig manual() {
        return BrokerConfig.defaults().withPort(0).withCleaner(new CleanerSettings(false, 15_000, 1 << 20,
                Double.MAX_VALUE));
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG,
                20_000));
    }

    private static void createCompacted(Admin admin, String topic) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                "min.cleanable.dirty.ratio", "0.01")))).all().get(20, TimeUnit.SECONDS);
    }

    /** Sends {@code count} records to partition 0, key {@code prefix + (i % keys)}, value from {@code value}. */
    private static void send(Broker broker, String topic, int count, String prefix, int keys, String value)
            throws Exception {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        properties.put(ProducerConfig.LINGER_MS_CONFIG, 20);
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
                new StringSerializer())) {
            List<java.util.concurrent.Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, prefix + (i % keys), value)));
            }
            for (java.util.concurrent.Future<?> each : sent) {
                each.get(30, TimeUnit.SECONDS);
            }
        }
    }

    /** @return every record of partition 0 of {@code topic}, from its start to its high watermark */
    private static List<ConsumerRecord<String, String>> readAll(Broker broker, String topic) {
        TopicPartition p0 = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"), new StringDeserializer(),
                new StringDeserializer())) {
            consumer.assign(List.of(p0));
            long end = consumer.endOffsets(List.of(p0)).get(p0);
            List<ConsumerRecord<String, String>> read = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (consumer.position(p0) < end && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(read::add);
            }
            assertThat(consumer.position(p0)).isEqualTo(end);
            return read;
        }
    }

    /**
     * A segment of tombstones whose keys no later record has: filterTo keeps every record and sets the batches'
     * delete horizon (KIP-534), which it stores as the batch's base timestamp, so every record's timestamp delta goes
     * from about 0 (one varint byte) to about minus delete.retention.ms (four bytes): each batch grows. A Kafka segment
     * simply grows; here the copy must fit the segment's fixed size ("does not fit in its N bytes", Compaction.finish),
     * so the compaction of the partition fails at that segment, at every round, and nothing after it is ever
     * compacted: the 4,000 updates of 200 keys written after the tombstones stay.
     */
    @Test
    void aSegmentOfTombstonesThatAllStayDoesNotStopTheCleaning() throws Exception {
        try (Store store = Store.open(dir, store());
             Broker broker = Broker.start(store, manual());
             Admin admin = admin(broker)) {
            createCompacted(admin, "g");
            send(broker, "g", 40_000, "t", 40_000, null);
            send(broker, "g", 4_000, "k", 200, "v" + PADDING);
            int before = readAll(broker, "g").size();
            assertThat(before).isEqualTo(44_000);
            // Rounds go on from where the last stopped (the key map fills before the log's end), as the cleaner's thread
            // runs them back to back while they get on.
            int rounds = 0;
            while (broker.cleaner().cleanRound() > 0 && rounds < 10) {
                rounds++;
            }
            int after = readAll(broker, "g").size();
            assertThat(rounds).as("rounds that got on").isBetween(1, 9);
            assertThat(after).as("records left of %d (the updates of 200 keys cleaned)", before)
                    .isLessThan(before - 2_000);
        }
    }

    /**
     * More distinct keys than the key map holds (1 MiB: 29,491 keys): Kafka's first cleaning stops where the map
     * fills, and its next starts from there, so the updates after the unique keys are cleaned by the second round.
     * Here the report never says where a cleaning ended (CompactionReport.endOffset is always -1), so LogCleaner never
     * records it: every round maps from the log's start, fills the map at the same offset, and the updates are never
     * cleaned, however many rounds run.
     */
    @Test
    void aLogWithMoreKeysThanTheMapIsCleanedByLaterRounds() throws Exception {
        try (Store store = Store.open(dir, store());
             Broker broker = Broker.start(store, manual());
             Admin admin = admin(broker)) {
            createCompacted(admin, "m");
            send(broker, "m", 40_000, "u", 40_000, "unique");
            send(broker, "m", 4_000, "k", 200, "v" + PADDING);
            int before = readAll(broker, "m").size();
            for (int round = 0; round < 3; round++) {
                broker.cleaner().cleanRound();
            }
            int after = readAll(broker, "m").size();
            assertThat(after).as("records left of %d after three rounds (the updates of 200 keys cleaned)", before)
                    .isLessThan(before - 2_000);
        }
    }
}
