package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testsupport.KafkaWire;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ListOffsets from the debugging replica id (-2), which operators use to compare replicas, is served by every
 * replica from its own log, as Kafka serves it; a consumer's (-1) is served by the leader only.
 */
class ListOffsetsOnReplicasTest {

    private static final short VERSION = 10;
    private static final int DEBUGGING_REPLICA = -2;
    private static final int CONSUMER = -1;
    private static final long LATEST = -1;
    private static final long EARLIEST = -2;
    private static final long MAX_TIMESTAMP = -3;

    @TempDir
    Path dir;

    @Test
    void everyReplicaAnswersTheDebuggingReplicaIdFromItsOwnLog() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            cluster.createTopic("compared", 1);
            try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 60_000,
                    10_000)) {
                for (int i = 0; i < 100; i++) {
                    producer.send(new ProducerRecord<>("compared", 0, 1_000L + i, null, new byte[] {(byte) i}));
                }
                producer.flush();
            }
            int leader = cluster.leaderOf("compared");
            for (int id = 1; id <= 3; id++) {
                int node = id;
                InProcessCluster.await("broker " + node + " holds the 100 records", 30,
                        () -> cluster.broker(node).store().maxOffset("compared", 0) == 100);
            }
            for (int id = 1; id <= 3; id++) {
                int port = cluster.broker(id).port();
                List<ListOffsetsResponseData.ListOffsetsPartitionResponse> debug = listOffsets(port, DEBUGGING_REPLICA);
                assertThat(debug).as("broker %d (leader %d)", id, leader).allSatisfy(answer ->
                        assertThat(Errors.forCode(answer.errorCode())).isEqualTo(Errors.NONE));
                assertThat(debug.get(0).offset()).as("latest on broker " + id).isEqualTo(100);
                assertThat(debug.get(1).offset()).as("earliest on broker " + id).isZero();
                assertThat(debug.get(2).offset()).as("largest timestamp on broker " + id).isEqualTo(99);
                assertThat(debug.get(2).timestamp()).isEqualTo(1_099L);
                Errors consumer = Errors.forCode(listOffsets(port, CONSUMER).get(0).errorCode());
                assertThat(consumer).as("a consumer's ListOffsets on broker " + id)
                        .isEqualTo(id == leader ? Errors.NONE : Errors.NOT_LEADER_OR_FOLLOWER);
            }
        }
    }

    private static List<ListOffsetsResponseData.ListOffsetsPartitionResponse> listOffsets(int port, int replicaId)
            throws Exception {
        ListOffsetsRequestData request = new ListOffsetsRequestData().setReplicaId(replicaId).setTopics(List.of(
                new ListOffsetsRequestData.ListOffsetsTopic().setName("compared").setPartitions(List.of(
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setTimestamp(LATEST),
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setTimestamp(EARLIEST),
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0)
                                .setTimestamp(MAX_TIMESTAMP)))));
        return new ListOffsetsResponseData(KafkaWire.call(port, ApiKeys.LIST_OFFSETS, VERSION, request), VERSION)
                .topics().getFirst().partitions();
    }
}
