package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Replication;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A coordinator's offset commit whose Raft request reaches the metadata's log only through a later leader (the
 * coordinator lost its place while the request was out, and Ratis's client sent it on to the next leader) must not
 * undo what the group committed through that leader meanwhile: Kafka fences such a write by its leader epoch.
 */
class StaleOffsetCommitTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** @return the node coordinating the groups (leading the metadata), once one does */
    private int coordinator() throws InterruptedException {
        int[] found = {-1};
        await("a coordinator", 30, () -> {
            for (int id = 1; id <= 3; id++) {
                if (cluster.broker(id).node().groupsCoordination().epoch() >= 0) {
                    found[0] = id;
                    return true;
                }
            }
            return false;
        });
        return found[0];
    }

    private long applied(int node) {
        try {
            return cluster.broker(node).node().metadataDivision().getInfo().getLastAppliedIndex();
        } catch (IOException e) {
            return -1;
        }
    }

    @Test
    void aCommitLoggedAfterItsCoordinatorLostItsPlaceIsRefused() throws Exception {
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100_000, 8L << 20, 1));
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("t", 1);
        TopicPartition t0 = new TopicPartition("t", 0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap()))) {
            admin.alterConsumerGroupOffsets("g", Map.of(t0, new OffsetAndMetadata(5))).all().get(60, TimeUnit.SECONDS);
            int old = coordinator();
            // The command the coordinator sends for a commit of 3, held back as a request still out would be.
            String late = cluster.broker(old).node().offsetsCommand("g",
                    List.of(new Replication.CommittedOffset("t", 0, 3)));
            int next = old % 3 + 1;
            RaftGroup metadata = cluster.broker(old).node().metadataDivision().getGroup();
            long lateIndex;
            try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties())
                    .setRaftGroup(metadata).build()) {
                await("node " + next + " coordinates the groups", 60, () -> {
                    try {
                        if (cluster.broker(next).node().groupsCoordination().epoch() >= 0
                                && cluster.broker(next).node().controllerReady()) {
                            return true;
                        }
                        client.admin().transferLeadership(ClusterNode.peerId(next), 5_000);
                    } catch (IOException | RuntimeException e) {
                        // An election is on: asked again.
                    }
                    return false;
                });
                // The group commits 7 through the next coordinator; then the held-back request reaches the log.
                admin.alterConsumerGroupOffsets("g", Map.of(t0, new OffsetAndMetadata(7))).all()
                        .get(60, TimeUnit.SECONDS);
                RaftClientReply reply = client.io().send(Message.valueOf(late));
                assertThat(reply.getMessage().getContent().toStringUtf8()).as("the late commit's answer")
                        .startsWith(MetadataCommands.STALE_COORDINATOR);
                lateIndex = reply.getLogIndex();
            }
            var offsets = admin.listConsumerGroupOffsets("g").partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            assertThat(offsets.get(t0).offset()).as("the group's offset").isEqualTo(7);
            for (int id = 1; id <= 3; id++) {
                int node = id;
                await("node " + node + " applied the late commit's entry", 30, () -> applied(node) >= lateIndex);
                assertThat(cluster.broker(id).store().committedOffset("g", "t", 0)).as("node %d's store", id)
                        .hasValue(7);
            }
        }
    }
}
