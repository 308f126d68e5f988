package io.sluice.broker.kafka;

import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import org.apache.kafka.common.Uuid;

/**
 * One KIP-848 consumer group's membership and assignment, as Kafka's group coordinator keeps it.
 *
 * <p>Three epochs order the group's changes. The <em>group epoch</em> goes up whenever what the assignment depends on
 * changes: a member joins or leaves, a subscription changes, a subscribed topic appears or gains partitions. The
 * <em>assignment epoch</em> is the group epoch the current <em>target assignment</em> (what each member should own) was
 * computed at. Each member's <em>member epoch</em> says which target it has reconciled with. A member moves towards
 * its target in steps the coordinator decides at each of its heartbeats ({@link #reconcile}): partitions it must give
 * up are revoked first, the member keeping its epoch until its heartbeat no longer reports them
 * (UNREVOKED_PARTITIONS); partitions another member still holds are handed over only once released
 * (UNRELEASED_PARTITIONS); otherwise it takes the target's epoch (STABLE). So no partition is ever held by two
 * members, and a member's epoch names exactly which assignment it was given.
 *
 * <p>Not thread-safe: used under its own lock ({@link ConsumerGroups}).
 */
final class ConsumerGroup {

    /** Where a member is in reconciling with its target, Kafka's names. */
    enum MemberState { STABLE, UNREVOKED_PARTITIONS, UNRELEASED_PARTITIONS }

    /** A member's partitions, by topic id. */
    static Map<Uuid, Set<Integer>> copy(Map<Uuid, Set<Integer>> assignment) {
        Map<Uuid, Set<Integer>> copy = new HashMap<>();
        assignment.forEach((topic, partitions) -> {
            if (!partitions.isEmpty()) {
                copy.put(topic, new TreeSet<>(partitions));
            }
        });
        return copy;
    }

    /** One member: what it asked for, and what it was given. */
    static final class Member {
        final String id;
        String instanceId;
        String rackId;
        String clientId;
        String clientHost;
        int rebalanceTimeoutMs;
        /** Subscribed topic names, sorted (empty when it subscribes by pattern only). */
        List<String> topicNames = List.of();
        /** The subscribed pattern (ConsumerGroupHeartbeat v1), or null. */
        String topicRegex;
        /** The assignor it asked for, or null for the group's default. */
        String assignor;
        int epoch;
        int previousEpoch;
        MemberState state = MemberState.STABLE;
        Map<Uuid, Set<Integer>> assigned = new HashMap<>();
        Map<Uuid, Set<Integer>> revoking = new HashMap<>();
        /** System.nanoTime() of its last heartbeat, for its session. */
        long lastSeenNanos;
        /** System.nanoTime() when it was asked to revoke, for its rebalance time-out. */
        long revokingSinceNanos;

        Member(String id) {
            this.id = id;
        }

        /** @return a member under a new id with everything this one had (a static member's restart) */
        Member renamed(String newId) {
            Member member = new Member(newId);
            member.instanceId = instanceId;
            member.rackId = rackId;
            member.clientId = clientId;
            member.clientHost = clientHost;
            member.rebalanceTimeoutMs = rebalanceTimeoutMs;
            member.topicNames = topicNames;
            member.topicRegex = topicRegex;
            member.assignor = assignor;
            member.assigned = copy(assigned);
            return member;
        }
    }

    final String id;
    int groupEpoch;
    int assignmentEpoch;
    final Map<String, Member> members = new LinkedHashMap<>();
    /** Instance id to the member id holding it. */
    final Map<String, String> staticMembers = new HashMap<>();
    /** Each member's target assignment, as of {@link #assignmentEpoch}. */
    Map<String, Map<Uuid, Set<Integer>>> target = new HashMap<>();
    /** Which member holds each partition now (assigned or being revoked). */
    final Map<ServerAssignors.TopicPartition, String> holders = new HashMap<>();
    /**
     * The subscribed topics as they were at the group epoch: name to id and partition count. A heartbeat that finds
     * them otherwise bumps the group epoch.
     */
    Map<String, TopicShape> subscribedTopics = Map.of();
    /**
     * While members of a coordinator before this one are taken over ({@link ConsumerGroups}): System.nanoTime() when
     * the group's assignment is computed again, for the partitions of those that did not come back; 0 otherwise.
     */
    long takenOverUntilNanos;
    /**
     * The ids of members this coordinator removed (they left, or were fenced), the latest {@link #REMEMBERED_REMOVALS}:
     * such a member is not one of a coordinator before, to be taken over, but one this one knows is gone.
     */
    final java.util.SequencedSet<String> removed = new java.util.LinkedHashSet<>();
    static final int REMEMBERED_REMOVALS = 1_000;
    /** The assignor the last target was computed with. */
    String assignor = ServerAssignors.UNIFORM;
    /** When (store clock) the group was left without members; -1 while it has had none. */
    long emptiedMillis = -1;
    /** Whether a member came, went or changed its subscription since {@link #subscribedNames} was taken. */
    boolean subscriptionsChanged = true;
    /** The topic names the members subscribe to, and their patterns: what a heartbeat looks the topics up by. */
    Set<String> subscribedNames = Set.of();
    List<java.util.regex.Pattern> patterns = List.of();
    /** The topics each pattern matched when last resolved, by pattern, and when (System.nanoTime()). */
    Map<String, Set<String>> patternMatches = Map.of();
    long patternsResolvedNanos;

