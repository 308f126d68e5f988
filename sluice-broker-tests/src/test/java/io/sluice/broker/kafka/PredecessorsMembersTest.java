package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.ClusterView;
import io.sluice.broker.local.LocalCluster;
import io.sluice.broker.local.LocalPartitions;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * KIP-848 members the coordinator does not know, within a session timeout of its start: they may be members of the
 * coordinator before (membership lives in memory), which Kafka's coordinator would know, having loaded them from
 * __consumer_offsets. A full heartbeat of one is taken over (its epoch and the partitions it owns kept, as the member
 * would find them on Kafka), and its fetch or commit sent before that is answered COORDINATOR_LOAD_IN_PROGRESS, which
 * Kafka's consumer retries (under the epoch its next heartbeat gives it), where UNKNOWN_MEMBER_ID would fail its
 * poll(). After that window, UNKNOWN_MEMBER_ID, as Kafka answers a member it does not know.
 */
class PredecessorsMembersTest {

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private ConsumerGroups consumerGroups;

    private GroupApis open(Store store) {
        return open(store, ConsumerGroups.SESSION_TIMEOUT_MS);
    }

    private GroupApis open(Store store, int sessionTimeoutMs) {
        store.createTopic("t", TopicLayout.BATCHES, 2);
        LocalPartitions partitions = new LocalPartitions(store, 0);
        return open(store, sessionTimeoutMs, new LocalCluster(store, partitions,
                new ClusterView.Node(0, "127.0.0.1", 9092), TopicLayout.BATCHES));
    }

    private GroupApis open(Store store, int sessionTimeoutMs, ClusterView cluster) {
        LocalPartitions partitions = new LocalPartitions(store, 0);
        GroupCoordinator classic = new GroupCoordinator(timer, now::get);
        consumerGroups = new ConsumerGroups(partitions, classic, timer, 100, sessionTimeoutMs);
        return new GroupApis(partitions, cluster, classic, consumerGroups,
                new KafkaApis.Settings(0, "127.0.0.1", 9092, "c", 1, false, TopicLayout.BATCHES, 60),
                store.config().clock()::millis);
    }

    private static Errors fetchAs(GroupApis groups, String member, int epoch) {
        OffsetFetchRequestData request = new OffsetFetchRequestData();
        request.groups().add(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId("g")
                .setMemberId(member).setMemberEpoch(epoch).setTopics(null));
        return Errors.forCode(groups.fetchOffsets(request, (short) 9).groups().getFirst().errorCode());
    }

