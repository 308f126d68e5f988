package io.sluice.bench.broker;

import io.sluice.cluster.ClusterBroker;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.kafka.common.Uuid;

/**
 * A cluster of three brokers in child JVMs on 127.0.0.1: three Sluice brokers replicating with Raft, or three Apache
 * Kafka nodes (KRaft, each broker and controller). Each node can be killed (SIGKILL) and started again on its data.
 */
final class ThreeNodes implements Load.Target, AutoCloseable {

    private final String name;
    private final List<Callable<BrokerProcess>> starters;
    private final BrokerProcess[] nodes = new BrokerProcess[3];

    private ThreeNodes(String name, List<Callable<BrokerProcess>> starters) {
        this.name = name;
        this.starters = starters;
    }

    /** Starts every node, in parallel (a Raft or KRaft quorum waits for a majority to answer). */
    private ThreeNodes startAll() throws Exception {
        List<Thread> threads = new ArrayList<>();
        Exception[] failures = new Exception[3];
        for (int i = 0; i < 3; i++) {
            int node = i;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    nodes[node] = starters.get(node).call();
                } catch (Exception e) {
                    failures[node] = e;
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        for (Exception failure : failures) {
            if (failure != null) {
                close();
                throw failure;
            }
        }
        return this;
    }

    /** Three Sluice brokers (ASYNC stores, as the single-broker race runs them; Raft forces its own log). */
    static ThreeNodes sluice(Path dir) throws Exception {
        int[] ports = Brokers.freePorts(6);
        int[] client = Arrays.copyOfRange(ports, 0, 3);
        StringBuilder spec = new StringBuilder();
        for (int i = 0; i < 3; i++) {
            spec.append(i == 0 ? "" : ",").append(i + 1).append("@127.0.0.1:").append(client[i]).append('/')
                    .append(ports[3 + i]);
        }
        List<Callable<BrokerProcess>> starters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int id = i + 1;
            Path nodeDir = dir.resolve("node-" + id);
            Files.createDirectories(nodeDir);
            starters.add(() -> BrokerProcess.start("sluice-" + id, dir.resolve("node-" + id + "-"
                    + System.nanoTime() + ".log"), client[id - 1], ClusterBroker.class.getName(), nodeDir.toString(),
                    spec.toString(), String.valueOf(id), "bench", "async"));
        }
        return new ThreeNodes("sluice", starters).startAll();
    }

    /**
     * Three Apache Kafka nodes, each broker and controller of one KRaft quorum, formatted afresh; topics default to
     * replication factor 3 and min.insync.replicas 2. Flushing is left to the OS, Kafka's default.
     */
    static ThreeNodes kafka(Path dir) throws Exception {
        int[] ports = Brokers.freePorts(6);
        int[] client = Arrays.copyOfRange(ports, 0, 3);
        int[] controller = Arrays.copyOfRange(ports, 3, 6);
        String voters = "1@127.0.0.1:" + controller[0] + ",2@127.0.0.1:" + controller[1] + ",3@127.0.0.1:"
                + controller[2];
        String clusterId = Uuid.randomUuid().toString();
        List<Callable<BrokerProcess>> starters = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            int id = i + 1;
            Path nodeDir = dir.resolve("node-" + id);
            Files.createDirectories(nodeDir);
            Path properties = nodeDir.resolve("server.properties");
            Files.write(properties, List.of(
                    "process.roles=broker,controller",
                    "node.id=" + id,
                    "controller.quorum.voters=" + voters,
                    "listeners=PLAINTEXT://127.0.0.1:" + client[i] + ",CONTROLLER://127.0.0.1:" + controller[i],
                    "advertised.listeners=PLAINTEXT://127.0.0.1:" + client[i],
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    "log.dirs=" + nodeDir.resolve("logs"),
                    "num.partitions=1",
                    "default.replication.factor=3",
                    "min.insync.replicas=2",
                    "offsets.topic.replication.factor=3",
                    "transaction.state.log.replication.factor=3",
                    "transaction.state.log.min.isr=2",
                    "group.initial.rebalance.delay.ms=0"));
            Path formatLog = nodeDir.resolve("format.log");
            int formatted = BrokerProcess.runToEnd(formatLog, List.of("-Xmx256m"), "kafka.tools.StorageTool",
                    "format", "-t", clusterId, "-c", properties.toString());
            if (formatted != 0) {
                throw new IOException("formatting Kafka node " + id + " failed (exit " + formatted + "): "
                        + Files.readString(formatLog));
            }
            starters.add(() -> BrokerProcess.start("kafka-" + id, dir.resolve("node-" + id + "-" + System.nanoTime()
                    + ".log"), client[id - 1], "kafka.Kafka", properties.toString()));
        }
        return new ThreeNodes("kafka", starters).startAll();
    }

    String name() {
        return name;
    }

    /** @return every node's client address */
    @Override
    public String bootstrap() {
        StringBuilder servers = new StringBuilder();
        for (BrokerProcess node : nodes) {
            if (node != null) {
                servers.append(servers.isEmpty() ? "" : ",").append(node.bootstrap());
            }
        }
        return servers.toString();
    }

    @Override
    public short replicationFactor() {
        return 3;
    }

    /** @return CPU seconds used by the three nodes' processes together */
    @Override
    public double cpuSeconds() throws IOException {
        double total = 0;
        for (BrokerProcess node : nodes) {
            total += node.cpuSeconds();
        }
        return total;
    }

    /** Kills node {@code id} (1-3) with SIGKILL. */
    void kill(int id) throws InterruptedException {
        nodes[id - 1].kill();
    }

    /** Starts node {@code id} (1-3) again on its data; waits until it answers. */
    void restart(int id) throws Exception {
        nodes[id - 1] = starters.get(id - 1).call();
    }

    @Override
    public void close() {
        for (BrokerProcess node : nodes) {
            if (node != null) {
                node.close();
            }
        }
    }
}
