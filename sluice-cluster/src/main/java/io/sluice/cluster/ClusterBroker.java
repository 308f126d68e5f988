package io.sluice.cluster;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.broker.kafka.KafkaApis;
import io.sluice.broker.kafka.LogCleaner;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Optional;

/**
 * One broker of a cluster: its store ({@code <dir>/store}), its Raft node ({@code <dir>/raft}) and the Kafka listener
 * on its client port, started in that order and closed in the reverse.
 */
public final class ClusterBroker implements AutoCloseable {

    /** Where a cluster broker keeps its store, under its data directory. */
    static final String STORE_DIRECTORY = "store";
    /** Where it keeps its Raft logs, beside the store. */
    static final String RAFT_DIRECTORY = "raft";

    private final Store store;
    private final ClusterNode node;
    private final Broker broker;

    private ClusterBroker(Store store, ClusterNode node, Broker broker) {
        this.store = store;
        this.node = node;
        this.broker = broker;
    }

    /**
     * @param directory the broker's data directory
     * @param cluster the cluster's brokers
     * @param nodeId this broker's id among them; it listens on that node's host and client port
     * @param storeConfig the store's configuration (its flush mode decides whether each batch is forced before its
     *     Raft entry is written)
     * @param brokerConfig the listener's settings; its host, port, node id are taken from the cluster
     * @return the running broker
     * @throws IOException if a port cannot be bound or the Raft node cannot start
     */
    public static ClusterBroker start(Path directory, ClusterSpec cluster, int nodeId, StoreConfig storeConfig,
                                      BrokerConfig brokerConfig) throws IOException {
        return start(directory, cluster, nodeId, storeConfig, brokerConfig, (RaftTls) null);
    }

    /**
     * As the method above, the broker's Raft node speaking mutual TLS on its Raft port and to the other nodes':
     * only peers whose certificate {@code raftTls} trusts reach it (docs/cluster.md, "Raft over mutual TLS").
     *
     * @param raftTls the node's key, certificate chain and trusted certificates; null for plain text
     */
    public static ClusterBroker start(Path directory, ClusterSpec cluster, int nodeId, StoreConfig storeConfig,
                                      BrokerConfig brokerConfig, RaftTls raftTls) throws IOException {
        return start(directory, cluster, nodeId, storeConfig, brokerConfig, ClusterNode.Tuning.DEFAULT
                .withPreferredLeaders(Duration.ofSeconds(brokerConfig.leaderImbalanceCheckSeconds())), raftTls);
    }

    /**
     * Whether the store at {@code storeDirectory} is a cluster broker's: its replicated partitions' batches are those
     * its node's Raft logs name, and only the broker may change them (its retention holds what the logs still name;
     * an append outside the log, or a deletion below what the log names, leaves the replica to be rebuilt at its
     * next start, or lost if every replica's was).
     *
     * @param storeDirectory a store directory
     * @return the node it belongs to ("cluster.id=... node.id=..."), or empty if it is no cluster broker's store
     * @throws IOException if the node's identity cannot be read
     */
    public static Optional<String> nodeOwning(Path storeDirectory) throws IOException {
        Path store = storeDirectory.toAbsolutePath().normalize();
        Path parent = store.getParent();
        if (parent == null || !store.getFileName().toString().equals(STORE_DIRECTORY)) {
            return Optional.empty();
        }
        Path identity = parent.resolve(RAFT_DIRECTORY).resolve(NodeIdentity.FILE);
        if (!Files.exists(identity)) {
            return Optional.empty();
        }
        return Optional.of(Files.readString(identity, StandardCharsets.UTF_8).trim().replace('\n', ' '));
    }

    /** As the public one, with the partitions' Raft logs kept per {@code tuning}. */
    static ClusterBroker start(Path directory, ClusterSpec cluster, int nodeId, StoreConfig storeConfig,
                               BrokerConfig brokerConfig, ClusterNode.Tuning tuning) throws IOException {
        return start(directory, cluster, nodeId, storeConfig, brokerConfig, tuning, null);
    }