    private static Errors commitAs(GroupApis groups, String member, int epoch) {
        OffsetCommitRequestData request = new OffsetCommitRequestData().setGroupId("g").setMemberId(member)
                .setGenerationIdOrMemberEpoch(epoch);
        request.topics().add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setName("t").setPartitions(
                List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
                        .setCommittedOffset(0))));
        return Errors.forCode(groups.commit(request, (short) 9).topics().getFirst().partitions().getFirst()
                .errorCode());
    }

    private static ConsumerGroupHeartbeatResponseData beat(GroupApis groups, ConsumerGroupHeartbeatRequestData beat) {
        return groups.consumerHeartbeat(beat.setGroupId("g"), (short) 1, "client");
    }

    private static ConsumerGroupHeartbeatRequestData full(String member, int epoch, Uuid topic, Integer... owned) {
        return new ConsumerGroupHeartbeatRequestData().setMemberId(member).setMemberEpoch(epoch)
                .setRebalanceTimeoutMs(60_000).setSubscribedTopicNames(List.of("t"))
                .setTopicPartitions(List.of(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(topic)
                        .setPartitions(List.of(owned))));
    }

    private static List<Integer> assigned(ConsumerGroupHeartbeatResponseData answer) {
        return answer.assignment().topicPartitions().stream().flatMap(topic -> topic.partitions().stream()).toList();
    }

    @Test
    void membersOfBeforeAreTakenOverWithThePartitionsTheyOwn() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            GroupApis groups = open(store);
            Uuid topic = KafkaTopicIds.handedOut(new LocalPartitions(store, 0), "t");

            // Its commit before the group is known here at all: retriable, not fatal.
            assertThat(commitAs(groups, "a", 7)).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            ConsumerGroupHeartbeatResponseData a = beat(groups, full("a", 7, topic, 1));
            assertThat(a.errorCode()).isZero();
            assertThat(a.memberEpoch()).as("nothing changed for it").isEqualTo(7);
            assertThat(assigned(a)).containsExactly(1);
            // A fetch or commit of a member not yet taken over: retriable, not fatal.
            assertThat(fetchAs(groups, "b", 6)).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            assertThat(commitAs(groups, "b", 6)).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            // One a step behind (its answer to epoch 7 not yet taken) comes up to the group's epoch, keeping its own.
            ConsumerGroupHeartbeatResponseData b = beat(groups, full("b", 6, topic, 0));
            assertThat(b.errorCode()).isZero();
            assertThat(b.memberEpoch()).isEqualTo(7);
            assertThat(assigned(b)).as("each keeps the partition it had").containsExactly(0);
            // A member that claims partitions others hold is given only what is free: here, nothing.
            ConsumerGroupHeartbeatResponseData c = beat(groups, full("c", 7, topic, 0, 1));
            assertThat(c.errorCode()).isZero();
            assertThat(assigned(c)).isEmpty();
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("a").setMemberEpoch(7))
                    .assignment()).as("no new assignment while the takeover lasts").isNull();

            // Taken over, they fetch and commit under their epochs.
            assertThat(fetchAs(groups, "a", 7)).isEqualTo(Errors.NONE);
            assertThat(commitAs(groups, "b", 7)).isEqualTo(Errors.NONE);

            // A heartbeat that does not say all of the member is not enough to take it over: the consumer is asked
            // for the full one (it sends it after any error), not fenced.
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("d").setMemberEpoch(3))
                    .errorCode()).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS.code());
        }
    }

    @Test
    void anUnknownMemberIsUnknownOnceASessionHasPassedSinceTheStart() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            GroupApis groups = open(store);
            Uuid topic = KafkaTopicIds.handedOut(new LocalPartitions(store, 0), "t");
            ConsumerGroupHeartbeatResponseData a = beat(groups, new ConsumerGroupHeartbeatRequestData()
                    .setMemberId("a").setMemberEpoch(0).setRebalanceTimeoutMs(60_000)
                    .setSubscribedTopicNames(List.of("t")).setTopicPartitions(List.of()));
            int epoch = a.memberEpoch();
            assertThat(epoch).isPositive();
            assertThat(fetchAs(groups, "a", epoch)).isEqualTo(Errors.NONE);
            assertThat(fetchAs(groups, "a", epoch + 1)).isEqualTo(Errors.STALE_MEMBER_EPOCH);
            assertThat(fetchAs(groups, "before", 7)).as("a member from before the start")
                    .isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            assertThat(fetchAs(groups, "before", 0)).as("epoch 0 names a member joining: never a predecessor's")
                    .isEqualTo(Errors.UNKNOWN_MEMBER_ID);

            now.addAndGet(ConsumerGroups.SESSION_TIMEOUT_MS - 1);
            assertThat(fetchAs(groups, "before", 7)).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            now.addAndGet(1);
            assertThat(fetchAs(groups, "before", 7)).as("a session after the start: any member of before is gone")
                    .isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            assertThat(commitAs(groups, "before", 7)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            assertThat(beat(groups, full("before", 7, topic, 0)).errorCode())
                    .isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("before").setMemberEpoch(7))
                    .errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
            assertThat(fetchAs(groups, "a", epoch)).isEqualTo(Errors.NONE);
        }
    }

    @Test
    void thePartitionsOfMembersThatDoNotComeBackAreHandedOutWhenTheTakeoverSettles() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            GroupApis groups = open(store, 1_500);
            Uuid topic = KafkaTopicIds.handedOut(new LocalPartitions(store, 0), "t");
            ConsumerGroupHeartbeatResponseData a = beat(groups, full("a", 4, topic, 1));
            assertThat(assigned(a)).containsExactly(1);
            long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(20);
            int epoch = a.memberEpoch();
            List<Integer> partitions = assigned(a);
            while (partitions.size() < 2 && System.nanoTime() < deadline) {
                Thread.sleep(100);
                ConsumerGroupHeartbeatResponseData answer = beat(groups, new ConsumerGroupHeartbeatRequestData()
                        .setMemberId("a").setMemberEpoch(epoch));
                assertThat(answer.errorCode()).isZero();
                epoch = answer.memberEpoch();
                if (answer.assignment() != null) {
                    partitions = assigned(answer);
                }
            }
            assertThat(partitions).as("partition 0, whose owner did not come back").containsExactlyInAnyOrder(0, 1);
            assertThat(epoch).isGreaterThan(4);
        }
    }

    /** Broker 0 of a cluster whose groups' coordinator (and its epoch) the test moves. */
    private static final class MovingCoordinator {
        volatile int controller = 1;
        volatile long epoch = -1;

        ClusterView over(ClusterView cluster) {
            return (ClusterView) java.lang.reflect.Proxy.newProxyInstance(ClusterView.class.getClassLoader(),
                    new Class<?>[] {ClusterView.class}, (proxy, method, args) -> switch (method.getName()) {
                        case "controller" -> controller;
                        case "groupsCoordination" -> new ClusterView.GroupsCoordination(
                                controller == 0 ? epoch : -1, 0);
                        default -> {
                            try {
                                yield method.invoke(cluster, args);
                            } catch (java.lang.reflect.InvocationTargetException e) {
                                throw e.getCause();
                            }
                        }
                    });
        }

        void coordinateHere(long newEpoch) {
            epoch = newEpoch;
            controller = 0;
        }
    }

    @Test
    void theWindowOpensWhenTheBrokerIsElectedAndAReturnFindsMembersAnew() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            store.createTopic("t", TopicLayout.BATCHES, 2);
            LocalPartitions partitions = new LocalPartitions(store, 0);
            MovingCoordinator moving = new MovingCoordinator();
            GroupApis groups = open(store, ConsumerGroups.SESSION_TIMEOUT_MS, moving.over(new LocalCluster(store,
                    partitions, new ClusterView.Node(0, "127.0.0.1", 9092), TopicLayout.BATCHES)));
            Uuid topic = KafkaTopicIds.handedOut(partitions, "t");
            assertThat(beat(groups, full("a", 3, topic, 0)).errorCode()).isEqualTo(Errors.NOT_COORDINATOR.code());
            // A group not known here at all, a member's heartbeat not in full: asked for the full one.
            moving.coordinateHere(4);
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("a").setMemberEpoch(3))
                    .errorCode()).isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS.code());
            moving.controller = 1;

            // Elected long after its start: the window counts from the election.
            now.addAndGet(10L * ConsumerGroups.SESSION_TIMEOUT_MS);
            moving.coordinateHere(5);
            ConsumerGroupHeartbeatResponseData a = beat(groups, full("a", 3, topic, 0));
            assertThat(a.errorCode()).isZero();
            assertThat(a.memberEpoch()).isEqualTo(3);
            assertThat(assigned(a)).containsExactly(0);

            // Another broker coordinates a while, the member's epoch moves on there, and this one is elected again:
            // what it knew of the member is out of date, and it takes the member over anew.
            moving.controller = 1;
            now.addAndGet(1_000);
            moving.coordinateHere(7);
            ConsumerGroupHeartbeatResponseData again = beat(groups, full("a", 9, topic, 0, 1));
            assertThat(again.errorCode()).isZero();
            assertThat(again.memberEpoch()).isEqualTo(9);
            assertThat(assigned(again)).containsExactlyInAnyOrder(0, 1);
        }
    }

    @Test
    void aClaimIsLimitedToTheMembersTopicsAndSaneEpochs() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            GroupApis groups = open(store);
            store.createTopic("other", TopicLayout.BATCHES, 2);
            LocalPartitions partitions = new LocalPartitions(store, 0);
            Uuid topic = KafkaTopicIds.handedOut(partitions, "t");
            Uuid other = KafkaTopicIds.handedOut(partitions, "other");
            ConsumerGroupHeartbeatRequestData claim = full("a", 3, topic, 1, 5, -1);
            claim.setTopicPartitions(new java.util.ArrayList<>(claim.topicPartitions()));
            claim.topicPartitions().add(new ConsumerGroupHeartbeatRequestData.TopicPartitions().setTopicId(other)
                    .setPartitions(List.of(0)));
            claim.topicPartitions().add(new ConsumerGroupHeartbeatRequestData.TopicPartitions()
                    .setTopicId(Uuid.randomUuid()).setPartitions(List.of(0)));
            ConsumerGroupHeartbeatResponseData a = beat(groups, claim);
            assertThat(a.errorCode()).isZero();
            assertThat(a.assignment().topicPartitions()).as("not subscribed to other, nor to a topic not known")
                    .singleElement().satisfies(owned -> {
                        assertThat(owned.topicId()).isEqualTo(topic);
                        assertThat(owned.partitions()).as("partitions that exist").containsExactly(1);
                    });

            assertThat(beat(groups, full("b", ConsumerGroups.MAX_TAKEN_OVER_EPOCH + 1, topic, 0)).errorCode())
                    .as("an epoch no group reaches").isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
        }
    }

    @Test
    void aMemberThisCoordinatorRemovedIsNotTakenOverAgainAndTransactionalCommitsWait() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            GroupApis groups = open(store);
            Uuid topic = KafkaTopicIds.handedOut(new LocalPartitions(store, 0), "t");
            assertThat(beat(groups, full("a", 5, topic, 0)).memberEpoch()).isEqualTo(5);
            assertThat(beat(groups, full("b", 5, topic, 1)).memberEpoch()).isEqualTo(5);

            // A transactional commit (TxnOffsetCommit) of a member not known yet waits, retriable, as the others do;
            // one of a known member at a stale epoch is ILLEGAL_GENERATION, as on Kafka.
            assertThat(groups.checkTransactionalCommit("g", "c", null, 5))
                    .isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS);
            assertThat(groups.checkTransactionalCommit("g", "a", null, 4)).isEqualTo(Errors.ILLEGAL_GENERATION);
            assertThat(groups.checkTransactionalCommit("g", "a", null, 5)).isEqualTo(Errors.NONE);

            // "a" leaves: this coordinator knows it is gone, so it is not one of before.
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("a").setMemberEpoch(-1))
                    .errorCode()).isZero();
            assertThat(beat(groups, full("a", 5, topic, 0)).errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("a").setMemberEpoch(5))
                    .errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
            assertThat(fetchAs(groups, "a", 5)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            assertThat(commitAs(groups, "a", 5)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            assertThat(groups.checkTransactionalCommit("g", "a", null, 5)).isEqualTo(Errors.UNKNOWN_MEMBER_ID);
            // It joins again from epoch 0, as any member.
            assertThat(beat(groups, new ConsumerGroupHeartbeatRequestData().setMemberId("a").setMemberEpoch(0)
                    .setRebalanceTimeoutMs(60_000).setSubscribedTopicNames(List.of("t"))
                    .setTopicPartitions(List.of())).errorCode()).isZero();
        }
    }

    @Test
    void aBrokerStartedOnAStoreWithNoTopicsHadNoMembersBefore() {
        try (Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock).build())) {
            LocalPartitions partitions = new LocalPartitions(store, 0);
            GroupApis groups = open(store, ConsumerGroups.SESSION_TIMEOUT_MS, new LocalCluster(store, partitions,
                    new ClusterView.Node(0, "127.0.0.1", 9092), TopicLayout.BATCHES));
            store.createTopic("t", TopicLayout.BATCHES, 2);
            Uuid topic = KafkaTopicIds.handedOut(partitions, "t");
            assertThat(beat(groups, full("a", 5, topic, 0)).errorCode()).isEqualTo(Errors.UNKNOWN_MEMBER_ID.code());
            assertThat(commitAs(groups, "a", 5)).isEqualTo(Errors.ILLEGAL_GENERATION);
        }
    }
}
