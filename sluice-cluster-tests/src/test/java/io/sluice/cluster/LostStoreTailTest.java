package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftGroup;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Under ASYNC a replica's store forces its batches once a second while Ratis forces its log of entry headers after
 * each write, so a power cut of one broker leaves a Raft log that names batches its store lost. That replica goes
 * back to its group empty (out of the configuration, rebuilt from the leader, back in), as a broker whose directory
 * was wiped does, rather than stay stopped until someone removes its data; nothing the cluster acknowledged is lost.
 */
class LostStoreTailTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /** The base offsets of partition 0's batches in a store. */
    private static List<Long> batchOffsets(Store store, String topic) {
        List<Long> offsets = new ArrayList<>();
        long offset = store.minOffset(topic, 0);
        while (true) {
            try (ReadResult read = store.read(topic, 0, offset, 100, 1 << 20)) {
                if (read.messages().isEmpty()) {
                    return offsets;
                }
                for (StoredMessage message : read.messages()) {
                    offsets.add(message.queueOffset());
                }
                offset = read.nextOffset();
            }
        }
    }

    /** Three brokers, topic t (one partition, replication factor 3), 400 records committed on every replica. */
    private List<String> startWithRecords() throws Exception {
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100_000, 8L << 20, 1));
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("t", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "t", sent, 0, 400);
        }
        long end = cluster.replica(cluster.leaderOf("t"), "t").highWatermark();
        for (int id = 1; id <= 3; id++) {
            ReplicatedPartition replica = cluster.replica(id, "t");
            await("node " + id + " committed to " + end, 30, () -> replica.highWatermark() >= end);
        }
        return sent;
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return TestClusters.idempotentProducer(cluster.bootstrap(), 120_000, 30_000);
    }

    /**
     * The store of a stopped broker loses its last ten batches, as unforced pages are lost in a power cut; its Raft
     * log keeps their entries.
     */
    private void loseStoreTail(int id) throws IOException {
        StoreConfig config = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
        try (Store store = Store.open(cluster.directory(id).resolve("store"), config)) {
            List<Long> offsets = batchOffsets(store, "t");
            assertThat(offsets).as("node %d's batches", id).hasSizeGreaterThan(20);
            long keptEnd = offsets.get(offsets.size() - 10);
            store.truncateQueue("t", 0, keptEnd);
            assertThat(store.nextOffset("t", 0)).isEqualTo(keptEnd);
        }
    }

    /**
     * Sends records 400 to 599 while the broker that lost batches is back, then checks that it ends in sync with the
     * leader's batches and no restart marker, that it serves as a full replica (the leader stopped, it and the third
     * broker take records 600 to 699), and that every acknowledged record is read back once, in order.
     */
    private void assertRebuilt(int lost, List<String> sent) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "t", sent, 400, 600);
            int leader = cluster.leaderOf("t");
            assertThat(leader).as("the leader").isNotEqualTo(lost);
            await("the broker that lost batches in sync", 90, () -> cluster.broker(leader).node()
                    .partition("t", 0).inSync().contains(lost));
            // The rebuild ends once the leader has added the replica back, which Ratis answers a little after the
            // replica caught up; then its restart marker goes. Only then may the leader stop: until the replica is
            // back in the configuration, the leader and the third broker are the whole of it. Until then, too, the
            // leader may still count the replica in sync from before its restart, and the replica the node serves
            // may be the one started from its directory, which the rebuild replaces: it is looked up each time.
            await("no restart marker left", 90, () -> restartMarkers(lost).isEmpty());
            long now = cluster.replica(leader, "t").highWatermark();
            await("the broker that lost batches committed to " + now, 60, () -> {
                try {
                    return cluster.replica(lost, "t").highWatermark() >= now;
                } catch (IOException e) {
                    return false;
                }
            });
            InProcessCluster.assertSameBatches(cluster.broker(lost).store(), cluster.broker(leader).store(), "t", now);
            cluster.stop(leader);
            InProcessCluster.send(producer, "t", sent, 600, 700);
        }
        assertThat(cluster.readValues("t", sent.size())).as("every acknowledged record once, in order")
                .isEqualTo(sent);
    }

    private List<String> restartMarkers(int id) {
        try (var files = Files.list(cluster.directory(id).resolve("raft"))) {
            return files.map(path -> path.getFileName().toString())
                    .filter(name -> name.startsWith(RestartMarker.PREFIX)).toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    @Test
    void aFollowerWhoseStoreLostBatchesItsRaftLogNamesIsRebuiltFromTheOthers() throws Exception {
        List<String> sent = startWithRecords();
        int lost = cluster.leaderOf("t") % 3 + 1;
        cluster.stop(lost);
        loseStoreTail(lost);
        cluster.start(lost);
        assertRebuilt(lost, sent);
    }

    /**
     * The store of a stopped broker was emptied at an offset past every batch its Raft log names, as a copy from a
     * leader whose retention removed the partition's start leaves it when stopped before its snapshot is recorded:
     * at the start the replica finds none of the log's batches there and is rebuilt from the others (before, the
     * start cut the store back to the log's end, which lies below the store's first offset, and failed).
     */
    @Test
    void aFollowerWhoseStoreStartsPastItsRaftLogsBatchesIsRebuiltFromTheOthers() throws Exception {
        List<String> sent = startWithRecords();
        int lost = cluster.leaderOf("t") % 3 + 1;
        cluster.stop(lost);
        StoreConfig config = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build();
        try (Store store = Store.open(cluster.directory(lost).resolve("store"), config)) {
            long past = store.nextOffset("t", 0) + 1_000;
            store.emptyQueueAt("t", 0, past);
            assertThat(store.minOffset("t", 0)).isEqualTo(past);
        }
        cluster.start(lost);
        assertRebuilt(lost, sent);
    }

    /**
     * A broker stopped halfway through such a rebuild, with its restart marker saying so written and its group's
     * Raft directory still there, goes on with the rebuild when it starts again: its replica rejoins empty (the
     * group's directory is deleted, which a file left in it shows) rather than with the log that named the lost
     * batches. Its store here lost nothing, so only the marker's line can make it rejoin empty; without it, the
     * restart would keep the log.
     */
    @Test
    void aRebuildCutShortByAStopGoesOnAtTheNextStart() throws Exception {
        List<String> sent = startWithRecords();
        int lost = cluster.leaderOf("t") % 3 + 1;
        ClusterNode.PartitionId partition = new ClusterNode.PartitionId("t", 0);
        org.apache.ratis.protocol.RaftGroupId group = cluster.broker(lost).node().groupId(partition);
        cluster.stop(lost);
        Path raft = cluster.directory(lost).resolve("raft");
        Files.writeString(raft.resolve(RestartMarker.PREFIX + group.getUuid()),
                RestartMarker.text(partition, true));
        Path leftInGroup = raft.resolve(group.getUuid().toString()).resolve("left-by-the-test");
        Files.writeString(leftInGroup, "the rebuild deletes this group's directory");
        cluster.start(lost);
        assertRebuilt(lost, sent);
        assertThat(leftInGroup).as("a file in the group's directory before the rebuild").doesNotExist();
    }

    /**
     * The broker that lost batches is made leader before any append reaches it (its log is as long as the others'):
     * asked whether it leads, it finds its store short, steps aside and is rebuilt; before, it stayed leader and
     * answered no client.
     */
    @Test
    void aLeaderWhoseStoreLostBatchesStepsAsideAndIsRebuilt() throws Exception {
        List<String> sent = startWithRecords();
        int lost = 1;
        cluster.close();
        loseStoreTail(lost);
        cluster.startAll();
        RaftGroup group = cluster.replica(2, "t").division().getGroup();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties()).setRaftGroup(group)
                .build()) {
            await("node " + lost + " made leader", 60, () -> {
                try {
                    return cluster.replica(lost, "t").isLeader()
                            || client.admin().transferLeadership(ClusterNode.peerId(lost), 5_000).isSuccess();
                } catch (IOException | RuntimeException e) {
                    return false;
                }
            });
        }
        // Clients ask every broker who leads (Metadata); one of the others must come to lead.
        await("a broker other than node " + lost + " leads t", 60, () -> {
            for (int id = 1; id <= 3; id++) {
                if (cluster.broker(id).node().leads("t", 0)) {
                    return id != lost;
                }
            }
            return false;
        });
        assertRebuilt(lost, sent);
    }
}
