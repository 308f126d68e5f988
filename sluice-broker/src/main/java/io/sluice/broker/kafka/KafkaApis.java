package io.sluice.broker.kafka;

import io.sluice.broker.Replication;
import io.sluice.broker.metrics.BrokerMetrics;
import io.sluice.broker.net.Outbound;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreException;
import io.sluice.store.TopicLayout;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsRequestData.CreatePartitionsTopic;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreatePartitionsResponseData.CreatePartitionsTopicResult;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData.CreatableTopic;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResult;
import org.apache.kafka.common.message.CreateTopicsResponseData.CreatableTopicResultCollection;
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
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsPartitionResponse;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsTopicResponse;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.requests.AbstractRequest;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The Kafka protocol adapter: turns one request frame into its response frame with the generated message classes of
 * the pinned kafka-clients, the only place that uses them. Framing and connections are the caller's
 * ({@code io.sluice.broker.net}); what is served is {@link SupportedApis}.
 */
public final class KafkaApis implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(KafkaApis.class);

    /** Bytes of the fixed part of a request header: api key, api version, correlation id, client id length. */
    private static final int MIN_HEADER_BYTES = 10;

    /**
     * What the protocol needs to know of the broker.
     *
     * @param nodeId this broker's node id, also named as the controller
     * @param host the host clients are told to connect to
     * @param port the port clients are told to connect to
     * @param clusterId the cluster id Metadata reports
     * @param defaultPartitions partitions of a topic created without a count (Kafka's num.partitions)
     * @param autoCreateTopics whether Metadata creates a topic a client asks for (auto.create.topics.enable)
     * @param layout where a new topic's partitions live in the store
     * @param offsetsRetentionMinutes how long the committed offsets of a group with no members outlive its last
     *     commit (offsets.retention.minutes)
     */
    public record Settings(int nodeId, String host, int port, String clusterId, int defaultPartitions,
                           boolean autoCreateTopics, TopicLayout layout, int offsetsRetentionMinutes) {
        /** Checks the fields. */
        public Settings {
            Objects.requireNonNull(host, "host");
            Objects.requireNonNull(clusterId, "clusterId");
            Objects.requireNonNull(layout, "layout");
            if (defaultPartitions < 1) {
                throw new IllegalArgumentException("defaultPartitions must be at least 1, was " + defaultPartitions);
            }
            if (offsetsRetentionMinutes < 1) {
                throw new IllegalArgumentException("offsetsRetentionMinutes must be at least 1, was "
                        + offsetsRetentionMinutes);
            }
        }
    }

    /** Kafka's default offsets.retention.minutes: 7 days. */
    public static final int DEFAULT_OFFSETS_RETENTION_MINUTES = 7 * 24 * 60;
    /** How often expired group offsets are looked for (Kafka's offsets.retention.check.interval.ms default). */
    static final long OFFSETS_RETENTION_CHECK_MILLIS = 600_000;

    private final Store store;
    private final Settings settings;
    private final ProduceHandler produce;
    private final ProducerStates producerStates;
    private final PartitionWatch watch;
    private final FetchHandler fetch;
    private final ProducerIds producerIds;
    /** The cluster this broker is one of, or null: then it serves its store alone. */
    private final Replication replication;
    private final ScheduledExecutorService timer;
    /**
     * Runs the offset expiry passes: apart from the group sessions' timer, since in a cluster a pass waits for the
     * cluster once per group it forgets, and sessions must still expire and rebalances end on time meanwhile.
     */
    private final ScheduledExecutorService expiry;
    private final GroupApis groups;
    private final Configs configs;
    private final LeaderElections elections;
    private final BrokerMetrics metrics;

    /**
     * @param store where topics and records live
     * @param settings the broker as clients see it
     * @param executor runs fetches that waited for data once they may answer (virtual threads suit)
     */
    public KafkaApis(Store store, Settings settings, Executor executor) {
        this(store, settings, executor, null);
    }

    /**
     * @param store where topics and records live
     * @param settings the broker as clients see it
     * @param executor runs fetches that waited for data once they may answer (virtual threads suit)
     * @param metrics where requests are counted and timed, or null
     */
    public KafkaApis(Store store, Settings settings, Executor executor, BrokerMetrics metrics) {
        this(store, settings, executor, metrics, null);
    }

    /**
     * @param store where topics and records live
     * @param settings the broker as clients see it
     * @param executor runs fetches that waited for data once they may answer (virtual threads suit)
     * @param metrics where requests are counted and timed, or null
     * @param replication the cluster this broker is one of, or null to serve the store alone
     */
    public KafkaApis(Store store, Settings settings, Executor executor, BrokerMetrics metrics,
                     Replication replication) {
        this.store = Objects.requireNonNull(store, "store");
        this.settings = Objects.requireNonNull(settings, "settings");
        this.metrics = metrics;
        this.replication = replication;
        // In a cluster, the broker's place among the brokers sorted by id: unique modulo 64, as a node id need not be.
        this.producerIds = new ProducerIds(replication == null ? 0 : replication.brokers().stream()
                .map(Replication.Node::id).sorted().toList().indexOf(replication.self()));
        this.watch = new PartitionWatch();
        this.producerStates = new ProducerStates(store);
        this.produce = new ProduceHandler(store, producerStates, watch, metrics, replication);
        this.fetch = new FetchHandler(store, watch, Objects.requireNonNull(executor, "executor"), replication);
        if (replication != null) {
            replication.onChange(watch::signal);
        }
        this.timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("sluice-broker-groups")
                .daemon().factory());
        this.groups = new GroupApis(store, new GroupCoordinator(timer, store.config().clock()::millis), settings,
                replication);
        long retentionMillis = TimeUnit.MINUTES.toMillis(settings.offsetsRetentionMinutes());
        this.expiry = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform()
                .name("sluice-broker-offsets-expiry").daemon().factory());
        expiry.scheduleWithFixedDelay(() -> {
            try {
                groups.expireOffsets(retentionMillis);
            } catch (RuntimeException e) {
                // A failure must not end the schedule (the executor would drop it silently).
                LOG.warn("expiring group offsets failed: {}", e.toString());
            }
        }, OFFSETS_RETENTION_CHECK_MILLIS, OFFSETS_RETENTION_CHECK_MILLIS, TimeUnit.MILLISECONDS);
        this.configs = new Configs(store.config(), settings, topic -> Partitions.count(store, topic));
        this.elections = new LeaderElections(store, replication);
    }


    /**
     * Loads kafka-clients' protocol classes on a thread of their own: the first request otherwise pays for it (about a
     * second on this project's lab machine, every message class of every API initialised at once). A broker that
     * starts slowly for other reasons (a cluster broker's Raft groups) calls this first, so the two overlap.
     */
    public static void warmUp() {
        Thread.ofPlatform().daemon().name("sluice-kafka-classes").start(() -> ApiKeys.values());
    }

    /** Stops the group sessions' timer and the offset expiry. */
    @Override
    public void close() {
        timer.shutdownNow();
        expiry.shutdownNow();
    }

    /**
     * Takes one request: whatever it changes is changed when this returns; the response may complete later (a
     * produce waiting for its force, a fetch waiting for data).
     *
     * @param frame one request without its size prefix
     * @return the response, its 4-byte size prefix included; completes with null when the request takes none
     *     (Produce with acks=0)
     * @throws ProtocolException when the request cannot be answered; the caller closes the connection
     */
    public CompletableFuture<Outbound> handle(ByteBuffer frame) throws ProtocolException {
        if (metrics == null) {
            return respond(frame);
        }
        long arrived = System.nanoTime();
        long received = 4L + frame.remaining();
        short apiKey = frame.remaining() >= 2 ? frame.getShort(frame.position()) : -1;
        String api = ApiKeys.hasId(apiKey) ? ApiKeys.forId(apiKey).name : "unknown";
        CompletableFuture<Outbound> response = respond(frame);
        return response.whenComplete((out, error) -> metrics.request(api, System.nanoTime() - arrived, received,
                out == null ? 0 : out.size()));
    }

    private CompletableFuture<Outbound> respond(ByteBuffer frame) throws ProtocolException {
        if (frame.remaining() < MIN_HEADER_BYTES) {
            throw new ProtocolException("a request of " + frame.remaining() + " bytes is shorter than a request header");
        }
        short apiKey = frame.getShort(frame.position());
        short version = frame.getShort(frame.position() + 2);
        if (!ApiKeys.hasId(apiKey)) {
            throw new ProtocolException("unknown API key " + apiKey);
        }
        ApiKeys key = ApiKeys.forId(apiKey);
        ByteBufferAccessor in = new ByteBufferAccessor(frame);
        RequestHeaderData header;
        try {
            header = new RequestHeaderData(in, key.requestHeaderVersion(version));
        } catch (RuntimeException e) {
            throw new ProtocolException("malformed header of a " + key.name + " v" + version + " request", e);
        }
        if (key == ApiKeys.API_VERSIONS && !SupportedApis.accepts(key, version)) {
            // A newer client than this broker: answer in v0 with this broker's ApiVersions range, so that the client
            // retries with a version both sides know.
            ApiVersionCollection own = new ApiVersionCollection();
            own.add(new ApiVersion().setApiKey(key.id).setMinVersion((short) 0)
                    .setMaxVersion(SupportedApis.highest(key)));
            return done(encode(header.correlationId(), key, (short) 0, new ApiVersionsResponseData()
                    .setErrorCode(Errors.UNSUPPORTED_VERSION.code()).setApiKeys(own)));
        }
        if (!SupportedApis.accepts(key, version)) {
            throw new ProtocolException(key.name + " v" + version + " is not served by this broker");
        }

        // Read as Kafka's broker reads a request: what the version's schema defines, refusing a body that ends
        // inside it, and leaving alone whatever follows. librdkafka's Metadata v9+ request for every topic carries
        // three such bytes (BrokerProtocolTest).
        ApiMessage request = key.messageType.newRequest();
        try {
            request.read(in, version);
        } catch (RuntimeException e) {
            throw new ProtocolException("malformed " + key.name + " v" + version + " request", e);
        }
        int correlationId = header.correlationId();
        CompletableFuture<Outbound> response;
        try {
            response = dispatch(key, version, header, request);
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        if (key == ApiKeys.PRODUCE && ((ProduceRequestData) request).acks() == 0) {
            return response; // no response to carry an error: a failure closes the connection, as Kafka's does
        }
        // A well-formed request is always answered: a fault no handler foresaw is answered as Kafka's broker
        // answers one, with the API's error response (UNKNOWN_SERVER_ERROR), not by closing the connection.
        return response.exceptionallyCompose(error -> {
            Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                    ? error.getCause() : error;
            LOG.warn("a {} v{} request failed; answering it with UNKNOWN_SERVER_ERROR", key.name, version, cause);
            return done(errorResponse(request, key, version, correlationId, cause));
        });
    }

    /** @return the response of a parsed request, once it is ready */
    private CompletableFuture<Outbound> dispatch(ApiKeys key, short version, RequestHeaderData header,
                                                 ApiMessage request) {
        int correlationId = header.correlationId();
        if (key == ApiKeys.PRODUCE) {
            return produce.handle((ProduceRequestData) request, version).thenApply(response -> response == null
                    ? null : encode(correlationId, key, version, response));
        }
        if (key == ApiKeys.FETCH) {
            return fetch.handle(correlationId, version, (FetchRequestData) request);
        }
        if (key == ApiKeys.JOIN_GROUP) {
            return groups.join((JoinGroupRequestData) request, version, header.clientId())
                    .thenApply(response -> encode(correlationId, key, version, response));
        }
        if (key == ApiKeys.ELECT_LEADERS) {
            return elections.elect((ElectLeadersRequestData) request, version)
                    .thenApply(response -> encode(correlationId, key, version, response));
        }
        if (key == ApiKeys.SYNC_GROUP) {
            return groups.sync((SyncGroupRequestData) request)
                    .thenApply(response -> encode(correlationId, key, version, response));
        }
        ApiMessage response = switch (key) {
            case API_VERSIONS -> new ApiVersionsResponseData().setApiKeys(SupportedApis.advertised());
            case METADATA -> metadata((MetadataRequestData) request, version);
            case CREATE_TOPICS -> createTopics((CreateTopicsRequestData) request);
            case CREATE_PARTITIONS -> createPartitions((CreatePartitionsRequestData) request);
            case DESCRIBE_CLUSTER -> describeCluster((DescribeClusterRequestData) request);
            case LIST_OFFSETS -> listOffsets((ListOffsetsRequestData) request);
            case INIT_PRODUCER_ID -> initProducerId((InitProducerIdRequestData) request);
            case FIND_COORDINATOR -> groups.findCoordinator((FindCoordinatorRequestData) request, version);
            case HEARTBEAT -> groups.heartbeat((HeartbeatRequestData) request);
            case LEAVE_GROUP -> groups.leave((LeaveGroupRequestData) request, version);
            case OFFSET_COMMIT -> groups.commit((OffsetCommitRequestData) request);
            case OFFSET_FETCH -> groups.fetchOffsets((OffsetFetchRequestData) request, version);
            case DESCRIBE_GROUPS -> groups.describe((DescribeGroupsRequestData) request, version);
            case LIST_GROUPS -> groups.list((ListGroupsRequestData) request);
            case DELETE_GROUPS -> groups.delete((DeleteGroupsRequestData) request);
            case DESCRIBE_CONFIGS -> configs.describe((DescribeConfigsRequestData) request);
            case DELETE_TOPICS -> deleteTopics((DeleteTopicsRequestData) request, version);
            default -> throw new IllegalStateException(key + " is listed as served but has no handler");
        };
        return done(encode(correlationId, key, version, response));
    }

    /**
     * @param request the parsed request (its frame may be gone: it is written again to build the answer)
     * @return the API's error response for {@code cause}, as kafka-clients builds it for every API
     */
    private static Outbound errorResponse(ApiMessage request, ApiKeys key, short version, int correlationId,
                                          Throwable cause) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer body = ByteBuffer.allocate(request.size(cache, version));
        request.write(new ByteBufferAccessor(body), cache, version);
        ApiMessage data = AbstractRequest.parseRequest(key, version, new ByteBufferAccessor(body.flip())).request
                .getErrorResponse(0, Errors.UNKNOWN_SERVER_ERROR.exception(String.valueOf(cause.getMessage())))
                .data();
        return encode(correlationId, key, version, data);
    }

    private static CompletableFuture<Outbound> done(Outbound response) {
        return CompletableFuture.completedFuture(response);
    }

    private ListOffsetsResponseData listOffsets(ListOffsetsRequestData request) {
        List<ListOffsetsTopicResponse> topics = new ArrayList<>();
        for (ListOffsetsRequestData.ListOffsetsTopic topic : request.topics()) {
            List<ListOffsetsPartitionResponse> partitions = new ArrayList<>();
            for (ListOffsetsRequestData.ListOffsetsPartition wanted : topic.partitions()) {
                partitions.add(listOffset(topic.name(), wanted.partitionIndex(), wanted.timestamp(),
                        request.replicaId() == DEBUGGING_REPLICA_ID));
            }
            topics.add(new ListOffsetsTopicResponse().setName(topic.name()).setPartitions(partitions));
        }
        return new ListOffsetsResponseData().setTopics(topics);
    }

    /** Kafka's special timestamps. */
    private static final long LATEST = -1;
    private static final long EARLIEST = -2;
    private static final long MAX_TIMESTAMP = -3;
    private static final long EARLIEST_LOCAL = -4;
    private static final long EARLIEST_PENDING_UPLOAD = -5;
    private static final long LATEST_TIERED = -6;

    /**
     * The replica id an operator's tool sends to read any replica's own log (Kafka's DEBUGGING_REPLICA_ID): served by
     * every replica, up to its own log's end rather than the high watermark, as Kafka serves it.
     */
    private static final int DEBUGGING_REPLICA_ID = -2;

    /**
     * @param anyReplica answer from this broker's own log if it holds a replica, leader or not, up to its end
     *     ({@link #DEBUGGING_REPLICA_ID}); else only as the leader, up to the high watermark
     */
    private ListOffsetsPartitionResponse listOffset(String topic, int partition, long timestamp,
                                                    boolean anyReplica) {
        ListOffsetsPartitionResponse response = new ListOffsetsPartitionResponse().setPartitionIndex(partition)
                .setTimestamp(-1).setOffset(-1).setLeaderEpoch(-1);
        int partitions = Partitions.count(store, topic);
        if (partition < 0 || partition >= partitions) {
            return response.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
        }
        boolean ownLog = replication != null && anyReplica && holdsReplica(topic, partition);
        if (replication != null && !ownLog && !replication.leads(topic, partition)) {
            return response.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        try {
            long start = store.minOffset(topic, partition);
            long end = store.maxOffset(topic, partition);
            if (replication != null) {
                if (!ownLog) {
                    end = Math.min(end, replication.highWatermark(topic, partition));
                }
                response.setLeaderEpoch(replication.leaderEpoch(topic, partition));
            }
            if (timestamp == LATEST || timestamp == LATEST_TIERED) {
                return response.setOffset(end);
            }
            if (timestamp == EARLIEST || timestamp == EARLIEST_LOCAL || timestamp == EARLIEST_PENDING_UPLOAD) {
                return response.setOffset(start);
            }
            if (timestamp < 0 && timestamp != MAX_TIMESTAMP) {
                return response.setErrorCode(Errors.INVALID_REQUEST.code());
            }
            RecordTimes.Found found = timestamp == MAX_TIMESTAMP ? RecordTimes.largest(store, topic, partition)
                    : RecordTimes.firstAtOrAfter(store, topic, partition, timestamp);
            if (found != null && found.offset() >= end) {
                found = null; // past the high watermark: not committed, and perhaps cut by the next leader
            }
            return found == null ? response : response.setOffset(found.offset()).setTimestamp(found.timestamp());
        } catch (RuntimeException e) {
            return response.setErrorCode(Partitions.readError(e).code());
        }
    }

    /** @return whether this broker holds a replica of the partition (leader or follower) */
    private boolean holdsReplica(String topic, int partition) {
        Replication.PartitionView view = replication.partition(topic, partition);
        return view != null && view.replicas().contains(replication.self());
    }

    /**
     * Deletes each named topic from the store, with its records, committed offsets and producer state; fetches
     * waiting on it wake up and find it gone. Topics in the store's shared layout cannot be deleted (Kafka's
     * TOPIC_DELETION_DISABLED, with the reason); topics named only by id are unknown here (every id is zero).
     */
    private DeleteTopicsResponseData deleteTopics(DeleteTopicsRequestData request, short version) {
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
            } else if (Partitions.count(store, name) == 0) {
                result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()).setErrorMessage("no topic " + name);
            } else if (replication != null) {
                result.setErrorCode(Errors.TOPIC_DELETION_DISABLED.code())
                        .setErrorMessage("deleting a replicated topic is not supported yet");
            } else {
                deleteTopic(name, result);
            }
            results.add(result);
        }
        return new DeleteTopicsResponseData().setResponses(results);
    }

    private void deleteTopic(String name, DeleteTopicsResponseData.DeletableTopicResult result) {
        boolean gone = false;
        try {
            if (!store.deleteTopic(name)) {
                result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code()).setErrorMessage("no topic " + name);
                return;
            }
            gone = true;
            result.setErrorCode(Errors.NONE.code());
        } catch (IllegalArgumentException e) {
            result.setErrorCode(Errors.TOPIC_DELETION_DISABLED.code()).setErrorMessage(e.getMessage());
        } catch (RuntimeException e) {
            // Deleted with files left for the next open, or not deleted (the registry could not be saved).
            gone = Partitions.count(store, name) == 0;
            result.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code()).setErrorMessage(e.getMessage());
        } finally {
            // Only for a topic that is gone: a refused deletion keeps its producers' state, in-flight batches too.
            if (gone) {
                producerStates.forget(name);
                watch.signalTopic(name);
            }
        }
    }

    private InitProducerIdResponseData initProducerId(InitProducerIdRequestData request) {
        InitProducerIdResponseData response = new InitProducerIdResponseData().setProducerId(-1)
                .setProducerEpoch((short) -1);
        if (request.transactionalId() != null) {
            return response.setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code());
        }
        if (request.producerId() >= 0 && request.producerEpoch() >= 0 && request.producerEpoch() < Short.MAX_VALUE - 1) {
            // An idempotent producer bumping its epoch after an error (KIP-360): same id, next epoch.
            return response.setProducerId(request.producerId()).setProducerEpoch((short) (request.producerEpoch() + 1));
        }
        return response.setProducerId(producerIds.next()).setProducerEpoch((short) 0);
    }

    private MetadataResponseData metadata(MetadataRequestData request, short version) {
        MetadataResponseBrokerCollection brokers = new MetadataResponseBrokerCollection();
        if (replication == null) {
            brokers.add(new MetadataResponseBroker().setNodeId(settings.nodeId()).setHost(settings.host())
                    .setPort(settings.port()));
        } else {
            for (Replication.Node node : replication.brokers()) {
                brokers.add(new MetadataResponseBroker().setNodeId(node.id()).setHost(node.host())
                        .setPort(node.port()));
            }
        }
        MetadataResponseTopicCollection topics = new MetadataResponseTopicCollection();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LEADER_DOUBT_WAIT_MILLIS);
        // All topics: a null list, or in v0 (where the list cannot be null) an empty one.
        if (request.topics() == null || version == 0 && request.topics().isEmpty()) {
            store.declaredTopics().forEach((topic, partitions) -> topics.add(topic(topic, partitions, deadline)));
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
            // puts them all in one chain, each costing a walk of the others (10,000 took 215 s). A client that asks
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

    /** The most topic ids a Metadata request is answered UNKNOWN_TOPIC_ID for; the rest go unanswered. */
    static final int MAX_UNKNOWN_TOPIC_IDS_ANSWERED = 64;

    /**
     * @return the node named as the controller: this broker alone, or the cluster's metadata leader, or, while none is
     *     known, this broker. Every broker takes the requests clients send the controller (CreateTopics,
     *     CreatePartitions) and carries them to the metadata's leader, as a KRaft broker forwards them, so this one is
     *     a controller as clients mean it; naming none (-1) had librdkafka's AdminClient wait for a controller until
     *     its request timed out, as it does not ask Metadata again meanwhile.
     */
    private int controller() {
        if (replication == null) {
            return settings.nodeId();
        }
        int controller = replication.controller();
        return controller < 0 ? settings.nodeId() : controller;
    }

    private MetadataResponseTopic metadataOf(String name, boolean create, long deadline) {
        try {
            int partitions = store.queueCount(name);
            if (partitions == 0 && create) {
                if (replication == null) {
                    store.createTopic(name, settings.layout(), settings.defaultPartitions());
                } else {
                    store.layout(name); // checks the name
                    if (replication.controller() < 0) {
                        return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                                .setErrorCode(Errors.LEADER_NOT_AVAILABLE.code());
                    }
                    try {
                        createReplicated(name, settings.defaultPartitions(), replication.defaultReplicationFactor(),
                                deadline(0));
                    } catch (IllegalArgumentException createdElsewhere) {
                        // The cluster has it (created through another broker) and this one has not applied it yet.
                    }
                    if (store.queueCount(name) == 0) {
                        return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                                .setErrorCode(Errors.LEADER_NOT_AVAILABLE.code());
                    }
                }
                partitions = store.queueCount(name);
            }
            if (partitions == 0) {
                return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                        .setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
            }
            return topic(name, partitions, deadline);
        } catch (IllegalArgumentException e) {
            return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                    .setErrorCode(Errors.INVALID_TOPIC_EXCEPTION.code());
        } catch (RuntimeException e) {
            // A read-only or closing store, or a failed registry save: the topic cannot be created now.
            return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID)
                    .setErrorCode(Errors.KAFKA_STORAGE_ERROR.code());
        }
    }

    /**
     * The most a Metadata answer waits, over all its partitions, for those whose leader is in doubt here to have one
     * ({@link Replication#leaderInDoubt}): a client told of a leader that just died tries it, fails, and backs off
     * longer each time, where one told of its successor goes on.
     */
    static final long LEADER_DOUBT_WAIT_MILLIS = 1_500;

    private MetadataResponseTopic topic(String name, int partitions, long deadline) {
        List<MetadataResponsePartition> list = new ArrayList<>(partitions);
        List<Integer> self = List.of(settings.nodeId());
        for (int p = 0; p < partitions; p++) {
            if (replication == null) {
                list.add(new MetadataResponsePartition().setPartitionIndex(p).setLeaderId(settings.nodeId())
                        .setLeaderEpoch(0).setReplicaNodes(self).setIsrNodes(self).setOfflineReplicas(List.of()));
                continue;
            }
            awaitLeader(name, p, deadline);
            Replication.PartitionView view = replication.partition(name, p);
            MetadataResponsePartition partition = new MetadataResponsePartition().setPartitionIndex(p)
                    .setOfflineReplicas(List.of());
            if (view == null) {
                partition.setErrorCode(Errors.LEADER_NOT_AVAILABLE.code()).setLeaderId(-1).setLeaderEpoch(-1)
                        .setReplicaNodes(List.of()).setIsrNodes(List.of());
            } else {
                partition.setErrorCode(view.leader() < 0 ? Errors.LEADER_NOT_AVAILABLE.code() : Errors.NONE.code())
                        .setLeaderId(view.leader()).setLeaderEpoch(view.leaderEpoch())
                        .setReplicaNodes(view.replicas()).setIsrNodes(view.inSync());
            }
            list.add(partition);
        }
        // The zero topic id: this broker names topics, and Kafka's clients then keep to versions that do too.
        return new MetadataResponseTopic().setName(name).setTopicId(Uuid.ZERO_UUID).setPartitions(list);
    }

    /** How long a partition's leader, once in doubt, must be out of doubt and the same before it is named again. */
    static final long LEADER_CALM_MILLIS = 50;

    /**
     * Waits, until {@code deadline} at most, while the partition's leader is in doubt here. A doubt ends with another
     * leader named, or with the same one, or none, out of doubt for {@link #LEADER_CALM_MILLIS}: a follower that grants
     * a candidate's pre-vote counts that as word from the leader it still names, until the vote itself comes.
     */
    private void awaitLeader(String topic, int partition, long deadline) {
        if (!replication.leaderInDoubt(topic, partition)) {
            return;
        }
        Replication.PartitionView doubted = replication.partition(topic, partition);
        long calmSince = -1;
        try {
            while (System.nanoTime() < deadline) {
                Thread.sleep(10);
                if (replication.leaderInDoubt(topic, partition)) {
                    calmSince = -1;
                    continue;
                }
                Replication.PartitionView now = replication.partition(topic, partition);
                // Out of doubt with no leader named counts as calm, not as another leader: a replica just elected
                // leads a moment before it names itself, and an answer without a leader sends the client into a
                // backoff; a doubt that ran out with no leader (none can be elected) ends as any calm does.
                if (doubted == null || now == null
                        || now.leader() >= 0 && now.leader() != doubted.leader()) {
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

    private CreateTopicsResponseData createTopics(CreateTopicsRequestData request) {
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

    private CreatableTopicResult createTopic(CreatableTopic topic, boolean validateOnly, long deadline) {
        CreatableTopicResult result = new CreatableTopicResult().setName(topic.name()).setTopicId(Uuid.ZERO_UUID);
        int partitions = topic.numPartitions() == -1 ? settings.defaultPartitions() : topic.numPartitions();
        int factor = replication == null ? 1
                : topic.replicationFactor() == -1 ? replication.defaultReplicationFactor() : topic.replicationFactor();
        if (replication != null && (factor < 1 || factor > replication.brokers().size())) {
            return failed(result, Errors.INVALID_REPLICATION_FACTOR, "replication factor " + factor + " cannot be"
                    + " met by a cluster of " + replication.brokers().size() + " brokers");
        }
        if (replication == null && topic.replicationFactor() != -1 && topic.replicationFactor() != 1) {
            return failed(result, Errors.INVALID_REPLICATION_FACTOR, "this broker keeps one replica of each partition;"
                    + " replication factor " + topic.replicationFactor() + " cannot be met");
        }
        if (!topic.assignments().isEmpty()) {
            return failed(result, Errors.INVALID_REQUEST, "manual replica assignment is not supported");
        }
        if (partitions < 1 || partitions > store.config().maxQueuesPerTopic()) {
            return failed(result, Errors.INVALID_PARTITIONS, "the partition count must be between 1 and "
                    + store.config().maxQueuesPerTopic() + ", was " + partitions);
        }
        if (!topic.configs().isEmpty()) {
            List<String> names = new ArrayList<>();
            topic.configs().forEach(config -> names.add(config.name()));
            return failed(result, Errors.INVALID_CONFIG, "topic configs are not supported yet, got " + names);
        }
        try {
            store.layout(topic.name()); // checks the name
        } catch (IllegalArgumentException e) {
            return failed(result, Errors.INVALID_TOPIC_EXCEPTION, e.getMessage());
        }
        try {
            // A store topic with messages but no declared count (appended through the store's API) exists too.
            if (store.queueCount(topic.name()) > 0 || !store.queues(topic.name()).isEmpty()) {
                return failed(result, Errors.TOPIC_ALREADY_EXISTS, "topic " + topic.name() + " already exists");
            }
            if (!validateOnly && replication != null) {
                // Carried to the metadata's leader, whichever broker this is; with none known, the cluster elects
                // one meanwhile.
                createReplicated(topic.name(), partitions, factor, deadline);
            } else if (!validateOnly && !store.createTopic(topic.name(), settings.layout(), partitions)) {
                return failed(result, Errors.TOPIC_ALREADY_EXISTS, "topic " + topic.name() + " already exists");
            }
        } catch (IllegalArgumentException e) {
            return failed(result, Errors.TOPIC_ALREADY_EXISTS, e.getMessage());
        } catch (ClusterTimeoutException e) {
            return failed(result, Errors.REQUEST_TIMED_OUT, e.getMessage());
        } catch (RuntimeException e) {
            return failed(result, Errors.KAFKA_STORAGE_ERROR, e.getMessage());
        }
        return result.setNumPartitions(partitions).setReplicationFactor((short) factor);
    }

    /** How long a request that gives no timeout waits for the cluster to create a topic or add partitions. */
    private static final long CREATE_TIMEOUT_MILLIS = 30_000;

    /** The cluster did not do what a request asked before the request's timeout: REQUEST_TIMED_OUT. */
    private static final class ClusterTimeoutException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        ClusterTimeoutException(String message) {
            super(message, null, false, false);
        }
    }

    /**
     * Creates a topic through the cluster and waits until this broker's store has it.
     *
     * @param deadline when to stop waiting ({@link System#nanoTime})
     * @throws IllegalArgumentException if the cluster refused it (it exists, a bad count)
     * @throws ClusterTimeoutException if the cluster did not create it by the deadline
     * @throws StoreException if the cluster failed otherwise
     */
    private void createReplicated(String name, int partitions, int factor, long deadline) {
        awaitCluster(replication.createTopic(name, partitions, factor), deadline, "create topic " + name);
    }

    /** Waits for what the cluster was asked to do, until {@code deadline}; throws as {@link #createReplicated}. */
    private static void awaitCluster(CompletableFuture<Void> done, long deadline, String what) {
        try {
            done.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof IllegalArgumentException refused) {
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

    private CreatePartitionsResponseData createPartitions(CreatePartitionsRequestData request) {
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
                int current = store.queueCount(topic.name());
                if (current == 0) {
                    result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                            .setErrorMessage("topic " + topic.name() + " does not exist");
                } else if (topic.count() <= current || topic.count() > store.config().maxQueuesPerTopic()) {
                    result.setErrorCode(Errors.INVALID_PARTITIONS.code()).setErrorMessage("topic " + topic.name()
                            + " has " + current + " partitions; a new count must be larger and at most "
                            + store.config().maxQueuesPerTopic() + ", was " + topic.count());
                } else if (request.validateOnly()) {
                    continue;
                } else if (replication != null) {
                    Errors error = addReplicated(topic.name(), topic.count(), result, deadline);
                    if (error != Errors.NONE) {
                        result.setErrorCode(error.code());
                    }
                } else {
                    store.increaseQueueCount(topic.name(), topic.count());
                }
            } catch (IllegalArgumentException e) {
                // A bad name, or a concurrent request that raised the count first.
                result.setErrorCode(Partitions.count(store, topic.name()) > 0 ? Errors.INVALID_PARTITIONS.code()
                        : Errors.INVALID_TOPIC_EXCEPTION.code()).setErrorMessage(e.getMessage());
            } catch (RuntimeException e) {
                result.setErrorCode(Errors.KAFKA_STORAGE_ERROR.code()).setErrorMessage(e.getMessage());
            }
        }
        return new CreatePartitionsResponseData().setResults(results);
    }

    /**
     * Gives a topic more partitions through the cluster and waits until this broker's store has them.
     *
     * @return NONE, or the error to answer (its message set on {@code result})
     */
    private Errors addReplicated(String name, int partitions, CreatePartitionsTopicResult result, long deadline) {
        try {
            awaitCluster(replication.addPartitions(name, partitions), deadline, "add the partitions of " + name);
            return Errors.NONE;
        } catch (IllegalArgumentException e) {
            result.setErrorMessage(e.getMessage());
            return Errors.INVALID_PARTITIONS;
        } catch (ClusterTimeoutException e) {
            result.setErrorMessage(e.getMessage());
            return Errors.REQUEST_TIMED_OUT;
        }
    }

    private DescribeClusterResponseData describeCluster(DescribeClusterRequestData request) {
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
        if (replication == null) {
            brokers.add(new DescribeClusterBroker().setBrokerId(settings.nodeId()).setHost(settings.host())
                    .setPort(settings.port()));
        } else {
            for (Replication.Node node : replication.brokers()) {
                brokers.add(new DescribeClusterBroker().setBrokerId(node.id()).setHost(node.host())
                        .setPort(node.port()));
            }
        }
        return response.setBrokers(brokers);
    }

    private static CreatableTopicResult failed(CreatableTopicResult result, Errors error, String message) {
        return result.setErrorCode(error.code()).setErrorMessage(message).setNumPartitions(-1)
                .setReplicationFactor((short) -1);
    }

    private static Outbound encode(int correlationId, ApiKeys key, short version, ApiMessage response) {
        // ApiVersions answers with header v0 whatever the version, so that any client can read it.
        short headerVersion = key.responseHeaderVersion(version);
        ResponseHeaderData header = new ResponseHeaderData().setCorrelationId(correlationId);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = header.size(cache, headerVersion) + response.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(4 + size);
        out.putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        response.write(writer, cache, version);
        return Outbound.of(out.flip());
    }
}
