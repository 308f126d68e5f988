package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
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
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.OffsetOutOfRangeException;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * DeleteRecords on a cluster of three, through the stock Admin client: the partition's log start moves through its Raft
 * log, so every replica has it, a follower away meanwhile too once back (it is still sent the batches below it), the
 * next leader answers it after a change of leader, and it survives a restart of every broker. Answered as Kafka's
 * brokers answer: the low watermark, ListOffsets earliest, a fetch below it out of range (a consumer resetting to the
 * earliest starts there), -1 for the high watermark, an offset past it out of range, a follower not the leader.
 */
class ClusterDeleteRecordsTest {

    private static final TopicPartition P0 = new TopicPartition("t", 0);

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    private Admin admin() {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000));
    }

    private static long deleteBefore(Admin admin, long offset) throws Exception {
        return admin.deleteRecords(Map.of(P0, RecordsToDelete.beforeOffset(offset))).lowWatermarks().get(P0)
                .get(60, TimeUnit.SECONDS).lowWatermark();
    }

    private static long earliest(Admin admin) throws Exception {
        return admin.listOffsets(Map.of(P0, OffsetSpec.earliest())).partitionResult(P0).get(60, TimeUnit.SECONDS)
                .offset();
    }

    /** Waits until node {@code id}'s replica of t-0 applied the log start {@code offset}. */
    private void awaitLogStart(int id, long offset) throws InterruptedException {
        await("node " + id + "'s replica applied the log start " + offset, 60, () -> {
            try {
                return cluster.replica(id, "t").machine().logStart() == offset;
            } catch (IOException e) {
                return false; // not hosted yet
            }
        });
    }

    /** Sends {@code v<from>} to {@code v<to - 1>} to t-0, acknowledged, ten to a batch. */
    private void produce(int from, int to) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 120_000,
                30_000)) {
            for (int i = from; i < to; i++) {
                producer.send(new ProducerRecord<>("t", 0, null, ("v" + i).getBytes(StandardCharsets.UTF_8)));
                if (i % 10 == 9) {
                    producer.flush();
                }
            }
            producer.flush();
        }
    }

    /** @return the first {@code count} records a consumer resetting to the earliest reads after seeking to 5 */
    private List<ConsumerRecord<byte[], byte[]>> readFromBelowTheStart(int count) {
        List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap(),
                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"), new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(P0));
            consumer.seek(P0, 5);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (read.size() < count && System.nanoTime() < deadline) {
                consumer.poll(Duration.ofMillis(200)).forEach(read::add);
            }
        }
        return read;
    }

    @Test
    void theLogStartMovesOnEveryReplicaAndStaysThroughALeaderChangeAndRestarts() throws Exception {
        // Leadership stays where elections put it: the test moves it itself.
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100_000, 8L << 20, 1));
        cluster.startAll();
        cluster.awaitMembers();
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("t", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }
        produce(0, 100);
        int leader = cluster.leaderOf("t");
        int away = leader % 3 + 1;
        int third = away % 3 + 1;
        await("node " + away + " has every record", 60, () -> {
            try {
                return cluster.replica(away, "t").highWatermark() == 100;
            } catch (IOException e) {
                return false;
            }
        });
        cluster.stop(away);

        try (Admin admin = admin()) {
            assertThat(deleteBefore(admin, 40)).as("the low watermark").isEqualTo(40);
            assertThat(earliest(admin)).isEqualTo(40);
            assertThat(deleteBefore(admin, 10)).as("a log start never goes down").isEqualTo(40);
            assertThatThrownBy(() -> deleteBefore(admin, 101)).as("past the high watermark")
                    .hasCauseInstanceOf(OffsetOutOfRangeException.class);
        }
        awaitLogStart(leader, 40);
        awaitLogStart(third, 40);

        // Answered by the leader only; a fetch below the log start is out of range there.
        DeleteRecordsRequestData elsewhere = new DeleteRecordsRequestData().setTimeoutMs(10_000);
        elsewhere.topics().add(new DeleteRecordsRequestData.DeleteRecordsTopic().setName("t").setPartitions(List.of(
                new DeleteRecordsRequestData.DeleteRecordsPartition().setPartitionIndex(0).setOffset(50))));
        DeleteRecordsResponseData refused = new DeleteRecordsResponseData(KafkaWire.call(
                cluster.broker(third).port(), ApiKeys.DELETE_RECORDS, (short) 2, elsewhere), (short) 2);
        assertThat(refused.topics().find("t").partitions().find(0).errorCode())
                .isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER.code());
        FetchRequestData fetch = new FetchRequestData().setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20)
                .setSessionEpoch(-1);
        fetch.topics().add(new FetchRequestData.FetchTopic().setTopic("t").setPartitions(List.of(
                new FetchRequestData.FetchPartition().setPartition(0).setFetchOffset(5)
                        .setPartitionMaxBytes(1 << 20))));
        FetchResponseData.PartitionData below = new FetchResponseData(KafkaWire.call(cluster.broker(leader).port(),
                ApiKeys.FETCH, (short) 12, fetch), (short) 12).responses().getFirst().partitions().getFirst();
        assertThat(below.errorCode()).isEqualTo(Errors.OFFSET_OUT_OF_RANGE.code());
        assertThat(below.logStartOffset()).isEqualTo(40);

        List<ConsumerRecord<byte[], byte[]>> read = readFromBelowTheStart(60);
        assertThat(read).hasSize(60);
        assertThat(read.getFirst().offset()).as("reset to the earliest").isEqualTo(40);
        assertThat(new String(read.getFirst().value(), StandardCharsets.UTF_8)).isEqualTo("v40");

        // Back, the follower away is sent the batches below the log start it lacks, and applies the log start.
        cluster.start(away);
        awaitLogStart(away, 40);
        await("node " + away + " caught up", 60, () -> {
            try {
                return cluster.replica(away, "t").highWatermark() == 100;
            } catch (IOException e) {
                return false;
            }
        });
        InProcessCluster.assertSameBatches(cluster.broker(away).store(), cluster.broker(leader).store(), "t", 0, 100);

        // The next leader answers the log start; -1 deletes up to the high watermark.
        cluster.stop(leader);
        int next = cluster.leaderOf("t");
        assertThat(next).isNotEqualTo(leader);
        try (Admin admin = admin()) {
            assertThat(earliest(admin)).as("from the next leader").isEqualTo(40);
            assertThat(deleteBefore(admin, -1)).as("-1: the high watermark").isEqualTo(100);
        }
        cluster.start(leader);
        awaitLogStart(leader, 100);

        // Every broker stopped and started again: the log start is kept.
        for (int id = 1; id <= 3; id++) {
            cluster.stop(id);
        }
        cluster.startAll();
        try (Admin admin = admin()) {
            assertThat(earliest(admin)).as("after every broker's restart").isEqualTo(100);
        }
        produce(100, 110);
        List<ConsumerRecord<byte[], byte[]>> after = readFromBelowTheStart(10);
        assertThat(after).extracting(ConsumerRecord::offset).containsExactly(100L, 101L, 102L, 103L, 104L, 105L,
                106L, 107L, 108L, 109L);
    }
}
