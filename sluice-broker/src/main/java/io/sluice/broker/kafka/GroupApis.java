package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.ConsumerPosition;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.DeleteGroupsResponseData;
import org.apache.kafka.common.message.DescribeGroupsRequestData;
import org.apache.kafka.common.message.DescribeGroupsResponseData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.HeartbeatRequestData;
import org.apache.kafka.common.message.HeartbeatResponseData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.LeaveGroupRequestData;
import org.apache.kafka.common.message.LeaveGroupResponseData;
import org.apache.kafka.common.message.ListGroupsRequestData;
import org.apache.kafka.common.message.ListGroupsResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetCommitResponseData;
import org.apache.kafka.common.message.OffsetDeleteRequestData;
import org.apache.kafka.common.message.OffsetDeleteResponseData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer-group APIs: the cluster's controller coordinates every group (FindCoordinator names it, the others
 * answer NOT_COORDINATOR; a broker alone is its own controller), membership is the {@link GroupCoordinator}'s, and
 * committed offsets go through the {@link ClusterView} and are kept as every broker's store consumer positions. A
 * group id is kept under its store name ({@link GroupNames}). Positions are saved with the store's checkpoints and at close: after a crash a group may
 * resume up to one checkpoint interval back (it reads some records again; none is skipped). Offset metadata
 * strings are not kept.
 */
final class GroupApis {

    private static final Logger LOG = LoggerFactory.getLogger(GroupApis.class);

    private static final byte GROUP_KEY = 0;
    private static final byte TRANSACTION_KEY = 1;
    private static final String CONSUMER = "consumer";

    private final Partitions partitions;
    private final ClusterView cluster;
    private final java.util.function.LongSupplier clock;
    private final GroupCoordinator coordinator;
    private final ConsumerGroups consumerGroups;
    private final KafkaApis.Settings settings;
    /** When this broker started, store clock: offsets expire no sooner than a retention after it. */
    private final long startedMillis;
    /**
     * The term requests (the expiry pass among them) last found this broker coordinating in, from its start if it
     * coordinated then; null before the first. Offsets expire no sooner than a retention after its start, as members
     * the group had on other coordinators meanwhile are not known here, and members not known here may be taken over
     * for a session after it.
     */
    private volatile Term term;

    /** @param clock the store's clock, in milliseconds: what committed offsets' times are read on */
    GroupApis(Partitions partitions, ClusterView cluster, GroupCoordinator coordinator, ConsumerGroups consumerGroups,
              KafkaApis.Settings settings, java.util.function.LongSupplier clock) {
        this.partitions = partitions;
        this.cluster = cluster;
        this.coordinator = coordinator;
        this.consumerGroups = consumerGroups;
        this.settings = settings;
        this.clock = clock;
        this.startedMillis = clock.getAsLong();
        // A broker that coordinates from its start (a broker alone always does) counts retention from its start.
        ClusterView.GroupsCoordination atStart = cluster.groupsCoordination();
        if (atStart.epoch() >= 0 && cluster.controller() == cluster.self()) {
            // A store with no topics at the start had no consumers before it: no member is one of before.
            term = new Term(atStart.epoch(), startedMillis, !partitions.topics().isEmpty());
        }
    }

    /**
     * @return NONE if this broker coordinates groups (it is the controller), else NOT_COORDINATOR
     *     (COORDINATOR_NOT_AVAILABLE while none is known), which sends clients to find it again
     */
    private Errors coordination() {
        Errors error = coordinating();
        if (error == Errors.NONE) {
            noteTerm(cluster.groupsCoordination().epoch());
        }
        return error;
    }

    /** @return {@link #coordination}'s answer, the term not noted */
    private Errors coordinating() {
        int controller = cluster.controller();
        if (controller < 0) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        if (controller != cluster.self()) {
            return Errors.NOT_COORDINATOR;
        }
        // Elected, but the metadata (committed offsets) its predecessors committed may not be applied yet.
        return cluster.controllerReady() ? Errors.NONE : Errors.COORDINATOR_LOAD_IN_PROGRESS;
    }

    /**
     * A term of this broker's as the groups' coordinator: its epoch, when requests first found it (store clock), and
     * whether groups may have had members before it (not so on a store that had no topics when the broker started).
     */
    private record Term(long epoch, long sinceMillis, boolean predecessors) {
    }


    /** @return the term of the coordinator's epoch, begun now if it is not the one noted last */
    private Term noteTerm(long epoch) {
        Term seen = term;
        if (seen != null && seen.epoch() == epoch) {
            return seen;
        }
        Term begun = new Term(epoch, clock.getAsLong(), true);
        term = begun;
        if (seen != null) {
            // Coordinating again after another broker did: the members known here are out of date.
            consumerGroups.forgetMembership();
        }
        return begun;
    }

    /**
     * @return true within a session timeout of this broker's start as the groups' coordinator: a member it does not
     *     know may then be one its predecessor (or this broker before a restart) had, whose membership lives in memory
     *     only ({@link ConsumerGroups}); Kafka, which loads membership from __consumer_offsets, would know it
     */
    private boolean membershipJustTakenOver() {
        Term seen = term;
        return seen != null && seen.predecessors()
                && clock.getAsLong() - seen.sinceMillis() < consumerGroups.sessionTimeoutMillis();
    }

