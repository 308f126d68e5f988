package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.StoreException;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreatePartitionsResponseData.CreatePartitionsTopicResult;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResult;
import org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResultCollection;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.DescribeClusterResponseData.DescribeClusterBroker;
import org.apache.kafka.common.message.DescribeClusterResponseData.DescribeClusterBrokerCollection;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBroker;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBrokerCollection;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponsePartition;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopic;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopicCollection;
import org.apache.kafka.common.protocol.Errors;

/**
 * The topic APIs: Metadata (with auto-creation), CreateTopics, CreatePartitions, DeleteTopics and DescribeCluster,
 * over the broker's {@link Partitions} and its {@link ClusterView}, the same code for a broker alone and for one of a
 * cluster. Thread-safe.
 */
final class TopicApis {

    /**
     * The most a Metadata answer waits, over all its partitions, for those whose leader is in doubt here to have one
     * ({@link Partition#leaderInDoubt}): a client told of a leader that just died tries it, fails, and backs off
     * longer each time, where one told of its successor goes on.
     */
    static final long LEADER_DOUBT_WAIT_MILLIS = 1_500;
    /** How long a partition's leader, once in doubt, must be out of doubt and the same before it is named again. */
    static final long LEADER_CALM_MILLIS = 50;
    /** The most topic ids a Metadata request is answered UNKNOWN_TOPIC_ID for; the rest go unanswered. */
    static final int MAX_UNKNOWN_TOPIC_IDS_ANSWERED = 64;
    /** How long a request that gives no timeout waits for the cluster to create a topic or add partitions. */
    private static final long CREATE_TIMEOUT_MILLIS = 30_000;

    private final Partitions partitions;
    private final ClusterView cluster;
    private final KafkaApis.Settings settings;
    private final ProducerStates producers;
    private final TopicConfigs topicConfigs;

    TopicApis(Partitions partitions, ClusterView cluster, KafkaApis.Settings settings, ProducerStates producers,
              TopicConfigs topicConfigs) {
        this.topicConfigs = topicConfigs;
        this.partitions = partitions;
        this.cluster = cluster;
        this.settings = settings;
        this.producers = producers;
    }

    /**
     * @return the node named as the controller: the cluster's metadata leader, or, while none is known, this broker.
     *     Every broker takes the requests clients send the controller (CreateTopics, CreatePartitions) and carries them
     *     to the metadata's leader, as a KRaft broker forwards them, so this one is a controller as clients mean it;
     *     naming none (-1) had librdkafka's AdminClient wait for a controller until its request timed out, as it does
     *     not ask Metadata again meanwhile.
     */
    int controller() {
        int controller = cluster.controller();
        return controller < 0 ? cluster.self() : controller;
    }

