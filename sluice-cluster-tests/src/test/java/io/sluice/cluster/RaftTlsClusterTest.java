package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.testsupport.TestCertificates;
import io.sluice.broker.BrokerConfig;
import java.io.IOException;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.Principal;
import java.security.PrivateKey;
import java.security.cert.X509Certificate;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.X509ExtendedKeyManager;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.client.RaftClientConfigKeys;
import org.apache.ratis.conf.Parameters;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.grpc.GrpcConfigKeys;
import org.apache.ratis.grpc.GrpcTlsConfig;
import org.apache.ratis.protocol.Message;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.apache.ratis.retry.RetryPolicies;
import org.apache.ratis.security.TlsConf;
import org.apache.ratis.util.TimeDuration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three brokers whose Raft ports speak mutual TLS, each with a certificate of the cluster's authority: they form the
 * cluster, create a topic and replicate what a stock producer sends, as in plain text. A process that knows what an
 * intruder can know (the nodes' Raft addresses, and the metadata group's id, which the cluster id gives) but holds no
 * certificate the cluster trusts can change nothing: neither in plain text, nor over TLS without a certificate, nor
 * with a certificate of another authority. Each attempt fails, the metadata logs no topic of its, and the metadata
 * group keeps its three members on every node. The same client with a member's certificate is answered, so what
 * keeps the intruder out is the certificate, not what it knows. A node that lost its data rejoins and installs a
 * snapshot over the same TLS.
 */
class RaftTlsClusterTest {

    @TempDir
    static Path certificates;

    @TempDir
    Path dir;

    /** Each node's TLS by its id, all signed by the cluster's authority. */
    private static final RaftTls[] NODES = new RaftTls[4];
    /** A key and certificate of another authority. */
    private static RaftTls otherAuthority;

    private InProcessCluster cluster;

    @BeforeAll
    static void makeCertificates() throws Exception {
        TestCertificates authority = new TestCertificates(certificates.resolve("cluster"), "cluster");
        for (int id = 1; id <= 3; id++) {
            NODES[id] = RaftTlsTest.raftTls(authority, "node-" + id);
        }
        otherAuthority = RaftTlsTest.raftTls(new TestCertificates(certificates.resolve("other"), "other"), "intruder");
    }

