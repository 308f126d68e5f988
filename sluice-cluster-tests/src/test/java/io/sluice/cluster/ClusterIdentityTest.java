package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A node's Raft directory belongs to one node of one cluster: started again in another cluster, or as another node,
 * it is refused with a message that says whose data it holds; a bad cluster id is refused before anything is written,
 * and a Raft port in use before the Raft server starts.
 */
class ClusterIdentityTest {

    @TempDir
    Path dir;

    @Test
    void aNodesDataIsRefusedToAnotherClusterOrNode() throws Exception {
        ClusterSpec cluster = ClusterSpec.parse("1@127.0.0.1:" + TestClusters.freePort() + "/"
                + TestClusters.freePort() + ",2@127.0.0.1:" + TestClusters.freePort() + "/" + TestClusters.freePort());
        Path raft = dir.resolve("raft");
        try (Store store = Store.open(dir.resolve("store"), StoreConfig.builder().build())) {
            new ClusterNode("blue", cluster, 1, raft, store).close();
            assertThatThrownBy(() -> new ClusterNode("green", cluster, 1, raft, store))
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("holds the Raft logs of cluster.id=blue node.id=1")
                    .hasMessageContaining("not of cluster.id=green node.id=1");
            assertThatThrownBy(() -> new ClusterNode("blue", cluster, 2, raft, store))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("node.id=1, not of");
            assertThatThrownBy(() -> new ClusterNode("has space", cluster, 1, dir.resolve("other"), store))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("printable ASCII");
            assertThat(dir.resolve("other")).doesNotExist();
            new ClusterNode("blue", cluster, 1, raft, store).close();
        }
    }

    /** Ratis's gRPC server, started on a port in use, ends the JVM; the node refuses to start first, naming it. */
    @Test
    void aRaftPortInUseIsRefusedWithItsAddress() throws Exception {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
             Store store = Store.open(dir.resolve("store"), StoreConfig.builder().build())) {
            ClusterSpec cluster = ClusterSpec.parse("1@127.0.0.1:" + TestClusters.freePort() + "/"
                    + taken.getLocalPort());
            assertThatThrownBy(() -> new ClusterNode("blue", cluster, 1, dir.resolve("raft"), store))
                    .isInstanceOf(IOException.class)
                    .hasMessageContaining("cannot listen for Raft on 127.0.0.1:" + taken.getLocalPort());
        }
    }
}
