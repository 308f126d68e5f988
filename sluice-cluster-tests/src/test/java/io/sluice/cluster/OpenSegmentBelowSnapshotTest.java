package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogOutputStream;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;
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

    /** Ratis's default largest entry, which the brokers keep. */
    private static final int MAX = RaftServerConfigKeys.Log.Appender.bufferByteLimit(new RaftProperties()).getSizeInt();

    private InProcessCluster cluster;

    @AfterEach
    void stopAll() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    /**
     * Writes entries {@code first} to {@code first + count - 1}, of 1 to 300 bytes of data, with Ratis's writer, then
     * 4 KiB of zeros, as Ratis allocates ahead.
     */
    static Path segment(Path directory, long first, int count) throws IOException {
        Path file = directory.resolve("log_inprogress_" + first);
        try (SegmentedRaftLogOutputStream out = new SegmentedRaftLogOutputStream(file.toFile(), false, 8L << 20,
                64 * 1024, ByteBuffer.allocateDirect(64 * 1024))) {
            for (int i = 0; i < count; i++) {
                byte[] data = new byte[1 + (i * 37) % 300];
                Arrays.fill(data, (byte) i);
                out.write(LogEntryProto.newBuilder().setTerm(3).setIndex(first + i)
                        .setStateMachineLogEntry(StateMachineLogEntryProto.newBuilder()
                                .setLogData(ByteString.copyFrom(data)))
                        .build());
            }
        }
        Files.write(file, new byte[4096], StandardOpenOption.APPEND);
        return file;
    }

    private static OpenSegmentBelowSnapshot.Scan scan(Path file) throws IOException {
        return OpenSegmentBelowSnapshot.scan(file, MAX, Long.MAX_VALUE);
    }

    private static void write(Path file, byte[] bytes) throws IOException {
        Files.write(file, bytes);
    }

    @Test
    void theFramingReadsWhatRatisWrites() throws IOException {
        Path file = segment(dir, 10, 20);
        OpenSegmentBelowSnapshot.Scan whole = scan(file);
        assertThat(whole.entries()).isEqualTo(20);
        assertThat(whole.clean()).as("the entries, then Ratis's zeros").isTrue();
        assertThat(Files.size(file)).isEqualTo(whole.end() + 4096);
        assertThat(OpenSegmentBelowSnapshot.scan(file, MAX, 5).entries()).isEqualTo(5);
        byte[] bytes = Files.readAllBytes(file);
        int end = (int) whole.end();
        int second = (int) OpenSegmentBelowSnapshot.scan(file, MAX, 1).end();
        int last = (int) OpenSegmentBelowSnapshot.scan(file, MAX, 19).end();

        write(file, Arrays.copyOf(bytes, end - 1));
        assertThat(scan(file)).as("the last entry cut short by the end of the file")
                .isEqualTo(new OpenSegmentBelowSnapshot.Scan(19, last, true));

        byte[] zeroed = bytes.clone();
        Arrays.fill(zeroed, end - 10, end, (byte) 0);
        write(file, zeroed);
        assertThat(scan(file)).as("the last entry's end never written (zeros)")
                .isEqualTo(new OpenSegmentBelowSnapshot.Scan(19, last, true));

        byte[] flipped = bytes.clone();
        flipped[second + 5] ^= 0x10;
        write(file, flipped);
        assertThat(scan(file)).as("the second entry damaged, entries written after it")
                .isEqualTo(new OpenSegmentBelowSnapshot.Scan(1, second, false));

        byte[] huge = bytes.clone();
        huge[second] = (byte) 0xff;
        huge[second + 1] = (byte) 0xff;
        huge[second + 2] = (byte) 0xff;
        huge[second + 3] = 0x7f;
        write(file, huge);
        assertThat(scan(file)).as("the second entry's length above the largest entry (past the end of the file)")
                .isEqualTo(new OpenSegmentBelowSnapshot.Scan(1, second, false));

        byte[] trailing = bytes.clone();
        trailing[trailing.length - 1] = 1;
        write(file, trailing);
        assertThat(scan(file).clean()).as("a byte after the zeros").isFalse();

        write(file, new byte[] {'R', 'a', 'f', 't', 'L', 'o', 'g', '2', 0, 0});
        assertThat(scan(file).clean()).as("another header").isFalse();
    }

    @Test
    void onlyASegmentWhoseEntriesTheSnapshotCoversIsClosed() throws IOException {
        for (long snapshot : new long[] {-1, 5, 9, 29}) {
            Path directory = Files.createDirectories(dir.resolve("reaching-" + snapshot));
            Path file = segment(directory, 10, 20);
            assertThat(OpenSegmentBelowSnapshot.closeIfBelow(directory, snapshot, MAX, "t-0"))
                    .as("entries 10 to 29, snapshot at %d", snapshot).isNull();
            assertThat(file).exists();
        }
        Path directory = Files.createDirectories(dir.resolve("below"));
        Path file = segment(directory, 10, 20);
        long entriesEnd = scan(file).end();
        Path closed = OpenSegmentBelowSnapshot.closeIfBelow(directory, 30, MAX, "t-0");
        assertThat(closed).isEqualTo(directory.resolve("log_10-29"));
        assertThat(file).doesNotExist();
        assertThat(Files.size(closed)).as("the zeros after the entries cut off").isEqualTo(entriesEnd);
        assertThat(scan(closed)).isEqualTo(new OpenSegmentBelowSnapshot.Scan(20, entriesEnd, true));

        Path beside = Files.createDirectories(dir.resolve("beside"));
        Path open = segment(beside, 10, 20);
        Files.writeString(beside.resolve("log_10-29"), "");
        assertThat(OpenSegmentBelowSnapshot.closeIfBelow(beside, 30, MAX, "t-0")).as("a closed one of that name")
                .isNull();
        assertThat(open).exists();

        Path damaged = Files.createDirectories(dir.resolve("damaged"));
        Path flipped = segment(damaged, 10, 20);
        byte[] bytes = Files.readAllBytes(flipped);
        bytes[(int) OpenSegmentBelowSnapshot.scan(flipped, MAX, 3).end() + 5] ^= 0x10;
        write(flipped, bytes);
        assertThat(OpenSegmentBelowSnapshot.closeIfBelow(damaged, 30, MAX, "t-0")).as("damaged").isNull();
        assertThat(flipped).exists();
    }

    @Test
    void aFollowerWhoseLogEndsBelowItsSnapshotCatchesUp() throws Exception {
        // A snapshot every 10 entries (the records go in about 35); segments large enough that the whole log is one
        // open segment.
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
        OpenSegmentBelowSnapshot.Scan whole = OpenSegmentBelowSnapshot.scan(open, MAX, Long.MAX_VALUE);
        assertThat(whole.clean()).as("the segment Ratis wrote reads cleanly").isTrue();
        assertThat(first).as("the open segment's first entry").isLessThan(snapshot);
        assertThat(first + whole.entries() - 1).as("the open segment's last entry").isGreaterThanOrEqualTo(snapshot);

        // The tail of the segment is lost (three bytes of a torn entry left at the cut): it ends halfway below the
        // snapshot.
        long keep = (snapshot - first) / 2;
        long cut = OpenSegmentBelowSnapshot.scan(open, MAX, keep).end() + 3;
        try (FileChannel channel = FileChannel.open(open, StandardOpenOption.WRITE)) {
            channel.truncate(cut);
        }
        OpenSegmentBelowSnapshot.Scan left = OpenSegmentBelowSnapshot.scan(open, MAX, Long.MAX_VALUE);
        long last = first + left.entries() - 1;
        assertThat(left.entries()).isEqualTo(keep);
        assertThat(last).as("the log's last entry").isLessThan(snapshot);

        cluster.start(follower);
        assertThat(open).as("the open segment, closed as the follower started (then purged)").doesNotExist();
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

    private static Path openSegment(Path logDirectory) throws IOException {
        try (Stream<Path> files = Files.list(logDirectory)) {
            List<Path> open = files.filter(file -> file.getFileName().toString().startsWith("log_inprogress_"))
                    .toList();
            assertThat(open).as("open segments in %s", logDirectory).hasSize(1);
            return open.getFirst();
        }
    }

    /** The latest snapshot's index in a group's directory (Ratis names its files {@code snapshot.<term>_<index>}). */
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
