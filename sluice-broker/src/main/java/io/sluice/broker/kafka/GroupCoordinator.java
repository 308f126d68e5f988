package io.sluice.broker.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import java.util.function.LongSupplier;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;

/**
 * The classic consumer-group protocol's membership, as Kafka's group coordinator runs it: JoinGroup collects the
 * members of a generation (a new member first gets MEMBER_ID_REQUIRED and its id), the join completes when every
 * known member has rejoined or the rebalance time-out removed those that did not, the leader's SyncGroup hands out
 * the assignment it computed, Heartbeat tells members a rebalance is on, LeaveGroup and an expired session remove a
 * member and start one. Static members (a group.instance.id, KIP-345) keep their place across a restart: one that
 * joins again under its instance id takes the old member's place and assignment, with no rebalance while the group
 * is stable, and the old member id is fenced (FENCED_INSTANCE_ID). Membership lives in memory: after a restart
 * members rejoin; committed offsets are the store's consumer positions ({@link GroupApis}).
 *
 * <p>Each group is used under its own lock; futures of waiting joins and syncs complete under it (their
 * continuations only encode a response). Thread-safe.
 */
final class GroupCoordinator {

    /** Group states, named as Kafka's tools print them. */
    enum State {
        EMPTY("Empty"), PREPARING_REBALANCE("PreparingRebalance"), COMPLETING_REBALANCE("CompletingRebalance"),
        STABLE("Stable");

        final String kafkaName;

        State(String kafkaName) {
            this.kafkaName = kafkaName;
        }
    }

    static final class Member {
        String id;
        final String instanceId;
        final String clientId;
        final String clientHost;
        int sessionTimeoutMs;
        int rebalanceTimeoutMs;
        LinkedHashMap<String, byte[]> protocols;
        byte[] assignment = new byte[0];
        long lastSeenNanos = System.nanoTime();
        CompletableFuture<JoinGroupResponseData> join;
        CompletableFuture<SyncGroupResponseData> sync;

        Member(String id, String instanceId, String clientId, String clientHost) {
            this.id = id;
            this.instanceId = instanceId;
            this.clientId = clientId;
            this.clientHost = clientHost;
        }
    }

    static final class Group {
        final String id;
        State state = State.EMPTY;
        int generation;
        String protocolType;
        String protocol;
        String leader;
        final Map<String, Member> members = new LinkedHashMap<>();
        /** Static members: member id by group.instance.id. */
        final Map<String, String> staticMembers = new HashMap<>();
        /** Ids handed out with MEMBER_ID_REQUIRED, not yet joined. */
        final Map<String, Long> pendingIds = new HashMap<>();
        long rebalanceDeadlineNanos;

        Group(String id) {
            this.id = id;
        }

        synchronized State state() {
            return state;
        }
    }

    /** Members and member ids handed out, per group (Kafka's group.max.size is unbounded; a hostile client is not). */
    static final int MAX_MEMBERS = 1_000;

    private final Map<String, Group> groups = new ConcurrentHashMap<>();
    private final ScheduledExecutorService timer;
    private final LongSupplier millis;
    /** When each group was last seen with members (by {@link #millis}), for offset expiry; bounded by it. */
    private final Map<String, Long> occupiedMillis = new ConcurrentHashMap<>();

    GroupCoordinator(ScheduledExecutorService timer) {
        this(timer, System::currentTimeMillis);
    }

    /** @param millis the clock offset expiry runs on (the store's) */
    GroupCoordinator(ScheduledExecutorService timer, LongSupplier millis) {
        this.timer = timer;
        this.millis = millis;
        timer.scheduleWithFixedDelay(this::expire, 100, 100, TimeUnit.MILLISECONDS);
    }

    /** @return now if the group has members, else when it last had some (-1: not since this broker started) */
    long lastOccupiedMillis(String id) {
        Group group = groups.get(id);
        if (group != null) {
            synchronized (group) {
                if (!group.members.isEmpty()) {
                    return millis.getAsLong();
                }
            }
        }
        return occupiedMillis.getOrDefault(id, -1L);
    }

    /**
     * Runs {@code action} under the group's lock while the group has no members, no member id handed out, and has had
     * no members since {@code cutoffMillis}. A group not in memory gets an empty one for the time (the timer drops it),
     * so that a member joining meanwhile waits for the action and then finds its outcome.
     *
     * @return what the action returned; false if the group is not idle
     */
    boolean ifIdle(String id, long cutoffMillis, BooleanSupplier action) {
        while (true) {
            Group group = groups.computeIfAbsent(id, Group::new);
            synchronized (group) {
                if (groups.get(id) != group) {
                    continue; // dropped by the timer in between: take the current one
                }
                return group.members.isEmpty() && group.pendingIds.isEmpty()
                        && occupiedMillis.getOrDefault(id, -1L) < cutoffMillis && action.getAsBoolean();
            }
        }
    }