    /** A subscribed topic's id and partition count. */
    record TopicShape(Uuid id, int partitions) {
    }

    ConsumerGroup(String id) {
        this.id = id;
    }

    /** @return Kafka's name of the group's state */
    String stateName() {
        if (members.isEmpty()) {
            return "Empty";
        }
        if (groupEpoch > assignmentEpoch) {
            return "Assigning";
        }
        for (Member member : members.values()) {
            if (member.epoch != assignmentEpoch || member.state != MemberState.STABLE) {
                return "Reconciling";
            }
        }
        return "Stable";
    }

    /** @return whether another member's target holds any of the member's partitions */
    boolean targetedElsewhere(Member member) {
        for (Map.Entry<String, Map<Uuid, Set<Integer>>> entry : target.entrySet()) {
            if (entry.getKey().equals(member.id)) {
                continue;
            }
            for (Map.Entry<Uuid, Set<Integer>> topic : entry.getValue().entrySet()) {
                Set<Integer> mine = member.assigned.getOrDefault(topic.getKey(), Set.of());
                if (topic.getValue().stream().anyMatch(mine::contains)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Gives a member of the group these partitions, as its own and as its target (a member taken over). */
    void assign(Member member, Map<Uuid, Set<Integer>> partitions) {
        release(member);
        member.assigned = copy(partitions);
        Map<String, Map<Uuid, Set<Integer>>> targets = new HashMap<>(target);
        targets.put(member.id, copy(partitions));
        target = targets;
        hold(member);
    }

    /** Adds a member, or puts one in the place of another (a static member's restart). */
    void put(Member member) {
        subscriptionsChanged = true;
        removed.remove(member.id);
        members.put(member.id, member);
        if (member.instanceId != null) {
            staticMembers.put(member.instanceId, member.id);
        }
        hold(member);
    }

    /** A static member's new incarnation takes the old one's place, its partitions and its target. */
    void replace(Member old, Member member) {
        release(old);
        members.remove(old.id);
        Map<Uuid, Set<Integer>> oldTarget = target.remove(old.id);
        if (oldTarget != null) {
            target.put(member.id, oldTarget);
        }
        put(member);
    }

    /**
     * A static member leaving for a while (epoch -2): it keeps its partitions for its session, to take them back when
     * it returns, but those it was giving up are free at once.
     */
    void leaveForAWhile(Member member) {
        release(member);
        member.previousEpoch = member.epoch;
        member.epoch = -2;
        member.state = MemberState.STABLE;
        member.revoking = new HashMap<>();
        hold(member);
    }

    /** Removes a member: its partitions are free, and the group's assignment must be computed again. */
    void remove(Member member) {
        subscriptionsChanged = true;
        removed.remove(member.id);
        removed.addLast(member.id);
        if (removed.size() > REMEMBERED_REMOVALS) {
            removed.removeFirst();
        }
        release(member);
        members.remove(member.id);
        target.remove(member.id);
        if (member.instanceId != null) {
            staticMembers.remove(member.instanceId, member.id);
        }
        groupEpoch++;
    }

    private void release(Member member) {
        holders.values().removeIf(holder -> holder.equals(member.id));
    }

    private void hold(Member member) {
        member.assigned.forEach((topic, partitions) -> partitions.forEach(
                p -> holders.put(new ServerAssignors.TopicPartition(topic, p), member.id)));
        member.revoking.forEach((topic, partitions) -> partitions.forEach(
                p -> holders.put(new ServerAssignors.TopicPartition(topic, p), member.id)));
    }

    /**
     * Moves a member one step towards its target (Kafka's CurrentAssignmentBuilder).
     *
     * @param owned the partitions its heartbeat reports it owns, or null if the heartbeat did not say
     * @return whether its assignment or epoch changed
     */
    boolean reconcile(Member member, Map<Uuid, Set<Integer>> owned) {
        if (member.epoch == assignmentEpoch && member.state == MemberState.STABLE) {
            return false;
        }
        if (member.state == MemberState.UNREVOKED_PARTITIONS) {
            if (owns(owned, member.revoking)) {
                return false;
            }
            return next(member, member.epoch + 1, owned);
        }
        return next(member, member.epoch, owned);
    }

    private boolean next(Member member, int epoch, Map<Uuid, Set<Integer>> owned) {
        Map<Uuid, Set<Integer>> goal = target.getOrDefault(member.id, Map.of());
        Map<Uuid, Set<Integer>> keep = new HashMap<>();
        Map<Uuid, Set<Integer>> revoke = new HashMap<>();
        Map<Uuid, Set<Integer>> take = new HashMap<>();
        boolean unreleased = false;
        Set<Uuid> topics = new HashSet<>(goal.keySet());
        topics.addAll(member.assigned.keySet());
        for (Uuid topic : topics) {
            Set<Integer> wanted = goal.getOrDefault(topic, Set.of());
            Set<Integer> had = member.assigned.getOrDefault(topic, Set.of());
            Set<Integer> kept = new TreeSet<>(had);
            kept.retainAll(wanted);
            Set<Integer> given = new TreeSet<>(had);
            given.removeAll(kept);
            Set<Integer> added = new TreeSet<>(wanted);
            added.removeAll(kept);
            unreleased |= added.removeIf(p -> {
                String holder = holders.get(new ServerAssignors.TopicPartition(topic, p));
                return holder != null && !holder.equals(member.id);
            });
            put(keep, topic, kept);
            put(revoke, topic, given);
            put(take, topic, added);
        }
        int oldEpoch = member.epoch;
        MemberState oldState = member.state;
        Map<Uuid, Set<Integer>> oldAssigned = member.assigned;
        release(member);
        if (!revoke.isEmpty() && owns(owned, revoke)) {
            set(member, epoch, MemberState.UNREVOKED_PARTITIONS, keep, revoke);
            member.revokingSinceNanos = System.nanoTime();
        } else {
            take.forEach((topic, partitions) -> keep.computeIfAbsent(topic, t -> new TreeSet<>()).addAll(partitions));
            set(member, assignmentEpoch, unreleased ? MemberState.UNRELEASED_PARTITIONS : MemberState.STABLE, keep,
                    new HashMap<>());
        }
        hold(member);
        return member.epoch != oldEpoch || member.state != oldState || !member.assigned.equals(oldAssigned);
    }

    private static void set(Member member, int epoch, MemberState state, Map<Uuid, Set<Integer>> assigned,
                            Map<Uuid, Set<Integer>> revoking) {
        if (epoch != member.epoch) {
            member.previousEpoch = member.epoch;
            member.epoch = epoch;
        }
        member.state = state;
        member.assigned = assigned;
        member.revoking = revoking;
    }

    private static void put(Map<Uuid, Set<Integer>> into, Uuid topic, Set<Integer> partitions) {
        if (!partitions.isEmpty()) {
            into.put(topic, partitions);
        }
    }

    /** @return whether {@code owned} (null: not reported, so assumed) still holds any of {@code partitions} */
    private static boolean owns(Map<Uuid, Set<Integer>> owned, Map<Uuid, Set<Integer>> partitions) {
        if (owned == null) {
            return true;
        }
        for (Map.Entry<Uuid, Set<Integer>> entry : owned.entrySet()) {
            Set<Integer> revoking = partitions.getOrDefault(entry.getKey(), Set.of());
            for (int p : entry.getValue()) {
                if (revoking.contains(p)) {
                    return true;
                }
            }
        }
        return false;
    }

    /** @return whether every partition of {@code owned} is in {@code assignment} (false if not reported) */
    static boolean subset(Map<Uuid, Set<Integer>> owned, Map<Uuid, Set<Integer>> assignment) {
        if (owned == null) {
            return false;
        }
        for (Map.Entry<Uuid, Set<Integer>> entry : owned.entrySet()) {
            if (!assignment.getOrDefault(entry.getKey(), Set.of()).containsAll(entry.getValue())) {
                return false;
            }
        }
        return true;
    }
}
