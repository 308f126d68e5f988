package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker whose whole data directory (store and Raft logs) is lost comes back empty: it rejoins the metadata group
 * and its partitions' groups (out of their configurations, caught up, back in), copies what the leader's purged log
 * no longer has from the leader's store (a snapshot) and takes the rest from the log, ends with the same batches as
 * the others, and then serves as a full replica: with the old leader stopped, it and the third broker elect a leader
 * and every acknowledged record is read back once, in order.
 */
class WipedNodeRebuildTest {

    /** Small snapshots and log segments, so the leader's log is purged well past where the wiped broker stopped. */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(100, 8192, 1);

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** Three brokers and topic w: one partition, replication factor 3. */
    private void startWithTopic() throws Exception {
        cluster = new InProcessCluster(dir, TUNING);
        cluster.startAll();
        // The cluster records that each node took part: a node that lost its data then rejoins. (A topic created
        // before every record would have a node whose join came late take itself for one that lost its data.)
        cluster.awaitMembers();
        cluster.createTopic("w", 1);
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return TestClusters.idempotentProducer(cluster.bootstrap(), 120_000, 30_000);
    }


    @Test
    void aBrokerWhoseDataDirectoryWasWipedRebuildsFromTheOthersAndServesAsAReplica() throws Exception {
        startWithTopic();
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "w", sent, 0, 1_000);

            // A follower loses its whole data directory.
            int leader = cluster.leaderOf("w");
            int wiped = leader % 3 + 1;
            long configuredAt = cluster.broker(leader).node().metadataDivision().getRaftConf().getLogEntryIndex();
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            InProcessCluster.send(producer, "w", sent, 1_000, 3_000);
            ReplicatedPartition leading = cluster.replica(leader, "w");
            await("the leader's log purged", 30, () -> leading.division().getRaftLog().getStartIndex() > 0);

            // It comes back empty, and the cluster goes on taking records while it rebuilds.
            cluster.start(wiped);
            InProcessCluster.send(producer, "w", sent, 3_000, 3_500);
            int back = wiped;
            await("the rebuilt broker in sync", 90, () -> cluster.broker(leader).node().partition("w", 0).inSync()
                    .contains(back));
            await("the rejoin finished", 60, () -> Files.notExists(cluster.directory(back).resolve("raft")
                    .resolve(Membership.REJOIN_FILE)));
            assertThat(cluster.broker(leader).node().metadataDivision().getRaftConf().getLogEntryIndex())
                    .as("the metadata group's configuration, changed by the rejoin").isGreaterThan(configuredAt);
            ReplicatedPartition rebuilt = cluster.replica(wiped, "w");
            assertThat(rebuilt.machine().snapshotsInstalled()).as("snapshots the rebuilt broker installed")
                    .isPositive();
            long end = leading.highWatermark();
            await("the rebuilt broker committed to " + end, 30, () -> rebuilt.highWatermark() >= end);
            InProcessCluster.assertSameBatches(cluster.broker(wiped).store(), cluster.broker(leader).store(), "w",
                    end);

