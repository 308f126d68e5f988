package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.statemachine.TransactionContext;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
import org.junit.jupiter.api.Test;

/**
 * The metadata's record of the nodes that took part, as a node with no Raft data asks for it; and the groups' offsets
 * it commits and forgets.
 */
class MetadataMembersTest {

    private final List<MetadataCommands.Topic> created = new ArrayList<>();
    private final List<String> committed = new ArrayList<>();
    private final List<String> forgotten = new ArrayList<>();
    private final List<String> grown = new ArrayList<>();
    private final MetadataStateMachine machine = new MetadataStateMachine((topic, index) -> created.add(topic),
            (topic, before, index) -> grown.add(topic.name() + " " + before + "->" + topic.partitions()), offsets -> {
                committed.add(offsets.group());
                if (offsets.group().equals("failing")) {
                    throw new IllegalStateException("the store took part of the commit, then failed");
                }
            }, forgotten::add, groups -> { }, topic -> { }, topic -> { }, topic -> { }, barrier -> { },
            (group, leader) -> null);
    private long index;

    private String apply(String command) throws Exception {
        LogEntryProto entry = LogEntryProto.newBuilder().setTerm(1).setIndex(index++).setStateMachineLogEntry(
                StateMachineLogEntryProto.newBuilder().setLogData(ByteString.copyFromUtf8(command))).build();
        TransactionContext context = TransactionContext.newBuilder().setStateMachine(machine)
                .setServerRole(RaftPeerRole.FOLLOWER).setLogEntry(entry).build();
        return machine.applyTransaction(context).get().getContent().toStringUtf8();
    }

    @Test
    void aNodeNotRecordedIsRecordedByItsJoinAndARecordedNodeTookPart() throws Exception {
        assertThat(apply(MetadataCommands.memberCommand(1))).isEqualTo(MetadataCommands.RECORDED);
        assertThat(apply(MetadataCommands.memberCommand(2))).isEqualTo(MetadataCommands.RECORDED);
        assertThat(apply("topic t 1 1,2,3")).isEqualTo("created");
        assertThat(apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.RECORDED);
        assertThat(apply(MetadataCommands.joinCommand(3))).as("asked again: now recorded")
                .isEqualTo(MetadataCommands.TOOK_PART);
        assertThat(apply(MetadataCommands.joinCommand(1))).isEqualTo(MetadataCommands.TOOK_PART);
        assertThat(machine.state().members()).containsExactlyInAnyOrder(1, 2, 3);
    }

    @Test
    void inALogWithTopicsFromBeforeAnyRecordAnAbsenceProvesNothing() throws Exception {
        assertThat(apply("topic t 1 1,2,3")).isEqualTo("created");
        assertThat(apply(MetadataCommands.memberCommand(1))).isEqualTo(MetadataCommands.RECORDED);
        assertThat(apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.TOOK_PART);
        assertThat(machine.state().members()).containsExactly(1);
    }

    /** A node sends topics and offsets only once a member record is applied (ClusterFormationTest): its wait. */
    @Test
    void aWaitForAMemberRecordEndsWhenOneIsApplied() throws Exception {
        var waiting = machine.state().awaitMembers();
        assertThat(apply("topic t 1 1")).isEqualTo("created");
        assertThat(waiting).isNotDone();
        assertThat(apply(MetadataCommands.joinCommand(2))).isEqualTo(MetadataCommands.TOOK_PART);
        assertThat(waiting).as("a join that finds the node took part records nothing").isNotDone();
        assertThat(apply(MetadataCommands.memberCommand(1))).isEqualTo(MetadataCommands.RECORDED);
        assertThat(waiting).isCompleted();
        assertThat(machine.state().awaitMembers()).isCompleted();
    }

