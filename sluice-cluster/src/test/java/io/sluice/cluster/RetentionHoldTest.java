package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

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
            InProcessCluster.sendLarge(producer, "w", sent, 0, 240);
            int leader = cluster.leaderOf("w");
            ReplicatedPartition leading = cluster.replica(leader, "w");
            int behind = leader % 3 + 1;
            cluster.stop(behind);
            // About 180 entries in all, short of a second snapshot: the replica's next entry stays in the leader's
            // log, and the batches the log names fill segments of the leader's store that retention would delete.
            InProcessCluster.sendLarge(producer, "w", sent, 240, 360);
            cluster.broker(leader).store().enforceRetention();

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
            InProcessCluster.assertSameBatches(cluster.broker(behind).store(), cluster.broker(leader).store(), "w",
                    end);
        }
        assertThat(cluster.readValues("w", sent.size())).as("every acknowledged record once, in order")
                .isEqualTo(sent);
    }
}