    @AfterEach
    void stop() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    private void startCluster() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT).withRaftTls(id -> NODES[id]);
        cluster.startAll();
        cluster.awaitMembers();
    }

    @Test
    void threeNodesOnMutualTlsReplicateWhatIsProduced() throws Exception {
        startCluster();
        cluster.createTopic("secured", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 120_000,
                30_000)) {
            InProcessCluster.send(producer, "secured", sent, 0, 200);
        }
        assertThat(cluster.readValues("secured", sent.size())).containsExactlyElementsOf(sent);
        int leader = cluster.leaderOf("secured");
        long end = cluster.broker(leader).node().highWatermark("secured", 0);
        assertThat(end).isEqualTo(sent.size());
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " has the batches of secured-0 up to " + end, 30,
                    () -> cluster.broker(node).node().highWatermark("secured", 0) == end);
            InProcessCluster.assertSameBatches(cluster.broker(node).store(), cluster.broker(leader).store(),
                    "secured", end);
        }
    }

    @Test
    void noProcessWithoutACertificateTheClusterTrustsChangesIt() throws Exception {
        startCluster();
        RaftGroupId metadataId = RaftGroups.metadataGroupId(BrokerConfig.defaults().clusterId());
        List<RaftPeer> peers = cluster.spec().nodes().stream().map(node -> RaftPeer.newBuilder()
                .setId(ClusterNode.peerId(node.id())).setAddress(node.raftAddress()).build()).toList();
        RaftGroup metadata = RaftGroup.valueOf(metadataId, peers);

        // The same knowledge and the same client with a member's certificate are answered.
        Presenting member = new Presenting(NODES[1]);
        try (RaftClient client = client(metadata, presenting(member))) {
            assertThat(client.getGroupManagementApi(peers.getFirst().getId()).info(metadataId).getGroup().getPeers())
                    .hasSize(3);
        }
        assertThat(member.presented.get()).as("times the member's certificate was presented").isPositive();

        // Each trusts the cluster's authority (its certificate is no secret), so that it goes as far as it can.
        Parameters withoutCertificate = new Parameters();
        GrpcConfigKeys.TLS.setConf(withoutCertificate, new GrpcTlsConfig((PrivateKey) null, null,
                List.<X509Certificate>copyOf(NODES[1].trustedCertificates()), false));
        Presenting stranger = new Presenting(otherAuthority);
        Map<String, Parameters> intruders = Map.of(
                "plain text", new Parameters(),
                "TLS without a certificate", withoutCertificate,
                "a certificate of another authority", presenting(stranger));
        for (Map.Entry<String, Parameters> intruder : intruders.entrySet()) {
            try (RaftClient client = client(metadata, intruder.getValue())) {
                assertThatThrownBy(() -> client.io().send(Message.valueOf("topic intruded 1 1,2,3")))
                        .as("%s: a topic's creation", intruder.getKey()).isInstanceOf(IOException.class);
                assertThatThrownBy(() -> client.admin().setConfiguration(List.of(peers.getFirst())))
                        .as("%s: a new configuration", intruder.getKey()).isInstanceOf(IOException.class);
                for (RaftPeer peer : peers) {
                    assertThatThrownBy(() -> client.getGroupManagementApi(peer.getId()).remove(metadataId, true,
                            false)).as("%s: the group's removal from %s", intruder.getKey(), peer.getId())
                            .isInstanceOf(IOException.class);
                }
            }
        }

        assertThat(stranger.presented.get()).as("times the other authority's certificate was presented")
                .isPositive();

        // A topic created now is applied after anything the intruders could have logged.
        cluster.createTopic("after", 1);
        for (int id = 1; id <= 3; id++) {
            int node = id;
            await("node " + node + " applied the topic after", 30,
                    () -> cluster.broker(node).node().replicasOf("after", 0) != null);
            assertThat(cluster.broker(node).node().replicasOf("intruded", 0)).as("node %d: the intruders' topic", node)
                    .isNull();
            assertThat(cluster.broker(node).node().metadataDivision().getGroup().getPeers())
                    .as("node %d: the metadata group", node).hasSize(3);
        }
    }

    /**
     * A node that lost its whole data directory rejoins over mutual TLS: out of the groups' configurations, a snapshot
     * of the leader's store installed (a query to the leader, over the same TLS), back in, and in sync, with the same
     * batches as the leader. The rejoin and the install are the Raft traffic a plain-text cluster's tests cover
     * (WipedNodeRebuildTest); here every call of it also passes the nodes' certificate checks.
     */
    @Test
    void aNodeThatLostItsDataRejoinsAndInstallsTheLeadersSnapshotOverMutualTls() throws Exception {
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100, 8192, 1)).withRaftTls(id -> NODES[id]);
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("rebuilt", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 120_000,
                30_000)) {
            InProcessCluster.send(producer, "rebuilt", sent, 0, 500);
            int leader = cluster.leaderOf("rebuilt");
            int wiped = leader % 3 + 1;
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            InProcessCluster.send(producer, "rebuilt", sent, 500, 2_000);
            ReplicatedPartition leading = cluster.replica(leader, "rebuilt");
            await("the leader's log purged", 30, () -> leading.division().getRaftLog().getStartIndex() > 0);

            cluster.start(wiped);
            await("the rebuilt node in sync", 90, () -> cluster.broker(leader).node().partition("rebuilt", 0)
                    .inSync().contains(wiped));
            await("the rejoin finished", 60, () -> Files.notExists(cluster.directory(wiped).resolve("raft")
                    .resolve(Membership.REJOIN_FILE)));
            ReplicatedPartition rebuilt = cluster.replica(wiped, "rebuilt");
            assertThat(rebuilt.machine().snapshotsInstalled()).as("snapshots the rebuilt node installed")
                    .isPositive();
            long end = leading.highWatermark();
            await("the rebuilt node committed to " + end, 30, () -> rebuilt.highWatermark() >= end);
            InProcessCluster.assertSameBatches(cluster.broker(wiped).store(), cluster.broker(leader).store(),
                    "rebuilt", end);
        }
        assertThat(cluster.readValues("rebuilt", sent.size())).isEqualTo(sent);
    }

    /**
     * Presents its certificate whatever authorities the server names. A TLS client offers a certificate only to a
     * server that names its issuer among those it accepts, which a node does not name for another authority, so
     * without this the server would never see the certificate it is to refuse.
     */
    private static final class Presenting extends X509ExtendedKeyManager {

        private static final String ALIAS = "intruder";
        private final RaftTls tls;
        /** How many times the certificate was handed to a handshake. */
        final AtomicInteger presented = new AtomicInteger();

        Presenting(RaftTls tls) {
            this.tls = tls;
        }

        @Override
        public String chooseEngineClientAlias(String[] keyTypes, Principal[] issuers, SSLEngine engine) {
            return ALIAS;
        }

        @Override
        public String chooseClientAlias(String[] keyTypes, Principal[] issuers, Socket socket) {
            return ALIAS;
        }

        @Override
        public String[] getClientAliases(String keyType, Principal[] issuers) {
            return new String[] {ALIAS};
        }

        @Override
        public X509Certificate[] getCertificateChain(String alias) {
            presented.incrementAndGet();
            return tls.certificateChain().toArray(new X509Certificate[0]);
        }

        @Override
        public PrivateKey getPrivateKey(String alias) {
            return tls.privateKey();
        }

        @Override
        public String[] getServerAliases(String keyType, Principal[] issuers) {
            return null;
        }

        @Override
        public String chooseServerAlias(String keyType, Principal[] issuers, Socket socket) {
            return null;
        }
    }

    /** @return the parameters of a client presenting its key manager's certificate, trusting the cluster's authority */
    private static Parameters presenting(Presenting keys) {
        Parameters parameters = new Parameters();
        GrpcConfigKeys.TLS.setConf(parameters, GrpcTlsConfig.newBuilder().setKeyManager(keys)
                .setTrustCertificates(new TlsConf.CertificatesConf(NODES[1].trustedCertificates()))
                .setMutualTls(true).build());
        return parameters;
    }

    /** A client as anyone can build one: no retries, 2 s a request. */
    private static RaftClient client(RaftGroup group, Parameters parameters) {
        RaftProperties properties = new RaftProperties();
        RaftClientConfigKeys.Rpc.setRequestTimeout(properties, TimeDuration.valueOf(2, TimeUnit.SECONDS));
        return RaftClient.newBuilder().setProperties(properties).setParameters(parameters).setRaftGroup(group)
                .setRetryPolicy(RetryPolicies.noRetry()).build();
    }
}