    /**
     * Forgets when groups were last occupied, for groups not in memory that were last occupied before
     * {@code cutoffMillis} or have no committed offsets ({@code committed} does not name them): such a time can
     * never decide an expiry.
     */
    void forgetOccupied(long cutoffMillis, Set<String> committed) {
        occupiedMillis.entrySet().removeIf(e -> !groups.containsKey(e.getKey())
                && (e.getValue() < cutoffMillis || !committed.contains(e.getKey())));
    }

    /** @return the groups whose last occupied time is kept (for tests of its bound) */
    Set<String> occupiedGroups() {
        return Set.copyOf(occupiedMillis.keySet());
    }

    /** @return the group, or null if none is known in memory */
    Group group(String id) {
        return groups.get(id);
    }

    /** @return every group known in memory */
    List<Group> groups() {
        return new ArrayList<>(groups.values());
    }

    /** Forgets a group with no members; @return false if it has members */
    boolean remove(String id) {
        Group group = groups.get(id);
        if (group == null) {
            return true;
        }
        synchronized (group) {
            if (!group.members.isEmpty()) {
                return false;
            }
            groups.remove(id, group);
            return true;
        }
    }

    CompletableFuture<JoinGroupResponseData> join(JoinGroupRequestData request, short version, String clientId,
                                                  String clientHost) {
        JoinGroupResponseData failed = new JoinGroupResponseData().setGenerationId(-1).setMemberId(request.memberId())
                .setLeader("").setProtocolName(version >= 7 ? null : "").setProtocolType(null);
        if (request.groupId() == null || request.groupId().isEmpty()) {
            return done(failed.setErrorCode(Errors.INVALID_GROUP_ID.code()));
        }
        if (request.sessionTimeoutMs() < 1_000 || request.sessionTimeoutMs() > 1_800_000) {
            return done(failed.setErrorCode(Errors.INVALID_SESSION_TIMEOUT.code()));
        }
        LinkedHashMap<String, byte[]> protocols = new LinkedHashMap<>();
        for (JoinGroupRequestData.JoinGroupRequestProtocol protocol : request.protocols()) {
            protocols.put(protocol.name(), protocol.metadata());
        }
        if (protocols.isEmpty() || request.protocolType() == null || request.protocolType().isEmpty()) {
            return done(failed.setErrorCode(Errors.INCONSISTENT_GROUP_PROTOCOL.code()));
        }
        Group group = groups.computeIfAbsent(request.groupId(), Group::new);
        synchronized (group) {
            if (group.state != State.EMPTY) {
                // The member must be of the group's type and share a protocol with every other member.
                boolean shared = protocols.keySet().stream().anyMatch(p -> group.members.values().stream()
                        .filter(m -> !m.id.equals(request.memberId())).allMatch(m -> m.protocols.containsKey(p)));
                if (!request.protocolType().equals(group.protocolType) || !shared) {
                    return done(failed.setErrorCode(Errors.INCONSISTENT_GROUP_PROTOCOL.code()));
                }
            }
            String memberId = request.memberId();
            String instanceId = request.groupInstanceId();
            if (instanceId != null && version < 5) {
                instanceId = null; // not in the request before v5
            }
            if (instanceId != null && !memberId.isEmpty()) {
                Errors identity = staticIdentity(group, memberId, instanceId);
                if (identity != Errors.NONE) {
                    return done(failed.setErrorCode(identity.code()));
                }
            }
            if (instanceId != null && memberId.isEmpty() && group.staticMembers.containsKey(instanceId)) {
                return rejoinStatic(group, group.members.get(group.staticMembers.get(instanceId)), protocols,
                        request, version);
            }
            Member member = memberId.isEmpty() ? null : group.members.get(memberId);
            if (member == null) {
                if (group.members.size() + group.pendingIds.size() >= MAX_MEMBERS) {
                    return done(failed.setErrorCode(Errors.GROUP_MAX_SIZE_REACHED.code()));
                }
                if (memberId.isEmpty() && version >= 4 && instanceId == null) {
                    // Kafka 2.2+: a new dynamic member first learns its id, then joins with it.
                    String id = newMemberId(clientId, null);
                    group.pendingIds.put(id, System.nanoTime());
                    return done(failed.setMemberId(id).setErrorCode(Errors.MEMBER_ID_REQUIRED.code()));
                }
                if (!memberId.isEmpty() && group.pendingIds.remove(memberId) == null) {
                    return done(failed.setErrorCode(Errors.UNKNOWN_MEMBER_ID.code()));
                }
                if (memberId.isEmpty()) {
                    memberId = newMemberId(clientId, instanceId);
                }
                member = new Member(memberId, instanceId, clientId, clientHost);
                group.members.put(memberId, member);
                if (instanceId != null) {
                    group.staticMembers.put(instanceId, memberId);
                }
                if (group.protocolType == null) {
                    group.protocolType = request.protocolType();
                }
            }
            member.sessionTimeoutMs = request.sessionTimeoutMs();
            member.rebalanceTimeoutMs = version == 0 ? request.sessionTimeoutMs() : request.rebalanceTimeoutMs();
            member.lastSeenNanos = System.nanoTime();
            boolean changed = !sameProtocols(member.protocols, protocols);
            member.protocols = protocols;
            if (member.join != null) {
                // A repeated join while one waits: the newer one takes its place.
                member.join.complete(failedJoin(group, member, Errors.REBALANCE_IN_PROGRESS));
            }
            CompletableFuture<JoinGroupResponseData> response = new CompletableFuture<>();
            member.join = response;
            if (!changed && (group.state == State.COMPLETING_REBALANCE
                    || group.state == State.STABLE && !member.id.equals(group.leader))) {
                // A member rejoining with what it had (it may have missed the join's answer) gets the current
                // generation again, as Kafka answers it; in Stable only a follower does: the leader's rejoin
                // means it wants a new assignment.
                member.join = null;
                return done(joinResponse(group, member));
            }
            if (group.state != State.PREPARING_REBALANCE) {
                prepareRebalance(group);
            }
            tryCompleteJoin(group);
            return response;
        }
    }

