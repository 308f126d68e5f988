package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.broker.kafka.security.MutationQuota;
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
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.errors.UnknownServerException;
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
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBroker;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseBrokerCollection;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponsePartition;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopic;
import org.apache.kafka.common.message.MetadataResponseData.MetadataResponseTopicCollection;
import org.apache.kafka.common.protocol.Errors;

/**
 * The topic APIs: Metadata (with auto-creation), DescribeTopicPartitions, CreateTopics, CreatePartitions, DeleteTopics
 * and DescribeCluster, over the broker's {@link Partitions} and its {@link ClusterView}, the same code for a broker
 * alone and for one of a cluster. Thread-safe.
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
            // Each topic once, however often it is named, as Kafka answers: the response's collection is keyed by
            // name, and adding a name again costs a walk over every earlier copy (quadratic in the request).
            Set<String> names = new LinkedHashSet<>();
            Set<Uuid> ids = new LinkedHashSet<>();
            boolean unnamed = false;
            for (MetadataRequestData.MetadataRequestTopic wanted : request.topics()) {
                checkNamedAsVersionAllows(wanted, version);
                if (!Uuid.ZERO_UUID.equals(wanted.topicId())) {
                    ids.add(wanted.topicId());
                } else if (wanted.name() == null) {
                    unnamed = true;
                } else {
                    names.add(wanted.name());
                }
            }
            if (!ids.isEmpty()) {
                // As Kafka: a request naming any topic by id is answered for its ids alone (the names it also gives
                // are not looked at, and nothing is created).
                answerIds(ids, topics, deadline);
            } else if (unnamed) {
                // Neither a name nor an id: Kafka 4.3.1 fails such a request as a whole (UNKNOWN_SERVER_ERROR).
                throw new UnknownServerException("a topic is named neither by name nor by id");
            } else {
                // Before v4 a request cannot say whether to create; Kafka creates then.
                boolean create = settings.autoCreateTopics() && (version < 4 || request.allowAutoTopicCreation());
                for (String name : names) {
                    topics.add(metadataOf(name, create, deadline));
                }
            }
        }
        return new MetadataResponseData().setBrokers(brokers).setClusterId(settings.clusterId())
                .setControllerId(controller()).setTopics(topics);
    }

    /**
     * Metadata v10 and v11 carry a topic id but cannot name a topic by it, nor leave its name out: Kafka refuses such a
     * request as a whole (INVALID_REQUEST).
     */
    static void checkNamedAsVersionAllows(MetadataRequestData.MetadataRequestTopic wanted, short version) {
        if (version >= 12) {
            return;
        }
        if (wanted.name() == null) {
            throw new InvalidRequestException("Topic name can not be null for version " + version);
        }
        if (!Uuid.ZERO_UUID.equals(wanted.topicId())) {
            throw new InvalidRequestException("Topic IDs are not supported in requests for version " + version);
        }
    }

    /**
     * Answers topics asked for by id: each known one as if named, an unknown one UNKNOWN_TOPIC_ID without a name. The
     * answers to unknown ids have no name, so the response's collection (keyed by name) puts them all in one chain,
     * each costing a walk of the others (minutes for 10,000): only the first few are answered, and a client that asks
     * by id finds a missing answer unknown too (Kafka's Admin does).
     */
    private void answerIds(Set<Uuid> ids, MetadataResponseTopicCollection topics, long deadline) {
        Set<String> known = new LinkedHashSet<>();
        int unknown = 0;
        for (Uuid id : ids) {
            String name = KafkaTopicIds.nameOf(partitions, id);
            if (name != null) {
                known.add(name);
            } else if (unknown++ < MAX_UNKNOWN_TOPIC_IDS_ANSWERED) {
                topics.add(new MetadataResponseTopic().setName(null).setTopicId(id)
                        .setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()));
            }
        }
        for (String name : known) {
            int count = partitions.count(name);
            topics.add(count == 0 ? topicError(name, Errors.UNKNOWN_TOPIC_OR_PARTITION) : topic(name, count, deadline));
        }
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
            list.add(partitionAnswer(name, p, deadline));
        }
        // Its id (v10+): clients then name it by id in Fetch, Produce and the offset APIs.
        return new MetadataResponseTopic().setName(name).setTopicId(KafkaTopicIds.handedOut(partitions, name))
                .setPartitions(list);
    }

    /** @return a partition's leader, epoch, replicas and those in sync, once its leader is out of doubt here */
    private MetadataResponsePartition partitionAnswer(String name, int index, long deadline) {
        Partition partition = partitions.partition(name, index);
        MetadataResponsePartition answer = new MetadataResponsePartition().setPartitionIndex(index)
                .setOfflineReplicas(List.of());
        if (partition == null) {
            return answer.setErrorCode(Errors.LEADER_NOT_AVAILABLE.code()).setLeaderId(-1).setLeaderEpoch(-1)
                    .setReplicaNodes(List.of()).setIsrNodes(List.of());
        }
        awaitLeader(partition, deadline);
        Partition.Leadership leadership = partition.leadership();
        return answer.setErrorCode(leadership.leader() < 0 ? Errors.LEADER_NOT_AVAILABLE.code() : Errors.NONE.code())
                .setLeaderId(leadership.leader()).setLeaderEpoch(leadership.epoch())
                .setReplicaNodes(leadership.replicas()).setIsrNodes(leadership.inSync());
    }

    /** Kafka's max.request.partition.size.limit: the most partitions one DescribeTopicPartitions answer lists. */
    static final int MAX_DESCRIBED_PARTITIONS = 2_000;

    /**
     * DescribeTopicPartitions (Admin's describeTopics by name, kafka-topics --describe): the topics asked for (or every
     * topic), by name, from the request's cursor on, each with its id and its partitions as Metadata gives them, at
     * most {@code response_partition_limit} (and {@link #MAX_DESCRIBED_PARTITIONS}) partitions in all; the answer's
     * cursor says where the next request starts. As Kafka's handler answers it: a topic asked for that does not exist
     * is UNKNOWN_TOPIC_OR_PARTITION (INVALID_TOPIC_EXCEPTION for a name no topic may have), and a cursor outside the
     * topics asked for, or with a negative partition, refuses the request (INVALID_REQUEST). Each topic's authorized
     * operations are filled in after ({@link Authorizations}).
     *
     * @param describable the topics a listing of all may name (those the principal may describe): as in Kafka, the
     *     others are left out before the page is cut, so neither the answer nor its cursor names them
     */
    DescribeTopicPartitionsResponseData describeTopicPartitions(DescribeTopicPartitionsRequestData request,
                                                                java.util.function.Predicate<String> describable) {
        boolean all = request.topics().isEmpty();
        DescribeTopicPartitionsRequestData.Cursor cursor = request.cursor();
        String from = cursor != null ? cursor.topicName() : "";
        java.util.TreeSet<String> names = new java.util.TreeSet<>();
        if (all) {
            partitions.topics().keySet().stream().filter(name -> name.compareTo(from) >= 0).filter(describable)
                    .forEach(names::add);
        } else {
            request.topics().stream().map(DescribeTopicPartitionsRequestData.TopicRequest::name)
                    .filter(name -> name.compareTo(from) >= 0).forEach(names::add);
            if (cursor != null && !names.contains(cursor.topicName())) {
                throw new InvalidRequestException("DescribeTopicPartitionsRequest topic list should contain the cursor"
                        + " topic: " + cursor.topicName());
            }
        }
        if (cursor != null && cursor.partitionIndex() < 0) {
            throw new InvalidRequestException("DescribeTopicPartitionsRequest cursor partition must be valid: "
                    + cursor);
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LEADER_DOUBT_WAIT_MILLIS);
        int remaining = Math.max(Math.min(MAX_DESCRIBED_PARTITIONS, request.responsePartitionLimit()), 1);
        DescribeTopicPartitionsResponseData response = new DescribeTopicPartitionsResponseData();
        for (String name : names) {
            if (remaining == 0) {
                // Every partition of the topics before is answered: the next request starts at this one.
                response.setNextCursor(new DescribeTopicPartitionsResponseData.Cursor().setTopicName(name)
                        .setPartitionIndex(0));
                break;
            }
            int count = partitions.count(name);
            DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic topic =
                    new DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic().setName(name)
                            .setTopicId(Uuid.ZERO_UUID).setIsInternal(false);
            if (count == 0) {
                if (!all) {
                    response.topics().add(topic.setErrorCode(validName(name)
                            ? Errors.UNKNOWN_TOPIC_OR_PARTITION.code() : Errors.INVALID_TOPIC_EXCEPTION.code()));
                }
                continue;
            }
            int start = name.equals(from) ? cursor.partitionIndex() : 0;
            int end = (int) Math.min(count, (long) start + remaining);
            for (int p = start; p < end; p++) {
                MetadataResponsePartition answer = partitionAnswer(name, p, deadline);
                topic.partitions().add(new DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponsePartition()
                        .setErrorCode(answer.errorCode()).setPartitionIndex(p).setLeaderId(answer.leaderId())
                        .setLeaderEpoch(answer.leaderEpoch()).setReplicaNodes(answer.replicaNodes())
                        .setIsrNodes(answer.isrNodes()).setEligibleLeaderReplicas(List.of())
                        .setLastKnownElr(List.of()).setOfflineReplicas(List.of()));
            }
            response.topics().add(topic.setTopicId(KafkaTopicIds.handedOut(partitions, name)));
            if (end < count) {
                response.setNextCursor(new DescribeTopicPartitionsResponseData.Cursor().setTopicName(name)
                        .setPartitionIndex(end));
                break;
            }
            remaining -= Math.max(0, end - start);
        }
        return response;
    }

    private boolean validName(String name) {
        try {
            cluster.checkTopicName(name);
            return true;
        } catch (ClusterView.TopicRefusedException e) {
            return false;
        }
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

    /**
     * Kafka's controller refuses a request whose changes take more than 10,000 metadata records (its
     * {@code MAX_RECORDS_PER_USER_OP}): a topic takes one, and one more per partition and per config set.
     */
    static final int MAX_RECORDS_PER_REQUEST = 10_000;

    CreateTopicsResponseData createTopics(CreateTopicsRequestData request, MutationQuota.Permits permits) {
        CreatableTopicResultCollection results = new CreatableTopicResultCollection();
        long deadline = deadline(request.timeoutMs());
        List<NewTopic> checked = new ArrayList<>();
        long records = 0;
        for (CreatableTopic topic : request.topics()) {
            NewTopic planned = check(topic);
            checked.add(planned);
            if (planned.refused() == null) {
                records += 1L + planned.count() + planned.configs().size();
            }
        }
        if (records > MAX_RECORDS_PER_REQUEST) {
            // Kafka's whole request fails, every topic with the controller's error: nothing is created.
            for (CreatableTopic topic : request.topics()) {
                results.add(failed(new CreatableTopicResult().setName(topic.name()).setTopicId(Uuid.ZERO_UUID),
                        Errors.POLICY_VIOLATION, EXCESSIVE_BATCH));
            }
            return new CreateTopicsResponseData().setTopics(results);
        }
        for (NewTopic planned : checked) {
            results.add(planned.refused() != null ? planned.refused()
                    : createTopic(planned, request.validateOnly(), deadline, permits));
        }
        return new CreateTopicsResponseData().setTopics(results);
    }

    /** The message of Kafka's controller for a request over {@link #MAX_RECORDS_PER_REQUEST}. */
    static final String EXCESSIVE_BATCH = "Unable to perform excessively large batch operation.";

    /** One topic of a CreateTopics request as checked: its refusal, or what creating it takes. */
    private record NewTopic(CreatableTopic topic, int count, int factor, Map<String, String> configs,
                            CreatableTopicResult refused) {
    }

    /** @return when a request that gives {@code timeoutMs} stops waiting for the cluster (30 s if it gives none) */
    private static long deadline(int timeoutMs) {
        return System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs > 0 ? timeoutMs : CREATE_TIMEOUT_MILLIS);
    }

    /**
     * One topic of a CreateTopics request, checked in the order Kafka's controller checks: its name, whether it exists
     * (whatever else the request says of it), its replication factor and partitions, then its configs.
     */
    private NewTopic check(CreatableTopic topic) {
        CreatableTopicResult result = new CreatableTopicResult().setName(topic.name()).setTopicId(Uuid.ZERO_UUID);
        int count = topic.numPartitions() == -1 ? settings.defaultPartitions() : topic.numPartitions();
        int factor = topic.replicationFactor() == -1 ? cluster.defaultReplicationFactor() : topic.replicationFactor();
        Map<String, String> configs = new TreeMap<>();
        try {
            cluster.checkTopicName(topic.name());
        } catch (ClusterView.TopicRefusedException e) {
            return refused(topic, failed(result, Errors.INVALID_TOPIC_EXCEPTION, e.getMessage()));
        }
        if (partitions.count(topic.name()) > 0) {
            return refused(topic, failed(result, Errors.TOPIC_ALREADY_EXISTS,
                    "Topic '" + topic.name() + "' already exists."));
        }
        if (factor < 1 || factor > cluster.brokers().size()) {
            return refused(topic, failed(result, Errors.INVALID_REPLICATION_FACTOR, "replication factor " + factor
                    + " cannot be met by a cluster of " + cluster.brokers().size() + " broker"
                    + (cluster.brokers().size() == 1 ? "" : "s")));
        }
        if (!topic.assignments().isEmpty()) {
            return refused(topic, failed(result, Errors.INVALID_REQUEST,
                    "manual replica assignment is not supported"));
        }
        if (count < 1 || count > cluster.maxPartitions()) {
            return refused(topic, failed(result, Errors.INVALID_PARTITIONS, "the partition count must be between 1"
                    + " and " + cluster.maxPartitions() + ", was " + count));
        }
        for (CreateTopicsRequestData.CreatableTopicConfig config : topic.configs()) {
            if (config.value() != null) {
                configs.put(config.name(), config.value());
            }
        }
        try {
            TopicConfigs.check(configs);
        } catch (InvalidConfigurationException e) {
            return refused(topic, failed(result, Errors.INVALID_CONFIG, e.getMessage()));
        }
        return new NewTopic(topic, count, factor, configs, null);
    }

    private static NewTopic refused(CreatableTopic topic, CreatableTopicResult result) {
        return new NewTopic(topic, 0, 0, Map.of(), result);
    }

    /** Creates a topic {@link #check} passed (or, validating only, answers what creating it would). */
    private CreatableTopicResult createTopic(NewTopic planned, boolean validateOnly, long deadline,
                                             MutationQuota.Permits permits) {
        CreatableTopic topic = planned.topic();
        CreatableTopicResult result = new CreatableTopicResult().setName(topic.name()).setTopicId(Uuid.ZERO_UUID);
        int count = planned.count();
        int factor = planned.factor();
        Map<String, String> configs = planned.configs();
        try {
            permits.record(count); // Kafka's controller takes them validating only too
        } catch (ThrottlingQuotaExceededException e) {
            return failed(result, Errors.THROTTLING_QUOTA_EXCEEDED, e.getMessage());
        }
        if (validateOnly) {
            // Kafka's controller answers the id it would have given, though nothing keeps it.
            return created(result.setTopicId(KafkaTopicIds.kafka(io.sluice.broker.TopicIds.random())), count, factor,
                    configs);
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
        return created(result.setTopicId(KafkaTopicIds.handedOut(partitions, topic.name())), count, factor, configs);
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
        // No message, as Kafka's controller answers a success (null, not empty).
        return result.setErrorMessage(null).setNumPartitions(count).setReplicationFactor((short) factor)
                .setConfigs(described);
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

    CreatePartitionsResponseData createPartitions(CreatePartitionsRequestData request,
                                                  MutationQuota.Permits permits) {
        List<CreatePartitionsTopicResult> results = new ArrayList<>();
        long deadline = deadline(request.timeoutMs());
        long added = 0; // partitions the request adds, a metadata record each at Kafka's controller
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
            } else if (added + topic.count() - current > MAX_RECORDS_PER_REQUEST) {
                // Kafka's controller fails the topic whose records overflow its bound the same way (though it
                // keeps the partitions that fit): no partition of it is added.
                result.setErrorCode(Errors.UNKNOWN_SERVER_ERROR.code()).setErrorMessage(null);
            } else {
                try {
                    permits.record(topic.count() - current);
                } catch (ThrottlingQuotaExceededException e) {
                    result.setErrorCode(Errors.THROTTLING_QUOTA_EXCEEDED.code()).setErrorMessage(e.getMessage());
                    continue;
                }
                added += topic.count() - current;
                if (!request.validateOnly()) {
                    addPartitions(topic, result, deadline);
                }
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
     * Deletes each topic named (by name, or from v6 by id), with its records, committed offsets and producer state;
     * fetches waiting on it wake up and find it gone. In a cluster the deletion goes through the cluster's metadata,
     * whichever broker takes it, and is answered once the cluster deleted it and this broker's part is gone
     * (REQUEST_TIMED_OUT after the request's timeout: it may still be deleted). Where the cluster cannot delete it (a
     * topic in the store's shared layout) Kafka's TOPIC_DELETION_DISABLED, with the reason. The request is read as
     * Kafka's controller reads it: a topic named twice, by name or by id, or both ways at once, is answered
     * INVALID_REQUEST and not deleted; one named by both a name and an id in one entry, or by neither, is
     * INVALID_REQUEST; an id no topic has is UNKNOWN_TOPIC_ID. Each topic deleted is answered with its name and id.
     */
    DeleteTopicsResponseData deleteTopics(DeleteTopicsRequestData request, short version,
                                          MutationQuota.Permits permits) {
        List<DeleteTopicsResponseData.DeletableTopicResult> answers = new ArrayList<>();
        Set<String> names = new LinkedHashSet<>();
        Set<String> duplicateNames = new LinkedHashSet<>();
        Set<Uuid> ids = new LinkedHashSet<>();
        Set<Uuid> duplicateIds = new LinkedHashSet<>();
        if (version < 6) {
            request.topicNames().forEach(name -> provide(name, names, duplicateNames));
        }
        for (DeleteTopicsRequestData.DeleteTopicState topic : request.topics()) {
            boolean byId = !Uuid.ZERO_UUID.equals(topic.topicId());
            if (topic.name() == null && !byId) {
                answers.add(deleteAnswer(null, Uuid.ZERO_UUID, Errors.INVALID_REQUEST,
                        "Neither topic name nor id were specified."));
            } else if (topic.name() == null) {
                provide(topic.topicId(), ids, duplicateIds);
            } else if (byId) {
                answers.add(deleteAnswer(topic.name(), topic.topicId(), Errors.INVALID_REQUEST,
                        "You may not specify both topic name and topic id."));
            } else {
                provide(topic.name(), names, duplicateNames);
            }
        }
        duplicateNames.forEach(name -> answers.add(deleteAnswer(name, Uuid.ZERO_UUID, Errors.INVALID_REQUEST,
                "Duplicate topic name.")));
        duplicateIds.forEach(id -> answers.add(deleteAnswer(null, id, Errors.INVALID_REQUEST, "Duplicate topic id.")));
        // The topics to delete, by name, with the id each was named by (or has).
        Map<String, Uuid> doomed = new java.util.LinkedHashMap<>();
        for (Uuid id : ids) {
            String name = KafkaTopicIds.nameOf(partitions, id);
            if (name == null) {
                answers.add(deleteAnswer(null, id, Errors.UNKNOWN_TOPIC_ID, null));
            } else {
                doomed.put(name, id);
            }
        }
        for (String name : names) {
            Uuid id = KafkaTopicIds.of(partitions, name);
            if (partitions.count(name) == 0) {
                answers.add(deleteAnswer(name, Uuid.ZERO_UUID, Errors.UNKNOWN_TOPIC_OR_PARTITION, null));
            } else if (doomed.containsKey(name)) {
                // Named by its id as well: neither is deleted, as Kafka's controller answers.
                doomed.remove(name);
                answers.add(deleteAnswer(name, id, Errors.INVALID_REQUEST,
                        "The provided topic name maps to an ID that was already supplied."));
            } else {
                doomed.put(name, id);
            }
        }
        long deadline = deadline(request.timeoutMs());
        doomed.forEach((name, id) -> {
            try {
                permits.record(partitions.count(name));
            } catch (ThrottlingQuotaExceededException e) {
                answers.add(deleteAnswer(name, id, Errors.THROTTLING_QUOTA_EXCEEDED, e.getMessage()));
                return;
            }
            answers.add(deleteTopic(name, id, deadline));
        });
        // The response's collection is keyed by name, and answers of one name (those without one: ids no topic has,
        // entries naming nothing; or one name given with many ids) share one chain of it: 2,000 without a name took
        // 10 s to add. As for Metadata, only the first few of a name are answered; a client that asked by id finds a
        // missing answer unknown too.
        DeleteTopicsResponseData.DeletableTopicResultCollection results =
                new DeleteTopicsResponseData.DeletableTopicResultCollection(answers.size());
        Map<String, Integer> perName = new java.util.HashMap<>();
        for (DeleteTopicsResponseData.DeletableTopicResult answer : answers) {
            if (perName.merge(answer.name(), 1, Integer::sum) <= MAX_UNKNOWN_TOPIC_IDS_ANSWERED) {
                results.add(answer);
            }
        }
        return new DeleteTopicsResponseData().setResponses(results);
    }

    /** Notes a topic named in a DeleteTopics request: one named again is a duplicate, and only that. */
    private static <T> void provide(T topic, Set<T> provided, Set<T> duplicates) {
        if (duplicates.contains(topic) || !provided.add(topic)) {
            duplicates.add(topic);
            provided.remove(topic);
        }
    }

    /** @param message the answer's message, or null for the error's own (Kafka's default) */
    private static DeleteTopicsResponseData.DeletableTopicResult deleteAnswer(String name, Uuid id, Errors error,
                                                                              String message) {
        return new DeleteTopicsResponseData.DeletableTopicResult().setName(name).setTopicId(id)
                .setErrorCode(error.code())
                .setErrorMessage(error == Errors.NONE ? null : message != null ? message : error.message());
    }

    private DeleteTopicsResponseData.DeletableTopicResult deleteTopic(String name, Uuid id, long deadline) {
        try {
            awaitCluster(cluster.deleteTopic(name), deadline, "delete topic " + name);
            return deleteAnswer(name, id, Errors.NONE, null);
        } catch (ClusterView.TopicRefusedException refused) {
            return deleteAnswer(name, id, refused.refusal() == ClusterView.Refusal.NO_TOPIC
                    ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.TOPIC_DELETION_DISABLED, refused.getMessage());
        } catch (ClusterTimeoutException e) {
            return deleteAnswer(name, id, Errors.REQUEST_TIMED_OUT, e.getMessage());
        } catch (RuntimeException e) {
            return deleteAnswer(name, id, Errors.KAFKA_STORAGE_ERROR, e.getMessage());
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
