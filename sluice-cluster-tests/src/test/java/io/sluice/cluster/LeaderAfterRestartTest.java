package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.testsupport.KafkaWire;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.ratis.proto.RaftProtos.AppendEntriesRequestProto;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.util.CodeInjectionForTesting;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker back from a restart names each partition's leader in Metadata before that leader's first heartbeat has
 * reached it: its replica, knowing no leader, asks the other replicas who leads. Here the leader's appends to the
 * restarted replica are held back (through Ratis's test hook at their handling) for the whole test, as a leader's
 * connection backing off after the replica went down holds them for seconds; before, Metadata named no leader
 * (LEADER_NOT_AVAILABLE) until a heartbeat came.
 */
class LeaderAfterRestartTest {

    private static final String APPEND_ENTRIES = "RaftServerImpl.appendEntries";

    @TempDir
    Path dir;

    @AfterEach
    void removeHook() {
        CodeInjectionForTesting.remove(APPEND_ENTRIES);
    }

    @Test
    void aRestartedReplicaThatHeardFromNoLeaderNamesTheOneTheOthersFollow() throws Exception {
        try (InProcessCluster cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT)) {
            cluster.startAll();
            cluster.createTopic("named", 1);
            // Leadership settles on the partition's preferred replica (its first) soon after the topic is created.
            InProcessCluster.await("broker 1 knows the topic", 30, () -> metadata(cluster.broker(1).port()) != null);
            int preferred = metadata(cluster.broker(1).port()).replicaNodes().getFirst();
            InProcessCluster.await("the preferred replica, node " + preferred + ", leads", 30, () -> {
                try {
                    return cluster.leaderOf("named") == preferred;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            });
            int leader = preferred;
            int restarted = leader % 3 + 1;
            RaftGroupId group = cluster.broker(leader).node().groupId(new ClusterNode.PartitionId("named", 0));
            AtomicBoolean holding = new AtomicBoolean(true);
            String held = ClusterNode.peerId(restarted).toString();
            CodeInjectionForTesting.put(APPEND_ENTRIES, (local, remote, args) -> {
                if (held.equals(String.valueOf(local)) && args.length > 1
                        && args[1] instanceof AppendEntriesRequestProto request
                        && group.toByteString().equals(request.getServerRequest().getRaftGroupId().getId())) {
                    long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (holding.get() && System.nanoTime() < end) {
                        try {
                            Thread.sleep(10);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                            return true;
                        }
                    }
                }
                return true;
            });
            cluster.stop(restarted);
            cluster.start(restarted);
            try {
                int port = cluster.broker(restarted).port();
                InProcessCluster.await("broker " + restarted + "'s Metadata names leader " + leader, 20, () -> {
                    MetadataResponseData.MetadataResponsePartition partition = metadata(port);
                    return partition != null && partition.errorCode() == Errors.NONE.code()
                            && partition.leaderId() == leader;
                });
                ReplicatedPartition replica = cluster.broker(restarted).node()
                        .partition(new ClusterNode.PartitionId("named", 0));
                assertThat(replica.division().getInfo().getLeaderId()).as("the restarted replica heard from no"
                        + " leader: the name came from the others").isNull();
            } finally {
                holding.set(false);
            }
        }
    }

    /** @return partition 0 of topic named as Metadata v12 to the broker on {@code port} answers, or null */
    private static MetadataResponseData.MetadataResponsePartition metadata(int port) {
        try {
            MetadataResponseData response = new MetadataResponseData(KafkaWire.call(port, ApiKeys.METADATA,
                    (short) 12, new MetadataRequestData().setTopics(List.of(
                            new MetadataRequestData.MetadataRequestTopic().setName("named")))), (short) 12);
            var topic = response.topics().find("named");
            return topic == null || topic.partitions().isEmpty() ? null : topic.partitions().getFirst();
        } catch (java.io.IOException e) {
            return null;
        }
    }
}