    MetadataResponseData metadata(MetadataRequestData request, short version) {
        MetadataResponseBrokerCollection brokers = new MetadataResponseBrokerCollection();
        for (ClusterView.Node node : cluster.brokers()) {
            brokers.add(new MetadataResponseBroker().setNodeId(node.id()).setHost(node.host()).setPort(node.port()));
        }
        MetadataResponseTopicCollection topics = new MetadataResponseTopicCollection();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LEADER_DOUBT_WAIT_MILLIS);
        // All topics: a null list, or in v0 (where the list cannot be null) an empty one.
        if (request.topics() == null || version == 0 && request.topics().isEmpty()) {
            partitions.topics().forEach((topic, count) -> topics.add(topic(topic, count, deadline)));
        } else {
            // Before v4 a request cannot say whether to create; Kafka creates then.
            boolean create = settings.autoCreateTopics() && (version < 4 || request.allowAutoTopicCreation());
            // Each topic once, however often it is named, as Kafka answers: the response's collection is keyed by
            // name, and adding a name again costs a walk over every earlier copy (quadratic in the request).
            Set<String> names = new LinkedHashSet<>();
            Set<Uuid> ids = new LinkedHashSet<>();
            for (MetadataRequestData.MetadataRequestTopic wanted : request.topics()) {
                if (wanted.name() == null) {
                    ids.add(wanted.topicId());
                } else {
                    names.add(wanted.name());
                }
            }
            // Every topic id is unknown here (topics are named), and every answer to one has no name: the collection
            // puts them all in one chain, each costing a walk of the others (minutes for 10,000). A client that asks
            // by id finds a missing answer unknown too (Kafka's Admin does), so only the first few are answered.
            ids.stream().limit(MAX_UNKNOWN_TOPIC_IDS_ANSWERED).forEach(id -> topics.add(new MetadataResponseTopic()
                    .setTopicId(id).setErrorCode(Errors.UNKNOWN_TOPIC_ID.code())));
            for (String name : names) {
                topics.add(metadataOf(name, create, deadline));
            }
        }
        return new MetadataResponseData().setBrokers(brokers).setClusterId(settings.clusterId())
                .setControllerId(controller()).setTopics(topics);
    }

    private static MetadataResponseTopic topicError(String name, Errors error) {
        return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID).setErrorCode(error.code());
    }

    private MetadataResponseTopic metadataOf(String name, boolean create, long deadline) {
        int count = partitions.count(name);
        if (count == 0 && create) {
            if (cluster.controller() < 0) {
                return topicError(name, Errors.LEADER_NOT_AVAILABLE); // retriable: the client asks again
            }
            try {
                awaitCluster(cluster.createTopic(name, settings.defaultPartitions(), cluster.defaultReplicationFactor()),
                        deadline(0), "create topic " + name);
            } catch (ClusterView.TopicRefusedException e) {
                if (e.refusal() == ClusterView.Refusal.INVALID_NAME) {
                    return topicError(name, Errors.INVALID_TOPIC_EXCEPTION);
                }
                // EXISTS: the cluster has it (created through another broker), not applied here yet.
            } catch (RuntimeException e) {
                // A read-only or closing store, a failed registry save, a cluster that did not answer in time.
                return topicError(name, Errors.KAFKA_STORAGE_ERROR);
            }
            count = partitions.count(name);
            if (count == 0) {
                return topicError(name, Errors.LEADER_NOT_AVAILABLE);
            }
        }
        return count == 0 ? topicError(name, Errors.UNKNOWN_TOPIC_OR_PARTITION) : topic(name, count, deadline);
    }

    private MetadataResponseTopic topic(String name, int count, long deadline) {
        List<MetadataResponsePartition> list = new ArrayList<>(count);
        for (int p = 0; p < count; p++) {
            Partition partition = partitions.partition(name, p);
            MetadataResponsePartition answer = new MetadataResponsePartition().setPartitionIndex(p)
                    .setOfflineReplicas(List.of());
            if (partition == null) {
                answer.setErrorCode(Errors.LEADER_NOT_AVAILABLE.code()).setLeaderId(-1).setLeaderEpoch(-1)
                        .setReplicaNodes(List.of()).setIsrNodes(List.of());
            } else {
                awaitLeader(partition, deadline);
                Partition.Leadership leadership = partition.leadership();
                answer.setErrorCode(leadership.leader() < 0 ? Errors.LEADER_NOT_AVAILABLE.code() : Errors.NONE.code())
                        .setLeaderId(leadership.leader()).setLeaderEpoch(leadership.epoch())
                        .setReplicaNodes(leadership.replicas()).setIsrNodes(leadership.inSync());
            }
            list.add(answer);
        }
        // The zero topic id: this broker names topics, and Kafka's clients then keep to versions that do too.
        return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID).setPartitions(list);
    }

    /**
     * Waits, until {@code deadline} at most, while the partition's leader is in doubt here. A doubt ends with another
     * leader named, or with the same one, or none, out of doubt for {@link #LEADER_CALM_MILLIS}: a follower that grants
     * a candidate's pre-vote counts that as word from the leader it still names, until the vote itself comes. A doubt
     * is a matter of time (a leader silent too long), so this looks again every 10 ms.
     */
    private static void awaitLeader(Partition partition, long deadline) {
        if (!partition.leaderInDoubt()) {
            return;
        }
        int doubted = partition.leadership().leader();
        long calmSince = -1;
        try {
            while (System.nanoTime() < deadline) {
                Thread.sleep(10);
                if (partition.leaderInDoubt()) {
                    calmSince = -1;
                    continue;
                }
                int now = partition.leadership().leader();
                // Out of doubt with no leader named counts as calm, not as another leader: a replica just elected
                // leads a moment before it names itself, and an answer without a leader sends the client into a
                // backoff; a doubt that ran out with no leader (none can be elected) ends as any calm does.
                if (now >= 0 && now != doubted) {
                    return;
                }
                if (calmSince < 0) {
                    calmSince = System.nanoTime();
                } else if (System.nanoTime() - calmSince >= TimeUnit.MILLISECONDS.toNanos(LEADER_CALM_MILLIS)) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    CreateTopicsResponseData createTopics(CreateTopicsRequestData request) {
        CreatableTopicResultCollection results = new CreatableTopicResultCollection();
        long deadline = deadline(request.timeoutMs());
        for (CreatableTopic topic : request.topics()) {
            results.add(createTopic(topic, request.validateOnly(), deadline));
        }
        return new CreateTopicsResponseData().setTopics(results);
    }

    /** @return when a request that gives {@code timeoutMs} stops waiting for the cluster (30 s if it gives none) */
    private static long deadline(int timeoutMs) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs > 0 ? timeoutMs : CREATE_TIMEOUT_MILLIS);
    }

    /**
     * One topic of a CreateTopics request, checked in the order Kafka's controller checks: its name, whether it exists
     * (whatever else the request says of it), its replication factor and partitions, then its configs.
     */
    private CreatableTopicResult createTopic(CreatableTopic topic, boolean validateOnly, long deadline) {
        CreatableTopicResult result = new CreatableTopicResult().setName(topic.name()).setTopicId(Uuid.ZERO_UUID);
        int count = topic.numPartitions() == -1 ? settings.defaultPartitions() : topic.numPartitions();
        int factor = topic.replicationFactor() == -1 ? cluster.defaultReplicationFactor() : topic.replicationFactor();
        try {
            cluster.checkTopicName(topic.name());
        } catch (ClusterView.TopicRefusedException e) {
            return failed(result, Errors.INVALID_TOPIC_EXCEPTION, e.getMessage());
        }
        if (partitions.count(topic.name()) > 0) {
            return failed(result, Errors.TOPIC_ALREADY_EXISTS, "Topic '" + topic.name() + "' already exists.");
        }
        if (factor < 1 || factor > cluster.brokers().size()) {
            return failed(result, Errors.INVALID_REPLICATION_FACTOR, "replication factor " + factor + " cannot be"
                    + " met by a cluster of " + cluster.brokers().size() + " broker"
                    + (cluster.brokers().size() == 1 ? "" : "s"));
        }
        if (!topic.assignments().isEmpty()) {
            return failed(result, Errors.INVALID_REQUEST, "manual replica assignment is not supported");
        }
        if (count < 1 || count > cluster.maxPartitions()) {
            return failed(result, Errors.INVALID_PARTITIONS, "the partition count must be between 1 and "
                    + cluster.maxPartitions() + ", was " + count);
        }
        Map<String, String> configs = new TreeMap<>();
        for (CreateTopicsRequestData.CreatableTopicConfig config : topic.configs()) {
            if (config.value() != null) {
                configs.put(config.name(), config.value());
            }
        }
        try {
            TopicConfigs.check(configs);
        } catch (InvalidConfigurationException e) {
            return failed(result, Errors.INVALID_CONFIG, e.getMessage());
        }
        if (validateOnly) {
            return created(result, count, factor, configs);
        }
        try {
            // Carried to the metadata's leader, whichever broker this is; with none known, the cluster elects one
            // meanwhile.
            awaitCluster(cluster.createTopic(topic.name(), count, factor, configs), deadline,
                    "create topic " + topic.name());
        } catch (ClusterView.TopicRefusedException e) {
            return failed(result, switch (e.refusal()) {
                case INVALID_NAME -> Errors.INVALID_TOPIC_EXCEPTION;
                case INVALID_PARTITIONS -> Errors.INVALID_PARTITIONS;
                case INVALID_REPLICATION_FACTOR -> Errors.INVALID_REPLICATION_FACTOR;
                default -> Errors.TOPIC_ALREADY_EXISTS;
            }, e.getMessage());
        } catch (ClusterTimeoutException e) {
            return failed(result, Errors.REQUEST_TIMED_OUT, e.getMessage());
        } catch (RuntimeException e) {
            return failed(result, Errors.KAFKA_STORAGE_ERROR, e.getMessage());
        }
        return created(result, count, factor, configs);
    }

    /** @return the result of a topic created (or that would be), with every topic config's value (CreateTopics v5+) */
    private CreatableTopicResult created(CreatableTopicResult result, int count, int factor,
                                         Map<String, String> configs) {
        List<CreateTopicsResponseData.CreatableTopicConfigs> described = new ArrayList<>();
        for (TopicConfigs.Described config : topicConfigs.describe(configs)) {
            described.add(new CreateTopicsResponseData.CreatableTopicConfigs().setName(config.definition().name())
                    .setValue(config.value()).setReadOnly(false).setConfigSource(config.source())
                    .setIsSensitive(false));
        }
        return result.setNumPartitions(count).setReplicationFactor((short) factor).setConfigs(described);
    }

    /** The cluster did not do what a request asked before the request's timeout: REQUEST_TIMED_OUT. */
    private static final class ClusterTimeoutException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ClusterTimeoutException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Waits for what the cluster was asked to do, until {@code deadline} ({@link System#nanoTime}).
     *
     * @throws ClusterView.TopicRefusedException if the cluster refused it
     * @throws ClusterTimeoutException if the cluster did not do it by the deadline
     * @throws StoreException if the cluster failed otherwise
     */
    private static void awaitCluster(CompletableFuture<Void> done, long deadline, String what) {
        try {
            done.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof ClusterView.TopicRefusedException refused) {
                throw refused;
            }
            throw new StoreException("the cluster did not " + what + ": " + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new ClusterTimeoutException("the cluster did not " + what + " within the request's timeout (it may"
                    + " be electing a metadata leader); it may still do so");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new StoreException("interrupted waiting for the cluster to " + what, e);
        }
    }

    CreatePartitionsResponseData createPartitions(CreatePartitionsRequestData request) {
        List<CreatePartitionsTopicResult> results = new ArrayList<>();
        long deadline = deadline(request.timeoutMs());
        for (CreatePartitionsTopic topic : request.topics()) {
            CreatePartitionsTopicResult result = new CreatePartitionsTopicResult().setName(topic.name());
            results.add(result);
            if (topic.assignments() != null && !topic.assignments().isEmpty()) {
                result.setErrorCode(Errors.INVALID_REPLICA_ASSIGNMENT.code())
                        .setErrorMessage("manual replica assignment is not supported");
                continue;
            }
            try {
                cluster.checkTopicName(topic.name());
            } catch (ClusterView.TopicRefusedException e) {
                result.setErrorCode(Errors.INVALID_TOPIC_EXCEPTION.code()).setErrorMessage(e.getMessage());
                continue;
            }
            int current = partitions.count(topic.name());
            if (current == 0) {
                result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                        .setErrorMessage("topic " + topic.name() + " does not exist");
            } else if (topic.count() <= current || topic.count() > cluster.maxPartitions()) {
                result.setErrorCode(Errors.INVALID_PARTITIONS.code()).setErrorMessage("topic " + topic.name()
                        + " has " + current + " partitions; a new count must be larger and at most "
                        + cluster.maxPartitions() + ", was " + topic.count());
            } else if (!request.validateOnly()) {
                addPartitions(topic, result, deadline);
            }
        }
        return new CreatePartitionsResponseData().setResults(results);
    }

    private void addPartitions(CreatePartitionsTopic topic, CreatePartitionsTopicResult result, long deadline) {
        try {
            awaitCluster(cluster.addPartitions(topic.name(), topic.count()), deadline,
                    "add the partitions of " + topic.name());
        } catch (ClusterView.TopicRefusedException e) {
            result.setErrorCode((e.refusal() == ClusterView.Refusal.NO_TOPIC ? Errors.UNKNOWN_TOPIC_OR_PARTITION
                    : Errors.INVALID_PARTITIONS).code()).setErrorMessage(e.getMessage());
        } catch (ClusterTimeoutException e) {
            result.setErrorCode(Errors.REQUEST_TIMED_OUT.code()).setErrorMessage(e.getMessage());
        } catch (RuntimeException e) {
            result.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code()).setErrorMessage(e.getMessage());
        }
    }

    /**
     * Deletes each named topic, with its records, committed offsets and producer state; fetches waiting on it wake up
     * and find it gone. Where the cluster cannot delete it (a replicated topic, a topic in the store's shared layout)
     * Kafka's TOPIC_DELETION_DISABLED, with the reason; topics named only by id are unknown here (every id is zero).
     */
    DeleteTopicsResponseData deleteTopics(DeleteTopicsRequestData request, short version) {
        DeleteTopicsResponseData.DeletableTopicResultCollection results =
                new DeleteTopicsResponseData.DeletableTopicResultCollection();
        List<String> names = new ArrayList<>();
        if (version >= 6) {
            for (DeleteTopicsRequestData.DeleteTopicState topic : request.topics()) {
                names.add(topic.name());
            }
        } else {
            names.addAll(request.topicNames());
        }
        for (String name : names) {
            if (name != null && results.find(name) != null) {
                continue;
            }
            DeleteTopicsResponseData.DeletableTopicResult result = new DeleteTopicsResponseData.DeletableTopicResult()
                    .setName(name).setTopicId(Uuid.ZERO_UUID);
            if (name == null) {
                result.setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()).setErrorMessage("topics are named here, not by id");
            } else if (partitions.count(name) == 0) {
                result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()).setErrorMessage("no topic " + name);
            } else {
                deleteTopic(name, result);
            }
            results.add(result);
        }
        return new DeleteTopicsResponseData().setResponses(results);
    }

    private void deleteTopic(String name, DeleteTopicsResponseData.DeletableTopicResult result) {
        try {
            cluster.deleteTopic(name).join();
            result.setErrorCode(Errors.NONE.code());
        } catch (java.util.concurrent.CompletionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof ClusterView.TopicRefusedException refused) {
                result.setErrorCode((refused.refusal() == ClusterView.Refusal.NO_TOPIC
                        ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.TOPIC_DELETION_DISABLED).code())
                        .setErrorMessage(refused.getMessage());
            } else {
                result.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code()).setErrorMessage(cause.getMessage());
            }
        } finally {
            // Only for a topic that is gone: a refused deletion keeps its producers' state, in-flight batches too.
            if (partitions.count(name) == 0) {
                producers.forget(name);
            }
        }
    }

    DescribeClusterResponseData describeCluster(DescribeClusterRequestData request) {
        DescribeClusterResponseData response = new DescribeClusterResponseData().setClusterId(settings.clusterId())
                .setControllerId(controller()).setEndpointType(request.endpointType());
        if (request.endpointType() == 2) {
            // This listener serves brokers; Kafka answers a request for controllers the same way.
            return response.setErrorCode(Errors.MISMATCHED_ENDPOINT_TYPE.code())
                    .setErrorMessage("this listener serves brokers, not controllers");
        }
        if (request.endpointType() != 1) {
            return response.setErrorCode(Errors.UNSUPPORTED_ENDPOINT_TYPE.code())
                    .setErrorMessage("unknown endpoint type " + request.endpointType());
        }
        DescribeClusterBrokerCollection brokers = new DescribeClusterBrokerCollection();
        for (ClusterView.Node node : cluster.brokers()) {
            brokers.add(new DescribeClusterBroker().setBrokerId(node.id()).setHost(node.host()).setPort(node.port()));
        }
        return response.setBrokers(brokers);
    }

    private static CreatableTopicResult failed(CreatableTopicResult result, Errors error, String message) {
        return result.setErrorCode(error.code()).setErrorMessage(message).setNumPartitions(-1)
                .setReplicationFactor((short) -1);
    }
}
