package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.LogTruncationException;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderTopic;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData.EpochEndOffset;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OffsetForLeaderEpoch on a broker alone, which leads every partition in epoch 0: each request's answer is the one
 * Apache Kafka 4.3.1 (a single KRaft node, leader epoch 0) gave the same request, and the Java consumer validates a
 * position that names an epoch by it, finding a position past the end of its epoch truncated.
 */
class OffsetForLeaderEpochTest {

    private static final int NONE = -1;

    @TempDir
    Path dir;

    /** One partition's ask: the epoch its sender knows (-1: none), and the epoch whose end it wants. */
    private record Ask(String topic, int partition, int currentEpoch, int epoch) {
    }

    private static EpochEndOffset ask(int port, short version, Ask ask) throws Exception {
        OffsetForLeaderEpochRequestData request = new OffsetForLeaderEpochRequestData().setReplicaId(-1);
        request.topics().add(new OffsetForLeaderTopic().setTopic(ask.topic()).setPartitions(List.of(
                new OffsetForLeaderPartition().setPartition(ask.partition()).setCurrentLeaderEpoch(ask.currentEpoch())
                        .setLeaderEpoch(ask.epoch()))));
        OffsetForLeaderEpochResponseData response = new OffsetForLeaderEpochResponseData(KafkaWire.call(port,
                ApiKeys.OFFSET_FOR_LEADER_EPOCH, version, request), version);
        assertThat(response.topics()).hasSize(1);
        assertThat(response.topics().iterator().next().topic()).isEqualTo(ask.topic());
        return response.topics().iterator().next().partitions().getFirst();
    }

    /** @return "error/epoch/offset", as the answers compare */
    private static String answer(EpochEndOffset end) {
        return Errors.forCode(end.errorCode()) + "/" + end.leaderEpoch() + "/" + end.endOffset();
    }

    private static void produce(Broker broker, String topic, int records) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(
                ProduceFetchTest.producerConfig(broker, "all", "none"), new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < records; i++) {
                // One batch each.
                producer.send(new ProducerRecord<>(topic, 0, null, ("r" + i).getBytes(StandardCharsets.UTF_8)))
                        .get(20, TimeUnit.SECONDS);
            }
        }
    }

    @Test
    void everyAnswerIsKafkasAtEveryVersion() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "three", 1);
            ProduceFetchTest.createTopic(broker, "empty", 1);
            produce(broker, "three", 3);
            // What Kafka 4.3.1 answered, ask by ask.
            Map<Ask, String> kafka = new java.util.LinkedHashMap<>();
            kafka.put(new Ask("three", 0, NONE, 0), "NONE/0/3");
            kafka.put(new Ask("three", 0, NONE, -1), "NONE/-1/-1");
            kafka.put(new Ask("three", 0, NONE, -2), "NONE/-2/0");
            kafka.put(new Ask("three", 0, NONE, 1), "NONE/-1/-1");
            kafka.put(new Ask("three", 0, NONE, 5), "NONE/-1/-1");
            kafka.put(new Ask("three", 0, 0, 0), "NONE/0/3");
            kafka.put(new Ask("three", 0, 0, 3), "NONE/-1/-1");
            kafka.put(new Ask("three", 0, 1, 0), "UNKNOWN_LEADER_EPOCH/-1/-1");
            kafka.put(new Ask("three", 0, -2, 0), "FENCED_LEADER_EPOCH/-1/-1");
            kafka.put(new Ask("three", 3, NONE, 0), "UNKNOWN_TOPIC_OR_PARTITION/-1/-1");
            kafka.put(new Ask("nosuch", 0, NONE, 0), "UNKNOWN_TOPIC_OR_PARTITION/-1/-1");
            kafka.put(new Ask("empty", 0, NONE, 0), "NONE/0/0");
            kafka.put(new Ask("empty", 0, NONE, -3), "NONE/-3/0");
            kafka.put(new Ask("empty", 0, NONE, 1), "NONE/-1/-1");
            for (short version = 2; version <= 4; version++) {
                for (Map.Entry<Ask, String> expected : kafka.entrySet()) {
                    assertThat(answer(ask(broker.port(), version, expected.getKey())))
                            .as("v%d %s", version, expected.getKey()).isEqualTo(expected.getValue());
                }
            }
        }
    }

    @Test
    void aTopicAskedTwiceIsAnsweredOnceWithBothAsks() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "twice", 2);
            OffsetForLeaderEpochRequestData request = new OffsetForLeaderEpochRequestData().setReplicaId(-1);
            // The request's topics are keyed by name, but may repeat one (its collection takes duplicates).
            for (int partition = 0; partition < 2; partition++) {
                request.topics().add(new OffsetForLeaderTopic().setTopic("twice").setPartitions(List.of(
                        new OffsetForLeaderPartition().setPartition(partition).setCurrentLeaderEpoch(NONE)
                                .setLeaderEpoch(0))));
            }
            OffsetForLeaderEpochResponseData response = new OffsetForLeaderEpochResponseData(KafkaWire.call(
                    broker.port(), ApiKeys.OFFSET_FOR_LEADER_EPOCH, (short) 4, request), (short) 4);
            assertThat(response.topics()).hasSize(1);
            assertThat(response.topics().iterator().next().partitions()).extracting(EpochEndOffset::partition)
                    .containsExactly(0, 1);
        }
    }

    @Test
    void theConsumerValidatesASeekByTheEndOfItsEpoch() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            ProduceFetchTest.createTopic(broker, "seek", 1);
            produce(broker, "seek", 3);
            TopicPartition partition = new TopicPartition("seek", 0);
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false,
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"), new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                List<ConsumerRecord<byte[], byte[]>> read = poll(consumer, 3);
                assertThat(read).extracting(ConsumerRecord::offset).containsExactly(0L, 1L, 2L);
                assertThat(read).as("each batch carries the leader's epoch, as Kafka's leader sets it")
                        .allSatisfy(record -> assertThat(record.leaderEpoch()).contains(0));

                // Within epoch 0, which ends at 3: valid, and read from there.
                consumer.seek(partition, new OffsetAndMetadata(2, Optional.of(0), ""));
                assertThat(poll(consumer, 1)).extracting(ConsumerRecord::offset).containsExactly(2L);

                // Past the end of epoch 0: the log was cut under that position, and the consumer says where.
                consumer.seek(partition, new OffsetAndMetadata(5, Optional.of(0), ""));
                assertThatThrownBy(() -> poll(consumer, 1)).isInstanceOfSatisfying(LogTruncationException.class,
                        truncated -> assertThat(truncated.divergentOffsets())
                                .containsEntry(partition, new OffsetAndMetadata(3, Optional.of(0), null)));
            }
        }
    }

    /** Polls until {@code count} records came (or 20 s passed); a validation's failure is thrown from here. */
    private static List<ConsumerRecord<byte[], byte[]>> poll(KafkaConsumer<byte[], byte[]> consumer, int count) {
        List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (read.size() < count && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(200)).forEach(read::add);
        }
        return read;
    }
}