    /**
     * A static member joining again with no member id (it restarted): it takes the known member's place under a new
     * id, the old id's waiting calls are fenced, and the assignment stays. In a stable group whose protocol this does
     * not change it is answered at once, in the current generation: before JoinGroup v9 with the old leader id (so
     * that a restarted leader does not assign anew in a group that would not pass its assignment on), from v9 with
     * the leader and skipAssignment (KIP-814); otherwise the group rebalances. Call under the group's lock.
     */
    private CompletableFuture<JoinGroupResponseData> rejoinStatic(Group group, Member old,
                                                                  LinkedHashMap<String, byte[]> protocols,
                                                                  JoinGroupRequestData request, short version) {
        String leader = group.leader;
        group.members.remove(old.id);
        if (old.join != null) {
            old.join.complete(failedJoin(group, old, Errors.FENCED_INSTANCE_ID));
            old.join = null;
        }
        if (old.sync != null) {
            old.sync.complete(new SyncGroupResponseData().setErrorCode(Errors.FENCED_INSTANCE_ID.code())
                    .setAssignment(new byte[0]));
            old.sync = null;
        }
        String newId = newMemberId(old.clientId, old.instanceId);
        if (old.id.equals(group.leader)) {
            group.leader = newId;
        }
        old.id = newId;
        group.members.put(newId, old);
        group.staticMembers.put(old.instanceId, newId);
        old.sessionTimeoutMs = request.sessionTimeoutMs();
        old.rebalanceTimeoutMs = version == 0 ? request.sessionTimeoutMs() : request.rebalanceTimeoutMs();
        old.lastSeenNanos = System.nanoTime();
        old.protocols = protocols;
        if (group.state == State.STABLE && chooseProtocol(group).equals(group.protocol)) {
            JoinGroupResponseData response = new JoinGroupResponseData().setGenerationId(group.generation)
                    .setProtocolType(group.protocolType).setProtocolName(group.protocol).setMemberId(newId);
            if (version >= 9) {
                // KIP-814: a leader learns it leads, with the members, and is told to skip the assignment (it
                // watches metadata for changes that need one).
                boolean isLeader = newId.equals(group.leader);
                return done(response.setLeader(group.leader).setSkipAssignment(isLeader)
                        .setMembers(isLeader ? joinResponse(group, old).members() : List.of()));
            }
            return done(response.setLeader(leader).setMembers(List.of()));
        }
        CompletableFuture<JoinGroupResponseData> response = new CompletableFuture<>();
        old.join = response;
        if (group.state != State.PREPARING_REBALANCE) {
            prepareRebalance(group);
        }
        tryCompleteJoin(group);
        return response;
    }

