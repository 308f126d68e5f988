package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.RetentionReport;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store's retention on a replicated partition keeps the batches its Raft log still names: a leader reads them
 * back to send its entries to a replica behind it. Retention that removed them made the leader's sends fail, and the
 * leader's replica stopped (then the next leader's, by the same read).
 */
class RetentionHoldTest {

    /** A snapshot every 100 entries: the log is purged below it, and what follows stays in the log. */
    private static final ClusterNode.Tuning TUNING = new ClusterNode.Tuning(100, 8192, 1);

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aReplicaBehindTheLeaderCatchesUpFromEntriesWhoseBatchesRetentionWouldHaveRemoved() throws Exception {
        cluster = new InProcessCluster(dir, TUNING, InProcessCluster::retainingLittle);
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("w", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(cluster.bootstrap(), 120_000,
                30_000)) {
            // About 240 entries of 4 KiB: two snapshots, and the leader's log purged below the second one's.
            InProcessCluster.sendLarge(producer, "w", sent, 0, 480);
            int leader = cluster.leaderOf("w");
            ReplicatedPartition leading = cluster.replica(leader, "w");
            await("the leader's log purged", 30, () -> leading.division().getRaftLog().getStartIndex() > 0);
            int behind = leader % 3 + 1;
            cluster.stop(behind);
            // About 40 entries more, short of a third snapshot: the replica's next entry stays in the leader's log,
            // and the store segments (64 KiB) holding its batches are no longer the active one.
            InProcessCluster.sendLarge(producer, "w", sent, 480, 560);
            leading.machine().holdRetentionAtLog();
            RetentionReport retained = cluster.broker(leader).store().enforceRetention();
            assertThat(retained.segmentsDeleted()).as("segments below the hold, which moved with the log's purge")
                    .isPositive();
            assertThat(retained.heldBy()).isEqualTo(RetentionHold.HOLDER);

            cluster.start(behind);
            await("the replica behind in sync", 60, () -> cluster.broker(leader).node().partition("w", 0).inSync()
                    .contains(behind));
            ReplicatedPartition back = cluster.replica(behind, "w");
            long end = leading.highWatermark();
            await("the replica behind committed to " + end, 30, () -> back.highWatermark() >= end);
            assertThat(back.machine().snapshotsInstalled()).as("snapshots installed (the log gave every entry)")
                    .isZero();
            assertThat(cluster.broker(leader).node().replicaStops("w", 0)).as("stops of the leader's replica").isZero();
            assertThat(cluster.leaderOf("w")).as("the leader").isEqualTo(leader);
            // The replica's own retention did not run: it holds the leader's batches and older ones.
            InProcessCluster.assertSameBatches(cluster.broker(behind).store(), cluster.broker(leader).store(), "w",
                    cluster.broker(leader).store().minOffset("w", 0), end);
        }
        // One offset per record: a consumer reads every acknowledged record from the leader's first offset.
        int from = (int) cluster.broker(cluster.leaderOf("w")).store().minOffset("w", 0);
        assertThat(cluster.readValues("w", sent.size() - from)).as("every acknowledged record from offset %d", from)
                .isEqualTo(sent.subList(from, sent.size()));
    }
}
