package io.sluice.broker.kafka;

import io.sluice.broker.kafka.ClassicGroup.Member;
import io.sluice.broker.kafka.ClassicGroup.State;
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
 * <p>This class keeps the groups known in memory, answers the requests, expires sessions and rebalance time-outs
 * on its timer, and remembers when each group last had members (for offset expiry); one group's state, members and
 * rebalance are a {@link ClassicGroup}.
 *
 * <p>Each group is used under its own lock; futures of waiting joins and syncs complete under it (their
 * continuations only encode a response). Thread-safe.
 */
final class GroupCoordinator {

    /** Members and member ids handed out, per group (Kafka's group.max.size is unbounded; a hostile client is not). */
    static final int MAX_MEMBERS = 1_000;

    private final Map<String, ClassicGroup> groups = new ConcurrentHashMap<>();
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

    /** @return the store clock's time, in milliseconds, that offset expiry reads */
    long millis() {
        return millis.getAsLong();
    }

    /**
     * Whether a group id is held by a group of the other protocol (a KIP-848 consumer group with members), asked under
     * the classic group's lock at each join: a consumer group that has none is forgotten by the check.
     */
    private volatile java.util.function.Predicate<String> heldElsewhere = id -> false;

    void heldElsewhere(java.util.function.Predicate<String> check) {
        this.heldElsewhere = check;
    }

