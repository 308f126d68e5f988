package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.protocol.RaftPeerId;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.statemachine.impl.BaseStateMachine;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Apache Ratis as the cluster will use it, on this JDK: three servers on 127.0.0.1 (gRPC transport, Raft ports from
 * a {@link ClusterSpec}) form a group, commit what a client sends on every replica in the same order, and go on
 * committing after the leader is stopped.
 */
class RatisOnLoopbackTest {

    @TempDir
    Path dir;

    /** Records every committed entry's payload, in log order. */
    static final class Recording extends BaseStateMachine {
        final List<String> applied = new CopyOnWriteArrayList<>();

        @Override
        public CompletableFuture<Message> applyTransaction(TransactionContext trx) {
            var entry = trx.getLogEntry();
            String payload = entry.getStateMachineLogEntry().getLogData().toString(StandardCharsets.UTF_8);
            applied.add(payload);
            updateLastAppliedTermIndex(TermIndex.valueOf(entry));
            return CompletableFuture.completedFuture(Message.valueOf("ok " + payload));
        }
    }

    @Test
    void threeServersCommitInOneOrderAndGoOnWithoutTheirLeader() throws Exception {
        StringBuilder text = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(TestClusters.freePort()).append('/')
                    .append(TestClusters.freePort());
        }
        ClusterSpec cluster = ClusterSpec.parse(text.toString());
        List<RaftPeer> peers = cluster.nodes().stream().map(node -> RaftPeer.newBuilder()
                .setId("n" + node.id()).setAddress(node.raftAddress()).build()).toList();
        RaftGroup group = RaftGroup.valueOf(RaftGroupId.valueOf(UUID.nameUUIDFromBytes("test".getBytes())), peers);
        List<RaftServer> servers = new ArrayList<>();
        List<Recording> machines = new ArrayList<>();
        RaftClient client = null;
        try {
            for (ClusterSpec.Node node : cluster.nodes()) {
                RaftProperties properties = new RaftProperties();
                RaftServerConfigKeys.setStorageDir(properties, List.of(dir.resolve("n" + node.id()).toFile()));
                GrpcConfigKeys.Server.setPort(properties, node.raftPort());
                GrpcConfigKeys.Server.setHost(properties, node.host());
                Recording machine = new Recording();
                RaftServer server = RaftServer.newBuilder().setServerId(RaftPeerId.valueOf("n" + node.id()))
                        .setGroup(group).setProperties(properties).setStateMachine(machine).build();
                server.start();
                servers.add(server);
                machines.add(machine);
            }
            client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(group).build();
            for (int i = 0; i < 50; i++) {
                RaftClientReply reply = client.io().send(Message.valueOf("m" + i));
                assertThat(reply.isSuccess()).isTrue();
                assertThat(reply.getMessage().getContent().toString(StandardCharsets.UTF_8)).isEqualTo("ok m" + i);
            }
            int leader = -1;
            for (int i = 0; i < servers.size(); i++) {
                if (servers.get(i).getDivision(group.getGroupId()).getInfo().isLeader()) {
                    leader = i;
                }
            }
            assertThat(leader).as("a leader among the three").isNotNegative();
            servers.get(leader).close();
            for (int i = 50; i < 80; i++) {
                assertThat(client.io().send(Message.valueOf("m" + i)).isSuccess()).isTrue();
            }
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 80; i++) {
                expected.add("m" + i);
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
            for (int i = 0; i < machines.size(); i++) {
                if (i == leader) {
                    continue;
                }
                // Committed on a majority; a follower applies what it has learnt was committed soon after.
                while (machines.get(i).applied.size() < 80 && System.nanoTime() < deadline) {
                    Thread.sleep(20);
                }
                assertThat(machines.get(i).applied).as("replica n%d", i + 1).isEqualTo(expected);
            }
            assertThat(machines.get(leader).applied).isEqualTo(expected.subList(0, machines.get(leader).applied.size()));
        } finally {
            if (client != null) {
                client.close();
            }
            for (RaftServer server : servers) {
                server.close();
            }
        }
    }
}
