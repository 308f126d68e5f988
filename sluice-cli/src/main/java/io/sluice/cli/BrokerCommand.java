package io.sluice.cli;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.broker.kafka.security.SecuritySettings;
import io.sluice.broker.kafka.security.TlsContexts;
import io.sluice.cluster.ClusterBroker;
import io.sluice.cluster.ClusterSpec;
import io.sluice.cluster.RaftTls;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.io.InputStream;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sluice broker}: serves a store over the Kafka protocol until SIGTERM or SIGINT, then closes the broker and
 * the store cleanly, so that the next start needs no recovery.
 */
@Command(name = "broker", description = "Serve a store to Kafka clients (the Kafka wire protocol) on 127.0.0.1:9092"
        + " until stopped (SIGTERM or Ctrl-C close it cleanly).")
final class BrokerCommand implements Callable<Integer> {

    /** The keys a broker.properties may hold, named as Kafka names its own where one exists. */
    static final Set<String> KEYS = Set.of("listen", "node.id", "cluster.id", "cluster", "num.partitions",
            "auto.create.topics.enable", "socket.request.max.bytes", "max.connections", "topic.layout", "metrics.port",
            "offsets.retention.minutes", "auto.leader.rebalance.enable", "leader.imbalance.check.interval.seconds",
            "log.cleaner.enable", "log.cleaner.backoff.ms", "log.cleaner.dedupe.buffer.size",
            "log.cleaner.io.max.bytes.per.second", "log.cleaner.threads");

    @Mixin
    StoreOptions store;

    @Option(names = "--listen", description = "host:port to listen on (default 127.0.0.1:9092), one PLAINTEXT"
            + " listener. Anything but loopback is reachable from other machines: for TLS, SASL and several listeners"
            + " use Kafka's listeners and ssl.*/sasl.* keys in --config.")
    String listen;

    @Option(names = "--config", description = "A broker.properties file: " + "listen, node.id, cluster.id, cluster,"
            + " num.partitions, auto.create.topics.enable, socket.request.max.bytes, max.connections, topic.layout"
            + " (queue, topic or shared), metrics.port, offsets.retention.minutes, auto.leader.rebalance.enable,"
            + " leader.imbalance.check.interval.seconds, log.cleaner.enable, log.cleaner.backoff.ms,"
            + " log.cleaner.dedupe.buffer.size, log.cleaner.io.max.bytes.per.second, log.cleaner.threads (1);"
            + " Kafka's security keys: listeners, advertised.listeners, listener.security.protocol.map, ssl.*,"
            + " sasl.enabled.mechanisms, listener.name.<listener>.<key>, connections.max.reauth.ms, super.users,"
            + " allow.everyone.if.no.acl.found, authorizer.class.name (docs/broker.md, Security)."
            + " Options given here win over it.")
    Path configFile;

    @Option(names = "--metrics-port", description = "Serve Prometheus metrics at http://<listen host>:<port>/metrics"
            + " (default: none).")
    Integer metricsPort;

    @Option(names = "--node-id", description = "This broker's node id (node.id); with --cluster, which of its brokers"
            + " this is.")
    Integer nodeId;

