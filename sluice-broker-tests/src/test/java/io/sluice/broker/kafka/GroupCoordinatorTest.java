package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The classic group state machine, driven directly. */
class GroupCoordinatorTest {

    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final GroupCoordinator coordinator = new GroupCoordinator(timer);

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private static JoinGroupRequestData join(String member) {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[1]));
        return new JoinGroupRequestData().setGroupId("g").setMemberId(member).setSessionTimeoutMs(30_000)
                .setRebalanceTimeoutMs(30_000).setProtocolType("consumer").setProtocols(protocols);
    }

    /** @return the member id of a member that joined a one-member group and got its assignment */
    private String joinAlone() throws Exception {
        String id = coordinator.join(join(""), (short) 5, "c", "h").get().memberId();
        JoinGroupResponseData joined = coordinator.join(join(id), (short) 5, "c", "h").get();
        assertThat(joined.errorCode()).isZero();
        coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(joined.generationId())
                .setMemberId(id).setAssignments(List.of(new SyncGroupRequestData.SyncGroupRequestAssignment()
                        .setMemberId(id).setAssignment(new byte[] {1})))).get();
        return id;
    }

    @Test
    void aMemberCommitsWhileARebalanceIsPreparedButNotWhileItCompletes() throws Exception {
        String first = joinAlone();
        int generation = coordinator.group("g").generation;
        assertThat(coordinator.checkCommit("g", first, null, generation)).isEqualTo(Errors.NONE);
        // A second member joins: the group prepares a rebalance; the first, still in its generation, commits as it
        // gives its partitions up (the Java consumer does in onJoinPrepare).
        String second = coordinator.join(join(""), (short) 5, "c", "h").get().memberId();
        CompletableFuture<JoinGroupResponseData> secondJoin = coordinator.join(join(second), (short) 5, "c", "h");
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.PREPARING_REBALANCE);
        assertThat(coordinator.checkCommit("g", first, null, generation)).isEqualTo(Errors.NONE);
        // Once both joined, the assignment is being handed out: commits wait for it.
        JoinGroupResponseData firstRejoin = coordinator.join(join(first), (short) 5, "c", "h").get();
        assertThat(secondJoin.get().generationId()).isEqualTo(firstRejoin.generationId());
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.COMPLETING_REBALANCE);
        assertThat(coordinator.checkCommit("g", first, null, firstRejoin.generationId()))
                .isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        // A transaction's commit (TxnOffsetCommit) is taken meanwhile, as Kafka takes it: exactly-once applications
        // commit with their transactions while a rebalance goes on, and the Java client finds this error fatal there.
        assertThat(coordinator.checkCommit("g", first, null, firstRejoin.generationId(), true)).isEqualTo(Errors.NONE);
        assertThat(coordinator.checkCommit("g", first, null, generation)).isEqualTo(Errors.ILLEGAL_GENERATION);
    }

    @Test
    void aRejoinWithTheSameProtocolsWhileTheAssignmentIsHandedOutGetsTheSameGeneration() throws Exception {
        String first = joinAlone();
        String second = coordinator.join(join(""), (short) 5, "c", "h").get().memberId();
        CompletableFuture<JoinGroupResponseData> secondJoin = coordinator.join(join(second), (short) 5, "c", "h");
        JoinGroupResponseData firstJoin = coordinator.join(join(first), (short) 5, "c", "h").get();
        assertThat(secondJoin.get().generationId()).isEqualTo(firstJoin.generationId());
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.COMPLETING_REBALANCE);
        // The second member missed its answer and joins again, unchanged: same generation, no new rebalance.
        JoinGroupResponseData again = coordinator.join(join(second), (short) 5, "c", "h").get();
        assertThat(again.errorCode()).isZero();
        assertThat(again.generationId()).isEqualTo(firstJoin.generationId());
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.COMPLETING_REBALANCE);
    }

    @Test
    void aHeartbeatOfAnOldGenerationIsToldSoEvenDuringARebalance() throws Exception {
        String first = joinAlone();
        int generation = coordinator.group("g").generation;
        String second = coordinator.join(join(""), (short) 5, "c", "h").get().memberId();
        coordinator.join(join(second), (short) 5, "c", "h");
        assertThat(coordinator.heartbeat("g", first, null, generation)).isEqualTo(Errors.REBALANCE_IN_PROGRESS);
        assertThat(coordinator.heartbeat("g", first, null, generation - 1)).isEqualTo(Errors.ILLEGAL_GENERATION);
    }

    private static JoinGroupRequestData staticJoin(String member, String instance) {
        return join(member).setGroupInstanceId(instance);
    }

    /**
     * A static member joins without learning its id first; joining again under its instance id (a restart) takes the
     * old member's place in a stable group without a rebalance, and the old id is fenced everywhere; the admin
     * client's leave by instance id alone removes it.
     */
    @Test
    void aStaticMembersRestartFencesItsOldIdAndLeavesTheGroupStable() throws Exception {
        JoinGroupResponseData joined = coordinator.join(staticJoin("", "i1"), (short) 5, "c", "h").get();
        assertThat(joined.errorCode()).as("no MEMBER_ID_REQUIRED round for a static member").isZero();
        String old = joined.memberId();
        coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(joined.generationId())
                .setMemberId(old).setGroupInstanceId("i1").setAssignments(List.of(
                        new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(old)
                                .setAssignment(new byte[] {7})))).get();
        int generation = coordinator.group("g").generation;
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.STABLE);

        JoinGroupResponseData again = coordinator.join(staticJoin("", "i1"), (short) 5, "c", "h").get();
        assertThat(again.errorCode()).isZero();
        assertThat(again.memberId()).isNotEqualTo(old);
        assertThat(again.generationId()).isEqualTo(generation);
        assertThat(again.leader()).as("the old leader id: the member does not assign anew").isEqualTo(old);
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.STABLE);
        var sync = coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(generation)
                .setMemberId(again.memberId()).setGroupInstanceId("i1")).get();
        assertThat(sync.assignment()).as("the assignment it had").containsExactly(7);

        assertThat(coordinator.heartbeat("g", old, "i1", generation)).isEqualTo(Errors.FENCED_INSTANCE_ID);
        assertThat(coordinator.checkCommit("g", old, "i1", generation)).isEqualTo(Errors.FENCED_INSTANCE_ID);
        assertThat(coordinator.join(staticJoin(old, "i1"), (short) 5, "c", "h").get().errorCode())
                .isEqualTo(Errors.FENCED_INSTANCE_ID.code());
        assertThat(coordinator.heartbeat("g", again.memberId(), "i1", generation)).isEqualTo(Errors.NONE);

        assertThat(coordinator.leave("g", "", "i2")).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
        assertThat(coordinator.leave("g", old, "i1")).isEqualTo(Errors.FENCED_INSTANCE_ID);
        assertThat(coordinator.leave("g", "", "i1")).isEqualTo(Errors.NONE);
        assertThat(coordinator.group("g").members).isEmpty();
        assertThat(coordinator.group("g").staticMembers).isEmpty();
    }

    /**
     * Joins a static member (rebalance time-out 1 s) alone in a fresh group "g" and syncs an assignment.
     *
     * @return its member id
     */
    private String staticAlone(String instance, byte assignment) throws Exception {
        JoinGroupResponseData joined = coordinator.join(staticJoin("", instance).setRebalanceTimeoutMs(1_000),
                (short) 5, "c", "h").get();
        coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(joined.generationId())
                .setMemberId(joined.memberId()).setGroupInstanceId(instance).setAssignments(List.of(
                        new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(joined.memberId())
                                .setAssignment(new byte[] {assignment})))).get();
        return joined.memberId();
    }

    /** KIP-814: from JoinGroup v9 a restarted static leader is told it leads, with the members, and to skip assigning. */
    @Test
    void aRestartedStaticLeaderLearnsItLeadsFromV9() throws Exception {
        String old = staticAlone("i1", (byte) 3);
        JoinGroupResponseData v9 = coordinator.join(staticJoin("", "i1"), (short) 9, "c", "h").get();
        assertThat(v9.leader()).isEqualTo(v9.memberId()).isNotEqualTo(old);
        assertThat(v9.skipAssignment()).isTrue();
        assertThat(v9.members()).extracting(JoinGroupResponseData.JoinGroupResponseMember::memberId)
                .containsExactly(v9.memberId());
        JoinGroupResponseData v5 = coordinator.join(staticJoin("", "i1"), (short) 5, "c", "h").get();
        assertThat(v5.leader()).as("before v9: the previous leader id").isEqualTo(v9.memberId());
        assertThat(v5.skipAssignment()).isFalse();
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.STABLE);
    }

    /**
     * A static member that does not rejoin a rebalance keeps its place when the rebalance time-out passes (dynamic
     * ones are removed): it comes back under its instance id without another rebalance.
     */
    @Test
    void aStaticMemberAwayDuringARebalanceKeepsItsPlace() throws Exception {
        String away = staticAlone("away", (byte) 1);
        JoinGroupRequestData dynamic = join("").setRebalanceTimeoutMs(1_000);
        String newcomer = coordinator.join(dynamic, (short) 5, "c", "h").get().memberId();
        JoinGroupResponseData joined = coordinator.join(join(newcomer).setRebalanceTimeoutMs(1_000), (short) 5, "c",
                "h").get(10, java.util.concurrent.TimeUnit.SECONDS);
        assertThat(joined.errorCode()).isZero();
        assertThat(joined.leader()).as("the member that rejoined leads").isEqualTo(newcomer);
        assertThat(joined.members()).extracting(JoinGroupResponseData.JoinGroupResponseMember::memberId)
                .containsExactlyInAnyOrder(away, newcomer);
        coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(joined.generationId())
                .setMemberId(newcomer).setAssignments(List.of(
                        new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(away)
                                .setAssignment(new byte[] {5}),
                        new SyncGroupRequestData.SyncGroupRequestAssignment().setMemberId(newcomer)
                                .setAssignment(new byte[] {6})))).get();
        assertThat(coordinator.group("g").state()).isEqualTo(ClassicGroup.State.STABLE);

        JoinGroupResponseData back = coordinator.join(staticJoin("", "away"), (short) 5, "c", "h").get();
        assertThat(back.generationId()).isEqualTo(joined.generationId());
        assertThat(coordinator.sync(new SyncGroupRequestData().setGroupId("g").setGenerationId(back.generationId())
                .setMemberId(back.memberId()).setGroupInstanceId("away")).get().assignment()).containsExactly(5);
        assertThat(coordinator.heartbeat("g", back.memberId(), "other", back.generationId()))
                .as("an instance id no member holds").isEqualTo(Errors.UNKNOWN_MEMBER_ID);
    }
}
