package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
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
 * Log compaction through the stock Java client: a compacted topic of many updates over few keys shrinks to the latest
 * record of each key (plus what its active segment holds), offsets and values as produced, tombstones kept for
 * delete.retention.ms and then gone, aborted transactions' records gone, across a restart, and the cleaner runs by
 * itself.
 */
class CompactionApiTest {

    private static final int KEYS = 200;
    private static final String PADDING = "x".repeat(400);

    @TempDir
    Path dir;

    private static StoreConfig store() {
        return StoreConfig.builder().segmentSizeBytes(1 << 20).maxMessageBytes(256 * 1024).build();
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    private static KafkaProducer<String, String> producer(Broker broker, String transactionalId) {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        if (transactionalId != null) {
            properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        }
        return new KafkaProducer<>(properties, new StringSerializer(), new StringSerializer());
    }

    /** @return every record of partition 0 of {@code topic}, from its start to its high watermark */
    private static List<ConsumerRecord<String, String>> readAll(Broker broker, String topic) {
        TopicPartition p0 = new TopicPartition(topic, 0);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest", ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_uncommitted"), new StringDeserializer(), new StringDeserializer())) {
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

    /** Produces {@code count} updates over {@link #KEYS} keys, value "v<i>"; @return the value of each offset */
    private static Map<Long, String> update(Broker broker, String topic, int count) throws Exception {
        Map<Long, String> values = new HashMap<>();
        try (KafkaProducer<String, String> producer = producer(broker, null)) {
            List<java.util.concurrent.Future<org.apache.kafka.clients.producer.RecordMetadata>> sent = new ArrayList<>();
            List<String> sentValues = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                String value = "v" + i + PADDING;
                sentValues.add(value);
                sent.add(producer.send(new ProducerRecord<>(topic, 0, "k" + (i % KEYS), value)));
            }
            for (int i = 0; i < count; i++) {
                values.put(sent.get(i).get(20, TimeUnit.SECONDS).offset(), sentValues.get(i));
            }
        }
        return values;
    }

    /** @return the latest record of each key among {@code records} */
    private static Map<String, ConsumerRecord<String, String>> latest(Collection<ConsumerRecord<String, String>> records) {
        Map<String, ConsumerRecord<String, String>> latest = new HashMap<>();
        records.forEach(record -> latest.put(record.key(), record));
        return latest;
    }

    @Test
    void aCompactedTopicKeepsTheLatestRecordOfEachKey() throws Exception {
        Map<String, ConsumerRecord<String, String>> before;
        List<ConsumerRecord<String, String>> after;
        BrokerConfig manual = BrokerConfig.defaults().withPort(0)
                .withCleaner(new CleanerSettings(false, 15_000, 1 << 20, Double.MAX_VALUE));
        try (Store store = Store.open(dir, store());
             Broker broker = Broker.start(store, manual);
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("c", 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01")))).all().get(20, TimeUnit.SECONDS);
            Map<Long, String> values = update(broker, "c", 20_000);
            try (KafkaProducer<String, String> producer = producer(broker, null)) {
                for (int k = 0; k < 10; k++) {
                    producer.send(new ProducerRecord<>("c", 0, "t" + k, "to be deleted" + PADDING));
                    producer.send(new ProducerRecord<>("c", 0, "t" + k, null)); // keys no later record has
                }
            }
            values.putAll(update(broker, "c", 5_000));
            List<ConsumerRecord<String, String>> all = readAll(broker, "c");
            assertThat(all).hasSize(25_020);
            before = latest(all);

            assertThat(broker.cleaner().cleanRound()).isEqualTo(1);
            after = readAll(broker, "c");
            assertThat(after.size()).as("records left of %d", all.size()).isLessThan(all.size() / 4);
            Map<String, ConsumerRecord<String, String>> latestAfter = latest(after);
            assertThat(latestAfter.keySet()).isEqualTo(before.keySet());
            before.forEach((key, record) -> {
                assertThat(latestAfter.get(key).offset()).as(key).isEqualTo(record.offset());
                assertThat(latestAfter.get(key).value()).as(key).isEqualTo(record.value());
            });
            for (ConsumerRecord<String, String> record : after) {
                assertThat(record.value()).as("offset %d", record.offset()).isEqualTo(values.get(record.offset()));
            }
            // The tombstones are kept for delete.retention.ms (a day by default).
            assertThat(tombstones(after)).isEqualTo(10);
            assertThat(broker.cleaner().cleanRound()).as("nothing more to clean").isZero();
        }
        try (Store store = Store.open(dir, store());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0)
                     .withCleaner(CleanerSettings.DEFAULTS.withBackoffMillis(100)));
             Admin admin = admin(broker)) {
            List<ConsumerRecord<String, String>> restarted = readAll(broker, "c");
            assertThat(restarted.size()).as("after a restart").isEqualTo(after.size());
            for (int i = 0; i < after.size(); i++) {
                assertThat(restarted.get(i).offset()).isEqualTo(after.get(i).offset());
                assertThat(restarted.get(i).value()).isEqualTo(after.get(i).value());
            }
            // A delete.retention.ms of 0: a tombstone's horizon, set at its first cleaning, has passed by the next,
            // which drops it. (A horizon is set once: a topic's later change of delete.retention.ms leaves it.)
            admin.createTopics(List.of(new NewTopic("d", 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "0")))).all()
                    .get(20, TimeUnit.SECONDS);
            update(broker, "d", 2_000);
            try (KafkaProducer<String, String> producer = producer(broker, null)) {
                for (int k = 0; k < 10; k++) {
                    producer.send(new ProducerRecord<>("d", 0, "t" + k, "to be deleted" + PADDING));
                    producer.send(new ProducerRecord<>("d", 0, "t" + k, null));
                }
            }
            update(broker, "d", 5_000);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            List<ConsumerRecord<String, String>> left = readAll(broker, "d");
            // Down to the keys' latest records and what the active segment (at most 1 MiB) holds.
            while ((tombstones(left) > 0 || left.size() >= 7_020 / 2) && System.nanoTime() < deadline) {
                Thread.sleep(200);
                left = readAll(broker, "d");
            }
            assertThat(tombstones(left)).as("by the cleaner's own rounds").isZero();
            Map<String, ConsumerRecord<String, String>> latest = latest(left);
            assertThat(latest).hasSize(KEYS); // the deleted keys gone with their tombstones
            for (int k = 0; k < KEYS; k++) {
                assertThat(latest.get("k" + k).value()).startsWith("v" + (5_000 - KEYS + k) + "x");
            }
            assertThat(left.size()).isLessThan(7_020 / 2);
        }
    }

    private static long aborted(List<ConsumerRecord<String, String>> records) {
        return records.stream().filter(record -> record.value().startsWith("aborted")).count();
    }

    private static long tombstones(List<ConsumerRecord<String, String>> records) {
        return records.stream().filter(record -> record.value() == null).count();
    }

    @Test
    void anAbortedTransactionsRecordsAreCleanedAway() throws Exception {
        BrokerConfig manual = BrokerConfig.defaults().withPort(0)
                .withCleaner(new CleanerSettings(false, 15_000, 1 << 20, Double.MAX_VALUE));
        try (Store store = Store.open(dir, store());
             Broker broker = Broker.start(store, manual);
             Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                    "min.cleanable.dirty.ratio", "0.01")))).all().get(20, TimeUnit.SECONDS);
            update(broker, "t", 2_000);
            try (KafkaProducer<String, String> producer = producer(broker, "tx")) {
                producer.initTransactions();
                producer.beginTransaction();
                for (int i = 0; i < 2_000; i++) {
                    // Keys no later record has: only the abort makes them go.
                    producer.send(new ProducerRecord<>("t", 0, "a" + i, "aborted" + PADDING));
                }
                producer.flush(); // sent, then aborted (unsent records an abort would drop)
                producer.abortTransaction();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("t", 0, "c0", "committed" + PADDING));
                producer.commitTransaction();
            }
            update(broker, "t", 5_000);
            List<ConsumerRecord<String, String>> all = readAll(broker, "t");
            assertThat(aborted(all)).isEqualTo(2_000);
            broker.cleaner().cleanRound();
            List<ConsumerRecord<String, String>> after = readAll(broker, "t");
            assertThat(after.size()).isLessThan(all.size() / 2);
            assertThat(aborted(after)).isZero();
            assertThat(after.stream().filter(record -> record.value().startsWith("committed")).count()).isOne();
        }
    }

    /** @return the transaction markers (control batches) of partition 0 of {@code topic}, in the store */
    private static int markers(Store store, String topic) {
        int markers = 0;
        long offset = store.minOffset(topic, 0);
        long end = store.maxOffset(topic, 0);
        while (offset < end) {
            try (io.sluice.store.ReadResult read = store.read(topic, 0, offset, 500, 1 << 20)) {
                if (read.messages().isEmpty()) {
                    break;
                }
                for (io.sluice.store.StoredMessage message : read.messages()) {
                    for (org.apache.kafka.common.record.internal.RecordBatch batch : org.apache.kafka.common.record.internal.MemoryRecords
                            .readableRecords(message.body().asByteBuffer()).batches()) {
                        if (batch.isControlBatch()) {
                            markers++;
                        }
                    }
                }
                offset = read.nextOffset();
            }
        }
        return markers;
    }

    /**
     * As Kafka's cleaner: a transaction's marker stays while a record of the transaction does, and goes once none does
     * and delete.retention.ms has passed; read_committed readers and the producer's next transactions are unaffected,
     * also after a restart rebuilt the partition's transactions from what is left.
     */
    @Test
    void theMarkersOfTransactionsLeftWithoutRecordsGoAfterDeleteRetention() throws Exception {
        BrokerConfig manual = BrokerConfig.defaults().withPort(0)
                .withCleaner(new CleanerSettings(false, 15_000, 1 << 20, Double.MAX_VALUE));
        try (Store store = Store.open(dir, store())) {
            try (Broker broker = Broker.start(store, manual);
                 Admin admin = admin(broker)) {
                admin.createTopics(List.of(new NewTopic("t", 1, (short) 1).configs(Map.of("cleanup.policy", "compact",
                        "min.cleanable.dirty.ratio", "0.01", "delete.retention.ms", "1000")))).all()
                        .get(20, TimeUnit.SECONDS);
                try (KafkaProducer<String, String> producer = producer(broker, "tx")) {
                    producer.initTransactions();
                    for (int t = 0; t < 20; t++) {
                        producer.beginTransaction();
                        // Keys the updates below supersede: these transactions are left with no record.
                        producer.send(new ProducerRecord<>("t", 0, "k" + t, "superseded" + PADDING));
                        producer.commitTransaction();
                    }
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>("t", 0, "kept", "committed" + PADDING));
                    producer.commitTransaction();
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>("t", 0, "never", "aborted" + PADDING));
                    producer.flush();
                    producer.abortTransaction();
                }
                update(broker, "t", 5_000);
                assertThat(markers(store, "t")).isEqualTo(22);
                broker.cleaner().cleanRound();
                // Every superseded or aborted record went, but their markers stay for delete.retention.ms.
                assertThat(markers(store, "t")).isEqualTo(22);
                Thread.sleep(1_100);
                broker.cleaner().cleanRound();
                assertThat(markers(store, "t")).as("only the marker of the transaction whose record is left")
                        .isEqualTo(1);
                List<ConsumerRecord<String, String>> left = readAll(broker, "t");
                assertThat(left).filteredOn(r -> !r.value().startsWith("v")).extracting(ConsumerRecord::key)
                        .containsExactly("kept");
            }
            // After a restart the partition's transactions are read back from what is left; the producer goes on.
            try (Broker broker = Broker.start(store, manual)) {
                try (KafkaProducer<String, String> producer = producer(broker, "tx")) {
                    producer.initTransactions();
                    producer.beginTransaction();
                    producer.send(new ProducerRecord<>("t", 0, "after", "committed" + PADDING));
                    producer.commitTransaction();
                }
                TopicPartition p0 = new TopicPartition("t", 0);
                try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"), new StringDeserializer(),
                        new StringDeserializer())) {
                    consumer.assign(List.of(p0));
                    consumer.seekToBeginning(List.of(p0));
                    long end = consumer.endOffsets(List.of(p0)).get(p0);
                    List<String> keys = new ArrayList<>();
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (consumer.position(p0) < end && System.nanoTime() < deadline) {
                        consumer.poll(Duration.ofMillis(200)).forEach(r -> {
                            if (!r.value().startsWith("v")) {
                                keys.add(r.key());
                            }
                        });
                    }
                    assertThat(keys).containsExactly("kept", "after");
                }
            }
        }
    }
}