    /** @return the broker coordinating every group, the controller; null if none is known */
    private ClusterView.Node coordinatorNode() {
        int controller = cluster.controller();
        return cluster.brokers().stream().filter(node -> node.id() == controller).findFirst().orElse(null);
    }

    /** Tells whether an open transaction has offsets of a group's partition to commit. */
    @FunctionalInterface
    interface PendingOffsets {
        /** @return true if a transaction not yet complete is to commit an offset of the group's partition */
        boolean pending(String groupId, String topic, int partition);
    }

    private volatile PendingOffsets pendingOffsets = (group, topic, partition) -> false;

    /** @param pending what tells OffsetFetch, when asked for stable offsets, of transactions' uncommitted offsets */
    void pendingOffsets(PendingOffsets pending) {
        this.pendingOffsets = pending;
    }

    /**
     * The group's checks of a TxnOffsetCommit, as Kafka's: this broker coordinates the group, and a member named (or a
     * generation given) belongs to its current generation; a producer that names neither commits unchecked.
     */
    Errors checkTransactionalCommit(String groupId, String memberId, String instanceId, int generation) {
        if (GroupNames.toStore(groupId) == null) {
            return Errors.INVALID_GROUP_ID;
        }
        Errors error = coordination();
        if (error != Errors.NONE) {
            return error;
        }
        if (generation < 0 && (memberId == null || memberId.isEmpty())) {
            return Errors.NONE;
        }
        Errors checked;
        if (consumerGroups.exists(groupId)) {
            checked = consumerGroups.checkCommit(groupId, memberId, generation, true, (short) 0);
        } else if (!coordinator.hasMembers(groupId)) {
            // A member named in a group with none, as Kafka answers it.
            checked = Errors.UNKNOWN_MEMBER_ID;
        } else {
            checked = coordinator.checkCommit(groupId, memberId, instanceId, generation, true);
        }
        return predecessorsMember(checked, groupId, memberId, generation) ? Errors.COORDINATOR_LOAD_IN_PROGRESS
                : checked;
    }

    /**
     * @return whether a commit refused as from a member not known here (UNKNOWN_MEMBER_ID, or ILLEGAL_GENERATION from
     *     a group with no members) may be one of the coordinator before ({@link #membershipJustTakenOver}): a member of
     *     a consumer group is taken over at its next heartbeat (a classic one joins again), and the commit, answered
     *     COORDINATOR_LOAD_IN_PROGRESS, comes again
     */
    private boolean predecessorsMember(Errors checked, String groupId, String memberId, int epoch) {
        return (checked == Errors.UNKNOWN_MEMBER_ID || checked == Errors.ILLEGAL_GENERATION) && epoch > 0
                && !coordinator.hasMembers(groupId) && !consumerGroups.knows(groupId, memberId)
                && membershipJustTakenOver();
    }

    FindCoordinatorResponseData findCoordinator(FindCoordinatorRequestData request, short version) {
        FindCoordinatorResponseData response = new FindCoordinatorResponseData();
        // Transactions are coordinated by the broker that coordinates groups, when it serves them.
        ClusterView.Node node = coordinatorNode();
        if (version < 4) {
            Errors error = coordinatorError(request.key(), request.keyType(), cluster.coordinatesTransactions());
            if (error == Errors.NONE && node == null) {
                error = Errors.COORDINATOR_NOT_AVAILABLE;
            }
            return error == Errors.NONE
                    ? response.setNodeId(node.id()).setHost(node.host()).setPort(node.port())
                    : response.setErrorCode(error.code()).setErrorMessage(coordinatorMessage(error, request.keyType())).setNodeId(-1).setHost("")
                            .setPort(-1);
        }
        List<FindCoordinatorResponseData.Coordinator> coordinators = new ArrayList<>();
        for (String key : request.coordinatorKeys()) {
            Errors error = coordinatorError(key, request.keyType(), cluster.coordinatesTransactions());
            if (error == Errors.NONE && node == null) {
                error = Errors.COORDINATOR_NOT_AVAILABLE;
            }
            FindCoordinatorResponseData.Coordinator coordinator = new FindCoordinatorResponseData.Coordinator()
                    .setKey(key);
            coordinators.add(error == Errors.NONE
                    ? coordinator.setNodeId(node.id()).setHost(node.host()).setPort(node.port())
                    : coordinator.setErrorCode(error.code()).setErrorMessage(coordinatorMessage(error, request.keyType())).setNodeId(-1)
                            .setHost("").setPort(-1));
        }
        return response.setCoordinators(coordinators);
    }

    private String coordinatorMessage(Errors error, byte keyType) {
        return keyType == TRANSACTION_KEY && error == Errors.INVALID_REQUEST && !cluster.coordinatesTransactions()
                ? "the brokers of a Sluice cluster do not coordinate transactions yet" : error.message();
    }