    /** @return a new member id, as Kafka makes them: the instance id (else the client id) and a UUID */
    private static String newMemberId(String clientId, String instanceId) {
        String prefix = instanceId != null ? instanceId : clientId == null || clientId.isEmpty() ? "member" : clientId;
        return prefix + "-" + UUID.randomUUID();
    }

    /**
     * Kafka's check of a static member's identity: UNKNOWN_MEMBER_ID for an instance id no member holds,
     * FENCED_INSTANCE_ID for one another member id holds.
     *
     * @return NONE when {@code instanceId} is null or held by {@code memberId}, else the error
     */
    private static Errors staticIdentity(Group group, String memberId, String instanceId) {
        if (instanceId == null) {
            return Errors.NONE;
        }
        String current = group.staticMembers.get(instanceId);
        return current == null ? Errors.UNKNOWN_MEMBER_ID
                : current.equals(memberId) ? Errors.NONE : Errors.FENCED_INSTANCE_ID;
    }

    /**
     * Finds the member a heartbeat, sync or commit of {@code generation} comes from, in Kafka's order of errors:
     * FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION. Call under the group's lock.
     *
     * @return NONE with the member seen now, or the error
     */
    private static Errors check(Group group, String memberId, String instanceId, int generation) {
        Errors identity = staticIdentity(group, memberId, instanceId);
        if (identity != Errors.NONE) {
            return identity;
        }
        Member member = group.members.get(memberId);
        if (member == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        member.lastSeenNanos = System.nanoTime();
        return generation != group.generation ? Errors.ILLEGAL_GENERATION : Errors.NONE;
    }

    private static boolean sameProtocols(Map<String, byte[]> a, Map<String, byte[]> b) {
        if (a == null || a.size() != b.size()) {
            return false;
        }
        for (Map.Entry<String, byte[]> entry : a.entrySet()) {
            if (!java.util.Arrays.equals(entry.getValue(), b.get(entry.getKey()))) {
                return false;
            }
        }
        return new ArrayList<>(a.keySet()).equals(new ArrayList<>(b.keySet()));
    }

    private void prepareRebalance(Group group) {
        if (group.state == State.COMPLETING_REBALANCE) {
            // Members waiting for their assignment are told to rejoin.
            for (Member m : group.members.values()) {
                if (m.sync != null) {
                    m.sync.complete(new SyncGroupResponseData().setErrorCode(Errors.REBALANCE_IN_PROGRESS.code())
                            .setAssignment(new byte[0]));
                    m.sync = null;
                }
            }
        }
        group.state = State.PREPARING_REBALANCE;
        int timeout = group.members.values().stream().mapToInt(m -> m.rebalanceTimeoutMs).max().orElse(0);
        group.rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout);
    }

