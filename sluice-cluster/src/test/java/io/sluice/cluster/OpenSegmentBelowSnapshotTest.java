package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A follower whose Raft log lost its tail below its latest snapshot (under ASYNC, Ratis writes the log in the
 * background while the replica snapshots what it applied) starts with an open segment that ends below the snapshot.
 * Ratis 3.3.0 kept that segment and refused every later entry; the node closes it first, and the follower catches up.
 */
class OpenSegmentBelowSnapshotTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void aFollowerWhoseLogEndsBelowItsSnapshotCatchesUp() throws Exception {
        // A snapshot every 10 entries (the records go in about 35); segments large enough that the whole log is one open segment.
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(10, 8L << 20, 1));
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic("t", 1);
        List<String> sent = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "t", sent, 0, 300);
        }
        int leader = cluster.leaderOf("t");
        int follower = leader % 3 + 1;
        long end = cluster.replica(leader, "t").highWatermark();
        ReplicatedPartition replica = cluster.replica(follower, "t");
        await("node " + follower + " committed to " + end, 30, () -> replica.highWatermark() >= end);
        await("a snapshot on node " + follower, 30, () -> replica.machine().getLatestSnapshot() != null
                && replica.machine().getLatestSnapshot().getIndex() >= 20);
        Path logDirectory = cluster.directory(follower).resolve("raft")
                .resolve(cluster.broker(leader).node().groupId(new ClusterNode.PartitionId("t", 0)).getUuid()
                        .toString()).resolve("current");
        cluster.stop(follower);

        Path open = openSegment(logDirectory);
        long first = Long.parseLong(open.getFileName().toString().substring("log_inprogress_".length()));
        long snapshot = snapshotIndex(logDirectory);
        OpenSegmentBelowSnapshot.Scan whole = OpenSegmentBelowSnapshot.scan(open);
        assertThat(whole.clean()).as("the segment Ratis wrote reads cleanly").isTrue();
        assertThat(first).as("the open segment's first entry").isLessThan(snapshot);
        assertThat(first + whole.entries() - 1).as("the open segment's last entry").isGreaterThanOrEqualTo(snapshot);
        assertScansOfCopies(open, whole);

        // The tail of the segment is lost (a torn entry left at the cut), so it ends halfway below the snapshot.
        long keep = (snapshot - first) / 2;
        long cut = 8 + (whole.end() - 8) * keep / whole.entries() + 3;
        try (FileChannel channel = FileChannel.open(open, StandardOpenOption.WRITE)) {
            channel.truncate(cut);
        }
        OpenSegmentBelowSnapshot.Scan left = OpenSegmentBelowSnapshot.scan(open);
        long last = first + left.entries() - 1;
        assertThat(left.entries()).isPositive();
        assertThat(last).as("the log's last entry").isLessThan(snapshot);

        cluster.start(follower);
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            InProcessCluster.send(producer, "t", sent, 300, 500);
        }
        int now = cluster.leaderOf("t");
        long committed = cluster.replica(now, "t").highWatermark();
        await("node " + follower + " in sync", 60, () -> cluster.broker(now).node().partition("t", 0).inSync()
                .contains(follower));
        await("node " + follower + " committed to " + committed, 60, () -> {
            try {
                return cluster.replica(follower, "t").highWatermark() >= committed;
            } catch (IOException e) {
                return false;
            }
        });
        InProcessCluster.assertSameBatches(cluster.broker(follower).store(), cluster.broker(now).store(), "t",
                committed);
        assertThat(cluster.readValues("t", sent.size())).as("every acknowledged record once, in order")
                .isEqualTo(sent);
    }

    /** The framing reader against copies of a segment Ratis wrote: torn, padded, corrupt. */
    private void assertScansOfCopies(Path open, OpenSegmentBelowSnapshot.Scan whole) throws IOException {
        byte[] bytes = Files.readAllBytes(open);
        Path copy = dir.resolve("copy");

        Files.write(copy, Arrays.copyOf(bytes, (int) whole.end() - 1));
        OpenSegmentBelowSnapshot.Scan torn = OpenSegmentBelowSnapshot.scan(copy);
        assertThat(torn.entries()).as("entries before a torn last one").isEqualTo(whole.entries() - 1);
        assertThat(torn.end()).isLessThan(whole.end() - 1);
        assertThat(torn.clean()).as("a torn last entry").isTrue();

        Files.write(copy, Arrays.copyOf(bytes, (int) whole.end() + 4096));
        assertThat(OpenSegmentBelowSnapshot.scan(copy)).as("zeros after it").isEqualTo(whole);

        byte[] trailing = Arrays.copyOf(bytes, (int) whole.end() + 4096);
        trailing[trailing.length - 1] = 1;
        Files.write(copy, trailing);
        assertThat(OpenSegmentBelowSnapshot.scan(copy).clean()).as("a byte after the zeros").isFalse();

        byte[] corrupt = Arrays.copyOf(bytes, (int) whole.end());
        corrupt[8 + 3] ^= 0x10; // inside the first entry
        Files.write(copy, corrupt);
        assertThat(OpenSegmentBelowSnapshot.scan(copy)).as("its first entry corrupt")
                .isEqualTo(new OpenSegmentBelowSnapshot.Scan(0, 8, false));

        Files.write(copy, new byte[] {'R', 'a', 'f', 't', 'L', 'o', 'g', '2', 0, 0});
        assertThat(OpenSegmentBelowSnapshot.scan(copy).clean()).as("another header").isFalse();
        Files.delete(copy);
    }

    private static Path openSegment(Path logDirectory) throws IOException {
        try (Stream<Path> files = Files.list(logDirectory)) {
            List<Path> open = files.filter(file -> file.getFileName().toString().startsWith("log_inprogress_"))
                    .toList();
            assertThat(open).as("open segments in %s", logDirectory).hasSize(1);
            return open.getFirst();
        }
    }

    /** The index of the latest snapshot in a group's directory: Ratis names its files {@code snapshot.<term>_<index>}. */
    private static long snapshotIndex(Path logDirectory) throws IOException {
        try (Stream<Path> files = Files.list(logDirectory.resolveSibling("sm"))) {
            return files.map(file -> file.getFileName().toString()).filter(name -> name.matches("snapshot\\.\\d+_\\d+"))
                    .mapToLong(name -> Long.parseLong(name.substring(name.indexOf('_') + 1))).max().orElse(-1);
        }
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return TestClusters.idempotentProducer(cluster.bootstrap(), 120_000, 30_000);
    }
}
