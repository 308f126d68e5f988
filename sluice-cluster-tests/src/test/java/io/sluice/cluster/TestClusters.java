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

    /**
     * Ports handed out in this JVM, never handed out again: a Raft server an earlier test left running keeps
     * reconnecting to its old peers' ports, and a new cluster must not own one of them.
     */
    private static final java.util.Set<Integer> HANDED_OUT = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /**
     * @return a port free on 127.0.0.1 now, below the kernel's range of ports for outgoing connections, so that no
     *     connection a running server opens (Ratis's appenders reconnect to stopped peers many times a second) takes
     *     it before the node that is given it binds it; Ratis ends the JVM when its server cannot bind
     */
    static int freePort() throws IOException {
        int highest = Math.min(32_000, ephemeralLow());
        // Test JVMs running at once (surefire's forks) each take a range of their own: one JVM's stopped server must
        // not find its old peer's port owned by another JVM's new node.
        int forks = Math.max(1, Integer.getInteger("sluice.test.forks", 1));
        int fork = Math.min(forks, Math.max(1, parsedOr(System.getProperty("sluice.test.fork"), 1)));
        int span = (highest - 10_000) / forks;
        int lowest = 10_000 + (fork - 1) * span;
        highest = lowest + span;
        java.util.concurrent.ThreadLocalRandom random = java.util.concurrent.ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 1_000; attempt++) {
            int port = random.nextInt(lowest, highest);
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException taken) {
                // In use by another process: another one.
            }
        }
        throw new IOException("no free port on 127.0.0.1 between " + lowest + " and " + highest);
    }

    private static int parsedOr(String value, int otherwise) {
        try {
            return value == null ? otherwise : Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            return otherwise; // run outside surefire's forks: the property is left as written
        }
    }

    /** @return the lowest port Linux gives outgoing connections (32768 by default, and where it cannot be read) */
    private static int ephemeralLow() {
        try {
            // Read by lines: readString of this file (whose size the kernel gives as 0) returns its first byte only.
            String range = java.nio.file.Files.readAllLines(
                    java.nio.file.Path.of("/proc/sys/net/ipv4/ip_local_port_range")).get(0);
            return Math.max(10_100, Integer.parseInt(range.trim().split("\\s+")[0]));
        } catch (IOException | RuntimeException e) {
            return 32_768;
        }
    }

    /** @return nodes 1-3 on 127.0.0.1, each with a free client port and a free Raft port (six different ones) */
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

    /**
     * Fails if a thread of a Raft division (Ratis names them {@code n<id>@group-<id>-...}) still runs 10 s after a
     * test stopped its nodes: a division left running (a leader's appenders, an election) would go on sending to the
     * ports of a cluster that is gone, and take part in the groups of the next test's cluster.
     *
     * <p>A follower's election timer ({@code -FollowerState}) is not counted. One was seen left over once, in
     * PartitionReplicationTest: Ratis 3.3.0's close stops the timer it finds, and an append or a vote handled
     * meanwhile can start another. Such a timer sleeps for good: it starts an election only while the division runs.
     */
    static void assertNoRaftThreadsLeft() {
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(10);
        java.util.List<String> left;
        while (!(left = raftThreads()).isEmpty()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Raft threads still running 10 s after the nodes were stopped: " + left);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** @return the names of the live threads of Raft divisions */
    static java.util.List<String> raftThreads() {
        return Thread.getAllStackTraces().keySet().stream().map(Thread::getName)
                .filter(name -> name.matches("n\\d+@group-.*") && !name.endsWith("-FollowerState")).sorted()
                .toList();
    }
}
