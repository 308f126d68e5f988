package io.sluice.broker.kafka;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupResponseData;
import org.apache.kafka.common.protocol.Errors;

/**
 * One classic consumer group as the {@link GroupCoordinator} keeps it in memory: its state, generation, protocol,
 * leader and members (static ones by instance id too), the member ids handed out and not yet joined, and the
 * transitions of its rebalance: preparing one (members waiting for an assignment are told to rejoin), completing the
 * join once every member has rejoined or the time-out passed (a new generation, a protocol chosen by vote, a leader),
 * removing a member, and emptying. Kafka's identity checks of a member's calls live here too.
 *
 * <p>Used under its own lock: every method but {@link #state()} and every field must be called or read holding it.
 */
final class ClassicGroup {

    /** Group states, named as Kafka's tools print them. */
    enum State {
        EMPTY("Empty"), PREPARING_REBALANCE("PreparingRebalance"), COMPLETING_REBALANCE("CompletingRebalance"),
        STABLE("Stable");

        final String kafkaName;

        State(String kafkaName) {
            this.kafkaName = kafkaName;
        }
    }

    /** A member: who it is, its time-outs and protocols, its assignment, and its join or sync waiting, if any. */
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
    /** Told when the group loses its last member, before it empties. */
    private final Runnable emptied;

    /** @param emptied told (under the lock) when the group loses its last member */
    ClassicGroup(String id, Runnable emptied) {
        this.id = id;
        this.emptied = emptied;
    }

    synchronized State state() {
        return state;
    }

    /**
     * What OffsetDelete asks of a group, as Kafka's classic groups answer it: the topics its members subscribe to.
     *
     * @return none for a group without members; the topics of the members' subscriptions in the protocol chosen for
     *     a "consumer" group; null where they are not known (another protocol type, no protocol chosen yet, or
     *     metadata that does not parse): then every topic counts as subscribed
     */
    synchronized java.util.Set<String> subscribedTopics() {
        if (members.isEmpty()) {
            return java.util.Set.of();
        }
        if (!"consumer".equals(protocolType) || protocol == null) {
            return null;
        }
        java.util.Set<String> topics = new java.util.HashSet<>();
        for (Member member : members.values()) {
            byte[] metadata = member.protocols == null ? null : member.protocols.get(protocol);
            if (metadata == null) {
                return null;
            }
            try {
                topics.addAll(org.apache.kafka.clients.consumer.internals.ConsumerProtocol.deserializeSubscription(
                        java.nio.ByteBuffer.wrap(metadata)).topics());
            } catch (RuntimeException e) {
                return null;
            }
        }
        return topics;
    }

    /** @return true if the group has members and is not a "consumer" group (OffsetDelete's NON_EMPTY_GROUP) */
    synchronized boolean nonEmptyOtherThanConsumer() {
        return !members.isEmpty() && protocolType != null && !"consumer".equals(protocolType);
    }

    /**
     * Kafka's check of a static member's identity: UNKNOWN_MEMBER_ID for an instance id no member holds,
     * FENCED_INSTANCE_ID for one another member id holds.
     *
     * @return NONE when {@code instanceId} is null or held by {@code memberId}, else the error
     */
    Errors staticIdentity(String memberId, String instanceId) {
        if (instanceId == null) {
            return Errors.NONE;
        }
        String current = staticMembers.get(instanceId);
        return current == null ? Errors.UNKNOWN_MEMBER_ID
                : current.equals(memberId) ? Errors.NONE : Errors.FENCED_INSTANCE_ID;
    }

    /**
     * Finds the member a heartbeat, sync or commit of {@code generation} comes from, in Kafka's order of errors:
     * FENCED_INSTANCE_ID, UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION.
     *
     * @return NONE with the member seen now, or the error
     */
    Errors check(String memberId, String instanceId, int generation) {
        Errors identity = staticIdentity(memberId, instanceId);
        if (identity != Errors.NONE) {
            return identity;
        }
        Member member = members.get(memberId);
        if (member == null) {
            return Errors.UNKNOWN_MEMBER_ID;
        }
        member.lastSeenNanos = System.nanoTime();
        return generation != this.generation ? Errors.ILLEGAL_GENERATION : Errors.NONE;
    }

