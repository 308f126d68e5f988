package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Replication.PartitionView;
import io.sluice.cluster.ClusterNode.PartitionId;
import java.io.IOException;
import java.net.ConnectException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.ratis.proto.RaftProtos.LeaderInfoProto;
import org.apache.ratis.proto.RaftProtos.RaftPeerRole;
import org.apache.ratis.proto.RaftProtos.RoleInfoProto;
import org.junit.jupiter.api.Test;

/** A node without a replica of a partition learns its leader from the replicas, and asks again once its answer aged. */
class LeadersElsewhereTest {

    private static final PartitionId PARTITION = new PartitionId("t", 0);
    private static final List<Integer> REPLICAS = List.of(2, 3);

    private final AtomicLong now = new AtomicLong(1_000_000_000L);
    private final List<Integer> asked = new ArrayList<>();
    private final Map<Integer, RoleInfoProto> roles = new ConcurrentHashMap<>();
    /** Asks are run by the test, one step at a time (the replicas' answers within a step, as they are asked). */
    private final List<Runnable> pending = new ArrayList<>();
    private boolean running;
    private boolean refusing;

    private final LeadersElsewhere leaders = new LeadersElsewhere((node, partition) -> {
        asked.add(node);
        RoleInfoProto role = roles.get(node);
        if (role == null) {
            throw new ConnectException("node " + node + " is down");
        }
        return role;
    }, this::execute, now::get, DOUBT_MILLIS);

    private static final long DOUBT_MILLIS = 1_200;

    private void execute(Runnable task) {
        if (refusing) {
            throw new RejectedExecutionException("shut down");
        } else if (running) {
            task.run();
        } else {
            pending.add(task);
        }
    }

    private static RoleInfoProto leader(long term) {
        return RoleInfoProto.newBuilder().setRole(RaftPeerRole.LEADER)
                .setLeaderInfo(LeaderInfoProto.newBuilder().setTerm(term)).build();
    }

    private static RoleInfoProto follower() {
        return RoleInfoProto.newBuilder().setRole(RaftPeerRole.FOLLOWER).build();
    }

    private void runPending() {
        List<Runnable> tasks = List.copyOf(pending);
        pending.clear();
        running = true;
        try {
            tasks.forEach(Runnable::run);
        } finally {
            running = false;
        }
    }

    /** As a Metadata answer asks: first whether to wait, then what to name. */
    @Test
    void theFirstQuestionAsksTheReplicasAndIsInDoubtUntilTheyAnswer() {
        roles.put(2, follower());
        roles.put(3, leader(7));
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).as("the first question: asking").isTrue();
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).isEqualTo(-1);
        assertThat(pending).as("one ask at a time").hasSize(1);
        runPending();
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isFalse();
        assertThat(asked).containsExactlyInAnyOrder(2, 3);
        assertThat(leaders.view(PARTITION, REPLICAS)).isEqualTo(new PartitionView(3, 7, REPLICAS, REPLICAS));
        assertThat(pending).as("an answer younger than FRESH_MILLIS is used as it is").isEmpty();
    }

    @Test
    void ofTwoReplicasSayingTheyLeadTheOneInTheHigherTermIsNamed() {
        roles.put(2, leader(3)); // cut off from the others, not stepped down yet
        roles.put(3, leader(4));
        leaders.view(PARTITION, REPLICAS);
        runPending();
        assertThat(leaders.view(PARTITION, REPLICAS)).isEqualTo(new PartitionView(3, 4, REPLICAS, REPLICAS));
    }

    @Test
    void aDoubtAboutReplicasThatCannotBeReachedEnds() {
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isTrue();
        runPending(); // neither answers
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).isEqualTo(-1);
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(LeadersElsewhere.FRESH_MILLIS + 1));
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).as("asking again, within the doubt's length").isTrue();
        runPending();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(DOUBT_MILLIS));
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).as("asking again, past the doubt's length").isFalse();
        assertThat(pending).hasSize(1);
    }

    @Test
    void anAnswerLongAgedIsInDoubtWhileTheReplicasAreAskedAgain() {
        roles.put(2, leader(4));
        leaders.view(PARTITION, REPLICAS);
        runPending();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(60_000)); // a minute unasked
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isTrue();
        runPending();
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isFalse();
    }

    @Test
    void anExecutorThatRefusesLeavesTheLastAnswer() {
        roles.put(2, leader(4));
        leaders.view(PARTITION, REPLICAS);
        runPending();
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(60_000));
        refusing = true;
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).as("nothing being asked").isFalse();
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).isEqualTo(2);
    }

    @Test
    void anAgedAnswerIsServedWhileTheReplicasAreAskedAgainAndADeadOneIsPassedOver() throws IOException {
        roles.put(2, leader(4));
        roles.put(3, follower());
        leaders.view(PARTITION, REPLICAS);
        runPending();
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).isEqualTo(2);

        roles.remove(2); // node 2 died; node 3 was elected
        roles.put(3, leader(5));
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(LeadersElsewhere.FRESH_MILLIS + 1));
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).as("a leader was heard of lately: not in doubt").isFalse();
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).as("the last answer, while asking again").isEqualTo(2);
        runPending();
        assertThat(leaders.view(PARTITION, REPLICAS)).isEqualTo(new PartitionView(3, 5, REPLICAS, REPLICAS));
    }

    @Test
    void noReplicaLeadingMeansNoLeaderNamedAndTheNextQuestionAsksAgain() {
        roles.put(2, follower());
        leaders.view(PARTITION, REPLICAS);
        runPending();
        assertThat(leaders.view(PARTITION, REPLICAS)).isEqualTo(new PartitionView(-1, -1, REPLICAS, List.of()));
        assertThat(pending).as("asking again at once, though the answer is fresh").hasSize(1);
        roles.put(3, leader(2)); // elected meanwhile
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isTrue();
        runPending();
        assertThat(leaders.inDoubt(PARTITION, REPLICAS)).isFalse();
        assertThat(leaders.view(PARTITION, REPLICAS).leader()).isEqualTo(3);
    }
}