    private static Errors coordinatorError(String key, byte keyType, boolean transactions) {
        if (keyType == TRANSACTION_KEY) {
            // A cluster's brokers do not coordinate transactions yet: a fatal error, not an endless retry.
            // An empty transactional id is given the coordinator, as Kafka gives it (its InitProducerId is refused).
            return !transactions || key == null ? Errors.INVALID_REQUEST : Errors.NONE;
        }
        if (keyType != GROUP_KEY) {
            // Share groups (2) are not served.
            return Errors.INVALID_REQUEST;
        }
        return key == null || key.isEmpty() || GroupNames.toStore(key) == null ? Errors.INVALID_GROUP_ID : Errors.NONE;
    }

    CompletableFuture<JoinGroupResponseData> join(JoinGroupRequestData request, short version, String clientId) {
        Errors error = GroupNames.toStore(request.groupId()) == null ? Errors.INVALID_GROUP_ID : coordination();
        if (error != Errors.NONE) {
            return CompletableFuture.completedFuture(new JoinGroupResponseData()
                    .setErrorCode(error.code()).setGenerationId(-1).setMemberId(request.memberId())
                    .setLeader("").setProtocolName(version >= 7 ? null : ""));
        }
        return coordinator.join(request, version, clientId, "/127.0.0.1");
    }

    CompletableFuture<SyncGroupResponseData> sync(SyncGroupRequestData request) {
        Errors error = coordination();
        if (error != Errors.NONE) {
            return CompletableFuture.completedFuture(new SyncGroupResponseData().setErrorCode(error.code())
                    .setAssignment(new byte[0]));
        }
        return coordinator.sync(request);
    }

    HeartbeatResponseData heartbeat(HeartbeatRequestData request) {
        Errors error = coordination();
        if (error != Errors.NONE) {
            return new HeartbeatResponseData().setErrorCode(error.code());
        }
        return new HeartbeatResponseData().setErrorCode(coordinator.heartbeat(request.groupId(), request.memberId(),
                request.groupInstanceId(), request.generationId()).code());
    }

    LeaveGroupResponseData leave(LeaveGroupRequestData request, short version) {
        Errors error = coordination();
        if (error != Errors.NONE) {
            return new LeaveGroupResponseData().setErrorCode(error.code());
        }
        if (version < 3) {
            return new LeaveGroupResponseData().setErrorCode(
                    coordinator.leave(request.groupId(), request.memberId(), null).code());
        }
        List<LeaveGroupResponseData.MemberResponse> members = new ArrayList<>();
        for (LeaveGroupRequestData.MemberIdentity identity : request.members()) {
            members.add(new LeaveGroupResponseData.MemberResponse().setMemberId(identity.memberId())
                    .setGroupInstanceId(identity.groupInstanceId())
                    .setErrorCode(coordinator.leave(request.groupId(), identity.memberId(), identity.groupInstanceId())
                            .code()));
        }
        return new LeaveGroupResponseData().setMembers(members);
    }

    /** A KIP-848 consumer group member's heartbeat ({@link ConsumerGroups}), at the coordinator only. */
    ConsumerGroupHeartbeatResponseData consumerHeartbeat(ConsumerGroupHeartbeatRequestData request, short version,
                                                         String clientId) {
        Errors error = coordination();
        if (error != Errors.NONE) {
            return new ConsumerGroupHeartbeatResponseData().setErrorCode(error.code()).setMemberId(request.memberId())
                    .setMemberEpoch(request.memberEpoch());
        }
        return consumerGroups.heartbeat(request, version, clientId, "/127.0.0.1", membershipJustTakenOver());
    }

    ConsumerGroupDescribeResponseData consumerDescribe(ConsumerGroupDescribeRequestData request) {
        return consumerGroups.describe(request, coordination());
    }

    /** The first OffsetCommit and OffsetFetch version that names topics by id only. */
    static final short TOPIC_IDS = 10;

    OffsetCommitResponseData commit(OffsetCommitRequestData request, short version) {
        String group = GroupNames.toStore(request.groupId());
        Errors groupError = group == null ? Errors.INVALID_GROUP_ID : coordination();
        if (groupError == Errors.NONE) {
            groupError = consumerGroups.exists(request.groupId())
                    ? consumerGroups.checkCommit(request.groupId(), request.memberId(),
                            request.generationIdOrMemberEpoch(), false, version)
                    : coordinator.checkCommit(request.groupId(), request.memberId(), request.groupInstanceId(),
                            request.generationIdOrMemberEpoch());
            if (predecessorsMember(groupError, request.groupId(), request.memberId(),
                    request.generationIdOrMemberEpoch())) {
                groupError = Errors.COORDINATOR_LOAD_IN_PROGRESS;
            }
        }
        List<ClusterView.CommittedOffset> offsets = new ArrayList<>();
        List<OffsetCommitResponseData.OffsetCommitResponsePartition> pending = new ArrayList<>();
        List<OffsetCommitResponseData.OffsetCommitResponseTopic> topics = new ArrayList<>();
        for (OffsetCommitRequestData.OffsetCommitRequestTopic topic : request.topics()) {
            List<OffsetCommitResponseData.OffsetCommitResponsePartition> answers = new ArrayList<>();
            // v10 names a topic by its id only: one no topic has (the zero id too) is UNKNOWN_TOPIC_ID, whatever the
            // group's state, as Kafka looks ids up before it asks the group.
            String name = version >= TOPIC_IDS ? KafkaTopicIds.nameOf(partitions, topic.topicId()) : topic.name();
            int count = partitions.count(name);
            for (OffsetCommitRequestData.OffsetCommitRequestPartition partition : topic.partitions()) {
                Errors error = name == null ? Errors.UNKNOWN_TOPIC_ID : groupError;
                if (error == Errors.NONE) {
                    if (partition.partitionIndex() < 0 || partition.partitionIndex() >= count) {
                        error = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                    } else if (partition.committedOffset() < 0) {
                        error = Errors.INVALID_COMMIT_OFFSET_SIZE;
                    } else {
                        offsets.add(new ClusterView.CommittedOffset(name, partition.partitionIndex(),
                                partition.committedOffset()));
                    }
                }
                OffsetCommitResponseData.OffsetCommitResponsePartition answer =
                        new OffsetCommitResponseData.OffsetCommitResponsePartition()
                                .setPartitionIndex(partition.partitionIndex()).setErrorCode(error.code());
                if (error == Errors.NONE) {
                    pending.add(answer);
                }
                answers.add(answer);
            }
            topics.add(new OffsetCommitResponseData.OffsetCommitResponseTopic().setName(name == null ? "" : name)
                    .setTopicId(topic.topicId()).setPartitions(answers));
        }
        if (!offsets.isEmpty()) {
            Errors error = commit(group, offsets);
            pending.forEach(answer -> answer.setErrorCode(error.code()));
        }
        return new OffsetCommitResponseData().setTopics(topics);
    }

