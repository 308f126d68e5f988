package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.cluster.ratis.RaftTransport;
import java.io.File;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.ratis.RaftConfigKeys;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.protocol.ClientId;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftClientReply;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.server.RaftServer;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogOutputStream;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replica whose log holds a first entry (index 0) that the others never got: a leader that wrote its first entry
 * and was killed before sending it, as the kill rounds do. The leader of a later term must replace that entry. In
 * Ratis 3.3.0 a heartbeat sent while appends are in flight carries no previous entry, and the replica took it as
 * telling that index 0 was committed (min(leader commit, 0)): its own entry 0, which no other replica has, counted as
 * committed, so it refused the leader's entry 0 ("already exists") and the leader's entry 1 (its previous, the
 * leader's entry 0, not found), and never caught up. The nodes' transport ({@link RaftTransport}) sends such
 * heartbeats without a commit index.
 */
class DivergentFirstEntryTest {

    @TempDir
    Path dir;

    @Test
    void aReplicaWithADivergentFirstEntryTakesTheLeadersLog() throws Exception {
        ClusterSpec cluster = TestClusters.threeOnLoopback();
        List<RaftPeer> peers = cluster.nodes().stream().map(node -> RaftPeer.newBuilder()
                .setId(ClusterNode.peerId(node.id())).setAddress(node.raftAddress()).build()).toList();
        UUID uuid = UUID.nameUUIDFromBytes("divergent".getBytes(StandardCharsets.UTF_8));
        RaftGroup group = RaftGroup.valueOf(RaftGroupId.valueOf(uuid), peers);

        // Node 1's log: one entry at index 0, of term 1, which nodes 2 and 3 never see.
        Path current = dir.resolve("n1").resolve(uuid.toString()).resolve("current");
        Files.createDirectories(current);
        LogEntryProto lost = LogEntryProto.newBuilder().setTerm(1).setIndex(0).setStateMachineLogEntry(
                StateMachineLogEntryProto.newBuilder().setClientId(ClientId.randomId().toByteString()).setCallId(1)
                        .setLogData(ByteString.copyFromUtf8("lost"))).build();
        File segment = current.resolve("log_inprogress_0").toFile();
        try (SegmentedRaftLogOutputStream out = new SegmentedRaftLogOutputStream(segment, false, 8 << 20, 1 << 20,
                ByteBuffer.allocateDirect(1 << 16))) {
            out.write(lost);
            out.flush();
        }
        Files.writeString(current.resolve("raft-meta"), "term=1\nvotedFor=n1\n");

        List<RaftServer> servers = new ArrayList<>();
        try {
            // Nodes 2 and 3 elect a leader in a term above 1 (node 2 alone stands for election first, without
            // pre-vote, so the term goes up) and take appends; then node 1 starts under that load.
            servers.add(start(cluster.nodes().get(1), group));
            awaitTerm(servers.getFirst(), group, 3);
            servers.add(start(cluster.nodes().get(2), group));
            try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(group)
                    .build()) {
                for (int i = 0; i < 20; i++) {
                    assertThat(client.io().send(Message.valueOf("m" + i)).isSuccess()).isTrue();
                }
                RaftServer.Division leader = leaderOf(servers, group);
                TermIndex leadersFirst = leader.getRaftLog().getTermIndex(0);
                assertThat(leadersFirst.getTerm()).as("the term of the leader's first entry").isGreaterThan(1);

                // Node 1 starts while the leader streams appends: many in flight to it at once.
                List<CompletableFuture<RaftClientReply>> inFlight = new ArrayList<>();
                int sent = 20;
                for (; sent < 1_000; sent++) {
                    inFlight.add(client.async().send(Message.valueOf("m" + sent)));
                }
                servers.add(start(cluster.nodes().get(0), group));
                RaftServer.Division replica = servers.getLast().getDivision(group.getGroupId());
                var applied = ((RatisOnLoopbackTest.Recording) replica.getStateMachine()).applied;
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (!(leadersFirst.equals(replica.getRaftLog().getTermIndex(0)) && applied.contains("m999"))) {
                    assertThat(System.nanoTime()).as("node 1 took the leader's log within 30 s: its first entry is %s,"
                            + " its commit index %d", replica.getRaftLog().getTermIndex(0),
                            replica.getRaftLog().getLastCommittedIndex()).isLessThan(deadline);
                    for (int i = 0; i < 20 && sent < 5_000; i++) {
                        inFlight.add(client.async().send(Message.valueOf("m" + sent++)));
                    }
                    Thread.sleep(5);
                }
                assertThat(applied).as("what node 1 applied").doesNotContain("lost").contains("m0");
                for (CompletableFuture<RaftClientReply> reply : inFlight) {
                    assertThat(reply.get(30, TimeUnit.SECONDS).isSuccess()).isTrue();
                }
            }
        } finally {
            for (RaftServer server : servers) {
                server.close();
            }
        }
    }

    private RaftServer start(ClusterSpec.Node node, RaftGroup group) throws Exception {
        RaftProperties properties = new RaftProperties();
        RaftConfigKeys.Rpc.setType(properties, new RaftTransport());
        RaftServerConfigKeys.setStorageDir(properties, List.of(dir.resolve("n" + node.id()).toFile()));
        GrpcConfigKeys.Server.setHost(properties, node.host());
        GrpcConfigKeys.Server.setPort(properties, node.raftPort());
        // As the nodes run: heartbeats on a channel of their own, so they overtake appends in flight.
        GrpcConfigKeys.Server.setHeartbeatChannel(properties, true);
        // Node 2 stands for election alone first, without pre-vote, so that the term goes up; node 1, back with its
        // old log, asks first whether it could win, as the nodes do.
        RaftServerConfigKeys.LeaderElection.setPreVote(properties, node.id() != 2);
        // Node 1 starts from the log in its directory; the others format theirs.
        RaftServer server = RaftServer.newBuilder().setServerId(ClusterNode.peerId(node.id())).setGroup(group)
                .setOption(node.id() == 1 ? RaftStorage.StartupOption.RECOVER : RaftStorage.StartupOption.FORMAT)
                .setProperties(properties).setStateMachine(new RatisOnLoopbackTest.Recording()).build();
        server.start();
        return server;
    }

    private static void awaitTerm(RaftServer server, RaftGroup group, long term) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (server.getDivision(group.getGroupId()).getInfo().getCurrentTerm() < term) {
            assertThat(System.nanoTime()).as("term %d within 30 s", term).isLessThan(deadline);
            Thread.sleep(50);
        }
    }

    private static RaftServer.Division leaderOf(List<RaftServer> servers, RaftGroup group) throws Exception {
        for (RaftServer server : servers) {
            RaftServer.Division division = server.getDivision(group.getGroupId());
            if (division.getInfo().isLeader()) {
                return division;
            }
        }
        throw new AssertionError("no leader among the running nodes");
    }
}