    @Test
    void malformedCommandsAreRefusedAndChangeNothing() throws Exception {
        assertThat(apply("join three")).startsWith("refused");
        assertThat(apply("topic bad")).startsWith("refused");
        assertThat(machine.state().members()).isEmpty();
        assertThat(apply(MetadataCommands.joinCommand(3))).isEqualTo(MetadataCommands.RECORDED);
    }

    /**
     * A coordinator decides to forget a group on the commits it had applied: a commit the log holds after that point
     * keeps the group on every node alike; one before it does not. A decision logged in another term than the one its
     * coordinator decided in is refused: that coordinator may have lost its place, and the group may have members on
     * the next one.
     */
    @Test
    void aForgetKeepsAGroupThatCommittedAfterTheDecisionItNames() throws Exception {
        assertThat(apply("offsets g t:0=5")).isEqualTo("committed");
        long decided = machine.applied();
        assertThat(apply("offsets g t:0=9")).isEqualTo("committed");
        assertThat(apply(new MetadataCommands.Forget("g", decided, 1).command())).isEqualTo(MetadataCommands.KEPT);
        assertThat(forgotten).isEmpty();

        long later = machine.applied();
        assertThat(apply(new MetadataCommands.Forget("g", later, 2).command())).as("decided in term 2")
                .startsWith("refused");
        assertThat(forgotten).isEmpty();
        assertThat(apply(new MetadataCommands.Forget("g", later, 1).command()))
                .isEqualTo(MetadataCommands.FORGOTTEN);
        assertThat(forgotten).containsExactly("g");

        assertThat(apply("offsets h t:0=1")).isEqualTo("committed");
        assertThat(apply(new MetadataCommands.Forget("h", Long.MAX_VALUE, 1).command()))
                .isEqualTo(MetadataCommands.FORGOTTEN);
        assertThat(forgotten).containsExactly("g", "h");
        assertThat(committed).containsExactly("g", "g", "h");

        assertThat(apply("forget g")).startsWith("refused");
        assertThat(apply("forget g x 1")).startsWith("refused");
        assertThat(forgotten).containsExactly("g", "h");
    }

    /** A commit the store took only part of still counts: a forget decided before it keeps the group. */
    @Test
    void aCommitTheStoreFailedHalfWayStillKeepsItsGroup() throws Exception {
        long decided = machine.applied();
        assertThat(apply("offsets failing t:0=5;t:1=6")).startsWith("refused");
        assertThat(apply(new MetadataCommands.Forget("failing", decided, 1).command()))
                .isEqualTo(MetadataCommands.KEPT);
        assertThat(forgotten).isEmpty();
    }

    /**
     * A topic gains partitions when the command keeps its partitions' replicas and asks for more; nodes waiting for
     * the count learn it; a smaller count, other replicas for a partition it has, or an unknown topic are refused.
     */
    @Test
    void aTopicGainsPartitionsThatKeepItsReplicas() throws Exception {
        assertThat(apply("topic t 1 1,2,3")).isEqualTo("created");
        var waiting = machine.state().awaitPartitions("t", 3);
        assertThat(waiting).isNotDone();
        assertThat(apply("partitions t 3 1,2,3;2,3,1;3,1,2")).isEqualTo("grown");
        assertThat(waiting).isCompleted();
        assertThat(machine.state().topic("t").partitions()).isEqualTo(3);
        assertThat(grown).containsExactly("t 1->3");
        assertThat(machine.state().awaitPartitions("t", 2)).isCompleted();

        assertThat(apply("partitions t 2 1,2,3;2,3,1")).startsWith("refused");
        assertThat(apply("partitions t 4 3,2,1;2,3,1;3,1,2;1,2,3")).as("other replicas for partition 0")
                .startsWith("refused");
        assertThat(apply("partitions u 2 1,2,3;2,3,1")).startsWith("refused");
        assertThat(apply("partitions t 4 1,2,3")).as("four partitions, one replica list").startsWith("refused");
        assertThat(machine.state().topic("t").partitions()).isEqualTo(3);
        assertThat(grown).containsExactly("t 1->3");
    }
}
