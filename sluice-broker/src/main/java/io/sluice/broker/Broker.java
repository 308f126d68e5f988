package io.sluice.broker;

import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.sluice.broker.kafka.KafkaApis;
import io.sluice.broker.kafka.LogCleaner;
import io.sluice.broker.local.LocalCluster;
import io.sluice.broker.local.LocalPartitions;
import io.sluice.broker.replicated.ReplicatedCluster;
import io.sluice.broker.replicated.ReplicatedPartitions;
import io.sluice.broker.metrics.BrokerMetrics;
import io.sluice.broker.kafka.security.Authenticator;
import io.sluice.broker.kafka.security.AuthorizerConfig;
import io.sluice.broker.kafka.security.InterBrokerClient;
import io.sluice.broker.kafka.security.QuotaSettings;
import io.sluice.broker.kafka.security.SecuritySettings;
import io.sluice.broker.net.AcceptRates;
import io.sluice.broker.net.FrameServer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.util.Objects;
import java.util.function.IntFunction;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicReference;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** A Sluice broker: the Kafka protocol on a listener. */
public final class Broker implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(Broker.class);

    /** One per listener, the first listener's first. */
    private final List<FrameServer> servers;
    private final List<String> listenerNames;
    private final ExecutorService executor;
    private final KafkaApis apis;
    private final HTTPServer metricsServer;
    private final BrokerMetrics metrics;

    private Broker(List<FrameServer> servers, List<String> listenerNames, ExecutorService executor, KafkaApis apis, HTTPServer metricsServer,
                   BrokerMetrics metrics) {
        this.servers = List.copyOf(servers);
        this.listenerNames = List.copyOf(listenerNames);
        this.executor = executor;
        this.apis = apis;
        this.metricsServer = metricsServer;
        this.metrics = metrics;
    }

    /**
     * Binds the listener and starts serving the store's topics, as a cluster of one: this broker leads every
     * partition, in epoch 0, and is its own controller. Declared topics without an id (from a store written before
     * topic ids) are given one first, durably. The store stays the caller's to close, after the broker.
     *
     * @param store where topics and records live
     * @param config where to listen and the limits
     * @return the running broker
     * @throws IOException when the listener cannot be bound
     */
    public static Broker start(Store store, BrokerConfig config) throws IOException {
        Objects.requireNonNull(store, "store");
        // Before anything is served: Kafka's clients name a topic by its id as soon as Metadata gives one, and a topic
        // answered without one would be refused to the Java producer (its Produce v13 names the zero id). A topic this
        // fails for, or declared later through the store's API, gets one when first asked for (LocalPartitions).
        try {
            var identified = TopicIds.identifyAll(store);
            if (!identified.isEmpty()) {
                LOG.info("gave {} topics from before topic ids their ids: {}", identified.size(), identified);
            }
        } catch (RuntimeException e) {
            LOG.warn("the topics without an id could not be given one now (each is when first asked for): {}",
                    e.toString());
        }
        LocalPartitions partitions = new LocalPartitions(store, config.nodeId());
        return start(store, config, port -> partitions, port -> new LocalCluster(store, partitions,
                new ClusterView.Node(config.nodeId(), config.host(), port), config.topicLayout()), false);
    }

    /**
     * Binds the listener and starts serving as one broker of a cluster: the cluster's partitions and its view say who
     * leads each partition, and appends and topic changes go through them.
     *
     * @param store where this broker's replicas of the topics live (its metrics are reported)
     * @param config where to listen and the limits
     * @param partitions the partitions this broker serves
     * @param cluster the cluster this broker is one of
     * @return the running broker
     * @throws IOException when the listener cannot be bound
     */
    public static Broker start(Store store, BrokerConfig config, Partitions partitions, ClusterView cluster)
            throws IOException {
        Objects.requireNonNull(partitions, "partitions");
        Objects.requireNonNull(cluster, "cluster");
        return start(store, config, port -> partitions, port -> cluster, true);
    }

    /**
     * Binds the listener and starts serving as one broker of a cluster that replicates the partitions as
     * {@code replication} says (the cluster module's Raft node).
     *
     * @param store where this broker's replicas of the topics live
     * @param config where to listen and the limits
     * @param replication the cluster as this broker's node of it sees it
     * @return the running broker
     * @throws IOException when the listener cannot be bound
     */
    public static Broker start(Store store, BrokerConfig config, Replication replication) throws IOException {
        return start(store, config, new ReplicatedPartitions(replication, store),
                new ReplicatedCluster(replication, store));
    }

    /**
     * @param partitions the partitions served, given the port bound
     * @param cluster the cluster, given the port bound (a broker alone advertises it)
     */
    private static Broker start(Store store, BrokerConfig config, IntFunction<Partitions> partitions,
                                IntFunction<ClusterView> cluster, boolean oneListener) throws IOException {
        Objects.requireNonNull(store, "store");
        Objects.requireNonNull(config, "config");
        SecuritySettings security = SecuritySettings.parse(config.security(), config.host(), config.port());
        List<SecuritySettings.Listener> listeners = security.listeners();
        if (oneListener) {
            // A cluster's broker listens where the cluster string says: its listener's port is that one, or 0 for
            // "the cluster string's", so that one configuration serves every broker.
            SecuritySettings.Listener only = listeners.getFirst();
            if (listeners.size() != 1 || only.port() != 0 && only.port() != config.port()) {
                throw new IllegalArgumentException("a cluster's broker has one listener, on the client port its"
                        + " cluster entry names (" + config.port() + ", or 0 for it); listeners is "
                        + config.security().get("listeners"));
            }
            listeners = List.of(only.at(config.host(), config.port()));
        }
        // How this broker reaches the others' listener (a cluster's): checked before anything is bound.
        InterBrokerClient interBroker = oneListener ? InterBrokerClient.of(listeners.getFirst()) : null;
        for (SecuritySettings.Listener listener : listeners) {
            InetSocketAddress address = new InetSocketAddress(listener.host(), listener.port());
            if (!address.getAddress().isLoopbackAddress() && !listener.sasl() && !listener.tls()) {
                LOG.warn("listener {} on {} is PLAINTEXT and reachable beyond this machine: anyone who reaches it"
                        + " can connect without authentication", listener.name(), address);
            }
        }
        // With port 0 the advertised port is known only once bound, so the protocol handler is set after binding;
        // a request that arrives before cannot be answered yet and closes its connection.
        AtomicReference<KafkaApis> apis = new AtomicReference<>();
        AtomicReference<Authenticator.Shared> shared = new AtomicReference<>();
        ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
        List<FrameServer> servers = new ArrayList<>();
        // Connections, connections per address and request bytes in hand count over all listeners, as Kafka's.
        FrameServer.Shared counts = new FrameServer.Shared(FrameServer.Limits.of(config.maxRequestBytes(),
                config.maxConnections()).withPerIp(security.maxConnectionsPerIp(), security.perIpOverrides()));
        try {
            for (SecuritySettings.Listener listener : listeners) {
                AtomicReference<SecuritySettings.Listener> bound = new AtomicReference<>();
                servers.add(new FrameServer(new InetSocketAddress(listener.host(), listener.port()), peer -> {
                    KafkaApis ready = apis.get();
                    if (ready == null) {
                        return frame -> {
                            throw new IllegalStateException("the broker is still starting");
                        };
                    }
                    return ready.connections(bound.get(), shared.get()).open(peer);
                }, counts, listener.maxConnections(), listener.engines(), acceptRates(apis)));
                bound.set(listener.withPort(servers.getLast().port()));
            }
        } catch (IOException | RuntimeException e) {
            for (FrameServer server : servers) {
                server.close();
            }
            executor.close();
            throw e;
        }
        FrameServer server = servers.getFirst();
        BrokerMetrics metrics = new BrokerMetrics(store, () -> servers.stream().mapToInt(FrameServer::connections)
                .sum());
        HTTPServer metricsServer = null;
        if (config.metricsPort() >= 0) {
            try {
                metricsServer = metrics.serve(config.host(), config.metricsPort());
            } catch (IOException | RuntimeException e) {
                for (FrameServer each : servers) {
                    each.close();
                }
                executor.close();
                throw e;
            }
            LOG.info("Prometheus metrics on http://{}:{}/metrics", config.host(), metricsServer.getPort());
        }
        SecuritySettings.Listener first = listeners.getFirst().withPort(server.port());
        KafkaApis kafka = new KafkaApis(partitions.apply(server.port()), cluster.apply(server.port()), store.config(),
                new KafkaApis.Settings(config.nodeId(), first.advertisedHost(), first.advertisedPortOrBound(),
                        config.clusterId(), config.defaultPartitions(), config.autoCreateTopics(),
                        config.topicLayout(), config.offsetsRetentionMinutes(), config.cleaner()),
                executor, metrics, security.authorizer() ? new AuthorizerConfig(security.superUsers(),
                        security.allowEveryoneIfNoAclFound()) : null, QuotaSettings.of(config.security()));
        if (interBroker != null) {
            kafka.interBroker(interBroker);
        }
        shared.set(new Authenticator.Shared(security, kafka::scramCredentials));
        apis.set(kafka);
        for (int i = 0; i < servers.size(); i++) {
            LOG.info("Sluice broker listening on {}:{} ({}, {})", listeners.get(i).host(), servers.get(i).port(),
                    listeners.get(i).name(), listeners.get(i).protocolName());
        }
        return new Broker(servers, listeners.stream().map(SecuritySettings.Listener::name).toList(), executor, kafka,
                metricsServer, metrics);
    }

    /** The connection rates of the broker's quotas, once the protocol handler runs (none before). */
    private static AcceptRates acceptRates(AtomicReference<KafkaApis> apis) {
        return new AcceptRates() {
            @Override
            public long waitMillis(long nowMillis) {
                KafkaApis ready = apis.get();
                return ready == null ? 0 : ready.acceptRates().waitMillis(nowMillis);
            }

            @Override
            public long refuseMillis(java.net.InetAddress address, long nowMillis) {
                KafkaApis ready = apis.get();
                return ready == null ? 0 : ready.acceptRates().refuseMillis(address, nowMillis);
            }
        };
    }

    /** @return the broker's metrics (tests read which request versions clients used) */
    public BrokerMetrics metrics() {
        return metrics;
    }

    /** @return the log cleaner, which compacts the partitions of compacted topics */
    public LogCleaner cleaner() {
        return apis.cleaner();
    }

    /** @return the port of the Prometheus endpoint, or -1 if none runs */
    public int metricsPort() {
        return metricsServer == null ? -1 : metricsServer.getPort();
    }

    /** Kafka's default log.retention.hours: a broker keeps records 7 days unless told otherwise. */
    public static final long DEFAULT_RETENTION_HOURS = 168;

    /**
     * A broker's retention, as a Kafka broker's: records go only once retention.ms or retention.bytes allow. The
     * store's RocketMQ-style disk-ratio deletion is off (a Kafka broker never deletes data because the disk fills; it
     * refuses appends, as the store still does above its hard ratio), and committed group offsets hold nothing back
     * (Kafka's offsets never do). Retention holds (a Raft replica's log) still keep what they name.
     *
     * @param policy the retention times and sizes to keep
     * @return the policy a broker's store takes
     */
    public static RetentionPolicy kafkaRetention(RetentionPolicy policy) {
        return policy.withoutDiskRatioDeletion().withConsumersHoldingRetention(false);
    }

    /** Dirty bytes past which an ASYNC broker's store forces its log (the store's own default is 16 KiB). */
    public static final long ASYNC_FLUSH_DIRTY_BYTES = 64L << 20;
    /** How long an ASYNC broker's store leaves appended bytes unforced at most. */
    public static final long ASYNC_FLUSH_INTERVAL_MILLIS = 1_000;

    /**
     * The store's flushing as a broker wants it under ASYNC. A broker's ASYNC promise is Kafka's: an acknowledged
     * batch is in the page cache and survives a crash of the process. The store's ASYNC defaults force every 16 KiB,
     * which at broker rates is an fsync for nearly every produce request; here the log is forced once a second, or
     * after 64 MiB, whichever comes first (Kafka by default leaves flushing to the OS altogether). SYNC is left as
     * it is: there every acknowledged batch is forced.
     *
     * @param builder a store configuration being built
     * @return the same builder
     */
    public static StoreConfig.Builder asyncFlushing(StoreConfig.Builder builder) {
        return builder.flushDirtyBytes(ASYNC_FLUSH_DIRTY_BYTES).flushIntervalMillis(ASYNC_FLUSH_INTERVAL_MILLIS);
    }

    /**
     * The write path a broker's store takes under ASYNC unless told otherwise: CHANNEL, one positional write per
     * produced batch, as Kafka appends. On MMAP every new page of a segment is first faulted in (read ahead and
     * zeroed by the kernel) and then written, which cost the broker more CPU per record than CHANNEL does (the figures:
     * docs/benchmarks.md, "Broker"). Under SYNC the store's own
     * default stays: the durable race was measured on it.
     */
    public static final WritePath ASYNC_WRITE_PATH = WritePath.CHANNEL;

    /** @return the port the broker's first listener listens on */
    public int port() {
        return servers.getFirst().port();
    }

    /** @return the port of each listener, by its name, in the order {@code listeners} names them */
    public Map<String, Integer> ports() {
        Map<String, Integer> ports = new LinkedHashMap<>();
        for (int i = 0; i < servers.size(); i++) {
            ports.put(listenerNames.get(i), servers.get(i).port());
        }
        return ports;
    }

    /** @return connections open now, on every listener */
    public int connections() {
        return servers.stream().mapToInt(FrameServer::connections).sum();
    }

    /** Stops listening and closes every connection. */
    @Override
    public void close() throws IOException {
        try {
            for (FrameServer server : servers) {
                server.close();
            }
        } finally {
            apis.close();
            executor.shutdownNow();
            if (metricsServer != null) {
                metricsServer.close();
            }
        }
    }
}
