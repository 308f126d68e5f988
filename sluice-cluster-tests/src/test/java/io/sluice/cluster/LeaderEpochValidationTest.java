package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.Replication;
import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
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
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftGroup;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * After a change of leader a stock consumer checks its position with the new leader (OffsetForLeaderEpoch, KIP-320):
 * the batches carry the Raft term they were appended in, and the new leader answers where each term ends in its log,
 * as a Kafka leader answers from its leader-epoch history.
 */
class LeaderEpochValidationTest {

    private static final String TOPIC = "epochs";
    private static final int NONE = -1;

    @TempDir
    Path dir;

    @Test
    void aConsumerValidatesItsPositionWithTheNewLeaderAndFindsASeekPastItsEpochTruncated() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            cluster.awaitMembers();
            cluster.createTopic(TOPIC, 1);
            // The partition is handed to its preferred replica once created: its records are written after that.
            await("node 1 knows the topic", 30, () -> cluster.broker(1).node().partition(TOPIC, 0) != null);
            int first = cluster.broker(1).node().partition(TOPIC, 0).replicas().getFirst();
            await("the preferred replica " + first + " leads", 60, () -> cluster.broker(first).node().leads(TOPIC, 0));
            int firstEpoch = cluster.broker(first).node().leaderEpoch(TOPIC, 0);
            TopicPartition partition = new TopicPartition(TOPIC, 0);
            try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 60_000,
                    10_000);
                 KafkaConsumer<byte[], byte[]> consumer = consumer(cluster)) {
                send(producer, 0, 50);
                consumer.assign(List.of(partition));
                consumer.seekToBeginning(List.of(partition));
                List<ConsumerRecord<byte[], byte[]>> read = poll(consumer, 50);
                assertThat(read).extracting(ConsumerRecord::offset).hasSize(50).startsWith(0L).endsWith(49L);
                assertThat(read).as("each batch carries the term it was appended in")
                        .allSatisfy(record -> assertThat(record.leaderEpoch()).contains(firstEpoch));

                int next = first % 3 + 1;
                transfer(cluster, first, next);
                int nextEpoch = cluster.broker(next).node().leaderEpoch(TOPIC, 0);
                assertThat(nextEpoch).isGreaterThan(firstEpoch);
                send(producer, 50, 100);

                int port = cluster.broker(next).port();
                assertThat(ask(port, nextEpoch, firstEpoch)).as("the first term ends where the second began")
                        .isEqualTo("NONE/" + firstEpoch + "/50");
                assertThat(ask(port, nextEpoch, nextEpoch - 1)).as("a term between, with no batch: the one before")
                        .isEqualTo("NONE/" + firstEpoch + "/50");
                assertThat(ask(port, NONE, nextEpoch)).as("the current term: the log's end")
                        .isEqualTo("NONE/" + nextEpoch + "/100");
                assertThat(ask(port, NONE, nextEpoch + 1)).isEqualTo("NONE/-1/-1");
                assertThat(ask(port, NONE, firstEpoch - 1)).as("before every term the log holds: its start")
                        .isEqualTo("NONE/" + (firstEpoch - 1) + "/0");
                assertThat(ask(port, firstEpoch, firstEpoch)).isEqualTo("FENCED_LEADER_EPOCH/-1/-1");
                assertThat(ask(port, nextEpoch + 1, firstEpoch)).isEqualTo("UNKNOWN_LEADER_EPOCH/-1/-1");
                assertThat(ask(cluster.broker(first).port(), NONE, firstEpoch))
                        .isEqualTo("NOT_LEADER_OR_FOLLOWER/-1/-1");

                // The consumer's position (50, first term) is checked with the new leader, which it learns of from
                // the old one's refusal: without a reset policy, a wrong end would fail it with a truncation.
                read = poll(consumer, 50);
                assertThat(read).extracting(ConsumerRecord::offset).hasSize(50).startsWith(50L).endsWith(99L);
                assertThat(read).allSatisfy(record -> assertThat(record.leaderEpoch()).contains(nextEpoch));
                // A position past the end of the first term was cut, the new leader says, where that term ends.
                consumer.seek(partition, new OffsetAndMetadata(60, Optional.of(firstEpoch), ""));
                assertThatThrownBy(() -> poll(consumer, 1)).isInstanceOfSatisfying(LogTruncationException.class,
                        truncated -> assertThat(truncated.divergentOffsets()).containsEntry(partition,
                                new OffsetAndMetadata(50, Optional.of(firstEpoch), null)));
            }
        }
    }

    private static KafkaConsumer<byte[], byte[]> consumer(InProcessCluster cluster) {
        return new KafkaConsumer<>(Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false, ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "none"),
                new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    private static void send(KafkaProducer<byte[], byte[]> producer, int from, int to) throws Exception {
        for (int i = from; i < to; i++) {
            producer.send(new ProducerRecord<>(TOPIC, 0, null, ("r" + i).getBytes(StandardCharsets.UTF_8)));
            if (i % 10 == 9) {
                producer.flush();
            }
        }
        producer.flush();
    }

    /** Hands the partition's leadership from node {@code old} to {@code next}, and waits for it to lead, ready. */
    private static void transfer(InProcessCluster cluster, int old, int next) throws Exception {
        RaftGroup group = cluster.replica(next, TOPIC).division().getGroup();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(group)
                .build()) {
            await("node " + next + " leads " + TOPIC + "-0", 60, () -> {
                try {
                    Replication.PartitionView seen = cluster.broker(old).node().partition(TOPIC, 0);
                    if (cluster.broker(next).node().leads(TOPIC, 0) && seen.leader() == next) {
                        return true;
                    }
                    client.admin().transferLeadership(ClusterNode.peerId(next), 5_000);
                } catch (IOException | RuntimeException e) {
                    // An election is on, or the others have not heard of the new leader yet: asked again.
                }
                return false;
            });
        }
    }

    /** @return "error/epoch/end offset" of the partition's OffsetForLeaderEpoch v4 answer from the broker on a port */
    private static String ask(int port, int currentEpoch, int epoch) throws Exception {
        OffsetForLeaderEpochRequestData request = new OffsetForLeaderEpochRequestData().setReplicaId(-1);
        request.topics().add(new OffsetForLeaderTopic().setTopic(TOPIC).setPartitions(List.of(
                new OffsetForLeaderPartition().setPartition(0).setCurrentLeaderEpoch(currentEpoch)
                        .setLeaderEpoch(epoch))));
        EpochEndOffset end = new OffsetForLeaderEpochResponseData(KafkaWire.call(port,
                ApiKeys.OFFSET_FOR_LEADER_EPOCH, (short) 4, request), (short) 4).topics().iterator().next()
                .partitions().getFirst();
        return Errors.forCode(end.errorCode()) + "/" + end.leaderEpoch() + "/" + end.endOffset();
    }

    /** Polls until {@code count} records came (or 30 s passed); a validation's failure is thrown from here. */
    private static List<ConsumerRecord<byte[], byte[]>> poll(KafkaConsumer<byte[], byte[]> consumer, int count) {
        List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (read.size() < count && System.nanoTime() < deadline) {
            consumer.poll(Duration.ofMillis(200)).forEach(read::add);
        }
        return read;
    }
}
