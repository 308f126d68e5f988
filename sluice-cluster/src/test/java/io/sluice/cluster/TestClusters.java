package io.sluice.cluster;

import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.common.serialization.ByteArraySerializer;

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
        // A port just closed may be handed out again: six different ones are kept.
        java.util.Set<Integer> ports = new java.util.LinkedHashSet<>();
        while (ports.size() < 6) {
            ports.add(freePort());
        }
        java.util.Iterator<Integer> next = ports.iterator();
        StringBuilder text = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(next.next()).append('/')
                    .append(next.next());
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

    /**
     * @return an idempotent acks=all producer of byte arrays, which retries through failovers for up to
     *     {@code deliveryTimeoutMs}, waiting at most {@code requestTimeoutMs} for each answer
     */
    static KafkaProducer<byte[], byte[]> idempotentProducer(String bootstrap, int deliveryTimeoutMs,
                                                           int requestTimeoutMs) {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
        properties.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, deliveryTimeoutMs);
        properties.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, requestTimeoutMs);
        properties.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, 50);
        return new KafkaProducer<>(properties, new ByteArraySerializer(), new ByteArraySerializer());
    }
}
