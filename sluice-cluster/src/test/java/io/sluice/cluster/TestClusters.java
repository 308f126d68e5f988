package io.sluice.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;

/** What the cluster tests share: free ports on 127.0.0.1 and clusters made of them. */
final class TestClusters {

    private TestClusters() {
    }

    /** @return a port free on 127.0.0.1 now */
    static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            return socket.getLocalPort();
        }
    }

    /** @return nodes 1-3 on 127.0.0.1, each with a free client port and a free Raft port */
    static ClusterSpec threeOnLoopback() throws IOException {
        StringBuilder text = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(freePort()).append('/')
                    .append(freePort());
        }
        return ClusterSpec.parse(text.toString());
    }

    /** @return the Kafka clients' bootstrap string of every node of the cluster */
    static String bootstrap(ClusterSpec cluster) {
        StringBuilder servers = new StringBuilder();
        for (ClusterSpec.Node node : cluster.nodes()) {
            servers.append(servers.isEmpty() ? "" : ",").append(node.host()).append(':').append(node.clientPort());
        }
        return servers.toString();
    }
}