    /** How long an offset commit waits for the cluster. */
    private static final long COMMIT_TIMEOUT_MILLIS = 15_000;

    /** Commits a group's offsets through the cluster; @return the error to answer each of them with */
    private Errors commit(String group, List<ClusterView.CommittedOffset> offsets) {
        try {
            cluster.commitOffsets(group, offsets).get(COMMIT_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
            return Errors.NONE;
        } catch (ExecutionException e) {
            LOG.warn("committing offsets of group {} failed: {}", group, e.getCause().toString());
            // A coordinator that lost its place: the client finds the next one and commits there.
            return e.getCause() instanceof Partition.NotLeaderException ? Errors.NOT_COORDINATOR
                    : e.getCause() instanceof IllegalArgumentException ? Errors.INVALID_REQUEST
                    : e.getCause() instanceof ClusterView.TopicRefusedException ? Errors.UNKNOWN_TOPIC_OR_PARTITION
                    : e.getCause() instanceof io.sluice.store.StoreException ? Errors.KAFKA_STORAGE_ERROR
                    : Errors.COORDINATOR_NOT_AVAILABLE;
        } catch (TimeoutException e) {
            return Errors.REQUEST_TIMED_OUT;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
    }


    OffsetFetchResponseData fetchOffsets(OffsetFetchRequestData request, short version) {
        OffsetFetchResponseData response = fetchAllOffsets(request, version);
        if (!request.requireStable()) {
            return response;
        }
        // As Kafka: a partition whose offset an open transaction is to commit answers UNSTABLE_OFFSET_COMMIT, and the
        // consumer asks again, so that it never starts from an offset the transaction is about to move.
        if (version < 8) {
            for (OffsetFetchResponseData.OffsetFetchResponseTopic topic : response.topics()) {
                for (OffsetFetchResponseData.OffsetFetchResponsePartition partition : topic.partitions()) {
                    if (pendingOffsets.pending(request.groupId(), topic.name(), partition.partitionIndex())) {
                        partition.setErrorCode(Errors.UNSTABLE_OFFSET_COMMIT.code()).setCommittedOffset(-1);
                    }
                }
            }
            return response;
        }
        for (OffsetFetchResponseData.OffsetFetchResponseGroup group : response.groups()) {
            for (OffsetFetchResponseData.OffsetFetchResponseTopics topic : group.topics()) {
                for (OffsetFetchResponseData.OffsetFetchResponsePartitions partition : topic.partitions()) {
                    if (pendingOffsets.pending(group.groupId(), topic.name(), partition.partitionIndex())) {
                        partition.setErrorCode(Errors.UNSTABLE_OFFSET_COMMIT.code()).setCommittedOffset(-1);
                    }
                }
            }
        }
        return response;
    }

    private OffsetFetchResponseData fetchAllOffsets(OffsetFetchRequestData request, short version) {
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            if (version < 8) {
                return new OffsetFetchResponseData().setErrorCode(coordination.code());
            }
            List<OffsetFetchResponseData.OffsetFetchResponseGroup> groups = new ArrayList<>();
            for (OffsetFetchRequestData.OffsetFetchRequestGroup group : request.groups()) {
                groups.add(new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(group.groupId())
                        .setErrorCode(coordination.code()));
            }
            return new OffsetFetchResponseData().setGroups(groups);
        }
        if (version < 8) {
            Map<String, List<Integer>> wanted = null;
            if (request.topics() != null) {
                wanted = new LinkedHashMap<>();
                for (OffsetFetchRequestData.OffsetFetchRequestTopic topic : request.topics()) {
                    wanted.put(topic.name(), topic.partitionIndexes());
                }
            }
            List<OffsetFetchResponseData.OffsetFetchResponseTopic> topics = new ArrayList<>();
            Errors error = committed(request.groupId(), wanted, (topic, partitions) -> {
                List<OffsetFetchResponseData.OffsetFetchResponsePartition> list = new ArrayList<>();
                partitions.forEach((partition, offset) -> list.add(new OffsetFetchResponseData
                        .OffsetFetchResponsePartition().setPartitionIndex(partition).setCommittedOffset(offset)
                        .setCommittedLeaderEpoch(-1).setMetadata("")));
                topics.add(new OffsetFetchResponseData.OffsetFetchResponseTopic().setName(topic).setPartitions(list));
            });
            return new OffsetFetchResponseData().setErrorCode(error.code()).setTopics(topics);
        }
        List<OffsetFetchResponseData.OffsetFetchResponseGroup> groups = new ArrayList<>();
        for (OffsetFetchRequestData.OffsetFetchRequestGroup group : request.groups()) {
            Errors member = consumerGroups.exists(group.groupId())
                    ? consumerGroups.checkFetch(group.groupId(), group.memberId(), group.memberEpoch()) : Errors.NONE;
            if (member == Errors.UNKNOWN_MEMBER_ID && group.memberEpoch() > 0
                    && !consumerGroups.knows(group.groupId(), group.memberId()) && membershipJustTakenOver()) {
                // A predecessor's member, as likely as not, whose next heartbeat has it taken over here: it sends the
                // fetch again on this retriable answer. UNKNOWN_MEMBER_ID would fail its poll().
                member = Errors.COORDINATOR_LOAD_IN_PROGRESS;
            }
            groups.add(member != Errors.NONE ? new OffsetFetchResponseData.OffsetFetchResponseGroup()
                    .setGroupId(group.groupId()).setErrorCode(member.code())
                    : version >= TOPIC_IDS ? groupOffsetsById(group) : groupOffsets(group));
        }
        return new OffsetFetchResponseData().setGroups(groups);
    }

    /** One group's committed offsets, its topics named (OffsetFetch v8-9). */
    private OffsetFetchResponseData.OffsetFetchResponseGroup groupOffsets(
            OffsetFetchRequestData.OffsetFetchRequestGroup group) {
        Map<String, List<Integer>> wanted = null;
        if (group.topics() != null) {
            wanted = new LinkedHashMap<>();
            for (OffsetFetchRequestData.OffsetFetchRequestTopics topic : group.topics()) {
                wanted.put(topic.name(), topic.partitionIndexes());
            }
        }
        List<OffsetFetchResponseData.OffsetFetchResponseTopics> topics = new ArrayList<>();
        Errors error = committed(group.groupId(), wanted, (topic, offsets) -> topics.add(
                new OffsetFetchResponseData.OffsetFetchResponseTopics().setName(topic).setPartitions(answers(offsets))));
        return new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(group.groupId())
                .setErrorCode(error.code()).setTopics(topics);
    }

    /**
     * One group's committed offsets, its topics named by id (OffsetFetch v10), in the order asked: an id no topic has
     * (the zero id too) is answered UNKNOWN_TOPIC_ID for each partition, as Kafka answers it. Asked for every topic, the
     * group's offsets of topics without an id (none a client naming topics by id could use) are left out.
     */
    private OffsetFetchResponseData.OffsetFetchResponseGroup groupOffsetsById(
            OffsetFetchRequestData.OffsetFetchRequestGroup group) {
        List<OffsetFetchResponseData.OffsetFetchResponseTopics> topics = new ArrayList<>();
        TopicOffsets out = (topic, offsets) -> {
            Uuid id = KafkaTopicIds.of(partitions, topic);
            if (!Uuid.ZERO_UUID.equals(id)) {
                topics.add(new OffsetFetchResponseData.OffsetFetchResponseTopics().setName(topic).setTopicId(id)
                        .setPartitions(answers(offsets)));
            }
        };
        Errors error = Errors.NONE;
        if (group.topics() == null) {
            error = committed(group.groupId(), null, out);
        } else {
            for (OffsetFetchRequestData.OffsetFetchRequestTopics topic : group.topics()) {
                String name = KafkaTopicIds.nameOf(partitions, topic.topicId());
                if (name == null) {
                    List<OffsetFetchResponseData.OffsetFetchResponsePartitions> unknown = new ArrayList<>();
                    for (int partition : topic.partitionIndexes()) {
                        unknown.add(new OffsetFetchResponseData.OffsetFetchResponsePartitions()
                                .setPartitionIndex(partition).setCommittedOffset(-1).setCommittedLeaderEpoch(-1)
                                .setMetadata("").setErrorCode(Errors.UNKNOWN_TOPIC_ID.code()));
                    }
                    topics.add(new OffsetFetchResponseData.OffsetFetchResponseTopics().setName("")
                            .setTopicId(topic.topicId()).setPartitions(unknown));
                } else {
                    Errors topicError = committed(group.groupId(), Map.of(name, topic.partitionIndexes()), out);
                    error = error == Errors.NONE ? topicError : error;
                }
            }
        }
        return new OffsetFetchResponseData.OffsetFetchResponseGroup().setGroupId(group.groupId())
                .setErrorCode(error.code()).setTopics(error == Errors.NONE ? topics : List.of());
    }

    private static List<OffsetFetchResponseData.OffsetFetchResponsePartitions> answers(Map<Integer, Long> offsets) {
        List<OffsetFetchResponseData.OffsetFetchResponsePartitions> list = new ArrayList<>();
        offsets.forEach((partition, offset) -> list.add(new OffsetFetchResponseData.OffsetFetchResponsePartitions()
                .setPartitionIndex(partition).setCommittedOffset(offset).setCommittedLeaderEpoch(-1).setMetadata("")));
        return list;
    }

    /** Receives one topic's committed offsets (-1 where none). */
    @FunctionalInterface
    private interface TopicOffsets {
        void accept(String topic, Map<Integer, Long> offsets);
    }

    /** Looks a group's committed offsets up: the partitions asked for, or (null) every one committed. */
    private Errors committed(String groupId, Map<String, List<Integer>> wanted, TopicOffsets out) {
        String group = groupId == null ? null : GroupNames.toStore(groupId);
        if (group == null) {
            return Errors.INVALID_GROUP_ID;
        }
        if (wanted == null) {
            Map<String, Map<Integer, Long>> all = new TreeMap<>();
            for (ConsumerPosition position : cluster.committedOffsets()) {
                if (position.group().equals(group)) {
                    all.computeIfAbsent(position.topic(), t -> new TreeMap<>()).put(position.queueId(),
                            position.nextOffset());
                }
            }
            all.forEach(out::accept);
            return Errors.NONE;
        }
        for (Map.Entry<String, List<Integer>> topic : wanted.entrySet()) {
            Map<Integer, Long> offsets = new LinkedHashMap<>();
            for (int partition : topic.getValue()) {
                long offset = -1;
                try {
                    OptionalLong committed = cluster.committedOffset(group, topic.getKey(), partition);
                    offset = committed.orElse(-1);
                } catch (IllegalArgumentException e) {
                    offset = -1;
                }
                offsets.put(partition, offset);
            }
            out.accept(topic.getKey(), offsets);
        }
        return Errors.NONE;
    }

    /**
     * Forgets the committed offsets of every Kafka group that has had no members and committed nothing for
     * {@code retentionMillis} (store clock), as Kafka expires offsets (offsets.retention.minutes, KIP-211): they would
     * otherwise hold the store's retention back for ever. The time counts from the later of the group's newest
     * commit, the last time it had members, and this broker's start (which saw neither before). A store group no
     * Kafka group id maps to ({@link GroupNames#fromStore}) is left alone.
     *
     * <p>In a cluster only the coordinator expires offsets, and through the cluster, so that every broker forgets
     * them alike (one broker alone would forget those of a group that has members on the coordinator, and the next
     * coordinator would not have them); the time also counts from when this broker was first found coordinating in
     * its current term, since the members a group had on other coordinators meanwhile are not known here.
     *
     * @return the group ids whose offsets were forgotten
     */
    List<String> expireOffsets(long retentionMillis) {
        long now = clock.getAsLong();
        // Read before the offsets: a commit applied after this keeps its group on every broker.
        ClusterView.GroupsCoordination decision = cluster.groupsCoordination();
        if (coordinating() != Errors.NONE || decision.epoch() < 0) {
            return List.of();
        }
        long since = Math.max(startedMillis, noteTerm(decision.epoch()).sinceMillis());
        long cutoff = now - retentionMillis;
        Map<String, Long> newest = new TreeMap<>();
        for (ConsumerPosition position : cluster.committedOffsets()) {
            newest.merge(position.group(), position.committedMillis(), Math::max);
        }
        List<String> expired = new ArrayList<>();
        Set<String> kept = new HashSet<>(); // groups that still have offsets
        long startedOrCoordinating = since;
        newest.forEach((name, committed) -> {
            String id = GroupNames.fromStore(name);
            if (id == null) {
                return;
            }
            long active = Math.max(Math.max(committed, startedOrCoordinating), Math.max(
                    coordinator.lastOccupiedMillis(id), consumerGroups.lastOccupiedMillis(id)));
            try {
                // Under the classic group's lock, which a consumer group's first member takes too.
                if (active < cutoff && coordinator.ifIdle(id, cutoff,
                        () -> consumerGroups.removeIfEmpty(id) && forget(name, decision, cutoff))) {
                    expired.add(id);
                    LOG.info("forgot the committed offsets of group {}: no members and no commit for {} minutes", id,
                            TimeUnit.MILLISECONDS.toMinutes(retentionMillis));
                    return;
                }
            } catch (RuntimeException e) {
                LOG.warn("cannot forget the expired offsets of group {}: {}", id, e.toString());
            }
            kept.add(id);
        });
        coordinator.forgetOccupied(cutoff, kept);
        consumerGroups.forgetOccupied(cutoff, kept);
        return expired;
    }

    /** How long forgetting a group's offsets waits for the cluster. */
    private static final long FORGET_TIMEOUT_MILLIS = 5_000;

    /**
     * Forgets a group's offsets through the cluster (see {@link ClusterView#forgetGroup}).
     *
     * @return true if every broker forgot them, false if a commit after the decision kept them
     * @throws IllegalStateException if the cluster did not answer in time, or refused (the decision's coordinator no
     *     longer coordinates)
     */
    private boolean forget(String name, ClusterView.GroupsCoordination decision, long idleSinceMillis) {
        try {
            return cluster.forgetGroup(name, decision, idleSinceMillis).get(FORGET_TIMEOUT_MILLIS,
                    TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException("the cluster did not forget the offsets of group " + name + ": "
                    + e.getCause(), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("the cluster did not forget the offsets of group " + name + " within "
                    + FORGET_TIMEOUT_MILLIS + " ms", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while the cluster forgot the offsets of group " + name, e);
        }
    }

    /** @return the ids of groups that have committed offsets in the store */
    private Set<String> storedGroups() {
        Set<String> ids = new TreeSet<>();
        for (ConsumerPosition position : cluster.committedOffsets()) {
            String id = GroupNames.fromStore(position.group());
            if (id != null) {
                ids.add(id);
            }
        }
        return ids;
    }

    DescribeGroupsResponseData describe(DescribeGroupsRequestData request, short version) {
        List<DescribeGroupsResponseData.DescribedGroup> described = new ArrayList<>();
        Set<String> stored = storedGroups();
        for (String id : request.groups()) {
            DescribeGroupsResponseData.DescribedGroup result = new DescribeGroupsResponseData.DescribedGroup()
                    .setGroupId(id).setProtocolData("").setProtocolType("").setGroupState("Dead")
                    .setMembers(new ArrayList<>());
            ClassicGroup group = coordinator.group(id);
            if (consumerGroups.exists(id)) {
                // As Kafka: DescribeGroups describes classic groups; Admin asks ConsumerGroupDescribe first.
                if (version >= 6) {
                    result.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code())
                            .setErrorMessage("Group " + id + " is not a classic group.");
                }
            } else if (group != null) {
                synchronized (group) {
                    result.setGroupState(group.state.kafkaName)
                            .setProtocolType(group.protocolType == null ? (stored.contains(id) ? CONSUMER : "")
                                    : group.protocolType)
                            .setProtocolData(group.state == ClassicGroup.State.STABLE ? group.protocol : "");
                    for (ClassicGroup.Member m : group.members.values()) {
                        result.members().add(new DescribeGroupsResponseData.DescribedGroupMember().setMemberId(m.id)
                                .setGroupInstanceId(m.instanceId).setClientId(m.clientId == null ? "" : m.clientId)
                                .setClientHost(m.clientHost)
                                .setMemberMetadata(group.protocol == null ? new byte[0]
                                        : m.protocols.getOrDefault(group.protocol, new byte[0]))
                                .setMemberAssignment(m.assignment));
                    }
                }
            } else if (stored.contains(id)) {
                result.setGroupState("Empty").setProtocolType(CONSUMER);
            } else if (version >= 6) {
                result.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code());
            }
            described.add(result);
        }
        return new DescribeGroupsResponseData().setGroups(described);
    }

    ListGroupsResponseData list(ListGroupsRequestData request) {
        Map<String, ListGroupsResponseData.ListedGroup> listed = new TreeMap<>();
        for (String id : storedGroups()) {
            listed.put(id, new ListGroupsResponseData.ListedGroup().setGroupId(id).setProtocolType(CONSUMER)
                    .setGroupState("Empty").setGroupType("classic"));
        }
        for (ClassicGroup group : coordinator.groups()) {
            synchronized (group) {
                if (group.state == ClassicGroup.State.EMPTY && !listed.containsKey(group.id)) {
                    continue; // nothing committed and nobody in it: as good as gone
                }
                listed.put(group.id, new ListGroupsResponseData.ListedGroup().setGroupId(group.id)
                        .setProtocolType(group.protocolType == null ? CONSUMER : group.protocolType)
                        .setGroupState(group.state.kafkaName).setGroupType("classic"));
            }
        }
        consumerGroups.states().forEach((id, state) -> listed.put(id, new ListGroupsResponseData.ListedGroup()
                .setGroupId(id).setProtocolType(CONSUMER).setGroupState(state).setGroupType(CONSUMER)));
        List<ListGroupsResponseData.ListedGroup> groups = new ArrayList<>();
        for (ListGroupsResponseData.ListedGroup group : listed.values()) {
            boolean stateOk = request.statesFilter() == null || request.statesFilter().isEmpty()
                    || request.statesFilter().stream().anyMatch(s -> s.equalsIgnoreCase(group.groupState()));
            boolean typeOk = request.typesFilter() == null || request.typesFilter().isEmpty()
                    || request.typesFilter().stream().anyMatch(t -> t.equalsIgnoreCase(group.groupType()));
            if (stateOk && typeOk) {
                groups.add(group);
            }
        }
        return new ListGroupsResponseData().setGroups(groups);
    }

    /**
     * OffsetDelete (kafka-consumer-groups --delete-offsets): forgets a group's committed offsets of some partitions,
     * except those of topics its members subscribe to (GROUP_SUBSCRIBED_TO_TOPIC, as Kafka answers); a partition the
     * group committed nothing for is answered NONE, as Kafka does.
     */
    OffsetDeleteResponseData offsetDelete(OffsetDeleteRequestData request) {
        OffsetDeleteResponseData response = new OffsetDeleteResponseData();
        String id = request.groupId();
        String name = id == null ? null : GroupNames.toStore(id);
        if (name == null) {
            return response.setErrorCode(Errors.INVALID_GROUP_ID.code());
        }
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return response.setErrorCode(coordination.code());
        }
        ClassicGroup group = coordinator.group(id);
        boolean consumerGroup = consumerGroups.exists(id);
        if (group == null && !consumerGroup && !storedGroups().contains(id)) {
            return response.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code());
        }
        if (group != null && group.nonEmptyOtherThanConsumer()) {
            return response.setErrorCode(Errors.NON_EMPTY_GROUP.code());
        }
        Set<String> subscribed = consumerGroup ? consumerGroups.subscribedTopics(id)
                : group == null ? Set.of() : group.subscribedTopics();
        OffsetDeleteResponseData.OffsetDeleteResponseTopicCollection topics =
                new OffsetDeleteResponseData.OffsetDeleteResponseTopicCollection();
        List<ClusterView.CommittedOffset> deleted = new ArrayList<>();
        for (OffsetDeleteRequestData.OffsetDeleteRequestTopic topic : request.topics()) {
            OffsetDeleteResponseData.OffsetDeleteResponseTopic answered = topics.find(topic.name());
            if (answered == null) {
                answered = new OffsetDeleteResponseData.OffsetDeleteResponseTopic().setName(topic.name());
                topics.add(answered);
            }
            boolean held = subscribed == null || subscribed.contains(topic.name());
            for (OffsetDeleteRequestData.OffsetDeleteRequestPartition partition : topic.partitions()) {
                if (answered.partitions().find(partition.partitionIndex()) != null) {
                    continue;
                }
                answered.partitions().add(new OffsetDeleteResponseData.OffsetDeleteResponsePartition()
                        .setPartitionIndex(partition.partitionIndex())
                        .setErrorCode((held ? Errors.GROUP_SUBSCRIBED_TO_TOPIC : Errors.NONE).code()));
                if (!held && topic.name() != null && partition.partitionIndex() >= 0) {
                    deleted.add(new ClusterView.CommittedOffset(topic.name(), partition.partitionIndex(), -1));
                }
            }
        }
        if (!deleted.isEmpty()) {
            try {
                cluster.deleteOffsets(name, deleted).join();
            } catch (java.util.concurrent.CompletionException e) {
                Throwable cause = e.getCause() != null ? e.getCause() : e;
                LOG.warn("deleting offsets of group {} failed: {}", id, cause.toString());
                return new OffsetDeleteResponseData().setErrorCode((cause instanceof Partition.NotLeaderException
                        ? Errors.NOT_COORDINATOR : Errors.COORDINATOR_NOT_AVAILABLE).code());
            }
        }
        return response.setTopics(topics);
    }

