package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.RetentionPolicy;
import io.sluice.store.RetentionReport;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.io.DiskSpace;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker's retention is Kafka's: acknowledged records that retention.ms and retention.bytes still allow are never
 * deleted because the disk fills (appends are refused instead), and a group's committed offset holds nothing back.
 * With the store's RocketMQ-style defaults, the disk filled to 87% by another process deleted records a group still
 * needed, and a group's commit of offset 0 kept a topic far past its retention.bytes.
 */
class BrokerRetentionTest {

    private static final int RECORDS = 6_000;

    @TempDir
    Path dir;

    private final ZeroCopyFetchTest.CountingFileIO io = new ZeroCopyFetchTest.CountingFileIO();

    private Store open(long retentionBytes) {
        RetentionPolicy kafka = Broker.kafkaRetention(RetentionPolicy.defaults()
                .withRetentionHours(Broker.DEFAULT_RETENTION_HOURS).withRetentionBytes(retentionBytes)
                .withCheckIntervalMillis(3_600_000));
        return Store.open(dir, StoreConfig.builder().fileIO(io).segmentSizeBytes(1L << 20).maxMessageBytes(256 << 10)
                .retention(kafka).overrideStoreSettings(true).build());
    }

    /** @return the segment files of the topic's log (a BATCHES topic has a log per partition) */
    private long segmentFiles() throws java.io.IOException {
        try (var files = java.nio.file.Files.walk(dir)) {
            return files.filter(path -> path.getFileName().toString().matches("\\d{20}")
                    && path.toString().contains("kept")).count();
        }
    }

    /** Fills the topic with {@link #RECORDS} records of 1 KiB and commits offset 0 for a slow group. */
    private static void fillAndCommitZero(String bootstrap) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic("kept", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Properties producerProperties = new Properties();
        producerProperties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        producerProperties.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerProperties, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>("kept", 0, null, new byte[1024]));
            }
            producer.flush();
        }
        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        consumerProperties.put(ConsumerConfig.GROUP_ID_CONFIG, "slow");
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            consumer.commitSync(Map.of(new TopicPartition("kept", 0), new OffsetAndMetadata(0)),
                    Duration.ofSeconds(30));
        }
    }

    @Test
    void aFillingDiskDeletesNothingAndAppendsAreRefusedAboveTheHardRatio() throws Exception {
        try (Store store = open(Long.MAX_VALUE);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            fillAndCommitZero("127.0.0.1:" + broker.port());
            assertThat(segmentFiles()).as("several segments, so that there is something to delete").isGreaterThan(3);
            // Another process fills the disk to 87%: past the store's default emergency ratio (85%).
            io.reported = new DiskSpace(1_000_000_000L, 130_000_000L, 130_000_000L);
            RetentionReport full = store.enforceRetention();
            assertThat(full.segmentsDeleted()).as("nothing unexpired goes").isZero();
            assertThat(store.minOffset("kept", 0)).isZero();
            assertThat(store.maxOffset("kept", 0)).isEqualTo(RECORDS);
            io.reported = new DiskSpace(1_000_000_000L, 50_000_000L, 50_000_000L);
            assertThat(store.enforceRetention().appendsRefused()).as("95%: appends refused, as Kafka").isTrue();
            assertThat(store.minOffset("kept", 0)).isZero();
        }
    }

    @Test
    void aGroupsCommittedOffsetHoldsNothingPastRetentionBytes() throws Exception {
        try (Store store = open(2L << 20);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            fillAndCommitZero("127.0.0.1:" + broker.port());
            RetentionReport sized = store.enforceRetention();
            assertThat(sized.reason()).isEqualTo("size");
            assertThat(sized.heldBy()).as("no group holds it").isNull();
            assertThat(store.minOffset("kept", 0)).isPositive();
            assertThat(sized.logBytes()).as("about retention.bytes and the active segment").isLessThan(4L << 20);
        }
    }
}