    /** As the public one, with the partitions' Raft logs kept per {@code tuning}, and Raft TLS (null: none). */
    static ClusterBroker start(Path directory, ClusterSpec cluster, int nodeId, StoreConfig storeConfig,
                               BrokerConfig brokerConfig, ClusterNode.Tuning tuning, RaftTls raftTls)
            throws IOException {
        ClusterSpec.Node self = cluster.node(nodeId);
        StartPhases phases = new StartPhases(nodeId);
        KafkaApis.warmUp();
        Store store = Store.open(directory.resolve(STORE_DIRECTORY), storeConfig);
        phases.done("store opened");
        ClusterNode node = null;
        try {
            node = new ClusterNode(brokerConfig.clusterId(), cluster, nodeId, -1, tuning,
                    directory.resolve(RAFT_DIRECTORY),
                    store, phases, NodeHooks.NONE, raftTls);
            BrokerConfig config = new BrokerConfig(self.host(), self.clientPort(), nodeId, brokerConfig.clusterId(),
                    brokerConfig.maxRequestBytes(), brokerConfig.maxConnections(), brokerConfig.defaultPartitions(),
                    brokerConfig.autoCreateTopics(), brokerConfig.topicLayout(), brokerConfig.metricsPort(),
                    brokerConfig.offsetsRetentionMinutes(), brokerConfig.leaderImbalanceCheckSeconds(),
                    brokerConfig.cleaner(), brokerConfig.security());
            Broker broker = Broker.start(store, config, node);
            phases.done("listening for clients");
            phases.log();
            return new ClusterBroker(store, node, broker);
        } catch (IOException | RuntimeException e) {
            if (node != null) {
                try {
                    node.close();
                } catch (IOException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            store.close();
            throw e;
        }
    }

    /**
     * Runs one broker until the process is stopped (SIGTERM closes it cleanly; SIGKILL is a crash), printing
     * {@code ready <node> <port>} once it serves. For tests and scripts; {@code sluice broker --cluster} is the
     * command line's way.
     *
     * @param args data directory, cluster string, node id, cluster id, flush ({@code sync} or {@code async}), and
     *     optionally the entries a replica applies between snapshots (of each partition and of the metadata; 100,000
     *     by default)
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 5 && args.length != 6) {
            System.err.println("usage: ClusterBroker <dir> <cluster> <node id> <cluster id> <sync|async>"
                    + " [<entries per snapshot>]");
            System.exit(2);
        }
        ClusterSpec cluster = ClusterSpec.parse(args[1]);
        int nodeId = Integer.parseInt(args[2]);
        FlushMode flush = FlushMode.valueOf(args[4].toUpperCase(java.util.Locale.ROOT));
        StoreConfig.Builder store = StoreConfig.builder().flushMode(flush);
        if (flush == FlushMode.ASYNC) {
            store = Broker.asyncFlushing(store.writePath(Broker.ASYNC_WRITE_PATH));
        }
        BrokerConfig defaults = BrokerConfig.defaults();
        BrokerConfig config = new BrokerConfig(defaults.host(), defaults.port(), nodeId, args[3],
                defaults.maxRequestBytes(), defaults.maxConnections(), defaults.defaultPartitions(),
                defaults.autoCreateTopics(), defaults.topicLayout(), defaults.metricsPort(),
                defaults.offsetsRetentionMinutes(), defaults.leaderImbalanceCheckSeconds());
        ClusterNode.Tuning tuning = ClusterNode.Tuning.DEFAULT;
        if (args.length == 6) {
            tuning = new ClusterNode.Tuning(Long.parseLong(args[5]), tuning.logSegmentBytes(), tuning.entriesInFlight(),
                    tuning.refillWait(), tuning.preferredLeaders(), tuning.leaderImbalanceCheck());
        }
        ClusterBroker broker = start(Path.of(args[0]), cluster, nodeId, store.build(), config, tuning);
        java.util.concurrent.CountDownLatch stopped = new java.util.concurrent.CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                broker.close();
            } catch (IOException | RuntimeException e) {
                System.err.println("closing broker " + nodeId + " failed: " + e);
            } finally {
                stopped.countDown();
            }
        }));
        System.out.println("ready " + nodeId + " " + broker.port());
        System.out.flush();
        stopped.await();
    }

    /** @return the broker's Kafka listener (tests read which request versions clients used) */
    Broker broker() {
        return broker;
    }

    /** @return the broker's Raft node */
    public ClusterNode node() {
        return node;
    }

    /** @return the log cleaner of this broker's replicas of compacted topics */
    public LogCleaner cleaner() {
        return broker.cleaner();
    }

    /** @return the broker's store */
    public Store store() {
        return store;
    }

    /** @return the port clients connect to */
    public int port() {
        return broker.port();
    }

    @Override
    public void close() throws IOException {
        try {
            broker.close();
        } finally {
            try {
                node.close();
            } finally {
                store.close();
            }
        }
    }
}
