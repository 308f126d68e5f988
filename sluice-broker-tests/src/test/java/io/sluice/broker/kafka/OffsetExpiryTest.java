package io.sluice.broker.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.Replication;
import io.sluice.store.FlushMode;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiConsumer;
import org.apache.kafka.common.message.DeleteGroupsRequestData;
import org.apache.kafka.common.message.JoinGroupRequestData;
import org.apache.kafka.common.message.JoinGroupResponseData;
import org.apache.kafka.common.message.SyncGroupRequestData;
import org.apache.kafka.common.protocol.Errors;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Committed offsets of a group with no members expire offsets.retention.minutes after its last commit, as in Kafka:
 * until then they hold the store's retention back; a group with members keeps them however old they are, and a
 * store group no Kafka group id maps to is not the broker's to expire.
 */
class OffsetExpiryTest {

    private static final long RETENTION = TimeUnit.MINUTES.toMillis(60);

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());
    private final ScheduledExecutorService timer = Executors.newSingleThreadScheduledExecutor();
    private final GroupCoordinator coordinator = new GroupCoordinator(timer, now::get);
    /** The KIP-848 groups of the last {@link #groups} made. */
    private ConsumerGroups consumerGroups;

    @AfterEach
    void stop() {
        timer.shutdownNow();
    }

    private static JoinGroupRequestData join(String group, String member) {
        JoinGroupRequestData.JoinGroupRequestProtocolCollection protocols =
                new JoinGroupRequestData.JoinGroupRequestProtocolCollection();
        protocols.add(new JoinGroupRequestData.JoinGroupRequestProtocol().setName("range").setMetadata(new byte[1]));
        return new JoinGroupRequestData().setGroupId(group).setMemberId(member).setSessionTimeoutMs(30_000)
                .setRebalanceTimeoutMs(30_000).setProtocolType("consumer").setProtocols(protocols);
    }

    /** @return a store on the test's clock with topic "t" (1 queue); retention passes only when asked */
    private Store openStore() {
        Store store = Store.open(dir, StoreConfig.builder().flushMode(FlushMode.ASYNC).clock(clock)
                .retention(RetentionPolicy.defaults().withCheckIntervalMillis(3_600_000)).build());
        store.createTopic("t", TopicLayout.QUEUE, 1);
        return store;
    }

    /** @return the group APIs over the store and the test's coordinator (offsets.retention.minutes 60) */
    private GroupApis groups(Store store) {
        io.sluice.broker.local.LocalPartitions partitions = new io.sluice.broker.local.LocalPartitions(store, 0);
        consumerGroups = new ConsumerGroups(partitions, coordinator, timer);
        return new GroupApis(partitions, new io.sluice.broker.local.LocalCluster(store, partitions,
                new io.sluice.broker.ClusterView.Node(0, "127.0.0.1", 9092), TopicLayout.QUEUE), coordinator,
                consumerGroups, new KafkaApis.Settings(0, "127.0.0.1", 9092, "c", 1, false, TopicLayout.QUEUE, 60),
                store.config().clock()::millis);
    }

    private void joinAlone(String group) throws Exception {
        String id = coordinator.join(join(group, ""), (short) 5, "c", "h").get().memberId();
        JoinGroupResponseData joined = coordinator.join(join(group, id), (short) 5, "c", "h").get();
        coordinator.sync(new SyncGroupRequestData().setGroupId(group).setGenerationId(joined.generationId())
                .setMemberId(id).setAssignments(List.of(new SyncGroupRequestData.SyncGroupRequestAssignment()
                        .setMemberId(id).setAssignment(new byte[] {1})))).get();
    }

    @Test
    void offsetsOfAGroupWithoutMembersExpireAfterTheRetentionAndStopHoldingData() throws Exception {
        try (Store store = openStore()) {
            GroupApis groups = groups(store);
            store.commitOffset(GroupNames.toStore("abandoned"), "t", 0, 3);
            store.commitOffset(GroupNames.toStore("consuming"), "t", 0, 4);
            store.commitOffset("not_a-kafka-name", "t", 0, 5); // a store name no Kafka group id maps to
            joinAlone("consuming");
            assertThat(coordinator.group("consuming").members).hasSize(1);

            now.addAndGet(RETENTION);
            assertThat(groups.expireOffsets(RETENTION)).as("committed exactly the retention ago").isEmpty();
            store.commitOffset(GroupNames.toStore("recent"), "t", 0, 6);
            now.addAndGet(1);

            assertThat(groups.expireOffsets(RETENTION)).containsExactly("abandoned");
            assertThat(store.committedOffset(GroupNames.toStore("abandoned"), "t", 0)).isEmpty();
            assertThat(store.committedOffset(GroupNames.toStore("consuming"), "t", 0)).as("it has a member")
                    .hasValue(4);
            assertThat(store.committedOffset(GroupNames.toStore("recent"), "t", 0)).hasValue(6);
            assertThat(store.committedOffset("not_a-kafka-name", "t", 0)).hasValue(5);

            // A commit refreshes the group: it expires a retention after its newest commit.
            now.addAndGet(RETENTION / 2);
            store.commitOffset(GroupNames.toStore("recent"), "t", 0, 7);
            now.addAndGet(RETENTION);
            assertThat(groups.expireOffsets(RETENTION)).isEmpty();
            now.addAndGet(RETENTION / 2);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("recent");
        }
    }

    /**
     * A KIP-848 consumer group is as a classic one: while it has members its offsets stay, however old its last
     * commit; once its last member left, they go a retention later.
     */
    @Test
    void aConsumerGroupKeepsItsOffsetsWhileItHasMembersAndLosesThemARetentionAfter() throws Exception {
        try (Store store = openStore()) {
            GroupApis groups = groups(store);
            store.commitOffset(GroupNames.toStore("modern"), "t", 0, 3);
            org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData joined = consumerGroups.heartbeat(
                    new org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData().setGroupId("modern")
                            .setMemberId("m").setMemberEpoch(0).setRebalanceTimeoutMs(30_000)
                            .setSubscribedTopicNames(List.of("t")).setTopicPartitions(List.of()),
                    (short) 1, "c", "h");
            assertThat(joined.errorCode()).isZero();
            now.addAndGet(3 * RETENTION);
            assertThat(groups.expireOffsets(RETENTION)).as("it has a member").isEmpty();
            consumerGroups.heartbeat(new org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData()
                    .setGroupId("modern").setMemberId("m").setMemberEpoch(-1), (short) 1, "c", "h");
            now.addAndGet(RETENTION / 2);
            assertThat(groups.expireOffsets(RETENTION)).as("empty for half a retention").isEmpty();
            now.addAndGet(RETENTION / 2 + 1);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("modern");
            assertThat(store.committedOffset(GroupNames.toStore("modern"), "t", 0)).isEmpty();
        }
    }

    /**
     * The retention counts from when the group last had members, not only from its last commit: a group that consumed
     * for a long time without committing (a quiet topic) keeps its offsets for a retention after its members left.
     */
    @Test
    void aGroupThatJustLostItsMembersKeepsItsOffsetsForARetention() throws Exception {
        try (Store store = openStore()) {
            GroupApis groups = groups(store);
            store.commitOffset(GroupNames.toStore("quiet"), "t", 0, 3);
            joinAlone("quiet");
            now.addAndGet(3 * RETENTION);
            assertThat(groups.expireOffsets(RETENTION)).as("it has a member").isEmpty();
            String member = coordinator.group("quiet").members.keySet().iterator().next();
            coordinator.leave("quiet", member, null);
            now.addAndGet(RETENTION / 2);
            assertThat(groups.expireOffsets(RETENTION)).as("empty for half a retention").isEmpty();
            now.addAndGet(RETENTION / 2 + 1);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("quiet");
            assertThat(store.committedOffset(GroupNames.toStore("quiet"), "t", 0)).isEmpty();
        }
    }

    /**
     * The time a group last had members is kept only as long as it can decide an expiry: groups that come and go
     * without committing (a client looping over random group ids) leave nothing behind after a check.
     */
    @Test
    void groupsThatCommittedNothingLeaveNoTimeBehind() throws Exception {
        try (Store store = openStore()) {
            GroupApis groups = groups(store);
            store.commitOffset(GroupNames.toStore("kept"), "t", 0, 1);
            for (String id : List.of("kept", "a", "b", "c")) {
                joinAlone(id);
                coordinator.leave(id, coordinator.group(id).members.keySet().iterator().next(), null);
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!coordinator.groups().isEmpty() && System.nanoTime() < deadline) {
                Thread.sleep(20); // the timer drops empty groups
            }
            assertThat(coordinator.occupiedGroups()).containsExactlyInAnyOrder("kept", "a", "b", "c");
            assertThat(groups.expireOffsets(RETENTION)).isEmpty();
            assertThat(coordinator.occupiedGroups()).containsExactly("kept");
        }
    }

    /**
     * One broker's view of a cluster for the group APIs: the controller (which coordinates every group) is whichever
     * node the test says, in the epoch it says; a forget is recorded with the decision it names and follows the
     * cluster's rule: refused if its epoch is over, kept if the group committed after the decision's position.
     */
    private static final class Cluster implements Replication {
        final Store store;
        final AtomicInteger controller = new AtomicInteger(2);
        final AtomicLong epoch = new AtomicLong(3);
        final AtomicLong applied = new AtomicLong(41);
        /** Each group's latest commit position, as the cluster's log orders them. */
        final Map<String, Long> commits = new ConcurrentHashMap<>();
        final List<String> forgets = new CopyOnWriteArrayList<>();
        /** The next decision read ends its epoch: another broker coordinates before its forget is logged. */
        final AtomicBoolean endEpochAfterDecision = new AtomicBoolean();

        Cluster(Store store) {
            this.store = store;
        }

        @Override
        public int self() {
            return 1;
        }

        @Override
        public List<Node> brokers() {
            return List.of(new Node(1, "127.0.0.1", 9092), new Node(2, "127.0.0.1", 9093));
        }

        @Override
        public int controller() {
            return controller.get();
        }

        @Override
        public boolean controllerReady() {
            return true;
        }

        @Override
        public PartitionView partition(String topic, int partition) {
            throw new UnsupportedOperationException("no partitions here");
        }

        @Override
        public boolean leads(String topic, int partition) {
            return false;
        }

        @Override
        public Appended append(String topic, int partition, io.sluice.store.KafkaBatch batch) {
            throw new UnsupportedOperationException("no appends here");
        }

        @Override
        public long highWatermark(String topic, int partition) {
            return 0;
        }

        @Override
        public long logStartOffset(String topic, int partition) {
            return 0;
        }

        @Override
        public CompletableFuture<Long> deleteRecords(String topic, int partition, long offset) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no records here"));
        }

        @Override
        public CompletableFuture<Void> deleteTopic(String topic) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no topics here"));
        }

        @Override
        public CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                                   java.util.Map<String, String> configs) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no topics here"));
        }

        @Override
        public CompletableFuture<Void> alterTopicConfigs(String topic,
                java.util.function.UnaryOperator<java.util.Map<String, String>> change) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no topics here"));
        }

        @Override
        public CompletableFuture<Void> addPartitions(String topic, int partitions) {
            return CompletableFuture.failedFuture(new UnsupportedOperationException("no topics here"));
        }

        @Override
        public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
            offsets.forEach(o -> store.commitOffset(group, o.topic(), o.partition(), o.offset()));
            commits.put(group, applied.incrementAndGet());
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public GroupsCoordination groupsCoordination() {
            GroupsCoordination decision = new GroupsCoordination(controller.get() == self() ? epoch.get() : -1,
                    applied.get());
            if (endEpochAfterDecision.getAndSet(false)) {
                epoch.incrementAndGet();
            }
            return decision;
        }

        @Override
        public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision) {
            forgets.add(group + "@" + decision.applied() + "/" + decision.epoch());
            if (decision.epoch() != epoch.get() || controller.get() != self()) {
                return CompletableFuture.failedFuture(new IllegalArgumentException("refused: epoch over"));
            }
            if (commits.getOrDefault(group, -1L) > decision.applied()) {
                return CompletableFuture.completedFuture(false);
            }
            commits.remove(group);
            store.removeConsumerGroup(group);
            return CompletableFuture.completedFuture(true);
        }

        @Override
        public int defaultReplicationFactor() {
            return 2;
        }

        @Override
        public void onChange(BiConsumer<String, Integer> listener) {
        }
    }

    private GroupApis clusterGroups(Store store, Cluster cluster) {
        io.sluice.broker.replicated.ReplicatedPartitions partitions =
                new io.sluice.broker.replicated.ReplicatedPartitions(cluster, store);
        return new GroupApis(partitions, new io.sluice.broker.replicated.ReplicatedCluster(cluster, store),
                coordinator, new ConsumerGroups(partitions, coordinator, timer), new KafkaApis.Settings(1, "127.0.0.1", 9092, "c", 1, false, TopicLayout.QUEUE, 60),
                store.config().clock()::millis);
    }

    /**
     * In a cluster a broker that does not coordinate groups expires none (it does not know who is in them); the
     * coordinator expires them through the cluster, naming where it stood when it decided, and no sooner than a
     * retention after it was first found coordinating in its epoch.
     */
    @Test
    void inAClusterOnlyTheCoordinatorExpiresOffsetsAndThroughTheCluster() throws Exception {
        try (Store store = openStore()) {
            Cluster cluster = new Cluster(store);
            GroupApis groups = clusterGroups(store, cluster);
            store.commitOffset(GroupNames.toStore("abandoned"), "t", 0, 3);
            now.addAndGet(3 * RETENTION);
            assertThat(groups.expireOffsets(RETENTION)).as("node 2 coordinates").isEmpty();
            assertThat(store.committedOffset(GroupNames.toStore("abandoned"), "t", 0)).hasValue(3);

            cluster.controller.set(1);
            assertThat(groups.expireOffsets(RETENTION)).as("coordinating only since now").isEmpty();
            now.addAndGet(RETENTION / 2);
            cluster.applied.set(57);
            assertThat(groups.expireOffsets(RETENTION)).isEmpty();
            now.addAndGet(RETENTION / 2 + 1);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("abandoned");
            assertThat(cluster.forgets).containsExactly("abandoned@57/3");
            assertThat(store.committedOffset(GroupNames.toStore("abandoned"), "t", 0)).isEmpty();

            // Another broker coordinated meanwhile (a new epoch, the same broker again): the wait starts again.
            store.commitOffset(GroupNames.toStore("later"), "t", 0, 4);
            now.addAndGet(2 * RETENTION);
            cluster.epoch.set(5);
            assertThat(groups.expireOffsets(RETENTION)).isEmpty();
            now.addAndGet(RETENTION + 1);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("later");
            assertThat(cluster.forgets).containsExactly("abandoned@57/3", "later@57/5");
        }
    }

    /**
     * A commit the cluster took after the coordinator read the offsets it decided on keeps the group; a decision whose
     * epoch is over is refused and forgets nothing.
     */
    @Test
    void aCommitAfterTheDecisionOrAnEpochOverKeepsTheGroup() throws Exception {
        try (Store store = openStore()) {
            Cluster cluster = new Cluster(store);
            cluster.controller.set(1);
            GroupApis groups = clusterGroups(store, cluster);
            store.commitOffset(GroupNames.toStore("busy"), "t", 0, 3);
            store.commitOffset(GroupNames.toStore("idle"), "t", 0, 4);
            assertThat(groups.expireOffsets(RETENTION)).isEmpty();
            now.addAndGet(RETENTION + 1);
            // Committed through another path after the decision's position (the store still shows the old time).
            cluster.commits.put(GroupNames.toStore("busy"), 42L);
            assertThat(groups.expireOffsets(RETENTION)).containsExactly("idle");
            assertThat(store.committedOffset(GroupNames.toStore("busy"), "t", 0)).hasValue(3);

            store.commitOffset(GroupNames.toStore("stale"), "t", 0, 5);
            now.addAndGet(RETENTION + 1);
            cluster.endEpochAfterDecision.set(true);
            assertThat(groups.expireOffsets(RETENTION)).as("the epoch ended before the forget was logged").isEmpty();
            assertThat(store.committedOffset(GroupNames.toStore("stale"), "t", 0)).hasValue(5);
            assertThat(store.committedOffset(GroupNames.toStore("busy"), "t", 0)).hasValue(3);
            assertThat(cluster.forgets).as("in group order, each pass")
                    .containsExactly("busy@41/3", "idle@41/3", "busy@41/3", "stale@41/3");
        }
    }

    /**
     * In a cluster only the coordinator deletes a group, and through the cluster; a commit the cluster took after the
     * decision keeps the group and asks the client to try again.
     */
    @Test
    void inAClusterOnlyTheCoordinatorDeletesAGroupAndThroughTheCluster() throws Exception {
        try (Store store = openStore()) {
            Cluster cluster = new Cluster(store);
            GroupApis groups = clusterGroups(store, cluster);
            store.commitOffset(GroupNames.toStore("old"), "t", 0, 3);
            DeleteGroupsRequestData request = new DeleteGroupsRequestData().setGroupsNames(List.of("old"));
            assertThat(groups.delete(request).results().find("old").errorCode())
                    .isEqualTo(Errors.NOT_COORDINATOR.code());
            assertThat(store.committedOffset(GroupNames.toStore("old"), "t", 0)).hasValue(3);
            assertThat(cluster.forgets).isEmpty();

            cluster.controller.set(1);
            cluster.commits.put(GroupNames.toStore("old"), 42L);
            assertThat(groups.delete(request).results().find("old").errorCode())
                    .isEqualTo(Errors.COORDINATOR_LOAD_IN_PROGRESS.code());
            assertThat(store.committedOffset(GroupNames.toStore("old"), "t", 0)).hasValue(3);
            cluster.applied.set(42);
            assertThat(groups.delete(request).results().find("old").errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(cluster.forgets).containsExactly("old@41/3", "old@42/3");
            assertThat(store.committedOffset(GroupNames.toStore("old"), "t", 0)).isEmpty();
            assertThat(groups.delete(request).results().find("old").errorCode())
                    .isEqualTo(Errors.GROUP_ID_NOT_FOUND.code());
        }
    }
}
