package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KIP-951: a broker that no longer leads a partition, asked to produce to it or fetch from it, names the leader (and,
 * in Produce, its endpoint) in its NOT_LEADER_OR_FOLLOWER answer, with the epoch Metadata reports.
 */
class LeaderHintsTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static ProduceRequestData produce(String topic) {
        MemoryRecords records = MemoryRecords.withRecords(Compression.NONE,
                new SimpleRecord("v".getBytes(StandardCharsets.UTF_8)));
        var data = new ProduceRequestData.TopicProduceDataCollection();
        data.add(new ProduceRequestData.TopicProduceData().setName(topic).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records))));
        return new ProduceRequestData().setAcks((short) -1).setTimeoutMs(5_000).setTopicData(data);
    }

    @Test
    void aBrokerThatNoLongerLeadsNamesTheNewLeaderInItsRefusals() throws Exception {
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100_000, 8L << 20, 1));
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("t", 1);
        int old = cluster.leaderOf("t");
        int next = old % 3 + 1;
        RaftGroup group = cluster.replica(next, "t").division().getGroup();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(group)
                .build()) {
            await("node " + next + " leads t-0, as node " + old + " knows", 60, () -> {
                try {
                    if (cluster.replica(next, "t").isLeader()
                            && cluster.broker(old).node().partition("t", 0).leader() == next) {
                        return true;
                    }
                    client.admin().transferLeadership(ClusterNode.peerId(next), 5_000);
                } catch (IOException | RuntimeException e) {
                    // An election is on, or the old leader has not heard of the new one yet: asked again.
                }
                return false;
            });
        }
        int epoch = cluster.broker(next).node().partition("t", 0).leaderEpoch();
        int oldPort = cluster.broker(old).port();

        short version = 12;
        var produced = new ProduceResponseData(KafkaWire.call(oldPort, ApiKeys.PRODUCE, version, produce("t")),
                version);
        var answer = produced.responses().iterator().next().partitionResponses().getFirst();
        assertThat(answer.errorCode()).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER.code());
        assertThat(answer.currentLeader().leaderId()).as("the leader named").isEqualTo(next);
        assertThat(answer.currentLeader().leaderEpoch()).as("its epoch").isEqualTo(epoch);
        var endpoint = produced.nodeEndpoints().find(next);
        assertThat(endpoint).as("the leader's endpoint").isNotNull();
        assertThat(endpoint.host()).isEqualTo("127.0.0.1");
        assertThat(endpoint.port()).isEqualTo(cluster.broker(next).port());
        assertThat(produced.nodeEndpoints()).hasSize(1);

        // Before Produce 10 the fields do not exist: the same refusal, without them.
        short before = 9;
        var older = new ProduceResponseData(KafkaWire.call(oldPort, ApiKeys.PRODUCE, before, produce("t")), before);
        assertThat(older.responses().iterator().next().partitionResponses().getFirst().errorCode())
                .isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER.code());

        var fetch = new FetchRequestData().setReplicaId(-1).setMaxWaitMs(0).setMinBytes(0).setMaxBytes(1 << 20)
                .setSessionEpoch(-1).setTopics(List.of(new FetchRequestData.FetchTopic().setTopic("t")
                        .setPartitions(List.of(new FetchRequestData.FetchPartition().setPartition(0)
                                .setFetchOffset(0).setPartitionMaxBytes(1 << 20)))));
        var fetched = new FetchResponseData(KafkaWire.call(oldPort, ApiKeys.FETCH, version, fetch), version);
        var partition = fetched.responses().getFirst().partitions().getFirst();
        assertThat(partition.errorCode()).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER.code());
        assertThat(partition.currentLeader().leaderId()).as("the leader named").isEqualTo(next);
        assertThat(partition.currentLeader().leaderEpoch()).as("its epoch").isEqualTo(epoch);

        // From Fetch 16 (here 18, naming the topic by its id) the answer also says how to reach the leader.
        java.util.UUID id = cluster.broker(old).store().topicId("t");
        short byId = ApiKeys.FETCH.latestVersion();
        fetch.topics().getFirst().setTopicId(new org.apache.kafka.common.Uuid(id.getMostSignificantBits(),
                id.getLeastSignificantBits()));
        var fetchedById = new FetchResponseData(KafkaWire.call(oldPort, ApiKeys.FETCH, byId, fetch), byId);
        var partitionById = fetchedById.responses().getFirst().partitions().getFirst();
        assertThat(partitionById.errorCode()).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER.code());
        assertThat(partitionById.currentLeader().leaderId()).as("the leader named").isEqualTo(next);
        var fetchEndpoint = fetchedById.nodeEndpoints().find(next);
        assertThat(fetchEndpoint).as("the leader's endpoint").isNotNull();
        assertThat(fetchEndpoint.port()).isEqualTo(cluster.broker(next).port());
        assertThat(fetchedById.nodeEndpoints()).hasSize(1);
    }
}