    @Option(names = "--cluster", description = "Be one broker of a cluster (cluster): id@host:clientPort/raftPort,..."
            + " e.g. 1@127.0.0.1:9092/9192,2@127.0.0.1:9093/9193,3@127.0.0.1:9094/9194. Partitions are replicated with"
            + " Raft; this broker listens on its own entry's host and client port. The store and the Raft logs go"
            + " under --dir (store/, raft/).")
    String cluster;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException, InterruptedException {
        PrintWriter out = spec.commandLine().getOut();
        BrokerConfig config = config(configFile, listen);
        if (metricsPort != null) {
            config = config.withMetricsPort(metricsPort);
        }
        if (nodeId != null) {
            config = config.withNodeId(nodeId);
        }
        String clusterText = cluster != null ? cluster : clusterOf(configFile);
        if (clusterText != null) {
            return serveInCluster(out, config, ClusterSpec.parse(clusterText));
        }
        store.refuseClusterStore("serving it without its cluster");
        long started = System.nanoTime();
        StoreConfig storeConfig = storeConfig();
        Store opened = Store.open(store.dir, storeConfig);
        Broker broker;
        try {
            broker = Broker.start(opened, config);
        } catch (IOException | RuntimeException e) {
            opened.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread hook = new Thread(() -> {
            try {
                broker.close();
            } catch (IOException e) {
                System.err.println("sluice broker: closing the listener failed: " + e);
            } finally {
                opened.close();
                stopped.countDown();
            }
        }, "sluice-broker-shutdown");
        Runtime.getRuntime().addShutdownHook(hook);
        out.printf("Sluice broker serving %s on %s:%d (node %d, %s, flush %s), started in %d ms%n", store.dir,
                config.host(), broker.port(), config.nodeId(), opened.openedClean() ? "store opened cleanly"
                        : "store created or recovered", store.flush.name().toLowerCase(Locale.ROOT),
                (System.nanoTime() - started) / 1_000_000);
        if (broker.metricsPort() >= 0) {
            out.printf("Prometheus metrics on http://%s:%d/metrics%n", config.host(), broker.metricsPort());
        }
        out.flush();
        stopped.await();
        return 0;
    }

    /** One broker of a cluster: its node in {@code cluster}, until stopped. */
    private int serveInCluster(PrintWriter out, BrokerConfig config, ClusterSpec spec) throws IOException,
            InterruptedException {
        if (nodeId == null && config.nodeId() == BrokerConfig.defaults().nodeId()) {
            throw new IllegalArgumentException("--cluster needs --node-id (or node.id): which of its brokers this is");
        }
        ClusterSpec.Node self = spec.node(config.nodeId());
        if (listen != null) {
            throw new IllegalArgumentException("--listen and --cluster do not go together: broker " + self.id()
                    + " listens where the cluster string says (" + self.host() + ":" + self.clientPort() + ")");
        }
        long started = System.nanoTime();
        TlsContexts.KeyMaterial raftKeys = SecuritySettings.raftTls(config.security());
        RaftTls raftTls = null;
        if (raftKeys != null) {
            try {
                raftTls = RaftTls.fromKeyStores(raftKeys.keys(), raftKeys.keyPassword(), raftKeys.trust());
            } catch (java.security.GeneralSecurityException e) {
                throw new IllegalArgumentException("the Raft port's TLS settings cannot be used: " + e.getMessage(),
                        e);
            }
        } else if (!java.net.InetAddress.getByName(self.host()).isLoopbackAddress()) {
            System.err.println("sluice broker: the Raft port " + self.host() + ":" + self.raftPort() + " is plaintext"
                    + " and reachable beyond this machine: set raft.security.protocol=SSL (docs/cluster.md)");
        }
        ClusterBroker broker = ClusterBroker.start(store.dir, spec, config.nodeId(), storeConfig(), config, raftTls);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                broker.close();
            } catch (IOException | RuntimeException e) {
                System.err.println("sluice broker: closing failed: " + e);
            } finally {
                stopped.countDown();
            }
        }, "sluice-broker-shutdown"));
        out.printf("Sluice broker %d of cluster %s serving %s on %s:%d (Raft on port %d, flush %s), started in %d ms%n",
                self.id(), config.clusterId(), store.dir, self.host(), broker.port(), self.raftPort(),
                store.flush.name().toLowerCase(Locale.ROOT), (System.nanoTime() - started) / 1_000_000);
        out.flush();
        stopped.await();
        return 0;
    }

    /** @return the {@code cluster} key of the properties file, or null */
    private static String clusterOf(Path file) throws IOException {
        if (file == null) {
            return null;
        }
        Properties properties = new Properties();
        try (InputStream in = Files.newInputStream(file)) {
            properties.load(in);
        }
        return properties.getProperty("cluster");
    }

    /**
     * @return the store's configuration from the options, with a broker's defaults under ASYNC, and a broker's
     *     retention ({@link Broker#kafkaRetention}; 168 hours unless {@code --retention-hours} says otherwise), which
     *     replaces what the store saved at every start: a broker's retention is its configuration's, as a Kafka
     *     broker's is its server.properties'
     */
    StoreConfig storeConfig() {
        StoreConfig storeConfig = store.config(store.flush == FlushMode.ASYNC ? Broker.ASYNC_WRITE_PATH
                : WritePath.MMAP);
        StoreConfig.Builder builder = storeConfig.toBuilder();
        if (storeConfig.flushMode() == FlushMode.ASYNC) {
            builder = Broker.asyncFlushing(builder);
        }
        RetentionPolicy retention = store.retentionHours != null ? storeConfig.retention()
                : storeConfig.retention().withRetentionHours(Broker.DEFAULT_RETENTION_HOURS);
        return builder.retention(Broker.kafkaRetention(retention)).overrideStoreSettings(true).build();
    }

    /** @return the configuration of a properties file (if any) with {@code listen} over it */
    static BrokerConfig config(Path file, String listen) throws IOException {
        Properties properties = new Properties();
        if (file != null) {
            try (InputStream in = Files.newInputStream(file)) {
                properties.load(in);
            }
            Set<String> unknown = new TreeSet<>(properties.stringPropertyNames());
            unknown.removeAll(KEYS);
            unknown.removeIf(SecuritySettings::isKey);
            if (!unknown.isEmpty()) {
                throw new IllegalArgumentException(file + ": unknown keys " + unknown + "; known are " + new TreeSet<>(KEYS));
            }
        }
        if (listen != null) {
            properties.setProperty("listen", listen);
        }
        if (properties.getProperty("listen") != null && properties.getProperty("listeners") != null) {
            throw new IllegalArgumentException("listen (or --listen) and listeners do not go together: listeners names"
                    + " every listener with its address");
        }
        BrokerConfig defaults = BrokerConfig.defaults();
        String host = defaults.host();
        int port = defaults.port();
        String address = properties.getProperty("listen");
        if (address != null) {
            int colon = address.lastIndexOf(':');
            if (colon <= 0 || colon == address.length() - 1) {
                throw new IllegalArgumentException("listen must be host:port, was '" + address + "'");
            }
            host = address.substring(0, colon);
            port = integer("listen port", address.substring(colon + 1));
        }
        return new BrokerConfig(host, port,
                integer("node.id", properties.getProperty("node.id", String.valueOf(defaults.nodeId()))),
                properties.getProperty("cluster.id", defaults.clusterId()),
                integer("socket.request.max.bytes", properties.getProperty("socket.request.max.bytes",
                        String.valueOf(defaults.maxRequestBytes()))),
                integer("max.connections", properties.getProperty("max.connections",
                        String.valueOf(defaults.maxConnections()))),
                integer("num.partitions", properties.getProperty("num.partitions",
                        String.valueOf(defaults.defaultPartitions()))),
                bool("auto.create.topics.enable", properties.getProperty("auto.create.topics.enable",
                        String.valueOf(defaults.autoCreateTopics()))),
                layout(properties.getProperty("topic.layout", defaults.topicLayout().name())),
                integer("metrics.port", properties.getProperty("metrics.port", String.valueOf(defaults.metricsPort()))),
                integer("offsets.retention.minutes", properties.getProperty("offsets.retention.minutes",
                        String.valueOf(defaults.offsetsRetentionMinutes()))),
                leaderImbalanceCheckSeconds(properties, defaults), cleaner(properties), security(properties));
    }

    /** Kafka's listener, TLS, SASL and authorizer keys, as given (checked when the broker starts). */
    private static Map<String, String> security(Properties properties) {
        Map<String, String> security = new TreeMap<>();
        for (String key : properties.stringPropertyNames()) {
            if (SecuritySettings.isKey(key)) {
                security.put(key, properties.getProperty(key));
            }
        }
        return security;
    }

    /** Kafka's log.cleaner.* keys; one cleaner thread, as Kafka's default. */
    private static CleanerSettings cleaner(Properties properties) {
        CleanerSettings defaults = CleanerSettings.DEFAULTS;
        int threads = integer("log.cleaner.threads", properties.getProperty("log.cleaner.threads", "1"));
        if (threads != 1) {
            throw new IllegalArgumentException("log.cleaner.threads must be 1 (one cleaner thread), was " + threads);
        }
        return new CleanerSettings(
                bool("log.cleaner.enable", properties.getProperty("log.cleaner.enable", "true")),
                longValue("log.cleaner.backoff.ms", properties.getProperty("log.cleaner.backoff.ms",
                        String.valueOf(defaults.backoffMillis()))),
                longValue("log.cleaner.dedupe.buffer.size", properties.getProperty("log.cleaner.dedupe.buffer.size",
                        String.valueOf(defaults.dedupeBufferBytes()))),
                doubleValue("log.cleaner.io.max.bytes.per.second", properties.getProperty(
                        "log.cleaner.io.max.bytes.per.second", String.valueOf(defaults.ioMaxBytesPerSecond()))));
    }

    private static long longValue(String key, String value) {
        try {
            return Long.parseLong(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, was '" + value + "'");
        }
    }

    private static double doubleValue(String key, String value) {
        try {
            return Double.parseDouble(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a number, was '" + value + "'");
        }
    }

    /** Kafka's two keys: the check's interval, and whether it runs at all (0 here when it does not). */
    private static int leaderImbalanceCheckSeconds(Properties properties, BrokerConfig defaults) {
        int seconds = integer("leader.imbalance.check.interval.seconds", properties.getProperty(
                "leader.imbalance.check.interval.seconds", String.valueOf(defaults.leaderImbalanceCheckSeconds())));
        if (seconds < 1) {
            throw new IllegalArgumentException("leader.imbalance.check.interval.seconds must be at least 1, was "
                    + seconds);
        }
        return bool("auto.leader.rebalance.enable", properties.getProperty("auto.leader.rebalance.enable", "true"))
                ? seconds : 0;
    }

    private static int integer(String key, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a whole number, was '" + value + "'");
        }
    }

    private static boolean bool(String key, String value) {
        return switch (value.trim().toLowerCase(Locale.ROOT)) {
            case "true" -> true;
            case "false" -> false;
            default -> throw new IllegalArgumentException(key + " must be true or false, was '" + value + "'");
        };
    }

    private static TopicLayout layout(String value) {
        try {
            return TopicLayout.valueOf(value.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("topic.layout must be batches, queue, topic or shared, was '" + value + "'");
        }
    }
}
