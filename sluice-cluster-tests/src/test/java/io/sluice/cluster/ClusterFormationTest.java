package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.cluster.ratis.RaftTransport;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * How the nodes of a new cluster form it: every node records in the metadata that it took part, and a node with no
 * Raft data that finds the cluster formed without it joins as a voter (it has nothing to have lost), where a node
 * that took part and lost its data rejoins (WipedNodeRebuildTest).
 */
class ClusterFormationTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void everyNodeOfANewClusterIsRecordedAsHavingTakenPart() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT);
        cluster.startAll();
        cluster.awaitMembers();
    }

    private boolean hostsMetadata(int id) {
        try {
            return cluster.broker(id).node().metadataDivision() != null;
        } catch (IOException e) {
            return false;
        }
    }

    /**
     * Node 3's Raft port answers (a bare Ratis server with no group) while nodes 1 and 2 form the cluster, as when a
     * node's start lags the others'; then node 3 starts. It never took part, so it joins the metadata group as a
     * voter: the group's configuration is never changed (a rejoin would take it out and add it back). The nodes'
     * metadata clients, sent first to node 3 (which does not host the group), still reach the leader.
     */
    @Test
    void aNodeStartingAfterTheOthersFormedTheClusterJoinsAsAVoterWithoutARejoin() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT);
        formWithoutNodeThree(true, () -> { });
        startNodeThreeLate();
    }

    /**
     * As above, with topics created on nodes 1 and 2 as soon as they start, before the nodes recorded that they took
     * part (a client's request can come that early). A topic logged before any member record marks the log as one
     * from before the records, where an absent record proves nothing, and node 3 then took itself for a node that lost
     * its data and rejoined. A node now sends a topic only once it applied a record.
     */
    @Test
    void topicsCreatedAsTheClusterFormsDoNotMakeALateNodeRejoin() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT);
        formWithoutNodeThree(false, () -> {
            List<CompletableFuture<Void>> creations = new ArrayList<>();
            for (int i = 0; i < 4; i++) {
                ClusterNode node = cluster.broker(1 + i % 2).node();
                String topic = "early-" + i;
                creations.add(CompletableFuture.runAsync(() -> createRetrying(node, topic)));
            }
            CompletableFuture.allOf(creations.toArray(CompletableFuture[]::new)).get(90, TimeUnit.SECONDS);
        });
        for (int id = 1; id <= 2; id++) {
            assertThat(cluster.broker(id).node().members()).as("the member records applied on node %d", id)
                    .isNotEmpty();
        }
        startNodeThreeLate();
    }

    /** Creates a topic with two replicas, tried again on a failure for up to 60 s, as a client would. */
    private static void createRetrying(ClusterNode node, String topic) {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try {
                node.createTopic(topic, 1, 2).get(60, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                // A request sent to node 3 first finds no group there.
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("topic " + topic + " not created", e);
                }
                pause();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    private static void pause() {
        try {
            Thread.sleep(5);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError(e);
        }
    }

    /**
     * Starts nodes 1 and 2 while node 3's Raft port answers with a bare Ratis server, runs {@code started}, and waits
     * for the two nodes' member records.
     *
     * @param clientsRememberThree whether the JVM's Ratis clients first learn node 3 as the metadata group's leader
     */
    private void formWithoutNodeThree(boolean clientsRememberThree, ThrowingAction started) throws Exception {
        ClusterSpec.Node third = cluster.spec().nodes().get(2);
        RaftProperties properties = new RaftProperties();
        RaftConfigKeys.Rpc.setType(properties, new RaftTransport());
        RaftServerConfigKeys.setStorageDir(properties, List.of(dir.resolve("bare").toFile()));
        GrpcConfigKeys.Server.setHost(properties, third.host());
        GrpcConfigKeys.Server.setPort(properties, third.raftPort());
        try (RaftServer bare = RaftServer.newBuilder().setServerId(ClusterNode.peerId(third.id()))
                .setProperties(properties).setStateMachine(new BaseStateMachine()).build()) {
            bare.start();
            if (clientsRememberThree) {
                // The JVM's Ratis clients remember node 3 as the metadata group's leader (it led a group of that id
                // alone and answered a request), as a node's clients remember a leader that then lost its data; when
                // nodes 1 and 2 form the cluster, node 3 hosts no such group. A client sent there first fails for
                // good.
                RaftGroup alone = RaftGroup.valueOf(RaftGroups.metadataGroupId(BrokerConfig.defaults().clusterId()),
                        RaftPeer.newBuilder().setId(ClusterNode.peerId(third.id())).setAddress(third.raftAddress())
                                .build());
                try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties())
                        .setRaftGroup(alone).build()) {
                    assertThat(client.getGroupManagementApi(ClusterNode.peerId(third.id())).add(alone).isSuccess())
                            .isTrue();
                    assertThat(client.io().send(Message.valueOf("led")).isSuccess()).isTrue();
                    assertThat(client.getGroupManagementApi(ClusterNode.peerId(third.id()))
                            .remove(alone.getGroupId(), true, false).isSuccess()).isTrue();
                }
            }
            cluster.start(1);
            cluster.start(2);
            started.run();
            await("nodes 1 and 2 recorded", 60, () -> cluster.broker(1).node().members().equals(Set.of(1, 2)));
        }
    }

    /** An action that may throw. */
    @FunctionalInterface
    private interface ThrowingAction {
        void run() throws Exception;
    }

    /**
     * Starts node 3 and checks that it joined as a voter: it is recorded, its replica of a new topic commits, and no
     * node's metadata configuration changed.
     */
    private void startNodeThreeLate() throws Exception {
        long formedAt = cluster.broker(1).node().metadataDivision().getRaftConf().getLogEntryIndex();
        cluster.start(3);
        await("node 3 recorded", 60, () -> cluster.broker(1).node().members().equals(Set.of(1, 2, 3)));
        await("node 3's member of the metadata group", 30, () -> hostsMetadata(3));
        cluster.createTopic("f", 1);
        await("node 3's replica of f-0 committed its first entry", 60, () -> {
            try {
                return cluster.replica(3, "f").division().getRaftLog().getLastCommittedIndex() >= 0;
            } catch (IOException | RuntimeException e) {
                return false;
            }
        });
        for (int id = 1; id <= 3; id++) {
            assertThat(cluster.broker(id).node().metadataDivision().getRaftConf().getLogEntryIndex())
                    .as("node %d's metadata configuration entry", id).isEqualTo(formedAt);
        }
        assertThat(cluster.directory(3).resolve("raft").resolve(Membership.REJOIN_FILE)).doesNotExist();
    }
}