    /**
     * Deletes groups that have no members: their committed offsets go, in a cluster from every broker (through the
     * cluster, so that the next coordinator does not bring them back). Only the coordinator deletes.
     */
    DeleteGroupsResponseData delete(DeleteGroupsRequestData request) {
        DeleteGroupsResponseData.DeletableGroupResultCollection results =
                new DeleteGroupsResponseData.DeletableGroupResultCollection();
        Errors coordination = coordination();
        Set<String> stored = coordination == Errors.NONE ? storedGroups() : Set.of();
        for (String id : request.groupsNames()) {
            Errors error;
            String name = id == null ? null : GroupNames.toStore(id);
            ClassicGroup group = coordinator.group(id);
            if (name == null) {
                error = Errors.INVALID_GROUP_ID;
            } else if (coordination != Errors.NONE) {
                error = coordination;
            } else if (group == null && !consumerGroups.exists(id) && !stored.contains(id)) {
                error = Errors.GROUP_ID_NOT_FOUND;
            } else {
                error = delete(id, name);
            }
            results.add(new DeleteGroupsResponseData.DeletableGroupResult().setGroupId(id).setErrorCode(error.code()));
        }
        return new DeleteGroupsResponseData().setResults(results);
    }

    /**
     * Deletes a group through the cluster, holding the group (no member joins meanwhile) until every broker forgot its
     * offsets. A commit the cluster took after this broker read its offsets keeps the group: the client is asked to
     * try again (COORDINATOR_LOAD_IN_PROGRESS), and the next attempt sees that commit.
     */
    private Errors delete(String id, String name) {
        ClusterView.GroupsCoordination decision = cluster.groupsCoordination();
        boolean[] forgotten = new boolean[1];
        try {
            if (!coordinator.ifIdle(id, Long.MAX_VALUE, () -> {
                // Under the classic group's lock, which a consumer group's first member takes too.
                if (!consumerGroups.removeIfEmpty(id)) {
                    return false;
                }
                forgotten[0] = forget(name, decision, -1);
                coordinator.remove(id);
                return true;
            })) {
                return Errors.NON_EMPTY_GROUP;
            }
        } catch (IllegalStateException e) {
            LOG.warn("deleting group {} failed: {}", id, e.getMessage());
            return e.getCause() instanceof io.sluice.store.StoreException ? Errors.KAFKA_STORAGE_ERROR
                    : Errors.COORDINATOR_NOT_AVAILABLE;
        }
        return forgotten[0] ? Errors.NONE : Errors.COORDINATOR_LOAD_IN_PROGRESS;
    }
}
