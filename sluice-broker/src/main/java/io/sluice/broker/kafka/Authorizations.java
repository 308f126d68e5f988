package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partitions;
import io.sluice.broker.kafka.security.AclAuthorizer;
import io.sluice.broker.kafka.security.AclSet;
import io.sluice.broker.kafka.security.AuthorizerConfig;
import io.sluice.broker.kafka.security.Session;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Predicate;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.ApiException;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.DescribeClusterRequestData;
import org.apache.kafka.common.message.DescribeClusterResponseData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.DescribeLogDirsResponseData;
import org.apache.kafka.common.message.DescribeProducersResponseData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.ListTransactionsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetCommitResponseData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetDeleteResponseData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The ACL checks of each API, as Kafka 4.3.1's broker makes them (its KafkaApis): a request is refused whole when
 * its group, transactional id or the cluster is not authorized (the API's error response), and otherwise the entries
 * it may not touch are answered TOPIC_AUTHORIZATION_FAILED (or the group's or id's error) while the rest is served:
 * entries a request would change are taken out before it is handled and answered after; entries it only reads are
 * answered after. A principal without Describe on a topic learns nothing of it: Metadata, DescribeTopicPartitions
 * and OffsetFetch of every topic leave it out, ListGroups and ListTransactions leave out what it may not describe.
 *
 * <p>The authorized-operations bit fields are filled as Kafka's AuthHelper.authorizedOperations fills them: bit i set
 * for each operation of code i, of those Kafka lists for the resource's type (its AclEntry.supportedOperations), that
 * the principal may do; each answered only when the request asks for it and only for an entry served (not refused,
 * nor in error). A cluster's operations are 0 for a principal without Describe on the cluster.
 *
 * <p>With no authorizer configured ({@code authorizer.class.name} empty) everything is allowed and nothing is looked
 * at: the operations answered are all those of the resource's type, as Kafka answers them. The ACLs are the cluster's
 * security record {@code acls}, read again only when its text changed.
 */
final class Authorizations {

    /** The cluster record the ACLs are kept in. */
    static final String ACLS_RECORD = "acls";
    /** The one cluster resource's name. */
    static final String CLUSTER = "kafka-cluster";

    /** What a request's authorization came to. */
    record Checked(ApiException denied, Consumer<ApiMessage> after) {
        static final Checked ALLOWED = new Checked(null, response -> { });

        static Checked denied(ApiException error) {
            return new Checked(error, response -> { });
        }

        static Checked after(Consumer<ApiMessage> after) {
            return new Checked(null, after);
        }

        /** @return this, and {@code more} done to the response after what this does */
        Checked andThen(Consumer<ApiMessage> more) {
            return new Checked(denied, after.andThen(more));
        }
    }

    /** The operations Kafka 4.3.1 answers for a topic (AclEntry.supportedOperations). */
    private static final List<AclOperation> TOPIC_OPERATIONS = List.of(AclOperation.READ, AclOperation.WRITE,
            AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    /** The operations Kafka 4.3.1 answers for a group. */
    private static final List<AclOperation> GROUP_OPERATIONS = List.of(AclOperation.READ, AclOperation.DELETE,
            AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    /** The operations Kafka 4.3.1 answers for the cluster. */
    private static final List<AclOperation> CLUSTER_OPERATIONS = List.of(AclOperation.CREATE, AclOperation.ALTER,
            AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE);

    private final boolean enabled;
    private final boolean autoCreateTopics;
    /** This broker's id, which a broker config resource must name (or none). */
    private final int nodeId;
    private final AuthorizerConfig config;
    private final ClusterView cluster;
    private final Partitions partitions;
    private volatile String aclText;
    private volatile AclAuthorizer authorizer;

    /** @param autoCreateTopics whether Metadata creates the topics it names that do not exist (the broker's setting) */
    Authorizations(boolean enabled, AuthorizerConfig config, ClusterView cluster, Partitions partitions,
                   boolean autoCreateTopics, int nodeId) {
        this.enabled = enabled;
        this.nodeId = nodeId;
        this.autoCreateTopics = autoCreateTopics;
        this.config = config;
        this.cluster = cluster;
        this.partitions = partitions;
    }

    /** @return true if ACLs are checked */
    boolean enabled() {
        return enabled;
    }

    /** @return the authorizer over the ACLs the cluster has now */
    AclAuthorizer authorizer() {
        String text = cluster.securityRecord(ACLS_RECORD);
        AclAuthorizer current = authorizer;
        if (current == null || text != aclText) {
            current = new AclAuthorizer(config, AclSet.ofRecord(text));
            authorizer = current;
            aclText = text;
        }
        return current;
    }

    boolean allowed(Session session, AclOperation operation, ResourceType type, String name) {
        return !enabled || session.principal() == null || authorizer().authorize(session.principal(),
                session.address().getHostAddress(), operation, type, name);
    }

    boolean clusterAllowed(Session session, AclOperation operation) {
        return allowed(session, operation, ResourceType.CLUSTER, CLUSTER);
    }

    private Predicate<String> topics(Session session, AclOperation operation) {
        return topic -> topic == null || allowed(session, operation, ResourceType.TOPIC, topic);
    }

    /**
     * @return whether the request may go on, and what to do to its response; the request may be changed (entries it
     *     may not touch taken out)
     */
    Checked check(ApiKeys key, short version, ApiMessage request, Session session) {
        Checked checked = enabled ? checkAcls(key, version, request, session) : Checked.ALLOWED;
        Consumer<ApiMessage> operations = checked.denied() == null ? operations(key, version, request, session)
                : null;
        return operations == null ? checked : checked.andThen(operations);
    }

    private Checked checkAcls(ApiKeys key, short version, ApiMessage request, Session session) {
        return switch (key) {
            case API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE, DESCRIBE_CLUSTER -> Checked.ALLOWED;
            case PRODUCE -> produce((ProduceRequestData) request, session);
            case FETCH -> Checked.ALLOWED; // per partition, in the fetch handler (see readable)
            case METADATA -> metadata((MetadataRequestData) request, version, session);
            case DESCRIBE_TOPIC_PARTITIONS -> Checked.after(response -> describeTopicPartitions(
                    (DescribeTopicPartitionsResponseData) response, session));
            case LIST_OFFSETS -> Checked.after(response -> ((ListOffsetsResponseData) response).topics()
                    .forEach(topic -> {
                        if (!allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name())) {
                            topic.partitions().forEach(p -> p.setErrorCode(code()).setOffset(-1).setTimestamp(-1)
                                    .setLeaderEpoch(-1));
                        }
                    }));
            case OFFSET_FOR_LEADER_EPOCH -> Checked.after(response -> ((OffsetForLeaderEpochResponseData) response)
                    .topics().forEach(topic -> {
                        if (!allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.topic())) {
                            topic.partitions().forEach(p -> p.setErrorCode(code()).setEndOffset(-1)
                                    .setLeaderEpoch(-1));
                        }
                    }));
            case DELETE_RECORDS -> deleteRecords((DeleteRecordsRequestData) request, session);
            case CREATE_TOPICS -> createTopics((CreateTopicsRequestData) request, session);
            case DELETE_TOPICS -> deleteTopics((DeleteTopicsRequestData) request, version, session);
            case CREATE_PARTITIONS -> createPartitions((CreatePartitionsRequestData) request, session);
            case DESCRIBE_CONFIGS -> Checked.after(response -> ((DescribeConfigsResponseData) response).results()
                    .forEach(result -> {
                        if (!configAllowed(session, AclOperation.DESCRIBE_CONFIGS, result.resourceType(),
                                result.resourceName())) {
                            result.setErrorCode(configError(result.resourceType()).code())
                                    .setErrorMessage(configError(result.resourceType()).message())
                                    .setConfigs(new ArrayList<>());
                        }
                    }));
            case ALTER_CONFIGS -> alterConfigs((AlterConfigsRequestData) request, session);
            case INCREMENTAL_ALTER_CONFIGS -> incrementalAlterConfigs((IncrementalAlterConfigsRequestData) request,
                    session);
            case FIND_COORDINATOR -> findCoordinator((FindCoordinatorRequestData) request, version, session);
            case JOIN_GROUP -> group(session, AclOperation.READ, ((JoinGroupRequestData) request).groupId());
            case SYNC_GROUP -> group(session, AclOperation.READ, ((SyncGroupRequestData) request).groupId());
            case HEARTBEAT -> group(session, AclOperation.READ, ((HeartbeatRequestData) request).groupId());
            case LEAVE_GROUP -> group(session, AclOperation.READ, ((LeaveGroupRequestData) request).groupId());
            case CONSUMER_GROUP_HEARTBEAT -> consumerHeartbeat((ConsumerGroupHeartbeatRequestData) request, session);
            case CONSUMER_GROUP_DESCRIBE -> Checked.after(response -> consumerGroupDescribe(
                    (ConsumerGroupDescribeResponseData) response, session));
            case OFFSET_COMMIT -> offsetCommit((OffsetCommitRequestData) request, session);
            case OFFSET_FETCH -> offsetFetch((OffsetFetchRequestData) request, version, session);
            case DESCRIBE_GROUPS -> Checked.after(response -> ((DescribeGroupsResponseData) response).groups()
                    .forEach(group -> {
                        if (!allowed(session, AclOperation.DESCRIBE, ResourceType.GROUP, group.groupId())) {
                            group.setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()).setGroupState("")
                                    .setProtocolType("").setProtocolData("").setMembers(new ArrayList<>());
                        }
                    }));
            case LIST_GROUPS -> clusterAllowed(session, AclOperation.DESCRIBE) ? Checked.ALLOWED
                    : Checked.after(response -> ((ListGroupsResponseData) response).groups().removeIf(group ->
                            !allowed(session, AclOperation.DESCRIBE, ResourceType.GROUP, group.groupId())));
            case DELETE_GROUPS -> deleteGroups((DeleteGroupsRequestData) request, session);
            case OFFSET_DELETE -> offsetDelete((OffsetDeleteRequestData) request, session);
            case INIT_PRODUCER_ID -> initProducerId((InitProducerIdRequestData) request, session);
            case ADD_PARTITIONS_TO_TXN -> addPartitionsToTxn((AddPartitionsToTxnRequestData) request, version,
                    session);
            case ADD_OFFSETS_TO_TXN -> {
                AddOffsetsToTxnRequestData add = (AddOffsetsToTxnRequestData) request;
                Checked id = transactionalId(session, add.transactionalId());
                yield id.denied() != null ? id : group(session, AclOperation.READ, add.groupId());
            }
            case END_TXN -> transactionalId(session, ((EndTxnRequestData) request).transactionalId());
            case TXN_OFFSET_COMMIT -> txnOffsetCommit((TxnOffsetCommitRequestData) request, session);
            case WRITE_TXN_MARKERS, ELECT_LEADERS -> clusterAllowed(session,
                    key == ApiKeys.ELECT_LEADERS ? AclOperation.ALTER : AclOperation.CLUSTER_ACTION)
                    ? Checked.ALLOWED : Checked.denied(new ClusterAuthorizationException(
                            "Request was not authorized: " + key.name + " needs " + (key == ApiKeys.ELECT_LEADERS
                                    ? "ALTER" : "CLUSTER_ACTION") + " on the cluster."));
            case DESCRIBE_TRANSACTIONS -> Checked.after(response -> ((DescribeTransactionsResponseData) response)
                    .transactionStates().replaceAll(state -> {
                        if (!allowed(session, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                state.transactionalId())) {
                            // The id and its error alone, as Kafka answers it: not even the timeout or start time.
                            return new DescribeTransactionsResponseData.TransactionState()
                                    .setTransactionalId(state.transactionalId())
                                    .setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code());
                        }
                        state.topics().removeIf(topic -> !allowed(session, AclOperation.DESCRIBE,
                                ResourceType.TOPIC, topic.topic()));
                        return state;
                    }));
            case LIST_TRANSACTIONS -> Checked.after(response -> ((ListTransactionsResponseData) response)
                    .transactionStates().removeIf(state -> !allowed(session, AclOperation.DESCRIBE,
                            ResourceType.TRANSACTIONAL_ID, state.transactionalId())));
            case DESCRIBE_PRODUCERS -> Checked.after(response -> ((DescribeProducersResponseData) response).topics()
                    .forEach(topic -> {
                        if (!allowed(session, AclOperation.READ, ResourceType.TOPIC, topic.name())) {
                            topic.partitions().forEach(p -> p.setErrorCode(code()).setErrorMessage(null)
                                    .setActiveProducers(new ArrayList<>()));
                        }
                    }));
            case DESCRIBE_LOG_DIRS -> clusterAllowed(session, AclOperation.DESCRIBE) ? Checked.ALLOWED
                    : Checked.after(response -> ((DescribeLogDirsResponseData) response)
                            .setErrorCode(Errors.CLUSTER_AUTHORIZATION_FAILED.code()).setResults(new ArrayList<>()));
            case DESCRIBE_ACLS, DESCRIBE_USER_SCRAM_CREDENTIALS -> cluster(session, AclOperation.DESCRIBE, key);
            case DESCRIBE_CLIENT_QUOTAS -> cluster(session, AclOperation.DESCRIBE_CONFIGS, key);
            case ALTER_CLIENT_QUOTAS -> cluster(session, AclOperation.ALTER_CONFIGS, key);
            case CREATE_ACLS, DELETE_ACLS, ALTER_USER_SCRAM_CREDENTIALS -> cluster(session, AclOperation.ALTER, key);
            default -> Checked.denied(new ClusterAuthorizationException(key.name + " is not authorized here"));
        };
    }

    /**
     * @return what fills a response's authorized-operations fields, after the ACLs had their say (so an entry refused
     *     is answered with an error, and left alone here); null if the request asks for none
     */
    private Consumer<ApiMessage> operations(ApiKeys key, short version, ApiMessage request, Session session) {
        return switch (key) {
            case METADATA -> {
                MetadataRequestData metadata = (MetadataRequestData) request;
                boolean topics = metadata.includeTopicAuthorizedOperations();
                // The cluster's field is in v8 to v10 only.
                boolean clusterWide = version <= 10 && metadata.includeClusterAuthorizedOperations();
                yield !topics && !clusterWide ? null : response -> {
                    MetadataResponseData answer = (MetadataResponseData) response;
                    if (clusterWide) {
                        answer.setClusterAuthorizedOperations(clusterOperations(session));
                    }
                    if (topics) {
                        // Not an unknown id (no name), nor a topic refused.
                        answer.topics().forEach(topic -> {
                            if (topic.name() != null && topic.errorCode() != code()) {
                                topic.setTopicAuthorizedOperations(authorizedOperations(session, ResourceType.TOPIC,
                                        topic.name()));
                            }
                        });
                    }
                };
            }
            // Always answered, whatever the request says, as Kafka's handler answers it.
            case DESCRIBE_TOPIC_PARTITIONS -> response -> ((DescribeTopicPartitionsResponseData) response).topics()
                    .forEach(topic -> {
                        if (topic.errorCode() != code()) {
                            topic.setTopicAuthorizedOperations(authorizedOperations(session, ResourceType.TOPIC,
                                    topic.name()));
                        }
                    });
            case DESCRIBE_CLUSTER -> !((DescribeClusterRequestData) request).includeClusterAuthorizedOperations()
                    ? null : response -> {
                        DescribeClusterResponseData answer = (DescribeClusterResponseData) response;
                        if (answer.errorCode() == Errors.NONE.code()) {
                            answer.setClusterAuthorizedOperations(clusterOperations(session));
                        }
                    };
            case DESCRIBE_GROUPS -> !((DescribeGroupsRequestData) request).includeAuthorizedOperations() ? null
                    : response -> ((DescribeGroupsResponseData) response).groups().forEach(group -> {
                        if (group.errorCode() == Errors.NONE.code()) {
                            group.setAuthorizedOperations(authorizedOperations(session, ResourceType.GROUP,
                                    group.groupId()));
                        }
                    });
            case CONSUMER_GROUP_DESCRIBE -> !((ConsumerGroupDescribeRequestData) request).includeAuthorizedOperations()
                    ? null : response -> ((ConsumerGroupDescribeResponseData) response).groups().forEach(group -> {
                        if (group.errorCode() == Errors.NONE.code()) {
                            group.setAuthorizedOperations(authorizedOperations(session, ResourceType.GROUP,
                                    group.groupId()));
                        }
                    });
            default -> null;
        };
    }

    /**
     * @return Kafka's authorized-operations bit field of a resource: bit i set for each operation of code i, of those
     *     Kafka answers for the resource's type, that the principal may do
     */
    private int authorizedOperations(Session session, ResourceType type, String name) {
        List<AclOperation> supported = switch (type) {
            case TOPIC -> TOPIC_OPERATIONS;
            case GROUP -> GROUP_OPERATIONS;
            case CLUSTER -> CLUSTER_OPERATIONS;
            default -> throw new IllegalArgumentException("no authorized operations answered for " + type);
        };
        int operations = 0;
        for (AclOperation operation : supported) {
            if (allowed(session, operation, type, name)) {
                operations |= 1 << operation.code();
            }
        }
        return operations;
    }

    /** @return the cluster's authorized operations; none without Describe on the cluster, as Kafka answers */
    private int clusterOperations(Session session) {
        return clusterAllowed(session, AclOperation.DESCRIBE)
                ? authorizedOperations(session, ResourceType.CLUSTER, CLUSTER) : 0;
    }

    /** @return which topics a principal may describe: those a listing of all topics names to it */
    Predicate<String> describable(Session session) {
        return enabled ? topics(session, AclOperation.DESCRIBE) : topic -> true;
    }

    /** @return who may read which topic in a Fetch (a consumer's: Read on the topic) */
    Predicate<String> readable(Session session) {
        return enabled ? topics(session, AclOperation.READ) : topic -> true;
    }

    private static short code() {
        return Errors.TOPIC_AUTHORIZATION_FAILED.code();
    }

    private Checked cluster(Session session, AclOperation operation, ApiKeys key) {
        return clusterAllowed(session, operation) ? Checked.ALLOWED : Checked.denied(new ClusterAuthorizationException(
                "Request was not authorized: " + key.name + " needs " + operation + " on the cluster."));
    }

    private Checked group(Session session, AclOperation operation, String group) {
        return allowed(session, operation, ResourceType.GROUP, group) ? Checked.ALLOWED
                : Checked.denied(new GroupAuthorizationException("Not authorized to access group: " + group));
    }

    /** Kafka 4.3.1's message for a consumer group whose assignments name a topic the principal may not describe. */
    static final String UNDESCRIBABLE_ASSIGNMENT =
            "The group has described topic(s) that the client is not authorized to describe.";

    /**
     * Describe on each group, and, as Kafka 4.3.1 checks, on every topic its members' assignments and target
     * assignments name: a group that names one the principal may not describe is answered TOPIC_AUTHORIZATION_FAILED,
     * with nothing else of it.
     */
    private void consumerGroupDescribe(ConsumerGroupDescribeResponseData response, Session session) {
        List<ConsumerGroupDescribeResponseData.DescribedGroup> groups = response.groups();
        for (int i = 0; i < groups.size(); i++) {
            ConsumerGroupDescribeResponseData.DescribedGroup group = groups.get(i);
            if (!allowed(session, AclOperation.DESCRIBE, ResourceType.GROUP, group.groupId())) {
                group.setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()).setErrorMessage(null)
                        .setMembers(new ArrayList<>());
            } else if (group.errorCode() == Errors.NONE.code() && group.members().stream()
                    .flatMap(member -> java.util.stream.Stream.of(member.assignment(), member.targetAssignment()))
                    .filter(java.util.Objects::nonNull)
                    .flatMap(assignment -> assignment.topicPartitions().stream())
                    .anyMatch(topic -> !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                            topic.topicName()))) {
                groups.set(i, new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId(group.groupId())
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                        .setErrorMessage(UNDESCRIBABLE_ASSIGNMENT).setMembers(new ArrayList<>()));
            }
        }
    }

    /**
     * Read on the group, and, as Kafka 4.3.1 checks, Describe on every topic the member subscribes to by name:
     * without it the heartbeat is answered TOPIC_AUTHORIZATION_FAILED alone, and the member does not join.
     */
    private Checked consumerHeartbeat(ConsumerGroupHeartbeatRequestData request, Session session) {
        Checked group = group(session, AclOperation.READ, request.groupId());
        if (group.denied() != null || request.subscribedTopicNames() == null) {
            return group;
        }
        for (String topic : request.subscribedTopicNames()) {
            if (!allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic)) {
                return Checked.denied(new Refused(new ConsumerGroupHeartbeatResponseData()
                        .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())));
            }
        }
        return Checked.ALLOWED;
    }

    private Checked transactionalId(Session session, String id) {
        return allowed(session, AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, id) ? Checked.ALLOWED
                : Checked.denied(new TransactionalIdAuthorizationException(
                        "Transactional Id authorization failed."));
    }

    private Checked produce(ProduceRequestData request, Session session) {
        if (request.transactionalId() != null) {
            Checked id = transactionalId(session, request.transactionalId());
            if (id.denied() != null) {
                return id;
            }
        }
        List<ProduceRequestData.TopicProduceData> denied = new ArrayList<>();
        for (ProduceRequestData.TopicProduceData topic : request.topicData()) {
            String name = topic.name() != null && !topic.name().isEmpty() ? topic.name()
                    : KafkaTopicIds.nameOf(partitions, topic.topicId());
            if (name != null && !allowed(session, AclOperation.WRITE, ResourceType.TOPIC, name)) {
                denied.add(topic);
            }
        }
        if (denied.isEmpty()) {
            return Checked.ALLOWED;
        }
        if (request.acks() == 0) {
            // No answer to carry the refusal: the connection is closed, as Kafka's broker closes it.
            return Checked.denied(new org.apache.kafka.common.errors.TopicAuthorizationException(
                    "Not authorized to write to a topic of an acks=0 produce"));
        }
        ProduceRequestData.TopicProduceDataCollection kept = new ProduceRequestData.TopicProduceDataCollection();
        for (ProduceRequestData.TopicProduceData topic : request.topicData()) {
            if (!denied.contains(topic)) {
                kept.add(topic.duplicate());
            }
        }
        request.setTopicData(kept);
        return Checked.after(response -> {
            ProduceResponseData produced = (ProduceResponseData) response;
            for (ProduceRequestData.TopicProduceData topic : denied) {
                ProduceResponseData.TopicProduceResponse answer = new ProduceResponseData.TopicProduceResponse()
                        .setName(topic.name()).setTopicId(topic.topicId());
                topic.partitionData().forEach(p -> answer.partitionResponses().add(
                        new ProduceResponseData.PartitionProduceResponse().setIndex(p.index()).setErrorCode(code())
                                .setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1)));
                produced.responses().add(answer);
            }
        });
    }

    private Checked metadata(MetadataRequestData request, short version, Session session) {
        boolean all = request.topics() == null;
        Set<String> named = new HashSet<>();
        if (!all && autoCreateTopics && (version < 4 || request.allowAutoTopicCreation())
                && request.topics().stream().allMatch(topic -> Uuid.ZERO_UUID.equals(topic.topicId()))
                && !clusterAllowed(session, AclOperation.CREATE)) {
            // As Kafka: a topic that would be created but that the principal may describe and not create is answered
            // TOPIC_AUTHORIZATION_FAILED (by its name, which it gave), and the others are created.
            request.topics().removeIf(topic -> {
                boolean refused = topic.name() != null && partitions.count(topic.name()) == 0
                        && allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name())
                        && !allowed(session, AclOperation.CREATE, ResourceType.TOPIC, topic.name());
                if (refused) {
                    named.add(topic.name());
                }
                return refused;
            });
        }
        if (!all) {
            // Read as the handler reads it: a request that names a topic by id (v12+) is answered for its ids alone,
            // whatever names it gives (Admin's by id leave them ""); one the version does not allow is refused first.
            boolean byIds = false;
            for (MetadataRequestData.MetadataRequestTopic topic : request.topics()) {
                TopicApis.checkNamedAsVersionAllows(topic, version);
                byIds |= !Uuid.ZERO_UUID.equals(topic.topicId());
            }
            List<MetadataRequestData.MetadataRequestTopic> kept = new ArrayList<>();
            for (MetadataRequestData.MetadataRequestTopic topic : request.topics()) {
                if (byIds && Uuid.ZERO_UUID.equals(topic.topicId())) {
                    continue;
                }
                String name = byIds ? KafkaTopicIds.nameOf(partitions, topic.topicId()) : topic.name();
                if (name != null && !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, name)) {
                    named.add(byIds ? "\u0000" + topic.topicId() : name);
                } else {
                    kept.add(topic);
                }
            }
            request.setTopics(kept);
        }
        return Checked.after(response -> {
            MetadataResponseData metadata = (MetadataResponseData) response;
            if (all) {
                metadata.topics().removeIf(topic -> !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                        topic.name()));
            }
            for (String name : named) {
                boolean byId = name.startsWith("\u0000");
                metadata.topics().add(new MetadataResponseData.MetadataResponseTopic().setErrorCode(code())
                        .setName(byId ? null : name).setTopicId(byId ? Uuid.fromString(name.substring(1))
                                : Uuid.ZERO_UUID).setPartitions(new ArrayList<>()));
            }
        });
    }

    private void describeTopicPartitions(DescribeTopicPartitionsResponseData response, Session session) {
        List<DescribeTopicPartitionsResponseData.DescribeTopicPartitionsResponseTopic> denied = new ArrayList<>();
        for (var topic : response.topics()) {
            if (topic.name() != null && !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name())) {
                denied.add(topic);
            }
        }
        for (var topic : denied) {
            topic.setErrorCode(code()).setTopicId(Uuid.ZERO_UUID).setPartitions(new ArrayList<>());
        }
    }

    private Checked deleteRecords(DeleteRecordsRequestData request, Session session) {
        List<DeleteRecordsRequestData.DeleteRecordsTopic> denied = new ArrayList<>();
        request.topics().removeIf(topic -> {
            boolean refused = !allowed(session, AclOperation.DELETE, ResourceType.TOPIC, topic.name());
            if (refused) {
                denied.add(topic);
            }
            return refused;
        });
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(topic -> {
            var result = new DeleteRecordsResponseData.DeleteRecordsTopicResult().setName(topic.name());
            topic.partitions().forEach(p -> result.partitions().add(
                    new DeleteRecordsResponseData.DeleteRecordsPartitionResult().setPartitionIndex(p.partitionIndex())
                            .setLowWatermark(-1).setErrorCode(code())));
            ((DeleteRecordsResponseData) response).topics().add(result);
        }));
    }

    private Checked createTopics(CreateTopicsRequestData request, Session session) {
        boolean clusterCreate = clusterAllowed(session, AclOperation.CREATE);
        List<String> denied = new ArrayList<>();
        CreateTopicsRequestData.CreatableTopicCollection kept = new CreateTopicsRequestData.CreatableTopicCollection();
        for (CreateTopicsRequestData.CreatableTopic topic : request.topics()) {
            if (clusterCreate || allowed(session, AclOperation.CREATE, ResourceType.TOPIC, topic.name())) {
                kept.add(topic.duplicate());
            } else {
                denied.add(topic.name());
            }
        }
        request.setTopics(kept);
        return Checked.after(response -> {
            CreateTopicsResponseData created = (CreateTopicsResponseData) response;
            for (CreateTopicsResponseData.CreatableTopicResult result : created.topics()) {
                if (result.errorCode() == Errors.NONE.code()
                        && !allowed(session, AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, result.name())) {
                    result.setTopicConfigErrorCode(code()).setConfigs(null);
                }
            }
            for (String name : denied) {
                created.topics().add(new CreateTopicsResponseData.CreatableTopicResult().setName(name)
                        .setErrorCode(code()).setErrorMessage("Authorization failed.").setNumPartitions(-1)
                        .setReplicationFactor((short) -1)); // as Kafka's controller answers: no config error
            }
        });
    }

    private Checked deleteTopics(DeleteTopicsRequestData request, short version, Session session) {
        List<DeleteTopicsResponseData.DeletableTopicResult> refused = new ArrayList<>();
        if (version < 6) {
            request.topicNames().removeIf(name -> {
                boolean no = !allowed(session, AclOperation.DELETE, ResourceType.TOPIC, name);
                if (no) {
                    refused.add(new DeleteTopicsResponseData.DeletableTopicResult().setName(name)
                            .setErrorCode(code()));
                }
                return no;
            });
        } else {
            request.topics().removeIf(topic -> {
                String name = topic.name() != null ? topic.name() : KafkaTopicIds.nameOf(partitions, topic.topicId());
                if (name == null) {
                    return false;
                }
                if (topic.name() == null && !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, name)) {
                    // A topic named by an id the principal may not describe stays unknown to it.
                    refused.add(new DeleteTopicsResponseData.DeletableTopicResult().setTopicId(topic.topicId())
                            .setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()));
                    return true;
                }
                if (!allowed(session, AclOperation.DELETE, ResourceType.TOPIC, name)) {
                    refused.add(new DeleteTopicsResponseData.DeletableTopicResult().setName(topic.name())
                            .setTopicId(topic.topicId()).setErrorCode(code()));
                    return true;
                }
                return false;
            });
        }
        return refused.isEmpty() ? Checked.ALLOWED : Checked.after(response -> refused.forEach(result ->
                ((DeleteTopicsResponseData) response).responses().add(result)));
    }

    private Checked createPartitions(CreatePartitionsRequestData request, Session session) {
        List<String> denied = new ArrayList<>();
        CreatePartitionsRequestData.CreatePartitionsTopicCollection kept =
                new CreatePartitionsRequestData.CreatePartitionsTopicCollection();
        for (CreatePartitionsRequestData.CreatePartitionsTopic topic : request.topics()) {
            if (allowed(session, AclOperation.ALTER, ResourceType.TOPIC, topic.name())) {
                kept.add(topic.duplicate());
            } else {
                denied.add(topic.name());
            }
        }
        request.setTopics(kept);
        // Without a message, as Kafka's controller answers it.
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(name ->
                ((CreatePartitionsResponseData) response).results().add(
                        new CreatePartitionsResponseData.CreatePartitionsTopicResult().setName(name)
                                .setErrorCode(code()))));
    }

    /**
     * Resource types of the config APIs: 2 a topic, 32 a group (checked on themselves, as Kafka checks them), 4 a
     * broker, 8 a broker's logger, 16 client metrics (checked on the cluster).
     */
    private boolean configAllowed(Session session, AclOperation operation, byte type, String name) {
        return switch (type) {
            case 2 -> allowed(session, operation, ResourceType.TOPIC, name);
            case 32 -> allowed(session, operation, ResourceType.GROUP, name);
            default -> clusterAllowed(session, operation);
        };
    }

    private static Errors configError(byte type) {
        return switch (type) {
            case 2 -> Errors.TOPIC_AUTHORIZATION_FAILED;
            case 32 -> Errors.GROUP_AUTHORIZATION_FAILED;
            default -> Errors.CLUSTER_AUTHORIZATION_FAILED;
        };
    }

    /**
     * As Kafka: what its broker refuses before the ACLs (a resource or config named twice, a null value, an unknown
     * resource type, a broker resource naming another broker) is left to the config APIs to answer, whatever the
     * principal may do; the answers keep the request's order.
     */
    private Checked alterConfigs(AlterConfigsRequestData request, Session session) {
        List<AlterConfigsRequestData.AlterConfigsResource> denied = new ArrayList<>();
        AlterConfigsRequestData.AlterConfigsResourceCollection kept =
                new AlterConfigsRequestData.AlterConfigsResourceCollection();
        Set<Object> namedTwice = Configs.namedTwice(request.resources(), r -> r.resourceType(),
                r -> r.resourceName());
        List<Map.Entry<Byte, String>> order = new ArrayList<>();
        for (AlterConfigsRequestData.AlterConfigsResource resource : request.resources()) {
            order.add(Map.entry(resource.resourceType(), resource.resourceName()));
            if (Configs.beforeAcls(resource, namedTwice.contains(resource), nodeId) != null
                    || configAllowed(session, AclOperation.ALTER_CONFIGS, resource.resourceType(),
                            resource.resourceName())) {
                kept.add(resource.duplicate());
            } else {
                denied.add(resource);
            }
        }
        request.setResources(kept);
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> {
            List<AlterConfigsResponseData.AlterConfigsResourceResponse> answers =
                    ((AlterConfigsResponseData) response).responses();
            denied.forEach(resource -> answers.add(new AlterConfigsResponseData.AlterConfigsResourceResponse()
                    .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                    .setErrorCode(configError(resource.resourceType()).code())
                    .setErrorMessage(configError(resource.resourceType()).message())));
            answers.sort(inRequestOrder(order, a -> Map.entry(a.resourceType(), a.resourceName())));
        });
    }

    private Checked incrementalAlterConfigs(IncrementalAlterConfigsRequestData request, Session session) {
        List<IncrementalAlterConfigsRequestData.AlterConfigsResource> denied = new ArrayList<>();
        IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection kept =
                new IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection();
        Set<Object> namedTwice = Configs.namedTwice(request.resources(), r -> r.resourceType(),
                r -> r.resourceName());
        List<Map.Entry<Byte, String>> order = new ArrayList<>();
        for (IncrementalAlterConfigsRequestData.AlterConfigsResource resource : request.resources()) {
            order.add(Map.entry(resource.resourceType(), resource.resourceName()));
            if (Configs.beforeAcls(resource, namedTwice.contains(resource), nodeId) != null
                    || configAllowed(session, AclOperation.ALTER_CONFIGS, resource.resourceType(),
                            resource.resourceName())) {
                kept.add(resource.duplicate());
            } else {
                denied.add(resource);
            }
        }
        request.setResources(kept);
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> {
            List<IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse> answers =
                    ((IncrementalAlterConfigsResponseData) response).responses();
            denied.forEach(resource -> answers.add(
                    new IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse()
                            .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                            .setErrorCode(configError(resource.resourceType()).code())
                            .setErrorMessage(configError(resource.resourceType()).message())));
            answers.sort(inRequestOrder(order, a -> Map.entry(a.resourceType(), a.resourceName())));
        });
    }

    /** @return answers ordered as the request named their resources (a stable order, for names given twice) */
    private static <A> Comparator<A> inRequestOrder(List<Map.Entry<Byte, String>> order,
                                                    Function<A, Map.Entry<Byte, String>> key) {
        Map<Map.Entry<Byte, String>, Integer> place = new HashMap<>();
        for (int i = order.size() - 1; i >= 0; i--) {
            place.put(order.get(i), i);
        }
        return Comparator.comparingInt(answer -> place.getOrDefault(key.apply(answer), order.size()));
    }

    private boolean coordinatorKeyAllowed(Session session, byte keyType, String key) {
        return keyType == 1 ? allowed(session, AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)
                : allowed(session, AclOperation.DESCRIBE, ResourceType.GROUP, key);
    }

    private Checked findCoordinator(FindCoordinatorRequestData request, short version, Session session) {
        if (version < 4) {
            if (coordinatorKeyAllowed(session, request.keyType(), request.key())) {
                return Checked.ALLOWED;
            }
            return Checked.denied(request.keyType() == 1
                    ? new TransactionalIdAuthorizationException("Transactional Id authorization failed.")
                    : new GroupAuthorizationException("Not authorized to access group: " + request.key()));
        }
        return Checked.after(response -> ((FindCoordinatorResponseData) response).coordinators().forEach(found -> {
            if (!coordinatorKeyAllowed(session, request.keyType(), found.key())) {
                Errors error = request.keyType() == 1 ? Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
                        : Errors.GROUP_AUTHORIZATION_FAILED;
                found.setErrorCode(error.code()).setErrorMessage(error.message()).setNodeId(-1).setHost("")
                        .setPort(-1);
            }
        }));
    }

    private Checked offsetCommit(OffsetCommitRequestData request, Session session) {
        Checked group = group(session, AclOperation.READ, request.groupId());
        if (group.denied() != null) {
            return group;
        }
        List<OffsetCommitRequestData.OffsetCommitRequestTopic> denied = new ArrayList<>();
        request.topics().removeIf(topic -> {
            String name = topic.name() != null && !topic.name().isEmpty() ? topic.name()
                    : KafkaTopicIds.nameOf(partitions, topic.topicId());
            boolean no = name != null && !allowed(session, AclOperation.READ, ResourceType.TOPIC, name);
            if (no) {
                denied.add(topic);
            }
            return no;
        });
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(topic -> {
            var answer = new OffsetCommitResponseData.OffsetCommitResponseTopic().setName(topic.name())
                    .setTopicId(topic.topicId());
            topic.partitions().forEach(p -> answer.partitions().add(
                    new OffsetCommitResponseData.OffsetCommitResponsePartition().setPartitionIndex(p.partitionIndex())
                            .setErrorCode(code())));
            ((OffsetCommitResponseData) response).topics().add(answer);
        }));
    }

    private Checked offsetFetch(OffsetFetchRequestData request, short version, Session session) {
        if (version < 8) {
            Checked group = group(session, AclOperation.DESCRIBE, request.groupId());
            if (group.denied() != null) {
                return group;
            }
            boolean all = request.topics() == null;
            return Checked.after(response -> {
                OffsetFetchResponseData fetched = (OffsetFetchResponseData) response;
                if (all) {
                    fetched.topics().removeIf(topic -> !allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC,
                            topic.name()));
                } else {
                    fetched.topics().forEach(topic -> {
                        if (!allowed(session, AclOperation.DESCRIBE, ResourceType.TOPIC, topic.name())) {
                            topic.partitions().forEach(p -> p.setErrorCode(code()).setCommittedOffset(-1)
                                    .setMetadata(""));
                        }
                    });
                }
            });
        }
        Set<String> allTopics = new HashSet<>();
        for (OffsetFetchRequestData.OffsetFetchRequestGroup group : request.groups()) {
            if (group.topics() == null) {
                allTopics.add(group.groupId());
            }
        }
        return Checked.after(response -> ((OffsetFetchResponseData) response).groups().forEach(group -> {
            if (!allowed(session, AclOperation.DESCRIBE, ResourceType.GROUP, group.groupId())) {
                group.setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()).setTopics(new ArrayList<>());
                return;
            }
            Predicate<String> describable = name -> name == null || allowed(session, AclOperation.DESCRIBE,
                    ResourceType.TOPIC, name);
            if (allTopics.contains(group.groupId())) {
                group.topics().removeIf(topic -> !describable.test(topicName(topic.name(), topic.topicId())));
            } else {
                group.topics().forEach(topic -> {
                    if (!describable.test(topicName(topic.name(), topic.topicId()))) {
                        topic.partitions().forEach(p -> p.setErrorCode(code()).setCommittedOffset(-1)
                                .setMetadata(""));
                    }
                });
            }
        }));
    }

    private String topicName(String name, Uuid id) {
        return name != null && !name.isEmpty() ? name : KafkaTopicIds.nameOf(partitions, id);
    }

    private Checked deleteGroups(DeleteGroupsRequestData request, Session session) {
        List<String> denied = new ArrayList<>();
        request.groupsNames().removeIf(group -> {
            boolean no = !allowed(session, AclOperation.DELETE, ResourceType.GROUP, group);
            if (no) {
                denied.add(group);
            }
            return no;
        });
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(group ->
                ((DeleteGroupsResponseData) response).results().add(new DeleteGroupsResponseData.DeletableGroupResult()
                        .setGroupId(group).setErrorCode(Errors.GROUP_AUTHORIZATION_FAILED.code()))));
    }

    private Checked offsetDelete(OffsetDeleteRequestData request, Session session) {
        Checked group = group(session, AclOperation.DELETE, request.groupId());
        if (group.denied() != null) {
            return group;
        }
        List<OffsetDeleteRequestData.OffsetDeleteRequestTopic> denied = new ArrayList<>();
        OffsetDeleteRequestData.OffsetDeleteRequestTopicCollection kept =
                new OffsetDeleteRequestData.OffsetDeleteRequestTopicCollection();
        for (OffsetDeleteRequestData.OffsetDeleteRequestTopic topic : request.topics()) {
            if (allowed(session, AclOperation.READ, ResourceType.TOPIC, topic.name())) {
                kept.add(topic.duplicate());
            } else {
                denied.add(topic);
            }
        }
        request.setTopics(kept);
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(topic -> {
            var answer = new OffsetDeleteResponseData.OffsetDeleteResponseTopic().setName(topic.name());
            topic.partitions().forEach(p -> answer.partitions().add(
                    new OffsetDeleteResponseData.OffsetDeleteResponsePartition().setPartitionIndex(p.partitionIndex())
                            .setErrorCode(code())));
            ((OffsetDeleteResponseData) response).topics().add(answer);
        }));
    }

    private Checked initProducerId(InitProducerIdRequestData request, Session session) {
        if (request.transactionalId() != null) {
            return transactionalId(session, request.transactionalId());
        }
        // An idempotent producer: IdempotentWrite on the cluster, or Write on any topic (Kafka 3.0 and later).
        if (clusterAllowed(session, AclOperation.IDEMPOTENT_WRITE) || authorizer().authorizeByResourceType(
                session.principal(), session.address().getHostAddress(), AclOperation.WRITE, ResourceType.TOPIC)) {
            return Checked.ALLOWED;
        }
        return Checked.denied(new ClusterAuthorizationException("Request was not authorized: an idempotent producer"
                + " needs IDEMPOTENT_WRITE on the cluster or WRITE on a topic."));
    }

    private Checked addPartitionsToTxn(AddPartitionsToTxnRequestData request, short version, Session session) {
        if (version >= 4) {
            // Batches of transactions come from brokers.
            return cluster(session, AclOperation.CLUSTER_ACTION, ApiKeys.ADD_PARTITIONS_TO_TXN);
        }
        Checked id = transactionalId(session, request.v3AndBelowTransactionalId());
        if (id.denied() != null) {
            return id;
        }
        boolean anyDenied = false;
        for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic topic : request.v3AndBelowTopics()) {
            anyDenied |= !allowed(session, AclOperation.WRITE, ResourceType.TOPIC, topic.name());
        }
        if (!anyDenied) {
            return Checked.ALLOWED;
        }
        // Nothing is added: the topics refused are answered so, the others OPERATION_NOT_ATTEMPTED.
        AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResultCollection results =
                new AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResultCollection();
        for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic topic : request.v3AndBelowTopics()) {
            short error = allowed(session, AclOperation.WRITE, ResourceType.TOPIC, topic.name()) ? Errors
                    .OPERATION_NOT_ATTEMPTED.code() : code();
            var result = new AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResult().setName(topic.name());
            topic.partitions().forEach(p -> result.resultsByPartition().add(
                    new AddPartitionsToTxnResponseData.AddPartitionsToTxnPartitionResult().setPartitionIndex(p)
                            .setPartitionErrorCode(error)));
            results.add(result);
        }
        return new Checked(new Refused(new AddPartitionsToTxnResponseData().setResultsByTopicV3AndBelow(results)),
                response -> { });
    }

    private Checked txnOffsetCommit(TxnOffsetCommitRequestData request, Session session) {
        Checked id = transactionalId(session, request.transactionalId());
        if (id.denied() != null) {
            return id;
        }
        Checked group = group(session, AclOperation.READ, request.groupId());
        if (group.denied() != null) {
            return group;
        }
        List<TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic> denied = new ArrayList<>();
        request.topics().removeIf(topic -> {
            boolean no = !allowed(session, AclOperation.READ, ResourceType.TOPIC, topic.name());
            if (no) {
                denied.add(topic);
            }
            return no;
        });
        return denied.isEmpty() ? Checked.ALLOWED : Checked.after(response -> denied.forEach(topic -> {
            var answer = new TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic().setName(topic.name());
            topic.partitions().forEach(p -> answer.partitions().add(
                    new TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition()
                            .setPartitionIndex(p.partitionIndex()).setErrorCode(code())));
            ((TxnOffsetCommitResponseData) response).topics().add(answer);
        }));
    }

    /** A request refused whole with an answer of its own rather than its API's error response. */
    static final class Refused extends ApiException {
        private static final long serialVersionUID = 1L;

        private final transient ApiMessage answer;

        Refused(ApiMessage answer) {
            super("refused by the ACLs");
            this.answer = answer;
        }

        ApiMessage answer() {
            return answer;
        }
    }
}
