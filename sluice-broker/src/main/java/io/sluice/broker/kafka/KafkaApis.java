package io.sluice.broker.kafka;

import io.sluice.broker.CleanerSettings;
import io.sluice.broker.ClusterView;
import io.sluice.broker.Partitions;
import io.sluice.broker.metrics.BrokerMetrics;
import io.sluice.broker.kafka.security.AclMutation;
import io.sluice.broker.kafka.security.AclRequests;
import io.sluice.broker.kafka.security.Authenticator;
import io.sluice.broker.kafka.security.AuthorizerConfig;
import io.sluice.broker.kafka.security.MutationQuota;
import io.sluice.broker.kafka.security.QuotaSettings;
import io.sluice.broker.kafka.security.ScramCredentials;
import io.sluice.broker.kafka.security.SecuritySettings;
import io.sluice.broker.kafka.security.Session;
import io.sluice.broker.net.FrameHandler;
import io.sluice.broker.net.Outbound;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.common.message.AlterUserScramCredentialsRequestData;
import org.apache.kafka.common.message.AlterUserScramCredentialsResponseData;
import org.apache.kafka.common.message.DescribeUserScramCredentialsRequestData;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.ByteBuffer;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.List;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import java.util.Map;
import org.apache.kafka.common.message.DescribeLogDirsRequestData;
import org.apache.kafka.common.message.DescribeLogDirsResponseData;
import org.apache.kafka.common.message.DescribeProducersRequestData;
import org.apache.kafka.common.message.DescribeProducersResponseData;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListOffsetsRequestData;
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
     * @param cleaner the log cleaner's settings
     */
    public record Settings(int nodeId, String host, int port, String clusterId, int defaultPartitions,
                           boolean autoCreateTopics, TopicLayout layout, int offsetsRetentionMinutes,
                           CleanerSettings cleaner) {
        /** Settings with the log cleaner's defaults. */
        public Settings(int nodeId, String host, int port, String clusterId, int defaultPartitions,
                        boolean autoCreateTopics, TopicLayout layout, int offsetsRetentionMinutes) {
            this(nodeId, host, port, clusterId, defaultPartitions, autoCreateTopics, layout, offsetsRetentionMinutes,
                    CleanerSettings.DEFAULTS);
        }

        /** Checks the fields. */
        public Settings {
            Objects.requireNonNull(cleaner, "cleaner");
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

    private final Settings settings;
    private final Partitions partitions;
    private final ClusterView cluster;
    private final Authorizations authorizations;
    private final Throttles throttles;
    private final ProduceHandler produce;
    private final FetchHandler fetch;
    private final ListOffsetsHandler offsets;
    private final OffsetForLeaderEpochHandler epochs;
    private final DeleteRecordsHandler deleteRecords;
    private final TopicApis topics;
    private final ProducerIds producerIds;
    private final ScheduledExecutorService timer;
    /**
     * Runs the offset expiry passes: apart from the group sessions' timer, since in a cluster a pass waits for the
     * cluster once per group it forgets, and sessions must still expire and rebalances end on time meanwhile.
     */
    private final ScheduledExecutorService expiry;
    /** Compacts the partitions of compacted topics. */
    private final LogCleaner cleaner;
    /** Runs the transactions' timeout checks. */
    private final ScheduledExecutorService transactionTimer;
    private final GroupApis groups;
    private final Configs configs;
    private final LeaderElections elections;
    private final BrokerMetrics metrics;
    private final ProducerStates producerStates;
    private final TransactionCoordinator transactions;

    /**
     * @param partitions the partitions this broker serves
     * @param cluster the cluster this broker is one of (a broker alone is a cluster of one)
     * @param storeConfig the store's settings: the largest batch taken, its clock, what DescribeConfigs reports
     * @param settings the broker as clients see it
     * @param executor runs fetches that waited for data once they may answer (virtual threads suit)
     * @param metrics where requests are counted and timed, or null
     */
    public KafkaApis(Partitions partitions, ClusterView cluster, StoreConfig storeConfig, Settings settings,
                     Executor executor, BrokerMetrics metrics) {
        this(partitions, cluster, storeConfig, settings, executor, metrics, null, QuotaSettings.DEFAULTS);
    }

    /**
     * As above, checking the cluster's ACLs on every request.
     *
     * @param authorizer the authorizer's settings ({@code super.users}, {@code allow.everyone.if.no.acl.found}), or
     *     null for no authorizer (everything allowed, the ACL APIs answering SECURITY_DISABLED)
     * @param quotaSettings the client quotas' windows (Kafka's quota.window.*)
     */
    public KafkaApis(Partitions partitions, ClusterView cluster, StoreConfig storeConfig, Settings settings,
                     Executor executor, BrokerMetrics metrics, AuthorizerConfig authorizer,
                     QuotaSettings quotaSettings) {
        this.partitions = Objects.requireNonNull(partitions, "partitions");
        this.cluster = Objects.requireNonNull(cluster, "cluster");
        this.authorizations = new Authorizations(authorizer != null, authorizer != null ? authorizer
                : AuthorizerConfig.DEFAULT, cluster, partitions, settings.autoCreateTopics(), settings.nodeId());
        this.throttles = new Throttles(cluster, quotaSettings, storeConfig.clock()::millis);
        this.settings = Objects.requireNonNull(settings, "settings");
        this.metrics = metrics;
        // The broker's place among the brokers sorted by id: unique modulo 64, as a node id need not be.
        this.producerIds = new ProducerIds(cluster.brokers().stream().map(ClusterView.Node::id).sorted().toList()
                .indexOf(cluster.self()));
        PartitionWatch watch = new PartitionWatch();
        ProducerStates producerStates = new ProducerStates();
        partitions.onChange((topic, partition) -> {
            if (partition < 0) {
                // A topic deleted (in a cluster, through whichever broker): one created again starts with no producers.
                if (partitions.count(topic) == 0) {
                    producerStates.forget(topic);
                }
                watch.signalTopic(topic);
            } else {
                watch.signal(topic, partition);
            }
        });
        this.producerStates = producerStates;
        TopicConfigs topicConfigs = new TopicConfigs(Configs.brokerValues(storeConfig));
        this.transactions = new TransactionCoordinator(cluster, partitions, producerStates, producerIds,
                storeConfig.clock()::millis);
        this.produce = new ProduceHandler(partitions, cluster, producerStates, metrics,
                new ProducePolicies(topicConfigs, cluster), storeConfig.maxMessageBytes(), storeConfig.clock()::millis,
                transactions);
        this.fetch = new FetchHandler(partitions, cluster, watch, Objects.requireNonNull(executor, "executor"),
                producerStates);
        this.offsets = new ListOffsetsHandler(partitions, producerStates);
        this.epochs = new OffsetForLeaderEpochHandler(partitions);
        this.deleteRecords = new DeleteRecordsHandler(partitions);
        this.topics = new TopicApis(partitions, cluster, settings, producerStates, topicConfigs);
        this.timer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("sluice-broker-groups")
                .daemon().factory());
        GroupCoordinator classicGroups = new GroupCoordinator(timer, storeConfig.clock()::millis);
        this.groups = new GroupApis(partitions, cluster, classicGroups,
                new ConsumerGroups(partitions, classicGroups, timer), settings, storeConfig.clock()::millis);
        groups.pendingOffsets(transactions::pendingOffset);
        // A thread of its own: a check waits on markers, which must not hold up group sessions and rebalances.
        this.transactionTimer = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform()
                .name("sluice-broker-transactions").daemon().factory());
        transactionTimer.scheduleWithFixedDelay(() -> {
            try {
                transactions.abortTimedOut();
            } catch (RuntimeException e) {
                LOG.warn("aborting timed-out transactions failed: {}", e.toString());
            }
        }, TransactionCoordinator.TIMEOUT_CHECK_MILLIS, TransactionCoordinator.TIMEOUT_CHECK_MILLIS,
                TimeUnit.MILLISECONDS);
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
        this.configs = new Configs(topicConfigs, cluster, storeConfig, settings, partitions::count);
        this.cleaner = new LogCleaner(partitions, cluster, topicConfigs, producerStates, storeConfig.clock()::millis,
                settings.cleaner());
        cleaner.start();
        this.elections = new LeaderElections(partitions, cluster);
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
        cleaner.close();
        timer.shutdownNow();
        expiry.shutdownNow();
        transactionTimer.shutdownNow();
        transactions.close();
        partitions.close();
    }

    /** @return the log cleaner */
    public LogCleaner cleaner() {
        return cleaner;
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
        return handle(frame, null);
    }

    /**
     * The handler of each connection to a listener: it authenticates as the listener says, then has its requests
     * answered here as its principal.
     *
     * @param listener the listener, its port bound
     * @param shared what the listener's connections share
     */
    public FrameHandler.Factory connections(SecuritySettings.Listener listener, Authenticator.Shared shared) {
        return peer -> new ClientConnection(this, listener, peer, shared);
    }

    /**
     * Requests this broker sends other brokers (a transaction's markers) connect as {@code client} says: over the
     * other brokers' listener's TLS, authenticated with its SASL.
     */
    public void interBroker(io.sluice.broker.kafka.security.InterBrokerClient client) {
        transactions.secureBrokerRequests(client);
    }

    /** @return the connection rates the cluster's quotas and max.connection.creation.rate allow */
    public io.sluice.broker.net.AcceptRates acceptRates() {
        return throttles.acceptRates();
    }

    /** @return the SCRAM credentials as the cluster has them now (decoded again only when they changed) */
    public ScramCredentials scramCredentials() {
        String text = cluster.securityRecord(SCRAM_RECORD);
        ScramCredentials[] cached = scramCache;
        if (cached != null && scramCacheText == text) {
            return cached[0];
        }
        ScramCredentials decoded = ScramCredentials.decode(text);
        scramCacheText = text;
        scramCache = new ScramCredentials[] {decoded};
        return decoded;
    }

    /** The cluster's security record of SCRAM credentials. */
    static final String SCRAM_RECORD = "scram";
    private volatile String scramCacheText;
    private volatile ScramCredentials[] scramCache;

    CompletableFuture<Outbound> handle(ByteBuffer frame, ClientConnection connection) throws ProtocolException {
        if (metrics == null) {
            return respond(frame, connection);
        }
        long arrived = System.nanoTime();
        long received = 4L + frame.remaining();
        short apiKey = frame.remaining() >= 2 ? frame.getShort(frame.position()) : -1;
        short version = frame.remaining() >= 4 ? frame.getShort(frame.position() + 2) : -1;
        String api = ApiKeys.hasId(apiKey) ? ApiKeys.forId(apiKey).name : "unknown";
        CompletableFuture<Outbound> response = respond(frame, connection);
        return response.whenComplete((out, error) -> metrics.request(api, version, System.nanoTime() - arrived,
                received, out == null ? 0 : out.size()));
    }

    private CompletableFuture<Outbound> respond(ByteBuffer frame, ClientConnection connection)
            throws ProtocolException {
        long arrived = System.nanoTime();
        int requestBytes = 4 + frame.remaining();
        Authenticator authentication = connection == null ? null : connection.authentication;
        if (authentication != null && authentication.rawTokens()) {
            // After a SaslHandshake v0 the client's tokens come bare, and so go the broker's.
            byte[] token = new byte[frame.remaining()];
            frame.get(token);
            byte[] answer = authentication.rawToken(token);
            if (answer == null) {
                throw new ProtocolException("SASL authentication failed");
            }
            return done(Outbound.of(ByteBuffer.allocate(4 + answer.length).putInt(answer.length).put(answer).flip()));
        }
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
        Session session = Session.ANONYMOUS;
        if (authentication != null) {
            Authenticator.Step step = authentication.onRequest(key, version, request);
            if (step != null) {
                if (step.response() == null) {
                    throw new ProtocolException(key.name + " is not taken from a connection that has not"
                            + " authenticated, or whose session expired");
                }
                Outbound answer = encode(correlationId, key, version, step.response(), step.close());
                return step.delayMillis() <= 0 ? done(answer) : CompletableFuture.supplyAsync(() -> answer,
                        CompletableFuture.delayedExecutor(step.delayMillis(), TimeUnit.MILLISECONDS));
            }
            session = authentication.session();
        }
        CompletableFuture<Outbound> response;
        try {
            response = dispatch(key, version, header, request, session, arrived, requestBytes);
        } catch (Closing e) {
            throw (ProtocolException) e.getCause();
        } catch (RuntimeException e) {
            response = CompletableFuture.failedFuture(e);
        }
        if (key == ApiKeys.PRODUCE && ((ProduceRequestData) request).acks() == 0) {
            return response; // no response to carry an error: a failure closes the connection, as Kafka's does
        }
        // A well-formed request is always answered: a fault no handler foresaw is answered as Kafka's broker
        // answers one, with the API's error response (UNKNOWN_SERVER_ERROR), not by closing the connection. A handler
        // that refuses a request as a whole, as Kafka's does, throws the protocol's exception for its error.
        return response.exceptionallyCompose(error -> {
            Throwable cause = error instanceof java.util.concurrent.CompletionException && error.getCause() != null
                    ? error.getCause() : error;
            if (cause instanceof ApiException refused) {
                LOG.debug("a {} v{} request is refused: {}", key.name, version, refused.toString());
            } else {
                LOG.warn("a {} v{} request failed; answering it with UNKNOWN_SERVER_ERROR", key.name, version, cause);
            }
            return done(errorResponse(request, key, version, correlationId, cause));
        });
    }

    /** @return the response of a parsed request, once it is ready */
    private CompletableFuture<Outbound> dispatch(ApiKeys key, short version, RequestHeaderData header,
                                                 ApiMessage request, Session session, long arrived,
                                                 int requestBytes) {
        int correlationId = header.correlationId();
        Authorizations.Checked checked = authorizations.check(key, version, request, session);
        if (checked.denied() instanceof Authorizations.Refused refused) {
            return done(encode(correlationId, key, version, refused.answer()));
        }
        if (checked.denied() != null) {
            return CompletableFuture.failedFuture(checked.denied());
        }
        MutationQuota.Permits permits = key == ApiKeys.CREATE_TOPICS || key == ApiKeys.CREATE_PARTITIONS
                || key == ApiKeys.DELETE_TOPICS ? throttles.mutations(key, version, session, header.clientId()) : null;
        java.util.function.Function<ApiMessage, Outbound> answer = response -> {
            checked.after().accept(response);
            long throttle = throttles.throttle(key, session, header.clientId(), requestBytes, arrived, response);
            if (permits != null) {
                throttle = Throttles.withMutationThrottle(throttle, permits, response);
            }
            Outbound out = encode(correlationId, key, version, response);
            return throttle > 0 ? Outbound.muted(out, throttle) : out;
        };
        if (key == ApiKeys.PRODUCE) {
            return produce.handle((ProduceRequestData) request, version).thenApply(response -> response == null
                    ? null : answer.apply(response));
        }
        if (key == ApiKeys.FETCH) {
            return fetch.handle(correlationId, version, (FetchRequestData) request,
                    authorizations.readable(session), (data, bytes) -> throttles.fetchThrottle(session,
                            header.clientId(), bytes, arrived, ((FetchRequestData) request).replicaId() >= 0));
        }
        if (key == ApiKeys.ALTER_CLIENT_QUOTAS) {
            return throttles.alter((org.apache.kafka.common.message.AlterClientQuotasRequestData) request, version)
                    .thenApply(answer);
        }
        if (key == ApiKeys.JOIN_GROUP) {
            return groups.join((JoinGroupRequestData) request, version, header.clientId()).thenApply(answer);
        }
        if (key == ApiKeys.ELECT_LEADERS) {
            return elections.elect((ElectLeadersRequestData) request, version).thenApply(answer);
        }
        if (key == ApiKeys.DELETE_RECORDS) {
            return deleteRecords.handle((DeleteRecordsRequestData) request).thenApply(answer);
        }
        if (key == ApiKeys.ALTER_USER_SCRAM_CREDENTIALS) {
            return alterScramCredentials((AlterUserScramCredentialsRequestData) request).thenApply(answer);
        }
        if (key == ApiKeys.SYNC_GROUP) {
            return groups.sync((SyncGroupRequestData) request).thenApply(answer);
        }
        if (key == ApiKeys.CREATE_ACLS || key == ApiKeys.DELETE_ACLS) {
            return changeAcls(key, version, request).thenApply(answer);
        }
        ApiMessage response = switch (key) {
            case API_VERSIONS -> SupportedApis.withFeatures(new ApiVersionsResponseData()
                    .setApiKeys(SupportedApis.advertised()));
            case METADATA -> topics.metadata((MetadataRequestData) request, version);
            case DESCRIBE_TOPIC_PARTITIONS -> topics.describeTopicPartitions(
                    (DescribeTopicPartitionsRequestData) request, authorizations.describable(session));
            case CREATE_TOPICS -> topics.createTopics((CreateTopicsRequestData) request, permits);
            case CREATE_PARTITIONS -> topics.createPartitions((CreatePartitionsRequestData) request, permits);
            case DESCRIBE_CLUSTER -> topics.describeCluster((DescribeClusterRequestData) request);
            case LIST_OFFSETS -> offsets.listOffsets((ListOffsetsRequestData) request, version);
            case OFFSET_FOR_LEADER_EPOCH -> epochs.handle((OffsetForLeaderEpochRequestData) request);
            case INIT_PRODUCER_ID -> initProducerId((InitProducerIdRequestData) request);
            case FIND_COORDINATOR -> groups.findCoordinator((FindCoordinatorRequestData) request, version);
            case HEARTBEAT -> groups.heartbeat((HeartbeatRequestData) request);
            case LEAVE_GROUP -> groups.leave((LeaveGroupRequestData) request, version);
            case OFFSET_COMMIT -> groups.commit((OffsetCommitRequestData) request, version);
            case OFFSET_FETCH -> groups.fetchOffsets((OffsetFetchRequestData) request, version);
            case DESCRIBE_GROUPS -> groups.describe((DescribeGroupsRequestData) request, version);
            case LIST_GROUPS -> groups.list((ListGroupsRequestData) request);
            case DELETE_GROUPS -> groups.delete((DeleteGroupsRequestData) request);
            case OFFSET_DELETE -> groups.offsetDelete((OffsetDeleteRequestData) request);
            case CONSUMER_GROUP_HEARTBEAT -> groups.consumerHeartbeat((ConsumerGroupHeartbeatRequestData) request,
                    version, header.clientId());
            case CONSUMER_GROUP_DESCRIBE -> groups.consumerDescribe((ConsumerGroupDescribeRequestData) request);
            case DESCRIBE_CONFIGS -> configs.describe((DescribeConfigsRequestData) request);
            case INCREMENTAL_ALTER_CONFIGS -> configs.incrementalAlter((IncrementalAlterConfigsRequestData) request);
            case ALTER_CONFIGS -> configs.alter((AlterConfigsRequestData) request);
            case DELETE_TOPICS -> topics.deleteTopics((DeleteTopicsRequestData) request, version, permits);
            case ADD_PARTITIONS_TO_TXN -> transactions.addPartitions((AddPartitionsToTxnRequestData) request, version);
            case ADD_OFFSETS_TO_TXN -> transactions.addOffsets((AddOffsetsToTxnRequestData) request, version);
            case END_TXN -> transactions.endTxn((EndTxnRequestData) request, version);
            case TXN_OFFSET_COMMIT -> {
                TxnOffsetCommitRequestData commit = (TxnOffsetCommitRequestData) request;
                yield transactions.commitOffsets(commit, version, groups.checkTransactionalCommit(commit.groupId(),
                        commit.memberId(), commit.groupInstanceId(), commit.generationId()));
            }
            case LIST_TRANSACTIONS -> transactions.list((ListTransactionsRequestData) request);
            case DESCRIBE_TRANSACTIONS -> transactions.describe((DescribeTransactionsRequestData) request);
            case DESCRIBE_PRODUCERS -> describeProducers((DescribeProducersRequestData) request);
            case WRITE_TXN_MARKERS -> transactions.writeMarkers((WriteTxnMarkersRequestData) request);
            case DESCRIBE_LOG_DIRS -> describeLogDirs((DescribeLogDirsRequestData) request);
            case DESCRIBE_CLIENT_QUOTAS -> throttles.describe(
                    (org.apache.kafka.common.message.DescribeClientQuotasRequestData) request, version);
            case DESCRIBE_ACLS -> describeAcls((org.apache.kafka.common.message.DescribeAclsRequestData) request,
                    version);
            case DESCRIBE_USER_SCRAM_CREDENTIALS -> scramCredentials().describe(
                    (DescribeUserScramCredentialsRequestData) request);
            case SASL_HANDSHAKE -> new org.apache.kafka.common.message.SaslHandshakeResponseData()
                    .setErrorCode(Errors.ILLEGAL_SASL_STATE.code());
            case SASL_AUTHENTICATE -> new org.apache.kafka.common.message.SaslAuthenticateResponseData()
                    .setErrorCode(Errors.ILLEGAL_SASL_STATE.code())
                    .setErrorMessage("SaslAuthenticate request received after successful authentication");
            default -> throw new IllegalStateException(key + " is listed as served but has no handler");
        };
        advertise(response, session);
        return done(answer.apply(response));
    }

    /**
     * @param request the parsed request (its frame may be gone: it is written again to build the answer)
     * @return the API's error response for {@code cause}, as kafka-clients builds it for every API: the error of a
     *     protocol exception (a request refused as a whole), UNKNOWN_SERVER_ERROR for anything else
     */
    private static Outbound errorResponse(ApiMessage request, ApiKeys key, short version, int correlationId,
                                          Throwable cause) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        ByteBuffer body = ByteBuffer.allocate(request.size(cache, version));
        request.write(new ByteBufferAccessor(body), cache, version);
        ApiMessage data = AbstractRequest.parseRequest(key, version, new ByteBufferAccessor(body.flip())).request
                .getErrorResponse(0, cause instanceof ApiException refused ? refused
                        : Errors.UNKNOWN_SERVER_ERROR.exception(String.valueOf(cause.getMessage())))
                .data();
        return encode(correlationId, key, version, data);
    }

    private static CompletableFuture<Outbound> done(Outbound response) {
        return CompletableFuture.completedFuture(response);
    }

    private InitProducerIdResponseData initProducerId(InitProducerIdRequestData request) {
        InitProducerIdResponseData response = new InitProducerIdResponseData().setProducerId(-1)
                .setProducerEpoch((short) -1);
        if (request.transactionalId() != null) {
            return transactions.initProducerId(request);
        }
        // An idempotent producer gets a new producer id whatever id and epoch it names (as Kafka's broker answers it):
        // bumping the epoch of the id it names would hand an id another producer may hold, a transactional one's say,
        // to two producers at once.
        return response.setProducerId(producerIds.next()).setProducerEpoch((short) 0);
    }
    /**
     * DescribeLogDirs (kafka-log-dirs): the store's directory, the one log directory, with the partitions this broker
     * holds a replica of (all, or those asked for), each with the bytes its log holds and how far it is behind the high
     * watermark, and the file system's size and free bytes.
     */
    private DescribeLogDirsResponseData describeLogDirs(DescribeLogDirsRequestData request) {
        DescribeLogDirsResponseData response = new DescribeLogDirsResponseData();
        io.sluice.broker.Partitions.LogDirectory directory = partitions.logDirectory();
        if (directory == null) {
            return response;
        }
        Map<String, List<Integer>> wanted = new java.util.TreeMap<>();
        if (request.topics() == null) {
            partitions.topics().forEach((topic, count) -> {
                List<Integer> all = new java.util.ArrayList<>();
                for (int p = 0; p < count; p++) {
                    all.add(p);
                }
                wanted.put(topic, all);
            });
        } else {
            for (DescribeLogDirsRequestData.DescribableLogDirTopic topic : request.topics()) {
                wanted.computeIfAbsent(topic.topic(), t -> new java.util.ArrayList<>()).addAll(topic.partitions());
            }
        }
        DescribeLogDirsResponseData.DescribeLogDirsResult result = new DescribeLogDirsResponseData
                .DescribeLogDirsResult().setLogDir(directory.directory()).setTotalBytes(directory.totalBytes())
                .setUsableBytes(directory.usableBytes());
        wanted.forEach((topic, indexes) -> {
            List<DescribeLogDirsResponseData.DescribeLogDirsPartition> listed = new java.util.ArrayList<>();
            for (int index : indexes) {
                io.sluice.broker.Partition partition = partitions.partition(topic, index);
                if (partition == null || !partition.hostedHere()) {
                    continue;
                }
                long size = directory.sizes().getOrDefault(topic, Map.of()).getOrDefault(index, 0L);
                listed.add(new DescribeLogDirsResponseData.DescribeLogDirsPartition().setPartitionIndex(index)
                        .setPartitionSize(size).setIsFutureKey(false)
                        .setOffsetLag(Math.max(0, partition.highWatermark() - partition.logEndOffset())));
            }
            if (!listed.isEmpty()) {
                result.topics().add(new DescribeLogDirsResponseData.DescribeLogDirsTopic().setName(topic)
                        .setPartitions(listed));
            }
        });
        return response.setResults(List.of(result));
    }

    /** DescribeProducers: the producers each partition this broker leads knows, with their open transactions. */
    private DescribeProducersResponseData describeProducers(DescribeProducersRequestData request) {
        DescribeProducersResponseData response = new DescribeProducersResponseData();
        for (DescribeProducersRequestData.TopicRequest topic : request.topics()) {
            DescribeProducersResponseData.TopicResponse answer = new DescribeProducersResponseData.TopicResponse()
                    .setName(topic.name());
            response.topics().add(answer);
            for (int index : topic.partitionIndexes()) {
                DescribeProducersResponseData.PartitionResponse partitionAnswer =
                        new DescribeProducersResponseData.PartitionResponse().setPartitionIndex(index);
                answer.partitions().add(partitionAnswer);
                io.sluice.broker.Partition partition = partitions.partition(topic.name(), index);
                if (partition == null) {
                    partitionAnswer.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                    continue;
                }
                if (!partition.leads()) {
                    partitionAnswer.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
                    continue;
                }
                ProducerStates.Producers state = producerStates.of(partition);
                List<ProducerStates.Producers.Described> described;
                synchronized (state.lock) {
                    described = state.describe();
                }
                for (ProducerStates.Producers.Described producer : described) {
                    partitionAnswer.activeProducers().add(new DescribeProducersResponseData.ProducerState()
                            .setProducerId(producer.producerId()).setProducerEpoch(producer.epoch())
                            .setLastSequence(producer.lastSequence()).setLastTimestamp(-1).setCoordinatorEpoch(-1)
                            .setCurrentTxnStartOffset(producer.openSince()));
                }
            }
        }
        return response;
    }

    /**
     * Tells a client on a listener other than the first this broker's address on its own listener, as Kafka answers
     * each listener with its advertised endpoints (the other brokers of a cluster have one listener each).
     */
    private void advertise(ApiMessage response, Session session) {
        SecuritySettings.Listener listener = session.listener();
        if (listener == null || listener.advertisedHost().equals(settings.host())
                && listener.advertisedPortOrBound() == settings.port()) {
            return;
        }
        String host = listener.advertisedHost();
        int port = listener.advertisedPortOrBound();
        int self = settings.nodeId();
        switch (response) {
            case org.apache.kafka.common.message.MetadataResponseData metadata -> metadata.brokers().forEach(node -> {
                if (node.nodeId() == self) {
                    node.setHost(host).setPort(port);
                }
            });
            case org.apache.kafka.common.message.DescribeClusterResponseData cluster -> cluster.brokers()
                    .forEach(node -> {
                        if (node.brokerId() == self) {
                            node.setHost(host).setPort(port);
                        }
                    });
            case org.apache.kafka.common.message.FindCoordinatorResponseData found -> {
                // v4+ names coordinators in their list only: its top-level fields stay at their defaults (node 0 and
                // an empty host), which that version cannot carry otherwise.
                if (found.nodeId() == self && !found.host().isEmpty()) {
                    found.setHost(host).setPort(port);
                }
                found.coordinators().forEach(coordinator -> {
                    if (coordinator.nodeId() == self) {
                        coordinator.setHost(host).setPort(port);
                    }
                });
            }
            default -> {
            }
        }
    }

    /** DescribeAcls: the cluster's ACLs that match the filter, or SECURITY_DISABLED without an authorizer. */
    private ApiMessage describeAcls(org.apache.kafka.common.message.DescribeAclsRequestData request, short version) {
        try {
            return authorizations.enabled()
                    ? AclRequests.describe(authorizations.authorizer().acls(), request, version)
                    : AclRequests.describeWithoutAuthorizer(request, version);
        } catch (ProtocolException e) {
            throw new Closing(e);
        }
    }

    /**
     * CreateAcls and DeleteAcls: the change is made on the ACLs the cluster has when it applies it (through the
     * cluster's metadata in a cluster), and the answer is that application's.
     */
    private CompletableFuture<ApiMessage> changeAcls(ApiKeys key, short version, ApiMessage request) {
        try {
            if (!authorizations.enabled()) {
                return CompletableFuture.completedFuture(key == ApiKeys.CREATE_ACLS
                        ? AclRequests.createWithoutAuthorizer(
                                (org.apache.kafka.common.message.CreateAclsRequestData) request, version)
                        : AclRequests.deleteWithoutAuthorizer(
                                (org.apache.kafka.common.message.DeleteAclsRequestData) request, version));
            }
            AclMutation<? extends ApiMessage> mutation = key == ApiKeys.CREATE_ACLS
                    ? AclRequests.create((org.apache.kafka.common.message.CreateAclsRequestData) request, version)
                    : AclRequests.delete((org.apache.kafka.common.message.DeleteAclsRequestData) request, version);
            return cluster.alterSecurityRecord(Authorizations.ACLS_RECORD, mutation)
                    .thenApply(ignored -> (ApiMessage) mutation.response());
        } catch (ProtocolException e) {
            throw new Closing(e);
        }
    }

    /** A request Kafka's broker would not answer: its connection is closed. */
    private static final class Closing extends RuntimeException {
        private static final long serialVersionUID = 1L;

        Closing(ProtocolException cause) {
            super(cause.getMessage(), cause);
        }
    }

    /**
     * AlterUserScramCredentials: the change is made on the credentials the cluster has when it applies it, and the
     * answer is that application's.
     */
    private CompletableFuture<AlterUserScramCredentialsResponseData> alterScramCredentials(
            AlterUserScramCredentialsRequestData request) {
        AtomicReference<AlterUserScramCredentialsResponseData> answer = new AtomicReference<>();
        return cluster.alterSecurityRecord(SCRAM_RECORD, text -> {
            ScramCredentials.Altered altered = ScramCredentials.decode(text).alter(request);
            answer.set(altered.response());
            return altered.credentials().encode();
        }).thenApply(ignored -> answer.get());
    }

    private static Outbound encode(int correlationId, ApiKeys key, short version, ApiMessage response) {
        return encode(correlationId, key, version, response, false);
    }

    private static Outbound encode(int correlationId, ApiKeys key, short version, ApiMessage response,
                                   boolean thenClose) {
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
        return Outbound.of(out.flip(), thenClose);
    }
}