    /** Completes the join once every member has rejoined. Call under the group's lock. */
    private void tryCompleteJoin(Group group) {
        if (group.state != State.PREPARING_REBALANCE) {
            return;
        }
        boolean all = group.members.values().stream().allMatch(m -> m.join != null);
        if (!all && System.nanoTime() - group.rebalanceDeadlineNanos < 0) {
            return;
        }
        // Dynamic members that did not rejoin in time are out; static ones keep their place (and get an assignment)
        // until their session expires: a restart within it costs no second rebalance.
        group.members.values().removeIf(m -> m.join == null && m.instanceId == null);
        if (group.members.isEmpty()) {
            toEmpty(group);
            return;
        }
        Member joinedLeader = group.members.get(group.leader);
        if (joinedLeader == null || joinedLeader.join == null) {
            joinedLeader = group.members.values().stream().filter(m -> m.join != null).findFirst().orElse(null);
        }
        if (joinedLeader == null) {
            // Only static members that have not rejoined: wait another rebalance time-out (or their sessions).
            int timeout = group.members.values().stream().mapToInt(m -> m.rebalanceTimeoutMs).max().orElse(0);
            group.rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout);
            return;
        }
        group.generation++;
        group.protocol = chooseProtocol(group);
        group.leader = joinedLeader.id;
        group.state = State.COMPLETING_REBALANCE;
        group.rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
                group.members.values().stream().mapToInt(m -> m.sessionTimeoutMs).max().orElse(10_000));
        for (Member m : group.members.values()) {
            m.lastSeenNanos = System.nanoTime(); // the session restarts with the generation, as in Kafka
            CompletableFuture<JoinGroupResponseData> join = m.join;
            if (join == null) {
                continue; // a static member away: its session decides
            }
            m.join = null;
            join.complete(joinResponse(group, m));
        }
    }

    /** The group lost its last member: it was occupied until now (for offset expiry). */
    private void toEmpty(Group group) {
        occupiedMillis.put(group.id, millis.getAsLong());
        group.state = State.EMPTY;
        group.generation++;
        group.leader = null;
        group.protocol = null;
        group.protocolType = null;
    }

    /** The protocol every member supports that members rank highest overall (a vote, as Kafka takes). */
    private static String chooseProtocol(Group group) {
        Map<String, Integer> votes = new LinkedHashMap<>();
        Member first = group.members.values().iterator().next();
        for (String candidate : first.protocols.keySet()) {
            if (group.members.values().stream().allMatch(m -> m.protocols.containsKey(candidate))) {
                votes.put(candidate, 0);
            }
        }
        for (Member m : group.members.values()) {
            for (String preferred : m.protocols.keySet()) {
                if (votes.containsKey(preferred)) {
                    votes.merge(preferred, 1, Integer::sum);
                    break;
                }
            }
        }
        return votes.entrySet().stream().max(Map.Entry.comparingByValue()).map(Map.Entry::getKey)
                .orElse(first.protocols.keySet().iterator().next());
    }

    private static JoinGroupResponseData joinResponse(Group group, Member member) {
        List<JoinGroupResponseData.JoinGroupResponseMember> members = new ArrayList<>();
        if (member.id.equals(group.leader)) {
            for (Member m : group.members.values()) {
                members.add(new JoinGroupResponseData.JoinGroupResponseMember().setMemberId(m.id)
                        .setGroupInstanceId(m.instanceId).setMetadata(m.protocols.get(group.protocol)));
            }
        }
        return new JoinGroupResponseData().setGenerationId(group.generation).setProtocolType(group.protocolType)
                .setProtocolName(group.protocol).setLeader(group.leader).setMemberId(member.id).setMembers(members);
    }

    private static JoinGroupResponseData failedJoin(Group group, Member member, Errors error) {
        return new JoinGroupResponseData().setErrorCode(error.code()).setGenerationId(-1).setMemberId(member.id)
                .setLeader("").setProtocolName("").setProtocolType(group.protocolType);
    }

    CompletableFuture<SyncGroupResponseData> sync(SyncGroupRequestData request) {
        Group group = groups.get(request.groupId());
        SyncGroupResponseData failed = new SyncGroupResponseData().setAssignment(new byte[0]);
        if (group == null) {
            return done(failed.setErrorCode(Errors.UNKNOWN_MEMBER_ID.code()));
        }
        synchronized (group) {
            Errors error = check(group, request.memberId(), request.groupInstanceId(), request.generationId());
            if (error != Errors.NONE) {
                return done(failed.setErrorCode(error.code()));
            }
            Member member = group.members.get(request.memberId());
            if (request.protocolType() != null && !request.protocolType().equals(group.protocolType)
                    || request.protocolName() != null && !request.protocolName().equals(group.protocol)) {
                return done(failed.setErrorCode(Errors.INCONSISTENT_GROUP_PROTOCOL.code()));
            }
            switch (group.state) {
                case PREPARING_REBALANCE, EMPTY -> {
                    return done(failed.setErrorCode(Errors.REBALANCE_IN_PROGRESS.code()));
                }
                case STABLE -> {
                    return done(syncResponse(group, member));
                }
                default -> {
                }
            }
            CompletableFuture<SyncGroupResponseData> response = new CompletableFuture<>();
            member.sync = response;
            if (member.id.equals(group.leader)) {
                Map<String, byte[]> assignments = new HashMap<>();
                for (SyncGroupRequestData.SyncGroupRequestAssignment a : request.assignments()) {
                    assignments.put(a.memberId(), a.assignment());
                }
                for (Member m : group.members.values()) {
                    m.assignment = assignments.getOrDefault(m.id, new byte[0]);
                }
                group.state = State.STABLE;
                for (Member m : group.members.values()) {
                    if (m.sync != null) {
                        CompletableFuture<SyncGroupResponseData> waiting = m.sync;
                        m.sync = null;
                        waiting.complete(syncResponse(group, m));
                    }
                }
            }
            return response;
        }
    }

    private static SyncGroupResponseData syncResponse(Group group, Member member) {
        return new SyncGroupResponseData().setProtocolType(group.protocolType).setProtocolName(group.protocol)
                .setAssignment(member.assignment);
    }

    /**
     * @return the error for a heartbeat (NONE, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
     *     FENCED_INSTANCE_ID)
     */
    Errors heartbeat(String groupId, String memberId, String instanceId, int generation) {
        Group group = groups.get(groupId);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            // Kafka's order: an old generation is told so before it is told of a rebalance.
            Errors error = check(group, memberId, instanceId, generation);
            if (error != Errors.NONE) {
                return error;
            }
            return group.state == State.PREPARING_REBALANCE ? Errors.REBALANCE_IN_PROGRESS : Errors.NONE;
        }
    }

    /**
     * Checks a member's offset commit: a generation of -1 (a consumer outside group management) is taken only
     * while the group has no members.
     *
     * @return NONE, or why the commit is refused
     */
    Errors checkCommit(String groupId, String memberId, String instanceId, int generation) {
        Group group = groups.get(groupId);
        if (group == null) {
            return generation < 0 ? Errors.NONE : Errors.ILLEGAL_GENERATION;
        }
        synchronized (group) {
            if (generation < 0) {
                return group.members.isEmpty() ? Errors.NONE : Errors.ILLEGAL_GENERATION;
            }
            Errors error = check(group, memberId, instanceId, generation);
            if (error != Errors.NONE) {
                return error;
            }
            // As Kafka: a member of the current generation may commit while a rebalance is being prepared (the
            // consumer commits as it gives its partitions up); not while the new assignment is being handed out.
            return group.state == State.COMPLETING_REBALANCE ? Errors.REBALANCE_IN_PROGRESS : Errors.NONE;
        }
    }

    /**
     * Removes a member, named by its id or, for a static member, by its instance id alone (an empty member id, as
     * the admin client sends).
     *
     * @return NONE, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID
     */
    Errors leave(String groupId, String memberId, String instanceId) {
        Group group = groups.get(groupId);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            if (instanceId != null && (memberId == null || memberId.isEmpty())) {
                memberId = group.staticMembers.get(instanceId);
                if (memberId == null) {
                    return Errors.UNKNOWN_MEMBER_ID;
                }
            } else {
                Errors identity = staticIdentity(group, memberId, instanceId);
                if (identity != Errors.NONE) {
                    return identity;
                }
            }
            Member member = group.members.get(memberId);
            if (member == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            removeMember(group, member);
            return Errors.NONE;
        }
    }

    private void removeMember(Group group, Member member) {
        group.members.remove(member.id);
        if (member.instanceId != null) {
            group.staticMembers.remove(member.instanceId, member.id);
        }
        if (member.join != null) {
            member.join.complete(failedJoin(group, member, Errors.UNKNOWN_MEMBER_ID));
        }
        if (member.sync != null) {
            member.sync.complete(new SyncGroupResponseData().setErrorCode(Errors.UNKNOWN_MEMBER_ID.code())
                    .setAssignment(new byte[0]));
        }
        if (group.members.isEmpty()) {
            toEmpty(group);
            return;
        }
        if (group.state == State.STABLE || group.state == State.COMPLETING_REBALANCE) {
            prepareRebalance(group);
        }
        tryCompleteJoin(group);
    }

    /** Removes members whose session expired and completes joins whose rebalance time-out passed. */
    private void expire() {
        long now = System.nanoTime();
        for (Group group : groups.values()) {
            synchronized (group) {
                for (Member member : new ArrayList<>(group.members.values())) {
                    if (group.members.get(member.id) != member) {
                        continue; // removed by an earlier removal's completed join
                    }
                    boolean waiting = member.join != null;
                    if (!waiting && now - member.lastSeenNanos > TimeUnit.MILLISECONDS.toNanos(member.sessionTimeoutMs)) {
                        removeMember(group, member);
                    }
                }
                group.pendingIds.values().removeIf(at -> now - at > TimeUnit.MINUTES.toNanos(5));
                if (group.state == State.EMPTY && group.members.isEmpty() && group.pendingIds.isEmpty()) {
                    // Nothing to remember: committed offsets live in the store, so an empty group is dropped.
                    groups.remove(group.id, group);
                    continue;
                }
                if (group.state == State.PREPARING_REBALANCE) {
                    tryCompleteJoin(group);
                } else if (group.state == State.COMPLETING_REBALANCE && now - group.rebalanceDeadlineNanos > 0) {
                    // The leader never sent its assignment: start over.
                    prepareRebalance(group);
                }
            }
        }
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }
}
