package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Properties;
import java.util.Set;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.ElectionType;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ElectionNotNeededException;
import org.apache.kafka.common.errors.PreferredLeaderNotAvailableException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Leadership on preferred replicas, as Kafka keeps it: a new topic's partitions are led by their preferred replicas
 * (the first of each one's replicas, which placement spreads round the brokers); a preferred election through Admin
 * (as {@code kafka-leader-election} sends it) moves a partition's leadership back to its preferred replica after a
 * failover; and with the periodic check on, leadership goes back by itself.
 */
class LeaderElectionsTest {

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];

    private void start(int id, int leaderImbalanceCheckSeconds) throws IOException {
        StoreConfig store = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
        BrokerConfig defaults = BrokerConfig.defaults();
        BrokerConfig config = new BrokerConfig(defaults.host(), defaults.port(), id, defaults.clusterId(),
                defaults.maxRequestBytes(), defaults.maxConnections(), defaults.defaultPartitions(),
                defaults.autoCreateTopics(), defaults.topicLayout(), defaults.metricsPort(),
                defaults.offsetsRetentionMinutes(), leaderImbalanceCheckSeconds);
        brokers[id] = ClusterBroker.start(dir.resolve("b" + id), cluster, id, store, config);
    }

    private void startThree(int leaderImbalanceCheckSeconds) throws Exception {
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            start(id, leaderImbalanceCheckSeconds);
        }
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("node " + node + " applied the three members", 60,
                    () -> brokers[node].node().members().equals(Set.of(1, 2, 3)));
        }
    }

    @AfterEach
    void stopAll() throws IOException {
        for (int id = 1; id <= 3; id++) {
            if (brokers[id] != null) {
                brokers[id].close();
                brokers[id] = null;
            }
        }
        TestClusters.assertNoRaftThreadsLeft();
    }

    private Admin admin() {
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, TestClusters.bootstrap(cluster));
        return Admin.create(properties);
    }

    private int preferred(String topic, int partition) {
        return anyBroker().node().replicasOf(topic, partition).getFirst();
    }

    private ClusterBroker anyBroker() {
        for (ClusterBroker broker : brokers) {
            if (broker != null) {
                return broker;
            }
        }
        throw new IllegalStateException("no broker running");
    }

    /** @return the partition's leader as the broker leading it says, or -1 */
    private int leader(String topic, int partition) {
        for (int id = 1; id <= 3; id++) {
            if (brokers[id] != null && brokers[id].node().leads(topic, partition)) {
                return id;
            }
        }
        return -1;
    }

    private void awaitPreferredLeaders(String topic, int partitions, int seconds) throws InterruptedException {
        for (ClusterBroker broker : brokers) {
            if (broker != null) {
                InProcessCluster.await("every broker knows " + topic, 30,
                        () -> broker.node().replicasOf(topic, partitions - 1) != null);
            }
        }
        for (int p = 0; p < partitions; p++) {
            int partition = p;
            InProcessCluster.await(topic + "-" + p + " led by its preferred replica", seconds,
                    () -> leader(topic, partition) == preferred(topic, partition));
        }
    }

    @Test
    void aNewTopicsPartitionsAreLedByTheirPreferredReplicasAndAPreferredElectionMovesLeadershipBack()
            throws Exception {
        startThree(0); // no periodic check: only a new partition's leader hands over
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("spread", 6, (short) 3))).all().get(60, TimeUnit.SECONDS);
            awaitPreferredLeaders("spread", 6, 30);
            Set<Integer> leaders = new HashSet<>();
            for (int p = 0; p < 6; p++) {
                leaders.add(leader("spread", p));
            }
            assertThat(leaders).as("leaders spread over the brokers").containsExactlyInAnyOrder(1, 2, 3);

            // A failover moves partition 0 away from its preferred replica, which comes back and stays a follower
            // (once every node's check, each second, saw the new groups on their preferred replicas: they are no
            // longer new, and only the periodic check, off here, would move them).
            Thread.sleep(2_000);
            int preferred = preferred("spread", 0);
            brokers[preferred].close();
            brokers[preferred] = null;
            InProcessCluster.await("another leader of spread-0", 30, () -> leader("spread", 0) > 0);
            produce("spread", 0, 200);
            start(preferred, 0);
            InProcessCluster.await("node " + preferred + " in sync again", 60, () -> {
                int leader = leader("spread", 0);
                return leader > 0 && brokers[leader].node().partition("spread", 0).inSync().contains(preferred);
            });
            Thread.sleep(2_000);
            assertThat(leader("spread", 0)).as("no check moves it back by itself").isNotEqualTo(preferred);

            TopicPartition spread0 = new TopicPartition("spread", 0);
            Map<TopicPartition, Optional<Throwable>> elected = admin.electLeaders(ElectionType.PREFERRED,
                    Set.of(spread0)).partitions().get(30, TimeUnit.SECONDS);
            assertThat(elected.get(spread0)).as("the election's result").isEmpty();
            InProcessCluster.await("spread-0 led by node " + preferred + " again", 10,
                    () -> leader("spread", 0) == preferred);

            TopicPartition missing = new TopicPartition("spread", 9);
            Map<TopicPartition, Optional<Throwable>> again = admin.electLeaders(ElectionType.PREFERRED,
                    Set.of(spread0, missing)).partitions().get(30, TimeUnit.SECONDS);
            assertThat(again.get(spread0)).hasValueSatisfying(error ->
                    assertThat(error).isInstanceOf(ElectionNotNeededException.class));
            assertThat(again.get(missing)).hasValueSatisfying(error ->
                    assertThat(error).isInstanceOf(UnknownTopicOrPartitionException.class));
            produce("spread", 0, 200);

            // With the preferred replica of spread-1 down, its election is refused at once, and spread-1 goes on
            // taking records from its new leader.
            int down = preferred("spread", 1);
            brokers[down].close();
            brokers[down] = null;
            InProcessCluster.await("another leader of spread-1", 30, () -> leader("spread", 1) > 0);
            TopicPartition spread1 = new TopicPartition("spread", 1);
            long asked = System.nanoTime();
            Map<TopicPartition, Optional<Throwable>> refused = admin.electLeaders(ElectionType.PREFERRED,
                    Set.of(spread1)).partitions().get(30, TimeUnit.SECONDS);
            assertThat(refused.get(spread1)).hasValueSatisfying(error ->
                    assertThat(error).isInstanceOf(PreferredLeaderNotAvailableException.class));
            assertThat(Duration.ofNanos(System.nanoTime() - asked)).as("the refusal's time").isLessThan(
                    Duration.ofSeconds(5));
            produce("spread", 1, 200);
        }
    }

    @Test
    void withThePeriodicCheckLeadershipGoesBackToAReturningPreferredReplicaByItself() throws Exception {
        startThree(2);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("back", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            awaitPreferredLeaders("back", 1, 30);
            int preferred = preferred("back", 0);
            brokers[preferred].close();
            brokers[preferred] = null;
            InProcessCluster.await("another leader of back-0", 30, () -> leader("back", 0) > 0);
            produce("back", 0, 200);
            start(preferred, 2);
            awaitPreferredLeaders("back", 1, 60);
            produce("back", 0, 200);
        }
    }

    /**
     * A hand-over that Ratis 3.3.0 fails as it starts (the transferee's StartLeaderElection call failed at once: its
     * node had just stopped) leaves the leader refusing every append as "stepping down", with no timeout to end it;
     * a stock producer once saw NOT_LEADER_OR_FOLLOWER for 120 s. The leader steps down once the refusal outlasts
     * any hand-over, the group elects again, and appends go through.
     */
    @Test
    void aLeaderLeftRefusingAppendsByAFailedHandOverStepsDownAndAppendsResume() throws Exception {
        startThree(0);
        try (Admin admin = admin()) {
            admin.createTopics(List.of(new NewTopic("stuck", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            awaitPreferredLeaders("stuck", 1, 30);
        }
        produce("stuck", 0, 50);
        int leader = leader("stuck", 0);
        int to = brokers[leader].node().replicasOf("stuck", 0).stream().filter(id -> id != leader).findFirst()
                .orElseThrow();
        ReplicatedPartition replica = brokers[leader].node().partition(new ClusterNode.PartitionId("stuck", 0));
        long lastEntry = replica.division().getRaftLog().getLastEntryTermIndex().getIndex();
        assertThat(replica.refusesAsSteppingDown()).as("the probe of a leader with no hand-over pending").isFalse();
        assertThat(replica.division().getRaftLog().getLastEntryTermIndex().getIndex()).as("the log's last entry after"
                + " the probe").isEqualTo(lastEntry);
        long term = replica.term();
        RatisHandOvers.leavePending(replica.division(), ClusterNode.peerId(to));
        assertThat(replica.refusesAsSteppingDown()).as("the probe of the leader left handing over").isTrue();
        assertThatThrownBy(() -> replica.append(KafkaBatch.check(java.lang.foreign.MemorySegment.ofArray(
                KafkaBatch.of(1_700_000_000_000L, List.of("refused".getBytes(StandardCharsets.UTF_8)))))).committed().get(10, TimeUnit.SECONDS))
                .as("an append while the hand-over is left pending").hasMessageContaining("stepping down");

        long stuck = System.nanoTime();
        produce("stuck", 0, 50, 20_000);
        assertThat(Duration.ofNanos(System.nanoTime() - stuck)).as("the time appends were refused")
                .isLessThan(Duration.ofSeconds(15));
        InProcessCluster.await("stuck-0 led", 10, () -> leader("stuck", 0) > 0);
        int now = leader("stuck", 0);
        assertThat(brokers[now].node().partition(new ClusterNode.PartitionId("stuck", 0)).term())
                .as("the term of the partition's leader now, after one elected again").isGreaterThan(term);
    }

    /** Sends {@code count} records to a partition, acks=all, and waits for every acknowledgement. */
    private void produce(String topic, int partition, int count) throws Exception {
        produce(topic, partition, count, 60_000);
    }

    /** As {@link #produce(String, int, int)}, each record failing if not acknowledged within {@code deliveryMs}. */
    private void produce(String topic, int partition, int count, int deliveryMs) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(TestClusters.bootstrap(cluster),
                deliveryMs, 10_000)) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (int i = 0; i < count; i++) {
                sent.add(producer.send(new ProducerRecord<>(topic, partition, null,
                        ("r" + i).getBytes(StandardCharsets.UTF_8))));
            }
            for (Future<RecordMetadata> future : sent) {
                future.get(60, TimeUnit.SECONDS);
            }
        }
    }
}
