package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

import io.sluice.broker.ProducerHistory;
import io.sluice.cluster.ratis.StuckInstall;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three nodes in one JVM, each with its own store and Ratis server on 127.0.0.1, replicate one partition: every
 * committed batch is on every replica at the same offset with the same bytes, a restarted replica catches up, and a
 * replica whose uncommitted tail the new leader's log replaced cuts it from its store.
 */
class PartitionReplicationTest {

    private static final ClusterNode.PartitionId PARTITION = new ClusterNode.PartitionId("t", 0);
    private static final List<Integer> REPLICAS = List.of(1, 2, 3);

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final Node[] nodes = new Node[4];
    /** The network to each node's Raft port: the cluster string names the proxies' ports. */
    private final LoopbackProxy[] proxies = new LoopbackProxy[4];
    private final int[] listenPorts = new int[4];
    /**
     * Snapshots every 50 entries and small log segments, so that a test purges the log within a few hundred; no limit
     * on entries in flight worth the name, so that each batch appended is an entry of its own and a test decides how
     * long the log gets (and a stranded leader's uncommitted tail).
     */
    private ClusterNode.Tuning tuning = new ClusterNode.Tuning(50, 4096, 100_000);

    /** Where a test reaches into one node: set and cleared by the test, read by the node's Raft threads. */
    static final class Hooks implements NodeHooks {
        volatile Runnable afterInstall;
        volatile java.util.function.Supplier<CompletableFuture<?>> storeDelay;

        @Override
        public void afterInstall(ClusterNode.PartitionId partition) {
            Runnable hook = afterInstall;
            if (hook != null) {
                hook.run();
            }
        }

        @Override
        public CompletableFuture<?> storeDelay(ClusterNode.PartitionId partition) {
            java.util.function.Supplier<CompletableFuture<?>> delay = storeDelay;
            return delay == null ? null : delay.get();
        }
    }

    /** One node: its store and its Raft server; stopped and started again over the same directories. */
    final class Node {
        final int id;
        final Hooks hooks = new Hooks();
        Store store;
        ClusterNode raft;

        Node(int id) {
            this.id = id;
        }

        Path storeDirectory() {
            return dir.resolve("n" + id).resolve("store");
        }

        StoreConfig storeConfig() {
            return StoreConfig.builder().writePath(WritePath.MMAP).flushMode(FlushMode.SYNC)
                    .segmentSizeBytes(256 * 1024).maxMessageBytes(64 * 1024).build();
        }

        void start() throws IOException {
            store = Store.open(storeDirectory(), storeConfig());
            if (store.queueCount("t") == 0) {
                store.createTopic("t", TopicLayout.BATCHES, 1);
            }
            raft = new ClusterNode("test-cluster", cluster, id, listenPorts[id], tuning,
                    dir.resolve("n" + id).resolve("raft"), store, new StartPhases(id), hooks);
            raft.host(PARTITION, REPLICAS);
        }

        void stop() throws IOException {
            if (raft != null) {
                raft.close();
                raft = null;
            }
            if (store != null) {
                store.close();
                store = null;
            }
        }

        ReplicatedPartition partition() throws IOException {
            return raft.partition(PARTITION);
        }

        boolean running() {
            return raft != null;
        }
    }

