package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.local.LocalPartitions;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupDescribeRequestData;
import org.apache.kafka.common.message.ConsumerGroupDescribeResponseData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The KIP-848 heartbeat protocol step by step, as Kafka's coordinator answers it: how a partition moves from one
 * member to another (revoked first, handed over only once released), member epochs and fencing, static members,
 * the requests Kafka refuses, and the checks of offset commits and fetches.
 */
class ConsumerGroupsTest {

    @TempDir
    Path dir;

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private Store store;
    private LocalPartitions partitions;
    private GroupCoordinator classic;
    private ConsumerGroups groups;
    private Uuid events;

    @BeforeEach
    void open() {
        store = Store.open(dir, StoreConfig.builder().build());
        store.createTopic("events", TopicLayout.BATCHES, 4);
        store.createTopic("other", TopicLayout.BATCHES, 2);
        partitions = new LocalPartitions(store, 0);
        classic = new GroupCoordinator(timer);
        groups = new ConsumerGroups(partitions, classic, timer, 5_000, 300);
        events = KafkaTopicIds.handedOut(partitions, "events");
    }

    @AfterEach
    void close() {
        timer.shutdownNow();
        store.close();
    }

    private static ConsumerGroupHeartbeatRequestData join(String member, String... topics) {
        return new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId(member).setMemberEpoch(0)
                .setRebalanceTimeoutMs(60_000).setSubscribedTopicNames(List.of(topics)).setTopicPartitions(List.of());
    }

    private static ConsumerGroupHeartbeatRequestData beat(String member, int epoch) {
        return new ConsumerGroupHeartbeatRequestData().setGroupId("g").setMemberId(member).setMemberEpoch(epoch);
    }

