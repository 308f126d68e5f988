package io.sluice.broker.kafka;

import io.sluice.broker.Partitions;
import io.sluice.broker.kafka.ConsumerGroup.Member;
import io.sluice.broker.kafka.ConsumerGroup.MemberState;
import io.sluice.broker.kafka.ConsumerGroup.TopicShape;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * KIP-848 consumer groups (group.protocol=consumer), beside the classic ones of {@link GroupCoordinator}: the
 * coordinator computes the assignment ({@link ServerAssignors}) and hands it to each member through its heartbeats
 * (ConsumerGroupHeartbeat), which carry what the member owns and where it is, so there is no group-wide join barrier
 * and no client-side leader. ConsumerGroupDescribe answers what {@code kafka-consumer-groups --describe} prints.
 *
 * <p>A group id is a classic group or a consumer group at any one time: a consumer group takes the place of a classic
 * group only when that one has no members (and the other way round, {@link #removeIfEmpty}); a member of the other
 * protocol is refused while the group has members (GROUP_ID_NOT_FOUND here, INCONSISTENT_GROUP_PROTOCOL to a
 * JoinGroup). Kafka can also convert a group with members from one protocol to the other; Sluice does not.
 *
 * <p>Membership lives in memory, like the classic groups': committed offsets are shared with them and kept and
 * replicated as theirs are. Kafka writes membership to __consumer_offsets, so a member keeps its epoch and partitions
 * when the coordinator moves or restarts. Here, for a session timeout after this broker started coordinating
 * ({@link GroupApis}), a member it does not know is taken as one of before: its full heartbeat (what a consumer sends
 * to a coordinator new to it: subscription, rebalance time-out, owned partitions) puts it back at its epoch with the
 * partitions it owns that no other member holds (a heartbeat not in full is answered COORDINATOR_LOAD_IN_PROGRESS,
 * after which the consumer sends it in full), with no new assignment until that window ends (then the partitions
 * of members that did not come back are handed out) or a member joins, leaves or changes its subscription; and its
 * OffsetFetch or OffsetCommit sent before that heartbeat is answered COORDINATOR_LOAD_IN_PROGRESS (as Kafka answers
 * while it loads a group), which the consumer retries, where UNKNOWN_MEMBER_ID fails its poll(). A member this
 * coordinator removed itself (left or fenced: {@link ConsumerGroup#removed}) is not one of before. After the window a
 * member not known is answered UNKNOWN_MEMBER_ID and joins again from epoch 0, as on Kafka. A group left with no
 * members is forgotten by the timer; it then reads as an empty group with committed offsets.
 *
 * <p>Each group is used under its own lock. Thread-safe.
 */
final class ConsumerGroups {

    private static final Logger LOG = LoggerFactory.getLogger(ConsumerGroups.class);

    static final int JOIN_EPOCH = 0;
    static final int LEAVE_EPOCH = -1;
    static final int STATIC_LEAVE_EPOCH = -2;
    /** Kafka's group.consumer.heartbeat.interval.ms default. */
    static final int HEARTBEAT_INTERVAL_MS = 5_000;
    /** Kafka's group.consumer.session.timeout.ms default. */
    static final int SESSION_TIMEOUT_MS = 45_000;
    /** Members per group (Kafka's group.consumer.max.size is unbounded; a hostile client is not). */
    static final int MAX_MEMBERS = GroupCoordinator.MAX_MEMBERS;
    /**
     * The greatest epoch a member is taken over at: far beyond any a group reaches (one per assignment change), far
     * enough below Integer.MAX_VALUE that the group's epoch, which goes past it, cannot overflow.
     */
    static final int MAX_TAKEN_OVER_EPOCH = Integer.MAX_VALUE / 2;
    /** How often a group's subscribed patterns are matched against the topics again, at most. */
    static final long PATTERN_REFRESH_NANOS = TimeUnit.SECONDS.toNanos(1);
    /** How long one matching of a group's patterns against the topics may take. */
    static final long PATTERN_BUDGET_NANOS = TimeUnit.MILLISECONDS.toNanos(100);
    /** ConsumerGroupDescribe v1's member type of a member on the consumer protocol. */
    private static final byte CONSUMER_MEMBER = 1;

    private final Map<String, ConsumerGroup> groups = new ConcurrentHashMap<>();
    private final Partitions partitions;
    private final GroupCoordinator classic;
    private final int heartbeatIntervalMs;
    private final long sessionTimeoutNanos;

    ConsumerGroups(Partitions partitions, GroupCoordinator classic, ScheduledExecutorService timer) {
        this(partitions, classic, timer, HEARTBEAT_INTERVAL_MS, SESSION_TIMEOUT_MS);
    }

    ConsumerGroups(Partitions partitions, GroupCoordinator classic, ScheduledExecutorService timer,
                   int heartbeatIntervalMs, int sessionTimeoutMs) {
        this.partitions = partitions;
        this.classic = classic;
        this.heartbeatIntervalMs = heartbeatIntervalMs;
        this.sessionTimeoutNanos = TimeUnit.MILLISECONDS.toNanos(sessionTimeoutMs);
        classic.heldElsewhere(id -> !removeIfEmpty(id));
        timer.scheduleWithFixedDelay(this::expire, 100, 100, TimeUnit.MILLISECONDS);
    }

    /** @return how long a member is kept without a heartbeat */
    long sessionTimeoutMillis() {
        return TimeUnit.NANOSECONDS.toMillis(sessionTimeoutNanos);
    }

    /**
     * Forgets every consumer group's membership: this broker coordinates groups again after another did meanwhile,
     * so the members it knew are as another coordinator left them (their epochs moved on, their partitions moved),
     * and it takes them over again from their heartbeats. Their committed offsets are the cluster's, not touched.
     */
    void forgetMembership() {
        for (ConsumerGroup group : List.copyOf(groups.values())) {
            synchronized (group) {
                if (groups.remove(group.id, group)) {
                    occupiedMillis.put(group.id, group.members.isEmpty() ? group.emptiedMillis : classic.millis());
                }
            }
        }
    }

    /** When each consumer group forgotten for want of members last had some (store clock), for offset expiry. */
    private final Map<String, Long> occupiedMillis = new ConcurrentHashMap<>();

    /** @return now if the consumer group has members, else when it last had some (-1: not known) */
    long lastOccupiedMillis(String id) {
        ConsumerGroup group = groups.get(id);
        if (group != null) {
            synchronized (group) {
                return group.members.isEmpty() ? group.emptiedMillis : classic.millis();
            }
        }
        return occupiedMillis.getOrDefault(id, -1L);
    }

    /** Forgets last-occupied times that can no longer decide an expiry (see GroupCoordinator#forgetOccupied). */
    void forgetOccupied(long cutoffMillis, Set<String> committed) {
        occupiedMillis.entrySet().removeIf(e -> !groups.containsKey(e.getKey())
                && (e.getValue() < cutoffMillis || !committed.contains(e.getKey())));
    }

    /** A refusal with Kafka's error and message. */
    private static final class Refused extends RuntimeException {
        private static final long serialVersionUID = 1L;
        final transient Errors error;

        Refused(Errors error, String message) {
            super(message, null, false, false);
            this.error = error;
        }
    }

    ConsumerGroupHeartbeatResponseData heartbeat(ConsumerGroupHeartbeatRequestData request, short version,
                                                 String clientId, String clientHost) {
        return heartbeat(request, version, clientId, clientHost, false);
    }

    /**
     * @param predecessors whether a member this coordinator does not know may be one it had before a restart, or
     *     its predecessor had ({@link GroupApis}): a full heartbeat of such a member (what a consumer sends to a
     *     coordinator new to it) is taken as Kafka's coordinator, which loads membership from __consumer_offsets,
     *     would take it: the member keeps its epoch and the partitions it reports owning, rather than being told
     *     UNKNOWN_MEMBER_ID and giving them all up
     */
    ConsumerGroupHeartbeatResponseData heartbeat(ConsumerGroupHeartbeatRequestData request, short version,
                                                 String clientId, String clientHost, boolean predecessors) {
        try {
            validate(request, version);
            if (request.memberEpoch() == LEAVE_EPOCH || request.memberEpoch() == STATIC_LEAVE_EPOCH) {
                return leave(request);
            }
            boolean predecessor = predecessors && request.memberEpoch() > 0
                    && request.memberEpoch() <= MAX_TAKEN_OVER_EPOCH;
            boolean adoptable = predecessor && full(request);
            while (true) {
                ConsumerGroup group = request.memberEpoch() == JOIN_EPOCH || adoptable ? joinable(request.groupId())
                        : groups.get(request.groupId());
                if (group == null) {
                    throw predecessor ? notFullYet(request) : unknownMember(request.memberId(), request.groupId());
                }
                synchronized (group) {
                    if (groups.get(request.groupId()) == group) {
                        boolean gone = group.removed.contains(request.memberId());
                        if (predecessor && !adoptable && !gone && !group.members.containsKey(request.memberId())) {
                            throw notFullYet(request);
                        }
                        return heartbeat(group, request, clientId, clientHost, adoptable && !gone);
                    }
                }
            }
        } catch (Refused refused) {
            return new ConsumerGroupHeartbeatResponseData().setErrorCode(refused.error.code())
                    .setErrorMessage(refused.getMessage()).setMemberId(request.memberId());
        }
    }

    /** Kafka's checks of a heartbeat's fields, before the group is looked at. */
    private static void validate(ConsumerGroupHeartbeatRequestData request, short version) {
        if (request.groupId().isBlank() || GroupNames.toStore(request.groupId()) == null) {
            throw new Refused(request.groupId().isBlank() ? Errors.INVALID_REQUEST : Errors.INVALID_GROUP_ID,
                    request.groupId().isBlank() ? "GroupId can't be empty." : "not a group id this broker keeps");
        }
        if (request.instanceId() != null && request.instanceId().isBlank()) {
            throw new Refused(Errors.INVALID_REQUEST, "InstanceId can't be empty.");
        }
        if (request.rackId() != null && request.rackId().isBlank()) {
            throw new Refused(Errors.INVALID_REQUEST, "RackId can't be empty.");
        }
        int epoch = request.memberEpoch();
        // From v1 the client makes its member id (KIP-1082), also for its first heartbeat.
        if (version >= 1 && epoch == JOIN_EPOCH) {
            requireMemberId(request);
        }
        if (epoch > 0 || epoch == LEAVE_EPOCH) {
            requireMemberId(request);
        } else if (epoch == JOIN_EPOCH) {
            if (request.rebalanceTimeoutMs() == -1) {
                throw new Refused(Errors.INVALID_REQUEST, "RebalanceTimeoutMs must be provided in first request.");
            }
            if (request.topicPartitions() == null || !request.topicPartitions().isEmpty()) {
                throw new Refused(Errors.INVALID_REQUEST, "TopicPartitions must be empty when (re-)joining.");
            }
            boolean names = request.subscribedTopicNames() != null;
            if (!names && request.subscribedTopicRegex() == null) {
                throw new Refused(Errors.INVALID_REQUEST,
                        "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.");
            }
        } else if (epoch == STATIC_LEAVE_EPOCH) {
            requireMemberId(request);
            if (request.instanceId() == null) {
                throw new Refused(Errors.INVALID_REQUEST, "InstanceId can't be null.");
            }
        } else {
            throw new Refused(Errors.INVALID_REQUEST, "MemberEpoch is invalid.");
        }
        if (request.serverAssignor() != null && !ServerAssignors.NAMES.contains(request.serverAssignor())) {
            throw new Refused(Errors.UNSUPPORTED_ASSIGNOR, "ServerAssignor " + request.serverAssignor()
                    + " is not supported. Supported assignors: " + String.join(", ", ServerAssignors.NAMES) + ".");
        }
        if (request.subscribedTopicRegex() != null) {
            compile(request.subscribedTopicRegex());
        }
    }

    private static void requireMemberId(ConsumerGroupHeartbeatRequestData request) {
        if (request.memberId().isBlank()) {
            throw new Refused(Errors.INVALID_REQUEST, "MemberId can't be empty.");
        }
    }

    private static Pattern compile(String regex) {
        try {
            return Pattern.compile(regex);
        } catch (PatternSyntaxException e) {
            throw new Refused(Errors.INVALID_REGULAR_EXPRESSION, "SubscribedTopicRegex `" + regex
                    + "` is not a valid regular expression: " + e.getDescription() + ".");
        }
    }

    private static Refused unknownMember(String memberId, String groupId) {
        return new Refused(Errors.UNKNOWN_MEMBER_ID, "Member " + memberId + " is not a member of group " + groupId
                + ".");
    }

    /**
     * @return the consumer group a member may join: the existing one, or a new one if no classic group with members
     *     holds the id (an empty classic group is forgotten in its favour)
     */
    private ConsumerGroup joinable(String id) {
        ConsumerGroup group = groups.get(id);
        if (group != null) {
            return group;
        }
        // Under the classic group's lock (an empty one stands in while there is none), which a classic member's join,
        // DeleteGroups and offset expiry take too: none of them runs between the check and the creation.
        ConsumerGroup[] created = new ConsumerGroup[1];
        if (!classic.ifIdle(id, Long.MAX_VALUE, () -> {
            classic.remove(id);
            created[0] = groups.computeIfAbsent(id, ConsumerGroup::new);
            return true;
        })) {
            throw new Refused(Errors.GROUP_ID_NOT_FOUND, "Group " + id + " is not a consumer group.");
        }
        return created[0];
    }

    /**
     * A member that may be one of before, whose heartbeat does not say all of it (a consumer that found the new
     * coordinator with no request failing sends only what changed): COORDINATOR_LOAD_IN_PROGRESS, on which Kafka's
     * consumer sends its next heartbeat in full (any error answered resets what it sent), and is taken over.
     */
    private static Refused notFullYet(ConsumerGroupHeartbeatRequestData request) {
        return new Refused(Errors.COORDINATOR_LOAD_IN_PROGRESS, "Member " + request.memberId()
                + " is not known to this coordinator yet: send the full heartbeat.");
    }

    /** @return whether the heartbeat says all a member's state: its subscription, rebalance time-out and partitions */
    private static boolean full(ConsumerGroupHeartbeatRequestData request) {
        return request.rebalanceTimeoutMs() != -1
                && (request.subscribedTopicNames() != null || request.subscribedTopicRegex() != null)
                && request.topicPartitions() != null;
    }

    private ConsumerGroupHeartbeatResponseData heartbeat(ConsumerGroup group, ConsumerGroupHeartbeatRequestData request,
                                                         String clientId, String clientHost, boolean adoptable) {
        Map<Uuid, Set<Integer>> owned = owned(request.topicPartitions());
        boolean adopting = adoptable && !group.members.containsKey(request.memberId())
                && (request.instanceId() == null || !group.staticMembers.containsKey(request.instanceId()));
        Member member = adopting ? adopted(group, request, owned) : member(group, request, owned);
        Map<Uuid, Set<Integer>> before = ConsumerGroup.copy(member.assigned);
        boolean changed = update(member, request, clientId, clientHost);
        if (changed) {
            group.subscriptionsChanged = true;
        }
        if (!group.members.containsKey(member.id)) {
            group.put(member);
            changed = true;
        }
        member.lastSeenNanos = System.nanoTime();
        Map<String, TopicShape> shapes = subscribedTopics(group);
        if (adopting) {
            // Its partitions are its target too: the sticky assignors leave them where they are.
            group.assign(member, claimable(group, member, shapes));
        }
        if (adopting && !group.targetedElsewhere(member)) {
            // Taken over as it was, without a new assignment, as the members of before come back one by one: the
            // group's epoch moves when the takeover settles (expire), or at the next join, leave or subscription.
            group.subscribedTopics = shapes;
            if (group.takenOverUntilNanos == 0) {
                group.takenOverUntilNanos = member.lastSeenNanos + sessionTimeoutNanos;
            }
        } else if (changed || !shapes.equals(group.subscribedTopics)) {
            group.subscribedTopics = shapes;
            group.groupEpoch++;
        }
        if (group.groupEpoch > group.assignmentEpoch) {
            assign(group);
        }
        group.reconcile(member, owned);
        ConsumerGroupHeartbeatResponseData response = new ConsumerGroupHeartbeatResponseData().setMemberId(member.id)
                .setMemberEpoch(member.epoch).setHeartbeatIntervalMs(heartbeatIntervalMs);
        boolean full = request.memberEpoch() == JOIN_EPOCH || request.rebalanceTimeoutMs() != -1
                && (request.subscribedTopicNames() != null || request.subscribedTopicRegex() != null)
                && request.topicPartitions() != null;
        if (full || !before.equals(member.assigned)) {
            response.setAssignment(assignment(member.assigned));
        }
        return response;
    }

    /** @return of what a member taken over reports owning, the partitions of topics it subscribes to that exist */
    private static Map<Uuid, Set<Integer>> claimable(ConsumerGroup group, Member member,
                                                     Map<String, TopicShape> shapes) {
        Set<String> matched = member.topicRegex == null ? Set.of()
                : group.patternMatches.getOrDefault(member.topicRegex, Set.of());
        Map<Uuid, Set<Integer>> claimable = new HashMap<>();
        shapes.forEach((name, shape) -> {
            Set<Integer> owned = member.assigned.get(shape.id());
            if (owned != null && (member.topicNames.contains(name) || matched.contains(name))) {
                Set<Integer> kept = new TreeSet<>(owned);
                kept.removeIf(p -> p < 0 || p >= shape.partitions());
                if (!kept.isEmpty()) {
                    claimable.put(shape.id(), kept);
                }
            }
        });
        return claimable;
    }

    /**
     * @return a member of a coordinator before this one, as its full heartbeat describes it (not yet in the group): at
     *     the epoch it had, owning what it reports owning but what another member of the group holds already. The
     *     group's epoch goes past its epoch, so that the assignment computed next moves it on, as any member.
     */
    private static Member adopted(ConsumerGroup group, ConsumerGroupHeartbeatRequestData request,
                                  Map<Uuid, Set<Integer>> owned) {
        if (group.members.size() >= MAX_MEMBERS) {
            throw new Refused(Errors.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                    + MAX_MEMBERS + " members.");
        }
        Member member = new Member(request.memberId());
        member.epoch = request.memberEpoch();
        member.previousEpoch = request.memberEpoch();
        Map<Uuid, Set<Integer>> kept = ConsumerGroup.copy(owned == null ? Map.of() : owned);
        kept.forEach((topic, partitions) -> partitions.removeIf(
                p -> group.holders.containsKey(new ServerAssignors.TopicPartition(topic, p))));
        member.assigned = kept;
        // A new assignment already due stays due.
        int due = group.groupEpoch > group.assignmentEpoch ? 1 : 0;
        group.assignmentEpoch = Math.max(group.assignmentEpoch, member.epoch);
        group.groupEpoch = Math.max(group.groupEpoch, group.assignmentEpoch + due);
        LOG.info("member {} of consumer group {} taken over at epoch {}, claiming {}", member.id, group.id,
                member.epoch, member.assigned);
        return member;
    }

    /** @return the member the heartbeat is from, new (not yet in the group) if it joins; checked as Kafka checks it */
    private Member member(ConsumerGroup group, ConsumerGroupHeartbeatRequestData request,
                          Map<Uuid, Set<Integer>> owned) {
        int epoch = request.memberEpoch();
        String memberId = request.memberId().isEmpty() ? Uuid.randomUuid().toString() : request.memberId();
        String instanceId = request.instanceId();
        boolean joining = epoch == JOIN_EPOCH;
        if (joining && !group.members.containsKey(memberId) && group.members.size() >= MAX_MEMBERS
                && (instanceId == null || !group.staticMembers.containsKey(instanceId))) {
            throw new Refused(Errors.GROUP_MAX_SIZE_REACHED, "The consumer group has reached its maximum capacity of "
                    + MAX_MEMBERS + " members.");
        }
        if (instanceId != null) {
            Member existing = group.members.get(group.staticMembers.get(instanceId));
            if (joining) {
                if (existing == null) {
                    return fresh(group, memberId, epoch, owned);
                }
                if (existing.id.equals(memberId)) {
                    return fresh(group, memberId, epoch, owned); // the same incarnation, rejoining
                }
                if (existing.epoch != STATIC_LEAVE_EPOCH) {
                    throw new Refused(Errors.UNRELEASED_INSTANCE_ID, "Static member " + memberId + " with instance id "
                            + instanceId + " cannot join the group because the instance id is owned by "
                            + existing.id + " member.");
                }
                Member member = existing.renamed(memberId);
                group.replace(existing, member);
                LOG.info("static member {} of consumer group {} rejoined as {}", instanceId, group.id, memberId);
                return member;
            }
            if (existing == null) {
                throw new Refused(Errors.UNKNOWN_MEMBER_ID, "Instance id " + instanceId + " is unknown.");
            }
            if (!existing.id.equals(memberId)) {
                throw new Refused(Errors.FENCED_INSTANCE_ID, "Static member " + memberId + " with instance id "
                        + instanceId + " was fenced by member " + existing.id + ".");
            }
        }
        return fresh(group, memberId, epoch, owned);
    }

    /** @return the known member (its epoch checked), or a new one if it joins */
    private static Member fresh(ConsumerGroup group, String memberId, int epoch, Map<Uuid, Set<Integer>> owned) {
        Member member = group.members.get(memberId);
        if (member == null || epoch == JOIN_EPOCH) {
            if (epoch != JOIN_EPOCH) {
                throw unknownMember(memberId, group.id);
            }
            if (member != null) {
                // A member that keeps its id (as clients from KIP-1082 on do) joins again after it was fenced: it
                // gave its partitions up, and starts afresh.
                group.remove(member);
            }
            return new Member(memberId);
        }
        if (epoch > member.epoch) {
            throw new Refused(Errors.FENCED_MEMBER_EPOCH, "The consumer group member has a greater member epoch ("
                    + epoch + ") than the one known by the group coordinator (" + member.epoch
                    + "). The member must abandon all its partitions and rejoin.");
        }
        if (epoch < member.epoch && (epoch != member.previousEpoch || !ConsumerGroup.subset(owned, member.assigned))) {
            // The previous epoch with a subset of the current partitions is taken: the answer that bumped it was lost.
            throw new Refused(Errors.FENCED_MEMBER_EPOCH, "The consumer group member has a smaller member epoch ("
                    + epoch + ") than the one known by the group coordinator (" + member.epoch
                    + "). The member must abandon all its partitions and rejoin.");
        }
        return member;
    }

    /** Takes what the heartbeat says of the member; @return whether its subscription changed */
    private static boolean update(Member member, ConsumerGroupHeartbeatRequestData request, String clientId,
                                  String clientHost) {
        if (request.instanceId() != null) {
            member.instanceId = request.instanceId();
        }
        if (request.rackId() != null) {
            member.rackId = request.rackId();
        }
        if (request.rebalanceTimeoutMs() != -1) {
            member.rebalanceTimeoutMs = request.rebalanceTimeoutMs();
        }
        member.clientId = clientId == null ? "" : clientId;
        member.clientHost = clientHost;
        boolean changed = false;
        if (request.serverAssignor() != null && !request.serverAssignor().equals(member.assignor)) {
            member.assignor = request.serverAssignor();
            changed = true;
        }
        boolean subscription = false;
        if (request.subscribedTopicNames() != null) {
            List<String> names = List.copyOf(new TreeSet<>(request.subscribedTopicNames()));
            subscription = !names.equals(member.topicNames);
            member.topicNames = names;
        }
        if (request.subscribedTopicRegex() != null) {
            String regex = request.subscribedTopicRegex().isEmpty() ? null : request.subscribedTopicRegex();
            subscription |= !java.util.Objects.equals(regex, member.topicRegex);
            member.topicRegex = regex;
        }
        return changed || subscription;
    }

    /**
     * @return the topics some member subscribes to that exist, with their ids and partition counts. Looked at on every
     *     heartbeat, so that a subscribed topic that appears or grows is assigned at once: the members' names and
     *     patterns are gathered again only when a subscription or the membership changed, and patterns are matched
     *     against every topic at most every {@link #PATTERN_REFRESH_NANOS}, so a heartbeat costs a lookup per
     *     subscribed topic, not per member and topic
     */
    private Map<String, TopicShape> subscribedTopics(ConsumerGroup group) {
        long now = System.nanoTime();
        boolean changed = group.subscriptionsChanged;
        if (changed) {
            Set<String> names = new TreeSet<>();
            Set<String> regexes = new TreeSet<>();
            for (Member member : group.members.values()) {
                names.addAll(member.topicNames);
                if (member.topicRegex != null) {
                    regexes.add(member.topicRegex);
                }
            }
            group.subscribedNames = names;
            group.patterns = regexes.stream().map(ConsumerGroups::compile).toList();
            group.subscriptionsChanged = false;
        }
        if (group.patterns.isEmpty()) {
            group.patternMatches = Map.of();
        } else if (changed || now - group.patternsResolvedNanos > PATTERN_REFRESH_NANOS) {
            group.patternMatches = resolve(group, now + PATTERN_BUDGET_NANOS);
            group.patternsResolvedNanos = now;
        }
        Map<String, TopicShape> shapes = new TreeMap<>();
        for (String name : group.subscribedNames) {
            shape(shapes, name, partitions.count(name));
        }
        for (Set<String> names : group.patternMatches.values()) {
            for (String name : names) {
                shape(shapes, name, partitions.count(name));
            }
        }
        return shapes;
    }

    /**
     * @return the topics the group's patterns match, internal topics too, as Kafka resolves a pattern (one that names
     *     them means them); what was matched by {@code deadlineNanos}, when a pattern backtracks that long
     */
    private Map<String, Set<String>> resolve(ConsumerGroup group, long deadlineNanos) {
        Map<String, Set<String>> matches = new HashMap<>();
        group.patterns.forEach(pattern -> matches.put(pattern.pattern(), new TreeSet<>()));
        try {
            for (String name : partitions.topics().keySet()) {
                for (Pattern pattern : group.patterns) {
                    if (pattern.matcher(new Bounded(name, deadlineNanos)).matches()) {
                        matches.get(pattern.pattern()).add(name);
                    }
                }
            }
        } catch (OutOfTime e) {
            LOG.warn("the subscription patterns of consumer group {} took more than {} ms to match the topics: {}"
                    + " matched so far", group.id, TimeUnit.NANOSECONDS.toMillis(PATTERN_BUDGET_NANOS),
                    matches.values().stream().mapToInt(Set::size).sum());
        }
        return matches;
    }

    /** A pattern's match ran out of its time. */
    private static final class OutOfTime extends RuntimeException {
        private static final long serialVersionUID = 1L;

        OutOfTime() {
            super(null, null, false, false);
        }
    }

    /**
     * A topic name a pattern is matched against, that stops the match once its time is up: java.util.regex can
     * backtrack for a time exponential in the name's length (Kafka's RE2/J cannot), and matching runs under the
     * group's lock.
     */
    private static final class Bounded implements CharSequence {
        private final String name;
        private final long deadlineNanos;
        private int reads;

        Bounded(String name, long deadlineNanos) {
            this.name = name;
            this.deadlineNanos = deadlineNanos;
        }

        @Override
        public char charAt(int index) {
            if ((++reads & 1023) == 0 && System.nanoTime() > deadlineNanos) {
                throw new OutOfTime();
            }
            return name.charAt(index);
        }

        @Override
        public int length() {
            return name.length();
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new Bounded(name.substring(start, end), deadlineNanos);
        }

        @Override
        public String toString() {
            return name;
        }
    }

    private void shape(Map<String, TopicShape> shapes, String name, int count) {
        if (count > 0 && !shapes.containsKey(name)) {
            Uuid id = KafkaTopicIds.handedOut(partitions, name);
            if (!Uuid.ZERO_UUID.equals(id)) {
                shapes.put(name, new TopicShape(id, count));
            }
        }
    }

    /** Computes the group's target assignment at its group epoch. */
    private static void assign(ConsumerGroup group) {
        Map<String, Set<Uuid>> subscriptions = new java.util.LinkedHashMap<>();
        Map<Uuid, Integer> counts = new HashMap<>();
        Map<String, Integer> votes = new TreeMap<>();
        // The order the range assignor hands ranges out in: static members by instance id, then the others by id.
        List<Member> ordered = new ArrayList<>(group.members.values());
        ordered.sort(java.util.Comparator.comparing((Member m) -> m.instanceId == null)
                .thenComparing(m -> m.instanceId == null ? m.id : m.instanceId));
        for (Member member : ordered) {
            Set<Uuid> topics = new HashSet<>();
            Set<String> matched = member.topicRegex == null ? Set.of()
                    : group.patternMatches.getOrDefault(member.topicRegex, Set.of());
            group.subscribedTopics.forEach((name, shape) -> {
                if (member.topicNames.contains(name) || matched.contains(name)) {
                    topics.add(shape.id());
                    counts.put(shape.id(), shape.partitions());
                }
            });
            subscriptions.put(member.id, topics);
            if (member.assignor != null) {
                votes.merge(member.assignor, 1, Integer::sum);
            }
        }
        // As Kafka: the assignor most members asked for, else the first configured.
        group.assignor = votes.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey)
                .orElse(ServerAssignors.UNIFORM);
        group.target = ServerAssignors.assign(group.assignor, subscriptions, counts, group.target);
        group.assignmentEpoch = group.groupEpoch;
    }

    private ConsumerGroupHeartbeatResponseData leave(ConsumerGroupHeartbeatRequestData request) {
        ConsumerGroup group = groups.get(request.groupId());
        if (group == null) {
            throw unknownMember(request.memberId(), request.groupId());
        }
        synchronized (group) {
            Member member;
            if (request.instanceId() == null) {
                member = group.members.get(request.memberId());
                if (member == null) {
                    throw unknownMember(request.memberId(), request.groupId());
                }
            } else {
                member = group.members.get(group.staticMembers.get(request.instanceId()));
                if (member == null) {
                    throw new Refused(Errors.UNKNOWN_MEMBER_ID, "Instance id " + request.instanceId()
                            + " is unknown.");
                }
                if (!member.id.equals(request.memberId())) {
                    throw new Refused(Errors.FENCED_INSTANCE_ID, "Static member " + request.memberId()
                            + " with instance id " + request.instanceId() + " was fenced by member " + member.id
                            + ".");
                }
            }
            ConsumerGroupHeartbeatResponseData response = new ConsumerGroupHeartbeatResponseData()
                    .setMemberId(member.id).setMemberEpoch(request.memberEpoch());
            if (request.memberEpoch() == STATIC_LEAVE_EPOCH) {
                // Gone for a while: it keeps its partitions for its session, to take them back when it returns.
                group.leaveForAWhile(member);
                return response;
            }
            remove(group, member);
            LOG.info("member {} left consumer group {}", member.id, group.id);
            return response;
        }
    }

    private static Map<Uuid, Set<Integer>> owned(List<ConsumerGroupHeartbeatRequestData.TopicPartitions> reported) {
        if (reported == null) {
            return null;
        }
        Map<Uuid, Set<Integer>> owned = new HashMap<>();
        for (ConsumerGroupHeartbeatRequestData.TopicPartitions topic : reported) {
            owned.computeIfAbsent(topic.topicId(), t -> new TreeSet<>()).addAll(topic.partitions());
        }
        return owned;
    }

    private static ConsumerGroupHeartbeatResponseData.Assignment assignment(Map<Uuid, Set<Integer>> assigned) {
        List<ConsumerGroupHeartbeatResponseData.TopicPartitions> topics = new ArrayList<>();
        assigned.forEach((topic, partitions) -> topics.add(new ConsumerGroupHeartbeatResponseData.TopicPartitions()
                .setTopicId(topic).setPartitions(new ArrayList<>(partitions))));
        return new ConsumerGroupHeartbeatResponseData.Assignment().setTopicPartitions(topics);
    }

    /** Removes a member, noting when the group was left empty (for offset expiry). */
    private void remove(ConsumerGroup group, Member member) {
        group.remove(member);
        if (group.members.isEmpty()) {
            group.emptiedMillis = classic.millis();
        }
    }

    /** Fences members whose session expired or who did not revoke within their rebalance time-out. */
    private void expire() {
        long now = System.nanoTime();
        for (ConsumerGroup group : groups.values()) {
            synchronized (group) {
                for (Member member : List.copyOf(group.members.values())) {
                    boolean session = now - member.lastSeenNanos > sessionTimeoutNanos;
                    boolean revoking = member.state == MemberState.UNREVOKED_PARTITIONS
                            && now - member.revokingSinceNanos > TimeUnit.MILLISECONDS.toNanos(
                                    member.rebalanceTimeoutMs);
                    if (session || revoking) {
                        remove(group, member);
                        LOG.info("member {} fenced from consumer group {}: {}", member.id, group.id,
                                session ? "its session expired" : "it did not revoke its partitions in time");
                    }
                }
                if (group.takenOverUntilNanos != 0 && now - group.takenOverUntilNanos > 0) {
                    // Members of before that did not come back have their partitions handed out now.
                    group.takenOverUntilNanos = 0;
                    group.groupEpoch++;
                }
                if (group.members.isEmpty() && groups.remove(group.id, group)) {
                    occupiedMillis.put(group.id, group.emptiedMillis);
                }
            }
        }
    }

    ConsumerGroupDescribeResponseData describe(ConsumerGroupDescribeRequestData request, Errors coordination) {
        List<ConsumerGroupDescribeResponseData.DescribedGroup> described = new ArrayList<>();
        for (String id : request.groupIds()) {
            ConsumerGroupDescribeResponseData.DescribedGroup result =
                    new ConsumerGroupDescribeResponseData.DescribedGroup().setGroupId(id);
            ConsumerGroup group = groups.get(id);
            if (coordination != Errors.NONE) {
                result.setErrorCode(coordination.code());
            } else if (group == null) {
                result.setErrorCode(Errors.GROUP_ID_NOT_FOUND.code()).setErrorMessage(classic.group(id) != null
                        ? "Group " + id + " is not a consumer group." : "Group " + id + " not found.");
            } else {
                synchronized (group) {
                    describe(group, result);
                }
            }
            described.add(result);
        }
        return new ConsumerGroupDescribeResponseData().setGroups(described);
    }

    private void describe(ConsumerGroup group, ConsumerGroupDescribeResponseData.DescribedGroup result) {
        result.setGroupState(group.stateName()).setGroupEpoch(group.groupEpoch)
                .setAssignmentEpoch(group.assignmentEpoch).setAssignorName(group.assignor);
        Map<Uuid, String> names = new HashMap<>();
        group.subscribedTopics.forEach((name, shape) -> names.put(shape.id(), name));
        for (Member member : group.members.values()) {
            result.members().add(new ConsumerGroupDescribeResponseData.Member().setMemberId(member.id)
                    .setInstanceId(member.instanceId).setRackId(member.rackId).setMemberEpoch(member.epoch)
                    .setClientId(member.clientId).setClientHost(member.clientHost)
                    .setSubscribedTopicNames(new ArrayList<>(member.topicNames))
                    .setSubscribedTopicRegex(member.topicRegex)
                    .setAssignment(described(member.assigned, names))
                    .setTargetAssignment(described(group.target.getOrDefault(member.id, Map.of()), names))
                    .setMemberType(CONSUMER_MEMBER));
        }
    }

    private ConsumerGroupDescribeResponseData.Assignment described(Map<Uuid, Set<Integer>> assignment,
                                                                   Map<Uuid, String> names) {
        List<ConsumerGroupDescribeResponseData.TopicPartitions> topics = new ArrayList<>();
        assignment.forEach((topic, partitionSet) -> {
            String name = names.containsKey(topic) ? names.get(topic) : KafkaTopicIds.nameOf(partitions, topic);
            // A topic deleted since it was assigned has no name any more: "", not the string "null".
            topics.add(new ConsumerGroupDescribeResponseData.TopicPartitions().setTopicId(topic)
                    .setTopicName(name != null ? name : "")
                    .setPartitions(new ArrayList<>(partitionSet)));
        });
        return new ConsumerGroupDescribeResponseData.Assignment().setTopicPartitions(topics);
    }

    /** @return whether the id names a consumer group (kept in memory while it has had members) */
    boolean exists(String id) {
        return groups.containsKey(id);
    }

    /** @return whether the consumer group has the member, or had it until this coordinator removed it */
    boolean knows(String id, String memberId) {
        ConsumerGroup group = groups.get(id);
        if (group == null || memberId == null) {
            return false;
        }
        synchronized (group) {
            return group.members.containsKey(memberId) || group.removed.contains(memberId);
        }
    }

    /** @return each consumer group's id and Kafka state name */
    Map<String, String> states() {
        Map<String, String> states = new TreeMap<>();
        for (ConsumerGroup group : groups.values()) {
            synchronized (group) {
                states.put(group.id, group.stateName());
            }
        }
        return states;
    }

    /**
     * Forgets a consumer group with no members, so that a classic member may take the id (or DeleteGroups deletes
     * it). @return false if it has members
     */
    boolean removeIfEmpty(String id) {
        ConsumerGroup group = groups.get(id);
        if (group == null) {
            return true;
        }
        synchronized (group) {
            if (!group.members.isEmpty()) {
                return false;
            }
            if (groups.remove(id, group)) {
                occupiedMillis.put(id, group.emptiedMillis);
            }
            return true;
        }
    }

    /** @return the topics the group's members subscribe to now, by name (a pattern's matches included) */
    Set<String> subscribedTopics(String id) {
        ConsumerGroup group = groups.get(id);
        if (group == null) {
            return Set.of();
        }
        synchronized (group) {
            return group.members.isEmpty() ? Set.of() : Set.copyOf(group.subscribedTopics.keySet());
        }
    }

    /**
     * Kafka's check of an offset commit to a consumer group: a commit with no member epoch (the admin client, a
     * consumer outside the group) only while the group is empty; else from a member, at its current epoch, with
     * OffsetCommit v9 or later unless it comes with a transaction.
     *
     * @return NONE, or the error
     */
    Errors checkCommit(String id, String memberId, int memberEpoch, boolean transactional, short version) {
        ConsumerGroup group = groups.get(id);
        if (group == null) {
            return memberEpoch < 0 ? Errors.NONE : Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            if (memberEpoch < 0 && group.members.isEmpty()) {
                return Errors.NONE;
            }
            Member member = memberId == null ? null : group.members.get(memberId);
            if (member == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            if (!transactional && version < 9) {
                return Errors.UNSUPPORTED_VERSION;
            }
            // A transactional commit is told ILLEGAL_GENERATION, as Kafka tells it: the producer takes that one as
            // abortable, any other as fatal.
            return memberEpoch == member.epoch ? Errors.NONE
                    : transactional ? Errors.ILLEGAL_GENERATION : Errors.STALE_MEMBER_EPOCH;
        }
    }

    /**
     * Kafka's check of an offset fetch that names a member (OffsetFetch v9+): one that names none is answered.
     *
     * @return NONE, or the error
     */
    Errors checkFetch(String id, String memberId, int memberEpoch) {
        if (memberId == null && memberEpoch < 0) {
            return Errors.NONE;
        }
        ConsumerGroup group = groups.get(id);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            Member member = group.members.get(memberId);
            if (member == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            return memberEpoch == member.epoch ? Errors.NONE : Errors.STALE_MEMBER_EPOCH;
        }
    }
}