    private void startCluster() throws IOException {
        StringBuilder text = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            listenPorts[id] = TestClusters.freePort();
            proxies[id] = new LoopbackProxy(listenPorts[id]);
            text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(TestClusters.freePort()).append('/')
                    .append(proxies[id].port());
        }
        cluster = ClusterSpec.parse(text.toString());
        for (int id = 1; id <= 3; id++) {
            nodes[id] = new Node(id);
            nodes[id].start();
        }
    }

    @AfterEach
    void stopAll() throws IOException {
        for (Node node : nodes) {
            if (node != null) {
                node.stop();
            }
        }
        for (LoopbackProxy proxy : proxies) {
            if (proxy != null) {
                proxy.close();
            }
        }
        TestClusters.assertNoRaftThreadsLeft();
    }

    private static void await(String what, BooleanSupplier condition) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("not within 30 s: " + what);
            }
            Thread.sleep(20);
        }
    }

    private Node leader() throws Exception {
        Node[] found = new Node[1];
        await("a leader", () -> {
            for (int id = 1; id <= 3; id++) {
                try {
                    if (nodes[id].running() && nodes[id].partition().isLeaderReady()) {
                        found[0] = nodes[id];
                        return true;
                    }
                } catch (IOException e) {
                    throw new IllegalStateException(e);
                }
            }
            return false;
        });
        return found[0];
    }

    private static byte[] batch(Random random, String label) {
        List<byte[]> values = new ArrayList<>();
        for (int i = 0, n = 1 + random.nextInt(5); i < n; i++) {
            byte[] value = new byte[20 + random.nextInt(400)];
            random.nextBytes(value);
            System.arraycopy(label.getBytes(), 0, value, 0, Math.min(label.length(), value.length));
            values.add(value);
        }
        return KafkaBatch.of(1_700_000_000_000L, values);
    }

    /** Appends {@code count} batches through the leader, acks=all; returns them as stored. */
    private static List<byte[]> produce(Node leader, int count, Random random, String label) throws Exception {
        List<byte[]> batches = new ArrayList<>();
        List<CompletableFuture<Long>> committed = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] batch = batch(random, label + i);
            batches.add(batch);
            committed.add(leader.partition().append(checked(batch)).committed());
        }
        List<byte[]> stored = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] copy = batches.get(i).clone();
            ByteBuffer.wrap(copy).putLong(0, committed.get(i).get(30, TimeUnit.SECONDS));
            stored.add(copy);
        }
        return stored;
    }

    /** @return every batch of the partition in a node's store, in order */
    private static List<byte[]> batches(Store store) {
        List<byte[]> all = new ArrayList<>();
        long offset = 0;
        while (offset < store.maxOffset("t", 0)) {
            try (ReadResult read = store.read("t", 0, offset, 100, 1 << 20)) {
                for (StoredMessage message : read.messages()) {
                    all.add(message.bodyBytes());
                }
                offset = read.nextOffset();
            }
        }
        return all;
    }

    private void assertEveryReplicaHolds(List<byte[]> expected) throws Exception {
        long end = ByteBuffer.wrap(expected.getLast()).getLong(0) + ByteBuffer.wrap(expected.getLast()).getInt(23) + 1;
        for (int id = 1; id <= 3; id++) {
            Node node = nodes[id];
            await("replica " + id + " committed to " + end, () -> {
                try {
                    return node.partition().highWatermark() >= end;
                } catch (IOException e) {
                    // Not hosted at the moment (a replica rejoining its group): not there yet.
                    return false;
                }
            });
            List<byte[]> held = batches(node.store);
            assertThat(held).as("replica %d's batches", id).hasSameSizeAs(expected);
            for (int i = 0; i < expected.size(); i++) {
                // The leader stamped its term into each batch's partitionLeaderEpoch (bytes 12-15, outside the CRC).
                assertThat(Arrays.equals(held.get(i), 0, 12, expected.get(i), 0, 12)
                        && Arrays.equals(held.get(i), 16, held.get(i).length, expected.get(i), 16,
                        expected.get(i).length)).as("replica %d batch %d", id, i).isTrue();
                assertThat(ByteBuffer.wrap(held.get(i)).getInt(12)).as("epoch of batch %d", i).isPositive();
            }
            if (id > 1) {
                List<byte[]> first = batches(nodes[1].store);
                for (int i = 0; i < held.size(); i++) {
                    assertThat(held.get(i)).as("replica %d batch %d against replica 1's", id, i)
                            .isEqualTo(first.get(i));
                }
            }
        }
    }

    @Test
    void committedBatchesAreOnEveryReplicaAndARestartedReplicaCatchesUp() throws Exception {
        startCluster();
        Random random = new Random(1);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 200, random, "a"));
        assertEveryReplicaHolds(expected);

        Node first = leader();
        first.stop();
        Node second = leader();
        assertThat(second).isNotSameAs(first);
        expected.addAll(produce(second, 100, random, "b"));
        first.start();
        assertEveryReplicaHolds(expected);

        // A follower away while batches are committed catches up from the leader's store.
        Node follower = nodes[second.id % 3 + 1];
        follower.stop();
        expected.addAll(produce(leader(), 100, random, "c"));
        follower.start();
        assertEveryReplicaHolds(expected);
    }

    /**
     * These nodes host the partition without the metadata naming its topic, as a node whose partition groups start
     * from its Raft directory does until its metadata replays: a replica whose log fails then must still go back to
     * its group. A stopped follower loses its store's last ten batches (its Raft log keeps their entries); back, it
     * finds the loss at its first write and is rebuilt from the leader, taking its peers from its group's
     * configuration. Before, it found no topic in the metadata and stayed stopped.
     */
    @Test
    void aReplicaWhoseLogFailsBeforeTheMetadataNamesItsTopicIsRebuiltFromItsGroup() throws Exception {
        startCluster();
        Random random = new Random(11);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 60, random, "a"));
        assertEveryReplicaHolds(expected);
        Node follower = nodes[leader().id % 3 + 1];
        follower.stop();
        try (Store store = Store.open(follower.storeDirectory(), follower.storeConfig())) {
            List<Long> offsets = new ArrayList<>();
            try (ReadResult read = store.read("t", 0, 0, 1_000, 64 << 20)) {
                read.messages().forEach(message -> offsets.add(message.queueOffset()));
            }
            assertThat(offsets).hasSize(60);
            store.truncateQueue("t", 0, offsets.get(50));
        }
        follower.start();
        expected.addAll(produce(leader(), 40, random, "b"));
        assertEveryReplicaHolds(expected);
    }

    /**
     * Cuts the network to the other two nodes' Raft ports and appends {@code count} batches through {@code leader}:
     * they reach its store and log, and no majority.
     */
    private void strand(Node leader, int count, Random random) throws Exception {
        strand(leader, count, count, random);
    }

    /**
     * Cuts {@code leader} off and appends {@code count} batches to it, which reach its store and no majority.
     *
     * @param atLeast how many must be stored: the leader steps down once it has not heard a majority for an election
     *     timeout, and on a loaded machine that can come before the last appends are stored (they are then refused
     *     as sent to a replica no longer leading)
     * @return how many were stored
     */
    private int strand(Node leader, int count, int atLeast, Random random) throws Exception {
        for (int id = 1; id <= 3; id++) {
            if (nodes[id] != leader) {
                proxies[id].cut();
            }
        }
        List<CompletableFuture<Long>> stranded = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            try {
                stranded.add(leader.partition().append(checked(batch(random, "lost" + i))).stored());
            } catch (RuntimeException e) {
                stranded.add(CompletableFuture.failedFuture(e));
            }
        }
        int stored = 0;
        for (CompletableFuture<Long> one : stranded) {
            try {
                one.get(30, TimeUnit.SECONDS);
                stored++;
            } catch (java.util.concurrent.ExecutionException e) {
                boolean notLeader = e.getCause() instanceof io.sluice.broker.Replication.NotLeaderException
                        || e.getCause() instanceof io.sluice.broker.Partition.NotLeaderException;
                if (!notLeader || stored < atLeast) {
                    throw e;
                }
            }
        }
        return stored;
    }

    /** Stops {@code node} and lets the network through again. */
    private void stopAndHeal(Node node) throws IOException {
        node.stop();
        for (int id = 1; id <= 3; id++) {
            proxies[id].heal();
        }
    }

    @Test
    void aLeadersUncommittedTailIsCutFromItsStoreWhenTheNewLeaderReplacesIt() throws Exception {
        startCluster();
        Random random = new Random(2);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 50, random, "a"));
        assertEveryReplicaHolds(expected);

        // The leader alone (the network to the other two cut): what it appends now reaches its store and log, and
        // no majority.
        Node old = leader();
        // Sixty entries (at least forty, should the leader step down before the last are stored): the new leader
        // walks back over them one at a time to find where the logs agree.
        int stranded = strand(old, 60, 40, random);
        long strandedEnd = old.store.maxOffset("t", 0);
        assertThat(strandedEnd).isGreaterThan(ByteBuffer.wrap(expected.getLast()).getLong(0) + stranded);
        stopAndHeal(old);

        // The other two elect a leader and commit other batches at the same offsets.
        expected.addAll(produce(leader(), 30, random, "b"));
        old.start();
        assertEveryReplicaHolds(expected);
        assertThat(batches(old.store)).noneMatch(batch -> new String(batch).contains("lost"));
    }

    /**
     * A leader cut off appends a long uncommitted tail; the other two commit fewer entries in a later term, snapshot
     * and purge their logs past where the tails part. The old leader's log reaches the new leader's first entry but
     * holds another entry there: it must install the new leader's snapshot (its log cannot be matched entry by entry:
     * the new leader has no entry before its first).
     */
    @Test
    void aReplicaWhoseLogPassesTheLeadersFirstEntryWithAnotherEntryInstallsTheSnapshot() throws Exception {
        startCluster();
        Random random = new Random(4);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 20, random, "a"));
        assertEveryReplicaHolds(expected);

        Node old = leader();
        strand(old, 300, random);
        long oldLast = old.partition().division().getRaftLog().getLastEntryTermIndex().getIndex();
        stopAndHeal(old);

        expected.addAll(produce(leader(), 150, random, "b"));
        Node now = leader();
        await("the new leader's log purged past where the two logs part", () -> {
            try {
                return now.partition().division().getRaftLog().getStartIndex() > 60;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        assertThat(now.partition().division().getRaftLog().getStartIndex()).as("the new leader's first entry")
                .isLessThan(oldLast);
        old.start();
        expected.addAll(produce(leader(), 20, random, "c"));
        assertEveryReplicaHolds(expected);
        assertThat(batches(old.store)).noneMatch(batch -> new String(batch).contains("lost"));
        assertThat(old.partition().machine().snapshotsInstalled()).as("snapshots the old leader installed")
                .isEqualTo(1);
    }

    @Test
    void aReplicaBehindTheLeadersPurgedLogInstallsItsSnapshotFromTheLeadersStore() throws Exception {
        startCluster();
        Random random = new Random(3);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 40, random, "a"));
        assertEveryReplicaHolds(expected);

        // A follower away while the other two commit, snapshot and purge their logs well past where it stopped.
        Node leader = leader();
        Node away = nodes[leader.id % 3 + 1];
        away.stop();
        expected.addAll(produce(leader(), 400, random, "b"));
        Node now = leader();
        awaitPurgedPastTheAwayReplica("the leader", now);
        away.start();
        expected.addAll(produce(leader(), 20, random, "c"));
        assertEveryReplicaHolds(expected);
        assertThat(away.partition().machine().snapshotsInstalled()).as("snapshots the away replica installed")
                .isEqualTo(1);

        // Installed state survives a restart of that replica (its log starts after the snapshot now).
        away.stop();
        away.start();
        expected.addAll(produce(leader(), 20, random, "d"));
        assertEveryReplicaHolds(expected);
    }

    /**
     * A leader elected with the one follower it can reach, whose log ends before the leader's purged log starts: the
     * leader cannot commit (ready its term) without that follower, and the follower installs the snapshot through
     * queries to the leader. Ratis answers a linearizable query only from a ready leader, so before, the two waited on
     * each other for good; the queries now read what is committed, which any replica may serve.
     */
    @Test
    void aLeaderWhoseOnlyReachableFollowerMustInstallASnapshotGetsOneThere() throws Exception {
        startCluster();
        Random random = new Random(11);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 40, random, "a"));
        assertEveryReplicaHolds(expected);

        Node leader = leader();
        Node away = nodes[leader.id % 3 + 1];
        Node other = nodes[away.id % 3 + 1];
        away.stop();
        expected.addAll(produce(leader(), 400, random, "b"));
        Node now = leader();
        awaitPurgedPastTheAwayReplica("the leader", now);
        // The other up-to-date replica goes: the leader is left with the one that must install.
        Node remaining = now;
        Node stopped = now == other ? leader : other;
        stopped.stop();
        // Alone, the leader steps down (no majority answers it), so the follower it gets back elects it anew: a leader
        // of a new term, not ready until that follower takes an entry of it.
        await("the remaining replica stepped down", () -> {
            try {
                return !remaining.partition().division().getInfo().isLeader();
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        away.start();
        expected.addAll(produce(leader(), 20, random, "c"));
        assertThat(leader().id).as("the leader").isEqualTo(remaining.id);
        assertThat(away.partition().machine().snapshotsInstalled()).as("snapshots the away replica installed")
                .isEqualTo(1);
        stopped.start();
        expected.addAll(produce(leader(), 20, random, "d"));
        assertEveryReplicaHolds(expected);
    }

    /**
     * A replica installs a snapshot on one leader's notice and is cut off before that leader's next notice, which is
     * when Ratis 3.3.0 loads what was installed; that leader dies, and the next one's log still holds the replica's
     * next entries, so it sends appends, never a notice, and the replica, its install still "in progress", refuses
     * them all. Before, it stayed so for good (and with the third replica down, the partition took nothing); now the
     * leader notifies a replica that answers INCONSISTENCY with the same next index for 3 s (RaftTransport).
     */
    @Test
    void aReplicaWhoseInstallOutlivedItsLeaderLoadsItOnTheNextLeadersNotice() throws Exception {
        installOutlivesItsLeader(100_000);
    }

    /**
     * As above, but the next leader purged its log too, less far: it notifies the replica at its own first entry,
     * which the replica refused ("not eligible": its install under way began at a later one), again and again.
     */
    @Test
    void aReplicaWhoseInstallOutlivedItsLeaderLoadsItOnTheNoticeOfALeaderThatPurgedLess() throws Exception {
        installOutlivesItsLeader(200);
    }

    /** @param keeperSnapshotEvery how often the replica that leads last snapshots (and purges) its log */
    private void installOutlivesItsLeader(long keeperSnapshotEvery) throws Exception {
        // Where each log starts and whether the away replica loads its install at once depend on timing: an attempt
        // that did not set the case up (checked below, before anything the case tests) is made again from scratch.
        for (int attempt = 1; ; attempt++) {
            if (installOutlivesItsLeaderOnce(keeperSnapshotEvery, attempt == 3)) {
                return;
            }
            stopAll();
            for (int id = 1; id <= 3; id++) {
                nodes[id] = null;
                InProcessCluster.deleteTree(dir.resolve("n" + id));
            }
        }
    }


    /**
     * @param last whether this is the last attempt: the case's set-up is then asserted rather than tried again
     * @return false if the case was not set up (nothing it tests was looked at), true once it ran
     */
    private boolean installOutlivesItsLeaderOnce(long keeperSnapshotEvery, boolean last) throws Exception {
        startCluster();
        Random random = new Random(13);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 30, random, "a"));
        assertEveryReplicaHolds(expected);
        Node purging = leader();
        Node away = nodes[purging.id % 3 + 1];
        Node keeper = nodes[away.id % 3 + 1];
        // The keeper purges less from here on: its log starts at or before the purging replica's.
        ClusterNode.Tuning usual = tuning;
        tuning = new ClusterNode.Tuning(keeperSnapshotEvery, 4096, 100_000);
        keeper.stop();
        keeper.start();
        tuning = usual;
        expected.addAll(produce(leader(), 10, random, "b"));

        away.stop();
        expected.addAll(produce(leader(), 300, random, "c"));
        awaitPurgedPastTheAwayReplica("the purging replica", purging);
        // The purging replica leads, so that its notice is the one the away replica installs on.
        Node now = leader();
        if (now != purging) {
            handOver(now, purging);
        }
        // Where each log starts depends on where its segments end; the purging replica purges more often and soon
        // starts past the keeper, which this case needs. The keeper may still snapshot and purge what it applied
        // last (both run after the apply), so the comparison is with the furthest it can purge to with no more
        // entries: one past its snapshot, once it has applied everything and taken any snapshot that was due.
        for (int i = 0; keeperSnapshotEvery < 100_000 && i < 40
                && purging.partition().division().getRaftLog().getStartIndex()
                        <= furthestPurge(keeper, purging, keeperSnapshotEvery); i++) {
            expected.addAll(produce(leader(), 50, random, "p" + i + "-"));
        }
        // The install is counted before the hook runs: waiting on the count alone, the entry below could be sent to
        // the away replica before the cut.
        CountDownLatch cutOff = new CountDownLatch(1);
        away.hooks.afterInstall = () -> {
            proxies[away.id].cut();
            cutOff.countDown();
        };
        try {
            away.start();
            assertThat(cutOff.await(30, TimeUnit.SECONDS)).as("the away replica installed a snapshot and was cut off")
                    .isTrue();
            assertThat(away.partition().machine().snapshotsInstalled()).as("snapshots the away replica installed")
                    .isEqualTo(1);
        } finally {
            away.hooks.afterInstall = null;
        }
        if (keeperSnapshotEvery < 100_000) {
            long keeperStart = keeper.partition().division().getRaftLog().getStartIndex();
            long awayEnd = away.partition().division().getRaftLog().getNextIndex();
            long purgingStart = purging.partition().division().getRaftLog().getStartIndex();
            if (!last && (keeperStart <= awayEnd || keeperStart >= purgingStart)) {
                return false;
            }
            assertThat(keeperStart).as("the keeper's first log entry, past the away replica's end")
                    .isGreaterThan(awayEnd);
            assertThat(keeperStart).as("the keeper's first log entry, before the purging replica's")
                    .isLessThan(purgingStart);
        }
        // An entry the away replica cannot have: the snapshot it installed may end at the purging replica's last
        // entry, and with logs ending alike, either the keeper or the away replica could win the next election.
        expected.addAll(produce(leader(), 1, random, "x"));
        purging.stop();
        proxies[away.id].heal();
        // The first election after the stop is the one the case is about. Once the away replica has caught up, a
        // later one (a heartbeat late on a loaded machine) may rightly go either way.
        assertThat(leader().id).as("the first leader after the purging replica stopped").isEqualTo(keeper.id);
        expected.addAll(produce(leader(), 20, random, "d"));
        purging.start();
        expected.addAll(produce(leader(), 20, random, "e"));
        assertEveryReplicaHolds(expected);
        return true;
    }

    /**
     * A follower back from a restart, whose log the leader's still holds, catches up through appends alone: no
     * install notice (a notice to a replica with no install under way starts one there, which fails and holds up its
     * appends meanwhile). Before, the check for replicas stuck in an install took the time the follower was down for
     * time it answered without progress, and notified it as soon as it came back.
     */
    @Test
    void aFollowerBackFromARestartIsNotToldToInstall() throws Exception {
        tuning = new ClusterNode.Tuning(100_000, 4096, 100_000);
        startCluster();
        Random random = new Random(17);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 30, random, "a"));
        assertEveryReplicaHolds(expected);
        Node away = nodes[leader().id % 3 + 1];
        away.stop();
        expected.addAll(produce(leader(), 50, random, "b"));
        Thread.sleep(StuckInstall.STUCK_NANOS / 1_000_000 + 1_000);
        away.start();
        expected.addAll(produce(leader(), 20, random, "c"));
        assertEveryReplicaHolds(expected);
        Thread.sleep(StuckInstall.STUCK_NANOS / 1_000_000 + 1_000);
        assertThat(away.partition().machine().installNotices()).as("install notices to the follower").isZero();
    }

    /**
     * A follower whose disk stalls for twice the stuck-install wait answers heartbeats meanwhile, its match index
     * standing and the next index the leader keeps for it above that: it is not told to install (a notice would start
     * an install there, which fails, and hold up its appends once more), and it catches up once its disk is back.
     */
    @Test
    void aFollowerWhoseDiskStallsIsNotToldToInstall() throws Exception {
        tuning = new ClusterNode.Tuning(100_000, 4096, 100_000);
        startCluster();
        Random random = new Random(19);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 30, random, "a"));
        assertEveryReplicaHolds(expected);
        Node stalled = nodes[leader().id % 3 + 1];
        long stallMillis = 2 * StuckInstall.STUCK_NANOS / 1_000_000;
        java.util.concurrent.atomic.AtomicReference<CompletableFuture<Void>> stall =
                new java.util.concurrent.atomic.AtomicReference<>();
        // Every write of the stalled replica from its first one on completes when the stall ends, as behind a disk
        // that takes that long to force.
        stalled.hooks.storeDelay = () -> {
            if (stall.get() == null) {
                stall.compareAndSet(null, CompletableFuture.runAsync(() -> { },
                        CompletableFuture.delayedExecutor(stallMillis, TimeUnit.MILLISECONDS)));
            }
            return stall.get().isDone() ? null : stall.get();
        };
        boolean stoodThroughTheWait = false;
        try {
            long flushedAtStart = Long.MIN_VALUE;
            long startedAt = 0;
            for (int i = 0; i < 10; i++) {
                expected.addAll(produce(leader(), 10, random, "b" + i + "-"));
                long flushed = stalled.partition().division().getRaftLog().getFlushIndex();
                if (i == 0) {
                    flushedAtStart = flushed;
                    startedAt = System.nanoTime();
                } else if (!stoodThroughTheWait
                        && System.nanoTime() - startedAt > StuckInstall.STUCK_NANOS + 500_000_000L) {
                    // Proof that the stall covers the wait: the follower's log took nothing for that long.
                    assertThat(stall.get().isDone()).as("the stall still on").isFalse();
                    assertThat(flushed).as("the stalled follower's last flushed entry, past the wait")
                            .isEqualTo(flushedAtStart);
                    stoodThroughTheWait = true;
                }
                Thread.sleep(stallMillis / 10);
            }
        } finally {
            stalled.hooks.storeDelay = null;
        }
        assertThat(stoodThroughTheWait).as("the follower's disk stalled past the wait").isTrue();
        expected.addAll(produce(leader(), 20, random, "c"));
        assertEveryReplicaHolds(expected);
        assertThat(stalled.partition().machine().installNotices()).as("install notices to the stalled follower")
                .isZero();
    }

    /**
     * The furthest the keeper's log can start with no entries after the leader's last: one past its latest snapshot,
     * awaited until the keeper applied the leader's last entry and took the snapshot that made due, if any.
     */
    private static long furthestPurge(Node keeper, Node leader, long snapshotEvery) throws Exception {
        long last = leader.partition().division().getRaftLog().getLastCommittedIndex();
        long[] snapshot = new long[1];
        await("the keeper applied entry " + last + " and took any snapshot due", () -> {
            try {
                PartitionStateMachine machine = keeper.partition().machine();
                long applied = machine.getLastAppliedTermIndex().getIndex();
                snapshot[0] = machine.getLatestSnapshot() == null ? -1 : machine.getLatestSnapshot().getIndex();
                return applied >= last && applied - snapshot[0] < snapshotEvery;
            } catch (IOException e) {
                return false;
            }
        });
        return snapshot[0] + 1;
    }

    /**
     * Every replica keeps the idempotent producers of its log as it writes the entries' batches: the follower elected
     * when the leader stops has producer 7's last five batches at their offsets without reading its store back; a
     * replica restarted after a clean close takes those its close kept and reads nothing back either; producers kept
     * up to another offset than where the log ends are not taken, and are read back from the store once.
     */
    @Test
    void everyReplicaKeepsTheProducersOfItsLogSoTheOneElectedReadsNothingBack() throws Exception {
        startCluster();
        Node leader = leader();
        List<Long> offsets = new ArrayList<>();
        for (int sequence = 0; sequence < 40; sequence += 5) {
            byte[] batch = batch(new Random(sequence), "s" + sequence);
            int records = ByteBuffer.wrap(batch).getInt(KafkaBatch.LAST_OFFSET_DELTA) + 1;
            ByteBuffer.wrap(batch).putLong(KafkaBatch.PRODUCER_ID, 7).putShort(KafkaBatch.PRODUCER_EPOCH, (short) 2)
                    .putInt(KafkaBatch.BASE_SEQUENCE, sequence);
            reseal(batch);
            offsets.add(leader.partition().append(checked(batch)).committed().get(30, TimeUnit.SECONDS));
            assertThat(records).as("a batch of up to five records").isLessThanOrEqualTo(5);
        }
        int[] rebuilds = new int[4];
        for (int id = 1; id <= 3; id++) {
            Node follower = nodes[id];
            if (follower == leader) {
                continue;
            }
            await("follower " + id + " wrote the last batch", () -> {
                try {
                    return follower.partition().machine().highWatermark() > offsets.getLast();
                } catch (IOException e) {
                    return false;
                }
            });
            rebuilds[id] = follower.partition().machine().producerRebuilds();
        }
        leader.stop();
        Node elected = leader();
        ProducerHistory.Producer seven = elected.partition().machine().producerHistory().producers().get(7L);
        assertThat(seven.epoch()).isEqualTo((short) 2);
        assertThat(seven.recent()).extracting(ProducerHistory.Batch::baseOffset)
                .as("the last five batches, at the offsets the leader gave them").isEqualTo(offsets.subList(3, 8));
        assertThat(seven.recent()).extracting(ProducerHistory.Batch::firstSequence).containsExactly(15, 20, 25, 30, 35);
        assertThat(elected.partition().machine().producerRebuilds()).as("rebuilds from the store of the replica"
                + " elected, across the failover").isEqualTo(rebuilds[elected.id]);

        leader.start();
        byte[] next = batch(new Random(40), "s40");
        ByteBuffer.wrap(next).putLong(KafkaBatch.PRODUCER_ID, 7).putShort(KafkaBatch.PRODUCER_EPOCH, (short) 2)
                .putInt(KafkaBatch.BASE_SEQUENCE, 40);
        reseal(next);
        long last = elected.partition().append(checked(next)).committed().get(30, TimeUnit.SECONDS);
        await("the restarted replica wrote the next batch", () -> {
            try {
                return leader.partition().machine().highWatermark() > last;
            } catch (IOException e) {
                return false;
            }
        });
        ProducerHistory kept = leader.partition().machine().producerHistory();
        assertThat(kept.producers().get(7L).recent()).extracting(ProducerHistory.Batch::baseOffset)
                .as("the restarted replica's producers: kept by its clean close, then as the batches came")
                .containsExactly(offsets.get(4), offsets.get(5), offsets.get(6), offsets.get(7), last);
        assertThat(leader.partition().machine().producerRebuilds()).as("rebuilds on the replica restarted after a"
                + " clean close").isZero();

        // Producers kept up to another offset than the log's end are not taken: they are read back from the store.
        Node other = nodes[leader.id % 3 + 1];
        other.stop();
        Path file = dir.resolve("n" + other.id).resolve("raft");
        try (java.util.stream.Stream<Path> files = java.nio.file.Files.walk(file)) {
            Path kept7 = files.filter(path -> path.getFileName().toString().equals(ReplicaProducers.FILE)
                    && path.getParent().getFileName().toString().equals("sm")).findFirst().orElseThrow();
            String text = java.nio.file.Files.readString(kept7);
            ProducerHistory.Saved saved = ProducerHistory.take(io.sluice.store.io.FileIO.DEFAULT, kept7);
            assertThat(saved).as("what the clean close kept: " + text).isNotNull();
            saved.history().save(io.sluice.store.io.FileIO.DEFAULT, kept7, saved.end() - 1);
        }
        other.start();
        byte[] more = batch(new Random(45), "s45");
        ByteBuffer.wrap(more).putLong(KafkaBatch.PRODUCER_ID, 7).putShort(KafkaBatch.PRODUCER_EPOCH, (short) 2)
                .putInt(KafkaBatch.BASE_SEQUENCE, 45);
        reseal(more);
        long after = leader().partition().append(checked(more)).committed().get(30, TimeUnit.SECONDS);
        await("the replica restarted with producers kept to another offset wrote the next batch", () -> {
            try {
                return other.partition().machine().highWatermark() > after;
            } catch (IOException e) {
                return false;
            }
        });
        assertThat(other.partition().machine().producerRebuilds()).as("rebuilds where the kept producers end"
                + " elsewhere than the log").isOne();
        assertThat(other.partition().machine().producerHistory().producers().get(7L).recent())
                .extracting(ProducerHistory.Batch::baseOffset).endsWith(last, after);
    }

    /** Rewrites a batch's CRC32C over the bytes it covers, after its producer fields were set. */
    private static void reseal(byte[] batch) {
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(batch, KafkaBatch.CRC_START, batch.length - KafkaBatch.CRC_START);
        ByteBuffer.wrap(batch).putInt(KafkaBatch.CRC, (int) crc.getValue());
    }

    /** @return the offset after a stored batch's last */
    private static long endOf(byte[] stored) {
        return ByteBuffer.wrap(stored).getLong(0) + ByteBuffer.wrap(stored).getInt(23) + 1;
    }

    /**
     * The log start (DeleteRecords) moves through the log: every replica applies it, the leader's store raises its
     * first offset only as far as its retention hold (the first batch its Raft log names), so a follower behind the
     * log start is still sent the batches below it as entries, and it ends with the same log start and batches. A
     * follower behind the leader's purged log installs the snapshot, which carries the log start, and a leader
     * started again takes it from its snapshot file (the entry that moved it is purged).
     */
    @Test
    void aFollowerBehindTheLogStartIsSentTheBatchesBelowItAndAnInstallCarriesTheLogStart() throws Exception {
        startCluster();
        Random random = new Random(17);
        List<byte[]> expected = new ArrayList<>(produce(leader(), 120, random, "a"));
        Node leader = leader();
        await("the leader's log purged below its first snapshot", () -> {
            try {
                return leader.partition().division().getRaftLog().getStartIndex() > 0;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        Node away = nodes[leader.id % 3 + 1];
        assertEveryReplicaHolds(expected);
        long awayEnd = endOf(expected.getLast());
        away.stop();
        // Fewer than the entries between snapshots: the leader's log still names every batch the follower lacks.
        expected.addAll(produce(leader, 20, random, "b"));
        long logStart = ByteBuffer.wrap(expected.get(130)).getLong(0);
        assertThat(leader.partition().deleteRecords(logStart).get(30, TimeUnit.SECONDS)).isEqualTo(logStart);
        assertThat(leader.partition().deleteRecords(logStart - 1).get(30, TimeUnit.SECONDS))
                .as("a log start never goes down").isEqualTo(logStart);
        leader.partition().machine().holdRetentionAtLog();
        leader.partition().machine().deleteBelowLogStart();
        long leaderFirst = leader.store.minOffset("t", 0);
        assertThat(leaderFirst).as("the leader's first stored offset, raised to its retention hold")
                .isPositive().isLessThanOrEqualTo(awayEnd).isLessThan(logStart);

        away.start();
        expected.addAll(produce(leader(), 5, random, "c"));
        long end = endOf(expected.getLast());
        await("the away replica caught up", () -> {
            try {
                return away.partition().highWatermark() >= end;
            } catch (IOException e) {
                return false;
            }
        });
        assertThat(away.partition().machine().snapshotsInstalled()).as("snapshots installed").isZero();
        for (int id = 1; id <= 3; id++) {
            Node node = nodes[id];
            await("replica " + id + " applied the log start", () -> {
                try {
                    return node.partition().machine().logStart() == logStart;
                } catch (IOException e) {
                    return false;
                }
            });
            InProcessCluster.assertSameBatches(node.store, leader.store, "t", leaderFirst, end);
        }

        // Away past the leader's purge: the install carries the log start.
        Node behind = nodes[leader().id % 3 + 1];
        behind.stop();
        expected.addAll(produce(leader(), 200, random, "d"));
        Node now = leader();
        await("the leader's log purged past the log start's entry", () -> {
            try {
                return now.partition().division().getRaftLog().getStartIndex() > 160
                        && now.partition().machine().latestSnapshot().logStart() == logStart;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
        behind.start();
        expected.addAll(produce(leader(), 5, random, "e"));
        long last = endOf(expected.getLast());
        await("the replica behind caught up", () -> {
            try {
                return behind.partition().highWatermark() >= last;
            } catch (IOException e) {
                return false;
            }
        });
        assertThat(behind.partition().machine().snapshotsInstalled()).as("snapshots installed").isEqualTo(1);
        assertThat(behind.partition().machine().logStart()).as("the installed log start").isEqualTo(logStart);

        // A replica started again takes the log start from its snapshot before it applies anything.
        Node restarted = leader();
        restarted.stop();
        restarted.start();
        assertThat(restarted.partition().machine().logStart()).as("the log start after a restart")
                .isEqualTo(logStart);
    }

    /** @return a batch as the broker hands it on, checked */
    private static KafkaBatch checked(byte[] batch) {
        return KafkaBatch.check(java.lang.foreign.MemorySegment.ofArray(batch));
    }

    /** Waits until {@code node}'s Raft log starts past entry 100, where a replica away since the first 40 ends. */
    private static void awaitPurgedPastTheAwayReplica(String who, Node node) throws Exception {
        await(who + "'s log purged past the away replica's end", () -> {
            try {
                return node.partition().division().getRaftLog().getStartIndex() > 100;
            } catch (IOException e) {
                throw new IllegalStateException(e);
            }
        });
    }

    /** Has {@code from}, which leads the partition, hand its leadership to {@code to}, and waits until it did. */
    private void handOver(Node from, Node to) throws Exception {
        var division = from.partition().division();
        var reply = division.getRaftServer().transferLeadership(new org.apache.ratis.protocol.TransferLeadershipRequest(
                org.apache.ratis.protocol.ClientId.randomId(), division.getId(), division.getGroup().getGroupId(), 1,
                ClusterNode.peerId(to.id), 5_000));
        assertThat(reply.isSuccess()).as("leadership handed from %d to %d: %s", from.id, to.id, reply).isTrue();
        await("node " + to.id + " leading", () -> {
            try {
                return to.partition().isLeaderReady();
            } catch (IOException e) {
                return false;
            }
        });
    }

    /**
     * With two entries in flight, batches appended while two are unanswered share the next entry: fewer entries than
     * batches, and every replica holds each batch at its own offset, in the order appended.
     */
    @Test
    void batchesAppendedWhileEntriesAreInFlightShareEntries() throws Exception {
        tuning = new ClusterNode.Tuning(50, 4096, 2);
        startCluster();
        Random random = new Random(5);
        Node leader = leader();
        long entriesBefore = leader.partition().division().getRaftLog().getNextIndex();
        List<byte[]> expected = produce(leader, 300, random, "a");
        long entries = leader.partition().division().getRaftLog().getNextIndex() - entriesBefore;
        assertThat(entries).as("entries for 300 batches appended without waiting").isBetween(2L, 150L);
        for (int i = 1; i < expected.size(); i++) {
            ByteBuffer previous = ByteBuffer.wrap(expected.get(i - 1));
            assertThat(ByteBuffer.wrap(expected.get(i)).getLong(0)).as("offset of batch %d", i)
                    .isEqualTo(previous.getLong(0) + previous.getInt(23) + 1);
        }
        assertEveryReplicaHolds(expected);

        // A replica away meanwhile gets the shared entries from the leader's store, batch by batch as stored.
        Node away = nodes[leader.id % 3 + 1];
        away.stop();
        expected = new ArrayList<>(expected);
        expected.addAll(produce(leader(), 100, random, "b"));
        away.start();
        assertEveryReplicaHolds(expected);
    }

    /**
     * Once an entry is answered, the batches waiting wait for as many new ones as it carried (its producers send their
     * next at once), and share one entry with them; when fewer come, they go out once the tuning's wait ends.
     */
    @Test
    void batchesWaitingWhenAnEntryIsAnsweredWaitForAsManyNewOnesAsItCarried() throws Exception {
        tuning = new ClusterNode.Tuning(50, 4096, 1, Duration.ofSeconds(2));
        startCluster();
        Random random = new Random(8);
        ReplicatedPartition partition = leader().partition();
        long entriesBefore = partition.division().getRaftLog().getNextIndex();
        List<byte[]> batches = new ArrayList<>();
        List<CompletableFuture<Long>> committed = new ArrayList<>();
        for (int i = 0; i < 2; i++) {
            batches.add(batch(random, "first" + i));
            committed.add(partition.append(checked(batches.getLast())).committed());
        }
        // The first went alone; the second waits for the one batch its answer makes room for.
        committed.getFirst().get(30, TimeUnit.SECONDS);
        batches.add(batch(random, "refill"));
        committed.add(partition.append(checked(batches.getLast())).committed());
        committed.get(2).get(30, TimeUnit.SECONDS);
        assertThat(partition.division().getRaftLog().getNextIndex() - entriesBefore)
                .as("entries for the first batch, then the one waiting with the new one").isEqualTo(2);

        // That entry carried two: a single new batch waits for a second that does not come, until the wait ends.
        batches.add(batch(random, "alone"));
        committed.add(partition.append(checked(batches.getLast())).committed());
        Thread.sleep(500);
        assertThat(committed.getLast()).as("a batch waiting for a second new one").isNotDone();
        committed.getLast().get(30, TimeUnit.SECONDS);
        assertThat(partition.division().getRaftLog().getNextIndex() - entriesBefore).isEqualTo(3);

        List<byte[]> expected = new ArrayList<>();
        for (int i = 0; i < batches.size(); i++) {
            byte[] copy = batches.get(i).clone();
            ByteBuffer.wrap(copy).putLong(0, committed.get(i).get());
            expected.add(copy);
        }
        assertEveryReplicaHolds(expected);
    }

    /**
     * A bad batch among batches appended together is refused alone, by the check every batch passes before it is
     * handed to the partition ({@link KafkaBatch#check}, whose checked value is all a partition takes): those around
     * it are committed, adjacent.
     */
    @Test
    void aBadBatchAppendedAmongOthersIsRefusedAlone() throws Exception {
        tuning = new ClusterNode.Tuning(50, 4096, 1);
        startCluster();
        Random random = new Random(6);
        Node leader = leader();
        byte[] bad = batch(random, "bad");
        bad[bad.length - 1] ^= 1;
        List<ReplicatedPartition.Appended> appended = new ArrayList<>();
        List<byte[]> good = new ArrayList<>();
        for (int i = 0; i < 20; i++) {
            if (i == 10) {
                assertThatThrownBy(() -> checked(bad)).isInstanceOfSatisfying(KafkaBatch.InvalidBatchException.class,
                        e -> assertThat(e.checksum()).as("refused for its CRC32C").isTrue());
                appended.add(null);
                continue;
            }
            byte[] batch = batch(random, "good" + i);
            good.add(batch);
            appended.add(leader.partition().append(checked(batch)));
        }
        List<byte[]> expected = new ArrayList<>();
        long offset = 0;
        for (int i = 0; i < 20; i++) {
            if (i == 10) {
                continue;
            }
            long base = appended.get(i).committed().get(30, TimeUnit.SECONDS);
            assertThat(base).as("offset of batch %d", i).isEqualTo(offset);
            byte[] copy = good.get(expected.size()).clone();
            ByteBuffer.wrap(copy).putLong(0, base);
            expected.add(copy);
            offset = base + ByteBuffer.wrap(copy).getInt(23) + 1;
        }
        assertEveryReplicaHolds(expected);
    }

    /** A leader that cannot commit keeps at most 64 MiB of batches waiting for an entry; more are refused. */
    @Test
    void batchesWaitingForALeaderThatCannotCommitAreBounded() throws Exception {
        tuning = new ClusterNode.Tuning(50, 4096, 1);
        startCluster();
        Node leader = leader();
        for (int id = 1; id <= 3; id++) {
            if (nodes[id] != leader) {
                proxies[id].cut();
            }
        }
        Random random = new Random(7);
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            byte[] value = new byte[5_000];
            random.nextBytes(value);
            values.add(value);
        }
        byte[] batch = KafkaBatch.of(1_700_000_000_000L, values);
        ReplicatedPartition partition = leader.partition();
        long accepted = 0;
        ReplicatedPartition.Appended refused = null;
        while (refused == null && accepted < ReplicatedPartition.WAITING_BYTES + (4 << 20)) {
            ReplicatedPartition.Appended appended = partition.append(checked(batch.clone()));
            if (appended.committed().isDone()) {
                refused = appended;
            } else {
                accepted += batch.length;
            }
        }
        assertThat(refused).as("an append refused once 64 MiB wait").isNotNull();
        assertThat(refused.committed()).failsWithin(Duration.ofSeconds(1)).withThrowableThat()
                .withMessageContaining("waiting for replication");
        // One batch is in the entry in flight, the rest wait: the refusal comes at the bound, not before.
        assertThat(accepted).isGreaterThan(ReplicatedPartition.WAITING_BYTES - batch.length);
    }

    /**
     * Followers cut off from their leader hold it in doubt once it has been silent for longer than its heartbeats
     * allow, while they still name it (before their election timeout): that is when clients would be sent to a
     * leader that may be gone. A doubt is bounded (no replica can be elected here), and ends when a leader is heard
     * from.
     */
    @Test
    void followersCutOffFromTheirLeaderHoldItInDoubtForABoundedTime() throws Exception {
        startCluster();
        Node leader = leader();
        Node follower = nodes[leader.id % 3 + 1];
        await("no replica in doubt", () -> {
            for (int id = 1; id <= 3; id++) {
                if (nodes[id].raft.leaderInDoubt("t", 0)) {
                    return false;
                }
            }
            return true;
        });
        // Every node cut off from every other: no replica can be elected, the followers stay unsure.
        for (int id = 1; id <= 3; id++) {
            proxies[id].cut();
        }
        long cut = System.nanoTime();
        boolean doubtedWhileNamed = false;
        long doubtEnded = 0;
        boolean doubted = false;
        while (System.nanoTime() - cut < Duration.ofSeconds(10).toNanos() && doubtEnded == 0) {
            boolean inDoubt = follower.raft.leaderInDoubt("t", 0);
            if (inDoubt && follower.partition().leader().orElse(-1) == leader.id) {
                doubtedWhileNamed = true;
            }
            if (inDoubt) {
                doubted = true;
            } else if (doubted) {
                doubtEnded = System.nanoTime();
            }
            Thread.sleep(2);
        }
        assertThat(doubtedWhileNamed).as("node %d in doubt of node %d while naming it", follower.id, leader.id)
                .isTrue();
        assertThat(doubtEnded).as("node %d's doubt ended, no leader elected", follower.id).isPositive();
        long quiet = System.nanoTime();
        while (System.nanoTime() - quiet < Duration.ofSeconds(1).toNanos()) {
            if (follower.raft.leaderInDoubt("t", 0)) {
                // (Its role then tells what ended the doubt early: seen once, in a whole module's run.)
                fail("node %d in doubt again, still cut off, as %s", follower.id,
                        follower.partition().division().getInfo().getRoleInfoProto());
            }
            Thread.sleep(5);
        }
        for (int id = 1; id <= 3; id++) {
            proxies[id].heal();
        }
        leader();
        ReplicatedPartition replica = follower.partition();
        await("node " + follower.id + " sure of the leader again", () -> !follower.raft.leaderInDoubt("t", 0)
                && replica.leader().isPresent());
    }
}