    private ConsumerGroupHeartbeatRequestData beat(String member, int epoch, Integer... owned) {
        return beat(member, epoch).setTopicPartitions(List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                .setTopicId(events).setPartitions(List.of(owned))));
    }

    private ConsumerGroupHeartbeatResponseData send(ConsumerGroupHeartbeatRequestData request) {
        return groups.heartbeat(request, (short) 1, "client", "/127.0.0.1");
    }

    /** @return the partitions of "events" the answer assigns, or null if it carries no assignment */
    private Set<Integer> assigned(ConsumerGroupHeartbeatResponseData response) {
        if (response.assignment() == null) {
            return null;
        }
        Set<Integer> result = new TreeSet<>();
        response.assignment().topicPartitions().stream().filter(t -> t.topicId().equals(events))
                .forEach(t -> result.addAll(t.partitions()));
        return result;
    }

    @Test
    void aPartitionMovesOnlyAfterItsOwnerRevokedIt() {
        ConsumerGroupHeartbeatResponseData a = send(join("a", "events"));
        assertThat(a.errorCode()).isZero();
        assertThat(a.memberEpoch()).isEqualTo(1);
        assertThat(a.heartbeatIntervalMs()).isEqualTo(5_000);
        assertThat(assigned(a)).containsExactly(0, 1, 2, 3);

        // b joins: the group epoch goes to 2, but a still holds everything, so b is given nothing yet.
        ConsumerGroupHeartbeatResponseData b = send(join("b", "events"));
        assertThat(b.memberEpoch()).isEqualTo(2);
        assertThat(assigned(b)).isEmpty();

        // a is asked to revoke two partitions, and keeps its epoch until it has.
        ConsumerGroupHeartbeatResponseData revoke = send(beat("a", 1, 0, 1, 2, 3));
        assertThat(revoke.memberEpoch()).isEqualTo(1);
        Set<Integer> kept = assigned(revoke);
        assertThat(kept).hasSize(2);
        // Still reporting them: nothing moves.
        assertThat(send(beat("a", 1, 0, 1, 2, 3)).memberEpoch()).isEqualTo(1);
        assertThat(assigned(send(beat("b", 2)))).isNull();

        // Released: a moves to epoch 2, and b gets the other two.
        ConsumerGroupHeartbeatResponseData released = send(beat("a", 1, kept.toArray(Integer[]::new)));
        assertThat(released.memberEpoch()).isEqualTo(2);
        ConsumerGroupHeartbeatResponseData handed = send(beat("b", 2));
        Set<Integer> others = new TreeSet<>(Set.of(0, 1, 2, 3));
        others.removeAll(kept);
        assertThat(assigned(handed)).isEqualTo(others);

        ConsumerGroupDescribeResponseData.DescribedGroup described = groups.describe(
                new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g")), Errors.NONE).groups().getFirst();
        assertThat(described.groupState()).isEqualTo("Stable");
        assertThat(described.groupEpoch()).isEqualTo(2);
        assertThat(described.assignmentEpoch()).isEqualTo(2);
        assertThat(described.members()).hasSize(2).allSatisfy(m -> {
            assertThat(m.memberEpoch()).isEqualTo(2);
            assertThat(m.assignment().topicPartitions().getFirst().topicName()).isEqualTo("events");
            assertThat(m.memberType()).isEqualTo((byte) 1);
        });

        // a leaves: b is given everything at the next epoch.
        ConsumerGroupHeartbeatResponseData left = send(beat("a", -1));
        assertThat(left.errorCode()).isZero();
        assertThat(left.memberEpoch()).isEqualTo(-1);
        ConsumerGroupHeartbeatResponseData all = send(beat("b", 2, others.toArray(Integer[]::new)));
        assertThat(all.memberEpoch()).isEqualTo(3);
        assertThat(assigned(all)).containsExactly(0, 1, 2, 3);
    }

    @Test
    void membersWithStaleOrFutureEpochsAreFencedAndUnknownOnesToldSo() {
        send(join("a", "events"));
        send(join("b", "events"));
        ConsumerGroupHeartbeatResponseData revoke = send(beat("a", 1, 0, 1, 2, 3));
        Integer[] kept = assigned(revoke).toArray(Integer[]::new);
        assertThat(send(beat("a", 1, kept)).memberEpoch()).isEqualTo(2);

        assertThat(send(beat("a", 3)).errorCode()).isEqualTo(Errors.FENCED_MEMBER_EPOCH.code());
        // The previous epoch with a subset of what it has is taken (the answer bumping it was lost)...
        assertThat(send(beat("a", 1, kept)).errorCode()).isZero();
        // ...not with partitions it no longer has, nor any older epoch.
        assertThat(send(beat("a", 1, 0, 1, 2, 3)).errorCode()).isEqualTo(Errors.FENCED_MEMBER_EPOCH.code());
        assertThat(send(beat("a", 0).setRebalanceTimeoutMs(1)).errorCode()).isEqualTo(
                Errors.INVALID_REQUEST.code());
        assertThat(send(beat("nobody", 2)).errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
        assertThat(send(beat("a", 1).setGroupId("no-such-group")).errorCode())
                .isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());

        // A fenced member that keeps its id joins again from epoch 0 with nothing, and is given a share again.
        ConsumerGroupHeartbeatResponseData rejoined = send(join("a", "events"));
        assertThat(rejoined.errorCode()).isZero();
        assertThat(rejoined.memberEpoch()).isGreaterThan(2);
    }

    @Test
    void requestsKafkaRefusesAreRefusedWithItsErrors() {
        assertThat(send(join("a", "events").setRebalanceTimeoutMs(-1)).errorCode())
                .isEqualTo(Errors.INVALID_REQUEST.code());
        assertThat(send(join("a", "events").setTopicPartitions(null)).errorCode())
                .isEqualTo(Errors.INVALID_REQUEST.code());
        assertThat(send(join("a").setSubscribedTopicNames(null)).errorMessage())
                .contains("SubscribedTopicNames");
        assertThat(send(join("a", "events").setInstanceId("")).errorCode()).isEqualTo(Errors.INVALID_REQUEST.code());
        assertThat(send(beat("", 3)).errorCode()).isEqualTo(Errors.INVALID_REQUEST.code());
        // From v1 the client names itself, also when it joins; a v0 client is given an id.
        assertThat(send(join("", "events")).errorMessage()).isEqualTo("MemberId can't be empty.");
        assertThat(send(join(" ", "events")).errorMessage()).isEqualTo("MemberId can't be empty.");
        assertThat(send(beat("a", -3)).errorMessage()).isEqualTo("MemberEpoch is invalid.");
        ConsumerGroupHeartbeatResponseData assignor = send(join("a", "events").setServerAssignor("sticky"));
        assertThat(assignor.errorCode()).isEqualTo(Errors.UNSUPPORTED_ASSIGNOR.code());
        assertThat(assignor.errorMessage()).contains("uniform, range");
        assertThat(send(join("a").setSubscribedTopicRegex("events(")).errorCode())
                .isEqualTo(Errors.INVALID_REGULAR_EXPRESSION.code());
        // Nothing was created by the refused joins.
        assertThat(groups.exists("g")).isFalse();
        ConsumerGroupHeartbeatResponseData v0 = groups.heartbeat(join("", "events"), (short) 0, "client", "/h");
        assertThat(v0.errorCode()).isZero();
        assertThat(v0.memberId()).isNotEmpty();
    }

    @Test
    void aStaticMemberThatLeavesForAWhileGetsItsPartitionsBackUnderANewMemberId() {
        ConsumerGroupHeartbeatResponseData first = send(join("a1", "events").setInstanceId("i"));
        send(join("b", "events"));
        Integer[] kept = assigned(send(beat("a1", 1, 0, 1, 2, 3))).toArray(Integer[]::new);
        send(beat("a1", 1, kept));
        assertThat(first.memberEpoch()).isEqualTo(1);

        // Leaves with -2: its partitions are kept for it, and another instance cannot take its place meanwhile.
        assertThat(send(beat("a1", -2).setInstanceId("i")).memberEpoch()).isEqualTo(-2);
        // The new incarnation takes the old one's place with no rebalance: the group epoch stays, and it is
        // answered the old one's partitions at that epoch.
        ConsumerGroupHeartbeatResponseData back = send(join("b2", "events").setInstanceId("i"));
        assertThat(back.errorCode()).isZero();
        assertThat(back.memberEpoch()).isEqualTo(2);
        assertThat(assigned(back)).containsExactlyInAnyOrder(kept);
        assertThat(send(join("b3", "events").setInstanceId("i")).errorCode())
                .isEqualTo(Errors.UNRELEASED_INSTANCE_ID.code());
        assertThat(send(beat("a1", 2).setInstanceId("i")).errorCode()).isEqualTo(Errors.FENCED_INSTANCE_ID.code());
        ConsumerGroupDescribeResponseData.DescribedGroup described = groups.describe(
                new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g")), Errors.NONE).groups().getFirst();
        assertThat(described.members()).extracting(ConsumerGroupDescribeResponseData.Member::memberId)
                .containsExactlyInAnyOrder("b", "b2");
        assertThat(described.members()).filteredOn(m -> m.memberId().equals("b2")).singleElement()
                .satisfies(m -> assertThat(m.assignment().topicPartitions().getFirst().partitions())
                        .containsExactlyInAnyOrder(kept));
    }

    @Test
    void theProtocolsShareAGroupIdOnlyWhileItIsEmpty() throws Exception {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[1]));
        classic.join(new JoinGroupRequestData().setGroupId("g").setMemberId("").setSessionTimeoutMs(30_000)
                .setRebalanceTimeoutMs(30_000).setProtocolType("consumer").setProtocols(protocols), (short) 3, "c",
                "h").get(10, TimeUnit.SECONDS);
        ConsumerGroupHeartbeatResponseData refused = send(join("a", "events"));
        assertThat(refused.errorCode()).isEqualTo(Errors.GROUP_ID_NOT_FOUND.code());
        assertThat(refused.errorMessage()).isEqualTo("Group g is not a consumer group.");
        assertThat(groups.describe(new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g")), Errors.NONE)
                .groups().getFirst().errorMessage()).isEqualTo("Group g is not a consumer group.");

        // And the other way round: a classic member is refused while a consumer group has members.
        send(join("a", "events").setGroupId("modern"));
        assertThat(classic.join(new JoinGroupRequestData().setGroupId("modern").setMemberId("")
                .setSessionTimeoutMs(30_000).setRebalanceTimeoutMs(30_000).setProtocolType("consumer")
                .setProtocols(protocols), (short) 3, "c", "h").get(10, TimeUnit.SECONDS).errorCode())
                .isEqualTo(Errors.INCONSISTENT_GROUP_PROTOCOL.code());
    }

    @Test
    void commitsAndFetchesAreCheckedAgainstTheMemberEpoch() {
        send(join("a", "events"));
        assertThat(groups.checkCommit("g", "a", 1, false, (short) 9)).isEqualTo(Errors.NONE);
        assertThat(groups.checkCommit("g", "a", 0, false, (short) 9)).isEqualTo(Errors.STALE_MEMBER_EPOCH);
        assertThat(groups.checkCommit("g", "a", 1, false, (short) 8)).isEqualTo(Errors.UNSUPPORTED_VERSION);
        assertThat(groups.checkCommit("g", "a", 1, true, (short) 3)).isEqualTo(Errors.NONE);
        // A transactional commit of a stale epoch is ILLEGAL_GENERATION, which the producer takes as abortable.
        assertThat(groups.checkCommit("g", "a", 0, true, (short) 3)).isEqualTo(Errors.ILLEGAL_GENERATION);
        assertThat(groups.checkCommit("g", "", -1, false, (short) 9)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        assertThat(groups.checkFetch("g", null, -1)).isEqualTo(Errors.NONE);
        assertThat(groups.checkFetch("g", "a", 1)).isEqualTo(Errors.NONE);
        assertThat(groups.checkFetch("g", "a", 2)).isEqualTo(Errors.STALE_MEMBER_EPOCH);
        assertThat(groups.checkFetch("g", "b", 1)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        send(beat("a", -1));
        // Empty: an admin commit is taken.
        assertThat(groups.checkCommit("g", "", -1, false, (short) 9)).isEqualTo(Errors.NONE);
    }

    @Test
    void aMemberThatStopsHeartbeatingIsRemovedAfterItsSession() throws Exception {
        send(join("a", "events"));
        send(join("b", "events"));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (groups.exists("g") && System.nanoTime() < until) {
            Thread.sleep(50);
        }
        assertThat(groups.exists("g")).as("both sessions (300 ms) expired, the empty group forgotten").isFalse();
        assertThat(send(beat("a", 1)).errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
    }

    @Test
    void aPatternSubscriptionFollowsTopicsAsTheyAppear() throws Exception {
        ConsumerGroupHeartbeatResponseData a = send(join("a").setSubscribedTopicRegex("ev.*"));
        assertThat(assigned(a)).containsExactly(0, 1, 2, 3);
        store.createTopic("evolved", TopicLayout.BATCHES, 3);
        Uuid evolved = KafkaTopicIds.handedOut(partitions, "evolved");
        // Patterns are matched again at most every second: the heartbeats after that see the new topic.
        ConsumerGroupHeartbeatResponseData grown = send(beat("a", 1));
        long until = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
        while (grown.memberEpoch() == 1 && System.nanoTime() < until) {
            Thread.sleep(100);
            grown = send(beat("a", 1));
        }
        assertThat(grown.memberEpoch()).isEqualTo(2);
        assertThat(grown.assignment().topicPartitions()).anySatisfy(t -> {
            assertThat(t.topicId()).isEqualTo(evolved);
            assertThat(t.partitions()).containsExactlyInAnyOrder(0, 1, 2);
        });
    }

    /**
     * Mixed subscriptions, where only a chain of moves balances: over topic ids drawn from a seeded random (their order
     * decides the assignor's first pass), every partition is assigned once, loads differ by at most one, and a member
     * joining takes its share with few partitions moved.
     */
    @Test
    void theUniformAssignorBalancesMixedSubscriptionsAndKeepsPartitionsWhereTheyWere() {
        long seed = 848;
        java.util.Random random = new java.util.Random(seed);
        for (int round = 0; round < 200; round++) {
            Uuid t1 = new Uuid(random.nextLong(), random.nextLong());
            Uuid t2 = new Uuid(random.nextLong(), random.nextLong());
            Map<String, Set<Uuid>> subscriptions = Map.of("a", Set.of(t1), "b", Set.of(t1, t2), "c", Set.of(t2));
            Map<Uuid, Integer> counts = Map.of(t1, 6, t2, 3);
            Map<String, Map<Uuid, Set<Integer>>> first = ServerAssignors.assign("uniform", subscriptions, counts,
                    Map.of());
            assertThat(first.values().stream().mapToInt(ConsumerGroupsTest::size))
                    .as("seed %d round %d", seed, round).containsOnly(3);
            assertEveryPartitionOnce(first, counts);

            // A fourth member subscribing to both: the others keep what they can, the newcomer gets a fair share.
            Map<String, Set<Uuid>> more = new HashMap<>(subscriptions);
            more.put("d", Set.of(t1, t2));
            Map<String, Map<Uuid, Set<Integer>>> second = ServerAssignors.assign("uniform", more, counts, first);
            assertEveryPartitionOnce(second, counts);
            assertThat(second.values().stream().mapToInt(ConsumerGroupsTest::size).max().orElseThrow()
                    - second.values().stream().mapToInt(ConsumerGroupsTest::size).min().orElseThrow())
                    .as("seed %d round %d", seed, round).isLessThanOrEqualTo(1);
            int moved = 0;
            for (String member : subscriptions.keySet()) {
                for (var entry : first.get(member).entrySet()) {
                    for (int p : entry.getValue()) {
                        if (!second.get(member).getOrDefault(entry.getKey(), Set.of()).contains(p)) {
                            moved++;
                        }
                    }
                }
            }
            // Each partition the newcomer got moved along a chain of at most two links here.
            assertThat(moved).as("seed %d round %d: partitions moved", seed, round)
                    .isBetween(size(second.get("d")), 2 * size(second.get("d")));
        }
    }

    private static int size(Map<Uuid, Set<Integer>> assignment) {
        return assignment.values().stream().mapToInt(Set::size).sum();
    }

    private static void assertEveryPartitionOnce(Map<String, Map<Uuid, Set<Integer>>> assignment,
                                                 Map<Uuid, Integer> counts) {
        List<String> seen = new ArrayList<>();
        assignment.values().forEach(a -> a.forEach((topic, ps) -> ps.forEach(p -> seen.add(topic + "-" + p))));
        assertThat(seen).doesNotHaveDuplicates().hasSize(counts.values().stream().mapToInt(Integer::intValue).sum());
    }

    /**
     * A heartbeat answer lost: the member sends a full request (its previous epoch, subscription and partitions), and
     * is given its assignment again, whether it subscribes by names or by a pattern.
     */
    @Test
    void aFullRequestAfterALostAnswerGetsTheAssignmentAgain() {
        send(join("n", "events"));
        ConsumerGroupHeartbeatResponseData patterned = send(join("p").setSubscribedTopicNames(null)
                .setSubscribedTopicRegex("ev.*"));
        assertThat(patterned.errorCode()).isZero();
        // n is asked to give up partitions for p (that answer is "lost"), then sends a full request with epoch 1.
        Set<Integer> kept = assigned(send(beat("n", 1, 0, 1, 2, 3)));
        ConsumerGroupHeartbeatResponseData full = send(beat("n", 1, 0, 1, 2, 3).setRebalanceTimeoutMs(60_000)
                .setSubscribedTopicNames(List.of("events")));
        assertThat(assigned(full)).isEqualTo(kept);
        // p's answer giving it its partitions is "lost" too; its full request carries its pattern, not names.
        send(beat("n", 1, kept.toArray(Integer[]::new)));
        ConsumerGroupHeartbeatResponseData handed = send(beat("p", 2));
        Set<Integer> got = assigned(handed);
        assertThat(got).hasSize(2);
        ConsumerGroupHeartbeatResponseData again = send(beat("p", 2).setRebalanceTimeoutMs(60_000)
                .setSubscribedTopicRegex("ev.*").setTopicPartitions(List.of()));
        assertThat(again.errorCode()).isZero();
        assertThat(assigned(again)).isEqualTo(got);
    }

    /** A static member leaving for a while keeps what it owns, but what it was giving up is free at once. */
    @Test
    void aStaticMemberLeavingWhileItRevokesFreesWhatItWasGivingUp() {
        send(join("a", "events").setInstanceId("i"));
        send(join("b", "events"));
        // a is asked to revoke two partitions, and leaves for a while before it has.
        Set<Integer> kept = assigned(send(beat("a", 1, 0, 1, 2, 3)));
        assertThat(send(beat("a", -2).setInstanceId("i")).memberEpoch()).isEqualTo(-2);
        Set<Integer> released = new TreeSet<>(Set.of(0, 1, 2, 3));
        released.removeAll(kept);
        assertThat(assigned(send(beat("b", 2)))).isEqualTo(released);
    }

    /** The range assignor orders static members by instance id, so a restarted one gets its ranges back. */
    @Test
    void theRangeAssignorOrdersStaticMembersByInstanceId() {
        send(join("zzz", "events").setInstanceId("first").setServerAssignor("range"));
        send(join("aaa", "events").setInstanceId("second").setServerAssignor("range"));
        ConsumerGroupDescribeResponseData.DescribedGroup described = groups.describe(
                new ConsumerGroupDescribeRequestData().setGroupIds(List.of("g")), Errors.NONE).groups().getFirst();
        assertThat(described.assignorName()).isEqualTo("range");
        assertThat(described.members()).filteredOn(m -> m.instanceId().equals("first")).singleElement()
                .satisfies(m -> assertThat(m.targetAssignment().topicPartitions().getFirst().partitions())
                        .containsExactly(0, 1));
    }

    /**
     * A pattern that backtracks for ever (java.util.regex, unlike Kafka's RE2/J, can) stops at its time budget: the
     * heartbeat is answered, and the group goes on.
     */
    @Test
    void aPatternThatBacktracksStopsAtItsBudget() {
        store.createTopic("a".repeat(60), TopicLayout.BATCHES, 1);
        ConsumerGroupHeartbeatResponseData joined = send(join("a").setSubscribedTopicNames(null)
                .setSubscribedTopicRegex("(.*a){12}-x"));
        assertThat(joined.errorCode()).isZero();
        assertThat(joined.memberEpoch()).isEqualTo(1);
    }

    /** A large group: every partition once, loads within one of each other, and a newcomer takes its share. */
    @Test
    void theUniformAssignorSpreadsAThousandPartitionsOverAThousandMembers() {
        Uuid topic = new Uuid(1, 2);
        Map<String, Set<Uuid>> subscriptions = new java.util.LinkedHashMap<>();
        for (int m = 0; m < 1_000; m++) {
            subscriptions.put("m" + m, Set.of(topic));
        }
        Map<Uuid, Integer> counts = Map.of(topic, 1_000);
        Map<String, Map<Uuid, Set<Integer>>> first = ServerAssignors.assign("uniform", subscriptions, counts,
                Map.of());
        assertEveryPartitionOnce(first, counts);
        assertThat(first.values().stream().mapToInt(ConsumerGroupsTest::size)).containsOnly(1);
        subscriptions.put("late", Set.of(topic));
        Map<String, Map<Uuid, Set<Integer>>> second = ServerAssignors.assign("uniform", subscriptions, counts,
                first);
        assertEveryPartitionOnce(second, counts);
        assertThat(second.values().stream().mapToInt(ConsumerGroupsTest::size)).containsOnly(0, 1);
    }
}
