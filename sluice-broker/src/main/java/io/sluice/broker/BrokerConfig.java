package io.sluice.broker;

import io.sluice.broker.kafka.KafkaApis;
import io.sluice.store.TopicLayout;
import java.util.Map;
import java.util.Objects;

/**
 * Where a broker listens, what it accepts, and how it makes topics.
 *
 * @param host the address to bind, also advertised to clients (127.0.0.1 by default)
 * @param port the port (9092 by default; 0 for any free one)
 * @param nodeId the node id clients see, also named as the controller
 * @param clusterId the cluster id Metadata reports
 * @param maxRequestBytes the largest request accepted (100 MiB by default, as Kafka's socket.request.max.bytes)
 * @param maxConnections connections served at once
 * @param defaultPartitions partitions of a topic created without a count (1, as Kafka's num.partitions)
 * @param autoCreateTopics whether asking Metadata for an unknown topic creates it (true, as Kafka's default)
 * @param topicLayout where a new topic's partitions live in the store (BATCHES: a log per partition holding the
 *     producers' batches back to back, as Kafka)
 * @param metricsPort the port of the Prometheus endpoint on {@code host} ({@code /metrics}); -1 for none (the
 *     default), 0 for any free one
 * @param offsetsRetentionMinutes how long the committed offsets of a group with no members are kept after its last
 *     commit (7 days by default, as Kafka's offsets.retention.minutes); as in Kafka, they hold no records back
 * @param leaderImbalanceCheckSeconds in a cluster, how often a broker hands the partitions it leads to their
 *     preferred replicas (300 s by default, as Kafka's leader.imbalance.check.interval.seconds; 0: never, as Kafka's
 *     auto.leader.rebalance.enable=false); a new partition's leader hands over either way
 * @param cleaner the log cleaner's settings (Kafka's log.cleaner.*)
 * @param security Kafka's listener, TLS, SASL and authorizer settings by name ({@code listeners}, {@code ssl.*},
 *     {@code sasl.enabled.mechanisms}, {@code super.users}, ...), checked when the broker starts; none: one PLAINTEXT
 *     listener on {@code host:port}
 */
public record BrokerConfig(String host, int port, int nodeId, String clusterId, int maxRequestBytes,
                           int maxConnections, int defaultPartitions, boolean autoCreateTopics,
                           TopicLayout topicLayout, int metricsPort, int offsetsRetentionMinutes,
                           int leaderImbalanceCheckSeconds, CleanerSettings cleaner, Map<String, String> security) {

    /** A configuration without security settings: one PLAINTEXT listener. */
    public BrokerConfig(String host, int port, int nodeId, String clusterId, int maxRequestBytes, int maxConnections,
                        int defaultPartitions, boolean autoCreateTopics, TopicLayout topicLayout, int metricsPort,
                        int offsetsRetentionMinutes, int leaderImbalanceCheckSeconds, CleanerSettings cleaner) {
        this(host, port, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions, autoCreateTopics,
                topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds, cleaner, Map.of());
    }

    /** A configuration with the log cleaner's defaults. */
    public BrokerConfig(String host, int port, int nodeId, String clusterId, int maxRequestBytes, int maxConnections,
                        int defaultPartitions, boolean autoCreateTopics, TopicLayout topicLayout, int metricsPort,
                        int offsetsRetentionMinutes, int leaderImbalanceCheckSeconds) {
        this(host, port, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions, autoCreateTopics,
                topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds, CleanerSettings.DEFAULTS);
    }

    /** Kafka's leader.imbalance.check.interval.seconds. */
    public static final int DEFAULT_LEADER_IMBALANCE_CHECK_SECONDS = 300;

    /** Validates every field, naming the one that is wrong. */
    public BrokerConfig {
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(clusterId, "clusterId");
        Objects.requireNonNull(topicLayout, "topicLayout");
        Objects.requireNonNull(cleaner, "cleaner");
        security = Map.copyOf(Objects.requireNonNull(security, "security"));
        if (port < 0 || port > 65_535) {
            throw new IllegalArgumentException("port must be between 0 and 65535, was " + port);
        }
        if (nodeId < 0) {
            throw new IllegalArgumentException("nodeId must not be negative, was " + nodeId);
        }
        if (maxRequestBytes < 1024) {
            throw new IllegalArgumentException("maxRequestBytes must be at least 1024, was " + maxRequestBytes);
        }
        if (maxConnections < 1) {
            throw new IllegalArgumentException("maxConnections must be at least 1, was " + maxConnections);
        }
        if (defaultPartitions < 1) {
            throw new IllegalArgumentException("defaultPartitions must be at least 1, was " + defaultPartitions);
        }
        if (offsetsRetentionMinutes < 1) {
            throw new IllegalArgumentException("offsetsRetentionMinutes must be at least 1, was "
                    + offsetsRetentionMinutes);
        }
        if (leaderImbalanceCheckSeconds < 0) {
            throw new IllegalArgumentException("leaderImbalanceCheckSeconds must not be negative, was "
                    + leaderImbalanceCheckSeconds);
        }
        if (metricsPort < -1 || metricsPort > 65_535) {
            throw new IllegalArgumentException("metricsPort must be -1 (none) or between 0 and 65535, was "
                    + metricsPort);
        }
    }

    /**
     * @return the defaults: 127.0.0.1:9092, node 0, 100 MiB requests, 1,000 connections, 1 partition, QUEUE, offsets
     *     of groups without members kept 7 days
     */
    public static BrokerConfig defaults() {
        return new BrokerConfig("127.0.0.1", 9092, 0, "sluice-cluster", 100 << 20, 1_000, 1, true, TopicLayout.BATCHES,
                -1, KafkaApis.DEFAULT_OFFSETS_RETENTION_MINUTES, DEFAULT_LEADER_IMBALANCE_CHECK_SECONDS);
    }

    /** @return this configuration listening on {@code newPort} */
    public BrokerConfig withPort(int newPort) {
        return new BrokerConfig(host, newPort, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions,
                autoCreateTopics, topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds,
                cleaner, security);
    }

    /** @return this configuration with node id {@code newNodeId} */
    public BrokerConfig withNodeId(int newNodeId) {
        return new BrokerConfig(host, port, newNodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions,
                autoCreateTopics, topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds,
                cleaner, security);
    }

    /** @return this configuration with the log cleaner's settings {@code newCleaner} */
    public BrokerConfig withCleaner(CleanerSettings newCleaner) {
        return new BrokerConfig(host, port, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions,
                autoCreateTopics, topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds,
                newCleaner, security);
    }

    /** @return this configuration with the security settings {@code newSecurity} */
    public BrokerConfig withSecurity(Map<String, String> newSecurity) {
        return new BrokerConfig(host, port, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions,
                autoCreateTopics, topicLayout, metricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds,
                cleaner, newSecurity);
    }

    /** @return this configuration with its Prometheus endpoint on {@code newMetricsPort} (-1: none) */
    public BrokerConfig withMetricsPort(int newMetricsPort) {
        return new BrokerConfig(host, port, nodeId, clusterId, maxRequestBytes, maxConnections, defaultPartitions,
                autoCreateTopics, topicLayout, newMetricsPort, offsetsRetentionMinutes, leaderImbalanceCheckSeconds,
                cleaner, security);
    }
}