    /** @return now if the group has members, else when it last had some (-1: not since this broker started) */
    long lastOccupiedMillis(String id) {
        ClassicGroup group = groups.get(id);
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
            ClassicGroup group = groups.computeIfAbsent(id, this::newGroup);
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
    ClassicGroup group(String id) {
        return groups.get(id);
    }

    /** @return every group known in memory */
    List<ClassicGroup> groups() {
        return new ArrayList<>(groups.values());
    }

    /** Forgets a group with no members; @return false if it has members */
    boolean remove(String id) {
        ClassicGroup group = groups.get(id);
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

    /** A group not known in memory yet: when it loses its last member, it was occupied until then. */
    private ClassicGroup newGroup(String id) {
        return new ClassicGroup(id, () -> occupiedMillis.put(id, millis.getAsLong()));
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
        ClassicGroup group = groups.computeIfAbsent(request.groupId(), this::newGroup);
        synchronized (group) {
            if (group.members.isEmpty() && group.pendingIds.isEmpty() && heldElsewhere.test(request.groupId())) {
                // A consumer group with members holds the id (Kafka would take the member into it; Sluice does not).
                return done(failed.setErrorCode(Errors.INCONSISTENT_GROUP_PROTOCOL.code()));
            }
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
                Errors identity = group.staticIdentity(memberId, instanceId);
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
                member.join.complete(group.failedJoin(member, Errors.REBALANCE_IN_PROGRESS));
            }
            CompletableFuture<JoinGroupResponseData> response = new CompletableFuture<>();
            member.join = response;
            if (!changed && (group.state == State.COMPLETING_REBALANCE
                    || group.state == State.STABLE && !member.id.equals(group.leader))) {
                // A member rejoining with what it had (it may have missed the join's answer) gets the current
                // generation again, as Kafka answers it; in Stable only a follower does: the leader's rejoin
                // means it wants a new assignment.
                member.join = null;
                return done(group.joinResponse(member));
            }
            if (group.state != State.PREPARING_REBALANCE) {
                group.prepareRebalance();
            }
            group.tryCompleteJoin();
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
    private CompletableFuture<JoinGroupResponseData> rejoinStatic(ClassicGroup group, Member old,
                                                                  LinkedHashMap<String, byte[]> protocols,
                                                                  JoinGroupRequestData request, short version) {
        String leader = group.leader;
        group.members.remove(old.id);
        if (old.join != null) {
            old.join.complete(group.failedJoin(old, Errors.FENCED_INSTANCE_ID));
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
        if (group.state == State.STABLE && group.chooseProtocol().equals(group.protocol)) {
            JoinGroupResponseData response = new JoinGroupResponseData().setGenerationId(group.generation)
                    .setProtocolType(group.protocolType).setProtocolName(group.protocol).setMemberId(newId);
            if (version >= 9) {
                // KIP-814: a leader learns it leads, with the members, and is told to skip the assignment (it
                // watches metadata for changes that need one).
                boolean isLeader = newId.equals(group.leader);
                return done(response.setLeader(group.leader).setSkipAssignment(isLeader)
                        .setMembers(isLeader ? group.joinResponse(old).members() : List.of()));
            }
            return done(response.setLeader(leader).setMembers(List.of()));
        }
        CompletableFuture<JoinGroupResponseData> response = new CompletableFuture<>();
        old.join = response;
        if (group.state != State.PREPARING_REBALANCE) {
            group.prepareRebalance();
        }
        group.tryCompleteJoin();
        return response;
    }

    /** @return a new member id, as Kafka makes them: the instance id (else the client id) and a UUID */
    private static String newMemberId(String clientId, String instanceId) {
        String prefix = instanceId != null ? instanceId : clientId == null || clientId.isEmpty() ? "member" : clientId;
        return prefix + "-" + UUID.randomUUID();
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

    CompletableFuture<SyncGroupResponseData> sync(SyncGroupRequestData request) {
        ClassicGroup group = groups.get(request.groupId());
        SyncGroupResponseData failed = new SyncGroupResponseData().setAssignment(new byte[0]);
        if (group == null) {
            return done(failed.setErrorCode(Errors.UNKNOWN_MEMBER_ID.code()));
        }
        synchronized (group) {
            Errors error = group.check(request.memberId(), request.groupInstanceId(), request.generationId());
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
                    return done(group.syncResponse(member));
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
                        waiting.complete(group.syncResponse(m));
                    }
                }
            }
            return response;
        }
    }

    /**
     * @return the error for a heartbeat (NONE, REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID,
     *     FENCED_INSTANCE_ID)
     */
    Errors heartbeat(String groupId, String memberId, String instanceId, int generation) {
        ClassicGroup group = groups.get(groupId);
        if (group == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        synchronized (group) {
            // Kafka's order: an old generation is told so before it is told of a rebalance.
            Errors error = group.check(memberId, instanceId, generation);
            if (error != Errors.NONE) {
                return error;
            }
            return group.state == State.PREPARING_REBALANCE ? Errors.REBALANCE_IN_PROGRESS : Errors.NONE;
        }
    }

    /** @return whether the group has a member now */
    boolean hasMembers(String groupId) {
        ClassicGroup group = groups.get(groupId);
        if (group == null) {
            return false;
        }
        synchronized (group) {
            return !group.members.isEmpty();
        }
    }

    /**
     * Checks a member's offset commit: a generation of -1 (a consumer outside group management) is taken only
     * while the group has no members.
     *
     * @return NONE, or why the commit is refused
     */
    Errors checkCommit(String groupId, String memberId, String instanceId, int generation) {
        return checkCommit(groupId, memberId, instanceId, generation, false);
    }

    /**
     * @param transactional a TxnOffsetCommit's check: taken whatever state the group's rebalance is in, as Kafka takes
     *     it (an exactly-once application commits with its transaction while a rebalance goes on)
     */
    Errors checkCommit(String groupId, String memberId, String instanceId, int generation, boolean transactional) {
        ClassicGroup group = groups.get(groupId);
        if (group == null) {
            return generation < 0 ? Errors.NONE : Errors.ILLEGAL_GENERATION;
        }
        synchronized (group) {
            if (generation < 0) {
                return group.members.isEmpty() ? Errors.NONE : Errors.ILLEGAL_GENERATION;
            }
            Errors error = group.check(memberId, instanceId, generation);
            if (error != Errors.NONE) {
                return error;
            }
            // As Kafka: a member of the current generation may commit while a rebalance is being prepared (the
            // consumer commits as it gives its partitions up); not while the new assignment is being handed out.
            return group.state == State.COMPLETING_REBALANCE && !transactional ? Errors.REBALANCE_IN_PROGRESS
                    : Errors.NONE;
        }
    }

    /**
     * Removes a member, named by its id or, for a static member, by its instance id alone (an empty member id, as
     * the admin client sends).
     *
     * @return NONE, UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID
     */
    Errors leave(String groupId, String memberId, String instanceId) {
        ClassicGroup group = groups.get(groupId);
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
                Errors identity = group.staticIdentity(memberId, instanceId);
                if (identity != Errors.NONE) {
                    return identity;
                }
            }
            Member member = group.members.get(memberId);
            if (member == null) {
                return Errors.UNKNOWN_MEMBER_ID;
            }
            group.removeMember(member);
            return Errors.NONE;
        }
    }

    /** Removes members whose session expired and completes joins whose rebalance time-out passed. */
    private void expire() {
        long now = System.nanoTime();
        for (ClassicGroup group : groups.values()) {
            synchronized (group) {
                for (Member member : new ArrayList<>(group.members.values())) {
                    if (group.members.get(member.id) != member) {
                        continue; // removed by an earlier removal's completed join
                    }
                    boolean waiting = member.join != null;
                    if (!waiting && now - member.lastSeenNanos > TimeUnit.MILLISECONDS.toNanos(member.sessionTimeoutMs)) {
                        group.removeMember(member);
                    }
                }
                group.pendingIds.values().removeIf(at -> now - at > TimeUnit.MINUTES.toNanos(5));
                if (group.state == State.EMPTY && group.members.isEmpty() && group.pendingIds.isEmpty()) {
                    // Nothing to remember: committed offsets live in the store, so an empty group is dropped.
                    groups.remove(group.id, group);
                    continue;
                }
                if (group.state == State.PREPARING_REBALANCE) {
                    group.tryCompleteJoin();
                } else if (group.state == State.COMPLETING_REBALANCE && now - group.rebalanceDeadlineNanos > 0) {
                    // The leader never sent its assignment: start over.
                    group.prepareRebalance();
                }
            }
        }
    }

    private static <T> CompletableFuture<T> done(T value) {
        return CompletableFuture.completedFuture(value);
    }
}