            // It is a full replica: with the leader gone, it and the third broker take acknowledged records on.
            cluster.stop(leader);
            InProcessCluster.send(producer, "w", sent, 3_500, 4_000);
        }

        List<String> read = cluster.readValues("w", sent.size());
        assertThat(read).as("every acknowledged record once, in order").isEqualTo(sent);
    }

    /**
     * The leader's retention removed the partition's first batches before a wiped broker came back: the broker's
     * queue starts empty at the leader's first stored offset and it copies from there (it asked for offset 0 before,
     * which the leader refused each time, and it never caught up); then it serves as a full replica.
     */
    @Test
    void aWipedBrokerCopiesFromTheLeadersFirstStoredOffsetOnceRetentionRemovedTheStart() throws Exception {
        cluster = new InProcessCluster(dir, TUNING, InProcessCluster::retainingLittle);
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("w", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "w", sent, 0, 1_000);
            int leader = cluster.leaderOf("w");
            int wiped = leader % 3 + 1;
            int third = 6 - leader - wiped;
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            InProcessCluster.send(producer, "w", sent, 1_000, 3_000);
            // Large records fill several of the stores' segments, and their entries take snapshots that move the
            // retention hold (the batches the Raft log names) past the first segments.
            InProcessCluster.sendLarge(producer, "w", sent, 3_000, 3_600);
            ReplicatedPartition leading = cluster.replica(leader, "w");
            await("the leader's log purged", 30, () -> leading.division().getRaftLog().getStartIndex() > 0);
            cluster.broker(leader).store().enforceRetention();
            cluster.broker(third).store().enforceRetention();
            long first = cluster.broker(leader).store().minOffset("w", 0);
            assertThat(first).as("the leader's first stored offset, after its retention").isPositive();

            cluster.start(wiped);
            InProcessCluster.send(producer, "w", sent, 3_600, 4_100);
            await("the rebuilt broker in sync", 90, () -> cluster.broker(leader).node().partition("w", 0).inSync()
                    .contains(wiped));
            await("the rejoin finished", 60, () -> Files.notExists(cluster.directory(wiped).resolve("raft")
                    .resolve(Membership.REJOIN_FILE)));
            ReplicatedPartition rebuilt = cluster.replica(wiped, "w");
            long end = leading.highWatermark();
            await("the rebuilt broker committed to " + end, 30, () -> rebuilt.highWatermark() >= end);
            assertThat(cluster.broker(wiped).store().minOffset("w", 0)).as("the rebuilt broker's first offset")
                    .isEqualTo(first);
            for (int node : new int[] {leader, third}) {
                assertThat(cluster.broker(node).node().replicaStops("w", 0)).as("stops of node %d's replica", node)
                        .isZero();
            }
            InProcessCluster.assertSameBatches(cluster.broker(wiped).store(), cluster.broker(leader).store(), "w",
                    end);

            cluster.stop(leader);
            InProcessCluster.send(producer, "w", sent, 4_100, 4_600);
        }
        // One offset per record: a consumer reads every acknowledged record from the serving leader's first offset.
        int from = (int) cluster.broker(cluster.leaderOf("w")).store().minOffset("w", 0);
        assertThat(cluster.readValues("w", sent.size() - from)).as("every acknowledged record from offset %d", from)
                .isEqualTo(sent.subList(from, sent.size()));
    }

    /**
     * A broker wiped before the leader took any snapshot: the leader still has its whole log, and Ratis still asks the
     * rejoining member to install a snapshot first; it answers that none is needed and takes the log.
     */
    @Test
    void aWipedBrokerRejoinsAGroupWhoseLeaderHasNoSnapshotYet() throws Exception {
        startWithTopic();
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "w", sent, 0, 200);
            int leader = cluster.leaderOf("w");
            int wiped = leader % 3 + 1;
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            cluster.start(wiped);
            InProcessCluster.send(producer, "w", sent, 200, 300);
            ReplicatedPartition leading = cluster.replica(leader, "w");
            assertThat(leading.division().getRaftLog().getStartIndex()).as("the leader's log start").isZero();
            await("the wiped broker in sync", 60, () -> cluster.broker(leader).node().partition("w", 0).inSync()
                    .contains(wiped));
            await("the rejoin finished", 60, () -> Files.notExists(cluster.directory(wiped).resolve("raft")
                    .resolve(Membership.REJOIN_FILE)));
            ReplicatedPartition back = cluster.replica(wiped, "w");
            long end = leading.highWatermark();
            await("the wiped broker committed to " + end, 30, () -> back.highWatermark() >= end);
            InProcessCluster.assertSameBatches(cluster.broker(wiped).store(), cluster.broker(leader).store(), "w",
                    end);
        }
    }

    /**
     * A topic that gained a partition before a broker lost its data directory: the broker rejoins the new partition's
     * group as it does the first one's, and its store has the topic with both partitions.
     */
    @Test
    void aWipedBrokerRejoinsThePartitionsATopicGained() throws Exception {
        startWithTopic();
        Properties properties = new Properties();
        properties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        try (Admin admin = Admin.create(properties)) {
            admin.createPartitions(Map.of("w", NewPartitions.increaseTo(2))).all().get(60, TimeUnit.SECONDS);
        }
        ClusterNode.PartitionId second = new ClusterNode.PartitionId("w", 1);
        int leader = -1;
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (leader < 0 && System.nanoTime() < deadline) {
            for (int id = 1; id <= 3; id++) {
                if (cluster.broker(id).node().leads("w", 1)) {
                    leader = id;
                }
            }
            Thread.sleep(50);
        }
        assertThat(leader).as("the leader of w-1").isPositive();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            for (int i = 0; i < 20; i++) {
                producer.send(new ProducerRecord<>("w", 1, null, ("r" + i).getBytes(StandardCharsets.UTF_8)))
                        .get(30, TimeUnit.SECONDS);
            }
            int wiped = leader % 3 + 1;
            cluster.stop(wiped);
            InProcessCluster.deleteTree(cluster.directory(wiped));
            cluster.start(wiped);
            // Records after its return: the leader counts it in sync only once it has them too.
            for (int i = 20; i < 30; i++) {
                producer.send(new ProducerRecord<>("w", 1, null, ("r" + i).getBytes(StandardCharsets.UTF_8)))
                        .get(30, TimeUnit.SECONDS);
            }
            int leading = leader;
            await("the wiped broker in sync on w-1", 90, () -> cluster.broker(leading).node().partition("w", 1)
                    .inSync().contains(wiped));
            await("the rejoin finished", 60, () -> Files.notExists(cluster.directory(wiped).resolve("raft")
                    .resolve(Membership.REJOIN_FILE)));
            assertThat(cluster.broker(wiped).store().queueCount("w")).isEqualTo(2);
            ReplicatedPartition back = cluster.broker(wiped).node().partition(second);
            long end = cluster.broker(leading).node().partition(second).highWatermark();
            assertThat(end).isEqualTo(30);
            await("the wiped broker committed w-1 to " + end, 30, () -> back.highWatermark() >= end);
            assertThat(cluster.broker(wiped).store().maxOffset("w", 1)).as("w-1's end in the wiped broker's store")
                    .isEqualTo(end);
        }
    }

    /**
     * A node stopped while rejoining starts with its groups (partly caught up) and the rejoin marker: it goes on, each
     * group out of the configuration and back (Ratis shuts down a member out of the configuration that stands for
     * election; it is started again, empty), and ends in sync with the marker gone.
     */
    @Test
    void aRejoinResumedAfterARestartFinishes() throws Exception {
        startWithTopic();
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "w", sent, 0, 500);
            int leader = cluster.leaderOf("w");
            int resumed = leader % 3 + 1;
            cluster.stop(resumed);
            Path marker = cluster.directory(resumed).resolve("raft").resolve(Membership.REJOIN_FILE);
            Files.writeString(marker, "rejoining\n");
            InProcessCluster.send(producer, "w", sent, 500, 1_000);
            cluster.start(resumed);
            InProcessCluster.send(producer, "w", sent, 1_000, 1_500);
            await("the resumed broker in sync", 90, () -> cluster.broker(leader).node().partition("w", 0).inSync()
                    .contains(resumed));
            await("the rejoin finished", 60, () -> Files.notExists(marker));
            ReplicatedPartition leading = cluster.replica(leader, "w");
            ReplicatedPartition back = cluster.replica(resumed, "w");
            long end = leading.highWatermark();
            await("the resumed broker committed to " + end, 30, () -> back.highWatermark() >= end);
            InProcessCluster.assertSameBatches(cluster.broker(resumed).store(), cluster.broker(leader).store(), "w",
                    end);
        }
    }
}