    void prepareRebalance() {
        if (state == State.COMPLETING_REBALANCE) {
            // Members waiting for their assignment are told to rejoin.
            for (Member m : members.values()) {
                if (m.sync != null) {
                    m.sync.complete(new SyncGroupResponseData().setErrorCode(Errors.REBALANCE_IN_PROGRESS.code())
                            .setAssignment(new byte[0]));
                    m.sync = null;
                }
            }
        }
        state = State.PREPARING_REBALANCE;
        int timeout = members.values().stream().mapToInt(m -> m.rebalanceTimeoutMs).max().orElse(0);
        rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout);
    }

    /** Completes the join once every member has rejoined. */
    void tryCompleteJoin() {
        if (state != State.PREPARING_REBALANCE) {
            return;
        }
        boolean all = members.values().stream().allMatch(m -> m.join != null);
        if (!all && System.nanoTime() - rebalanceDeadlineNanos < 0) {
            return;
        }
        // Dynamic members that did not rejoin in time are out; static ones keep their place (and get an assignment)
        // until their session expires: a restart within it costs no second rebalance.
        members.values().removeIf(m -> m.join == null && m.instanceId == null);
        if (members.isEmpty()) {
            toEmpty();
            return;
        }
        Member joinedLeader = members.get(leader);
        if (joinedLeader == null || joinedLeader.join == null) {
            joinedLeader = members.values().stream().filter(m -> m.join != null).findFirst().orElse(null);
        }
        if (joinedLeader == null) {
            // Only static members that have not rejoined: wait another rebalance time-out (or their sessions).
            int timeout = members.values().stream().mapToInt(m -> m.rebalanceTimeoutMs).max().orElse(0);
            rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeout);
            return;
        }
        generation++;
        protocol = chooseProtocol();
        leader = joinedLeader.id;
        state = State.COMPLETING_REBALANCE;
        rebalanceDeadlineNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(
                members.values().stream().mapToInt(m -> m.sessionTimeoutMs).max().orElse(10_000));
        for (Member m : members.values()) {
            m.lastSeenNanos = System.nanoTime(); // the session restarts with the generation, as in Kafka
            CompletableFuture<JoinGroupResponseData> join = m.join;
            if (join == null) {
                continue; // a static member away: its session decides
            }
            m.join = null;
            join.complete(joinResponse(m));
        }
    }

    /** The group lost its last member: it was occupied until now (for offset expiry). */
    private void toEmpty() {
        emptied.run();
        state = State.EMPTY;
        generation++;
        leader = null;
        protocol = null;
        protocolType = null;
    }

    /** The protocol every member supports that members rank highest overall (a vote, as Kafka takes). */
    String chooseProtocol() {
        Map<String, Integer> votes = new LinkedHashMap<>();
        Member first = members.values().iterator().next();
        for (String candidate : first.protocols.keySet()) {
            if (members.values().stream().allMatch(m -> m.protocols.containsKey(candidate))) {
                votes.put(candidate, 0);
            }
        }
        for (Member m : members.values()) {
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

    /** @return the join answer of the current generation for {@code member}: the leader's lists every member */
    JoinGroupResponseData joinResponse(Member member) {
        List<JoinGroupResponseData.JoinGroupResponseMember> list = new ArrayList<>();
        if (member.id.equals(leader)) {
            for (Member m : members.values()) {
                list.add(new JoinGroupResponseData.JoinGroupResponseMember().setMemberId(m.id)
                        .setGroupInstanceId(m.instanceId).setMetadata(m.protocols.get(protocol)));
            }
        }
        return new JoinGroupResponseData().setGenerationId(generation).setProtocolType(protocolType)
                .setProtocolName(protocol).setLeader(leader).setMemberId(member.id).setMembers(list);
    }

    JoinGroupResponseData failedJoin(Member member, Errors error) {
        return new JoinGroupResponseData().setErrorCode(error.code()).setGenerationId(-1).setMemberId(member.id)
                .setLeader("").setProtocolName("").setProtocolType(protocolType);
    }

    SyncGroupResponseData syncResponse(Member member) {
        return new SyncGroupResponseData().setProtocolType(protocolType).setProtocolName(protocol)
                .setAssignment(member.assignment);
    }

    /** Removes a member: its waiting calls fail, and the others rebalance (or the group empties). */
    void removeMember(Member member) {
        members.remove(member.id);
        if (member.instanceId != null) {
            staticMembers.remove(member.instanceId, member.id);
        }
        if (member.join != null) {
            member.join.complete(failedJoin(member, Errors.UNKNOWN_MEMBER_ID));
        }
        if (member.sync != null) {
            member.sync.complete(new SyncGroupResponseData().setErrorCode(Errors.UNKNOWN_MEMBER_ID.code())
                    .setAssignment(new byte[0]));
        }
        if (members.isEmpty()) {
            toEmpty();
            return;
        }
        if (state == State.STABLE || state == State.COMPLETING_REBALANCE) {
            prepareRebalance();
        }
        tryCompleteJoin();
    }
}
