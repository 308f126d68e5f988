package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ListOffsetsResult;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * ListOffsets by time answers on the records' own timestamps, as Kafka does: back-filled records (created long
 * before they were appended) are found by the time their producer gave them, inside batches, compressed or not. The
 * special timestamps are taken, and answered, as Kafka 4.3.1 takes and answers them.
 */
class ListOffsetsTest {

    /** 2020-09-13: long before any of these records is appended. */
    private static final long BASE = 1_600_000_000_000L;

    @TempDir
    Path dir;

    @ParameterizedTest
    @ValueSource(strings = {"none", "lz4", "zstd"})
    void recordTimestampsNotAppendTimesAnswerLookupsByTime(String compression) throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            // QUEUE, not the broker's BATCHES: the topic takes a store message too.
            store.createTopic("times", io.sluice.store.TopicLayout.QUEUE, 2);
            Map<String, Object> config = ProduceFetchTest.producerConfig(broker, "1", compression);
            config.put(ProducerConfig.LINGER_MS_CONFIG, 100);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < 100; i++) {
                    // Rising by 10 ms a record, but for record 50, which is the newest by far.
                    long timestamp = i == 50 ? BASE + 100_000 : BASE + 10L * i;
                    producer.send(new ProducerRecord<>("times", 0, timestamp, null, bytes("r" + i)));
                    producer.send(new ProducerRecord<>("times", 1, timestamp, null, bytes("r" + i)));
                }
                producer.flush();
            }
            // On partition 0, a store message born after all of them: its born time is its record timestamp.
            store.append("times", 0, Message.builder().bornTimestamp(BASE + 200_000).body(bytes("api")).build())
                    .join();
            TopicPartition partition = new TopicPartition("times", 0);
            try (KafkaConsumer<byte[], byte[]> consumer = ProduceFetchTest.consumer(broker)) {
                Map<TopicPartition, OffsetAndTimestamp> found = consumer.offsetsForTimes(Map.of(partition, BASE + 255));
                assertThat(found.get(partition).offset()).isEqualTo(26);
                assertThat(found.get(partition).timestamp()).isEqualTo(BASE + 260);
                found = consumer.offsetsForTimes(Map.of(partition, BASE + 100_000));
                assertThat(found.get(partition).offset()).isEqualTo(50);
                found = consumer.offsetsForTimes(Map.of(partition, BASE + 100_001));
                assertThat(found.get(partition).offset()).isEqualTo(100);
                assertThat(found.get(partition).timestamp()).isEqualTo(BASE + 200_000);
                found = consumer.offsetsForTimes(Map.of(partition, BASE + 200_001));
                assertThat(found.get(partition)).as("no record that new").isNull();
            }
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG,
                    "127.0.0.1:" + broker.port()))) {
                ListOffsetsResult.ListOffsetsResultInfo max = admin.listOffsets(Map.of(partition,
                        OffsetSpec.maxTimestamp())).all().get(20, TimeUnit.SECONDS).get(partition);
                assertThat(max.offset()).isEqualTo(100);
                assertThat(max.timestamp()).isEqualTo(BASE + 200_000);
                TopicPartition second = new TopicPartition("times", 1);
                max = admin.listOffsets(Map.of(second, OffsetSpec.maxTimestamp())).all().get(20, TimeUnit.SECONDS)
                        .get(second);
                assertThat(max.offset()).as("the newest record, inside a batch").isEqualTo(50);
                assertThat(max.timestamp()).isEqualTo(BASE + 100_000);
                assertThat(admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).all().get(20, TimeUnit.SECONDS)
                        .get(partition).offset()).isZero();
                assertThat(admin.listOffsets(Map.of(partition, OffsetSpec.latest())).all().get(20, TimeUnit.SECONDS)
                        .get(partition).offset()).isEqualTo(101);
            }
        }
    }

    /**
     * The special timestamps at every version, and what v11 answers for each, as Kafka 4.3.1 answered the same requests
     * (a topic of three records, another empty; no remote storage): a special timestamp from the version that
     * introduced it on (max timestamp v7, earliest local v8, latest tiered v9, earliest pending upload v11), any other
     * negative one never, UNSUPPORTED_VERSION otherwise, before the partition is looked at; the tiered ones with no
     * offset and no epoch; an offset found with its batch's leader epoch, none found with none.
     */
    @Test
    void specialTimestampsAreTakenFromTheirVersionAndAnsweredAsKafkaAnswersThem() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "three", 1);
            ProduceFetchTest.createTopic(broker, "empty", 1);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                    ProduceFetchTest.producerConfig(broker, "all", "none"), new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>("three", 0, BASE + i, null, bytes("r" + i)))
                            .get(20, TimeUnit.SECONDS);
                }
            }
            Map<Long, Integer> introduced = Map.of(-3L, 7, -4L, 8, -5L, 9, -6L, 11, -7L, 99, -100L, 99);
            for (short version = 1; version <= 11; version++) {
                for (Map.Entry<Long, Integer> special : introduced.entrySet()) {
                    Errors expected = version >= special.getValue() ? Errors.NONE : Errors.UNSUPPORTED_VERSION;
                    assertThat(Errors.forCode(listOffset(broker, version, "three", 0, special.getKey()).errorCode()))
                            .as("v%d timestamp %d", version, special.getKey()).isEqualTo(expected);
                }
            }
            assertThat(Errors.forCode(listOffset(broker, (short) 11, "nosuch", 0, -7).errorCode()))
                    .as("the timestamp is checked first").isEqualTo(Errors.UNSUPPORTED_VERSION);
            assertThat(Errors.forCode(listOffset(broker, (short) 11, "nosuch", 0, -3).errorCode()))
                    .isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION);
            // error/offset/timestamp/epoch, at v11.
            Map<String, String> kafka = new java.util.LinkedHashMap<>();
            kafka.put("three -1", "NONE/3/-1/0");
            kafka.put("three -2", "NONE/0/-1/0");
            kafka.put("three -3", "NONE/2/" + (BASE + 2) + "/0");
            kafka.put("three -4", "NONE/0/-1/0");
            kafka.put("three -5", "NONE/-1/-1/-1");
            kafka.put("three -6", "NONE/-1/-1/-1");
            kafka.put("three 0", "NONE/0/" + BASE + "/0");
            kafka.put("three 4000000000000", "NONE/-1/-1/-1");
            kafka.put("empty -1", "NONE/0/-1/0");
            kafka.put("empty -2", "NONE/0/-1/0");
            kafka.put("empty -3", "NONE/-1/-1/-1");
            kafka.put("empty -4", "NONE/0/-1/0");
            kafka.put("empty 0", "NONE/-1/-1/-1");
            for (Map.Entry<String, String> expected : kafka.entrySet()) {
                String[] ask = expected.getKey().split(" ");
                var answer = listOffset(broker, (short) 11, ask[0], 0, Long.parseLong(ask[1]));
                assertThat(Errors.forCode(answer.errorCode()) + "/" + answer.offset() + "/" + answer.timestamp() + "/"
                        + answer.leaderEpoch()).as(expected.getKey()).isEqualTo(expected.getValue());
            }
        }
    }

    /**
     * The earliest and latest offsets and an offset by time at every version served: before v4 an answer has no leader
     * epoch to carry, and must not try to (librdkafka 2.0's consumer, kcat's on Debian 12, asks v2 where to start).
     */
    @Test
    void earliestLatestAndByTimeAreAnsweredAtEveryVersion() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "three", 1);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                    ProduceFetchTest.producerConfig(broker, "all", "none"), new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>("three", 0, BASE + i, null, bytes("r" + i)))
                            .get(20, TimeUnit.SECONDS);
                }
            }
            for (short version = 1; version <= 11; version++) {
                for (long[] asked : new long[][] {{-1, 3}, {-2, 0}, {BASE + 1, 1}}) {
                    var answer = listOffset(broker, version, "three", 0, asked[0]);
                    assertThat(Errors.forCode(answer.errorCode()) + " at " + answer.offset())
                            .as("v%d timestamp %d", version, asked[0]).isEqualTo("NONE at " + asked[1]);
                    assertThat(answer.leaderEpoch()).as("v%d timestamp %d", version, asked[0])
                            .isEqualTo(version >= 4 ? 0 : -1);
                }
            }
        }
    }

    private static ListOffsetsResponseData.ListOffsetsPartitionResponse listOffset(Broker broker, short version,
            String topic, int partition, long timestamp) throws Exception {
        ListOffsetsRequestData request = new ListOffsetsRequestData().setReplicaId(-1).setTopics(List.of(
                new ListOffsetsRequestData.ListOffsetsTopic().setName(topic).setPartitions(List.of(
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(partition)
                                .setTimestamp(timestamp)))));
        return new ListOffsetsResponseData(KafkaWire.call(broker.port(), ApiKeys.LIST_OFFSETS, version, request),
                version).topics().getFirst().partitions().getFirst();
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
