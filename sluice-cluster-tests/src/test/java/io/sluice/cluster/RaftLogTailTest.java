package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.cluster.ratis.OpenSegmentBelowSnapshot;
import io.sluice.cluster.ratis.RaftLogTail;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.List;
import java.util.stream.Stream;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.proto.RaftProtos.LogEntryProto;
import org.apache.ratis.proto.RaftProtos.RaftConfigurationProto;
import org.apache.ratis.proto.RaftProtos.StateMachineLogEntryProto;
import org.apache.ratis.server.RaftServerConfigKeys;
import org.apache.ratis.server.raftlog.segmented.SegmentedRaftLogOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A partition's Raft log read and cut back through its segment files, written here by Ratis's own writer: a closed
 * segment of entries 0 to 9 and an open one of entries 10 to 19 (zeros after them, as Ratis allocates ahead). Entry
 * 0 and entry 12 are configuration entries; every other entry carries one batch of 10 offsets, so entry i's batches
 * end at offset 10 * i, less 10 for each configuration entry before it.
 */
class RaftLogTailTest {

    private static final int MAX = RaftServerConfigKeys.Log.Appender.bufferByteLimit(new RaftProperties()).getSizeInt();

    @TempDir
    Path dir;

    /** @return the offset entry {@code index}'s batches end at */
    private static long endOf(long index) {
        return 10 * (index - (index >= 12 ? 1 : 0));
    }

    private static LogEntryProto entry(long index) {
        LogEntryProto.Builder entry = LogEntryProto.newBuilder().setTerm(2).setIndex(index);
        if (index == 0 || index == 12) {
            return entry.setConfigurationEntry(RaftConfigurationProto.getDefaultInstance()).build();
        }
        EntryHeader header = new EntryHeader(endOf(index) - 10, new int[] {10}, new int[] {100});
        return entry.setStateMachineLogEntry(StateMachineLogEntryProto.newBuilder().setLogData(header.encode()))
                .build();
    }

    private void write(String name, long first, long last, boolean zeros) throws IOException {
        Path file = dir.resolve(name);
        try (SegmentedRaftLogOutputStream out = new SegmentedRaftLogOutputStream(file.toFile(), false, 8L << 20,
                64 * 1024, ByteBuffer.allocateDirect(64 * 1024))) {
            for (long i = first; i <= last; i++) {
                out.write(entry(i));
            }
        }
        if (zeros) {
            Files.write(file, new byte[4096], StandardOpenOption.APPEND);
        }
    }

    private void twoSegments() throws IOException {
        write("log_0-9", 0, 9, false);
        write("log_inprogress_10", 10, 19, true);
    }

    private List<String> files() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(file -> file.getFileName().toString()).sorted().toList();
        }
    }

    /** How far a store ending at {@code stored} holds the log in {@link #dir}, its batches read as a node reads them. */
    private RaftLogTail.Held held(long stored, long snapshotIndex, long snapshotEnd) throws IOException {
        return RaftLogTail.held(dir, MAX, stored, snapshotIndex, snapshotEnd, data -> EntryHeader.decode(data).end());
    }

    private List<Long> indexes(String name) throws IOException {
        return RaftLogTail.entries(dir.resolve(name), MAX).stream().map(LogEntryProto::getIndex).toList();
    }

    @Test
    void aStoreHoldingEveryBatchIsNotShort() throws IOException {
        twoSegments();
        RaftLogTail.Held held = held(endOf(19), -1, 0);
        assertThat(held).isEqualTo(new RaftLogTail.Held(19, endOf(19), 19, endOf(19)));
        assertThat(held.isShort()).isFalse();
        assertThat(held(endOf(19) + 5, -1, 0).isShort()).isFalse();
    }

    @Test
    void theLogIsHeldUpToTheLastEntryWhoseBatchesTheStoreHolds() throws IOException {
        twoSegments();
        // Entry 15's batches are only partly stored: the log is held whole up to 14.
        assertThat(held(endOf(15) - 3, -1, 0))
                .isEqualTo(new RaftLogTail.Held(14, endOf(14), 19, endOf(19)));
        // Up to entry 11, and the configuration entry 12 after it, which names no batch.
        assertThat(held(endOf(11), -1, 0))
                .isEqualTo(new RaftLogTail.Held(12, endOf(11), 19, endOf(19)));
        // In the closed segment.
        assertThat(held(endOf(6) + 4, -1, 0))
                .isEqualTo(new RaftLogTail.Held(6, endOf(6), 19, endOf(19)));
        // Not one batch: entry 0 only, which names none.
        assertThat(held(0, -1, 0)).isEqualTo(new RaftLogTail.Held(0, 0, 19, endOf(19)));
    }

    @Test
    void theSnapshotBoundsWhatIsRead() throws IOException {
        twoSegments();
        // A snapshot at entry 13: the store holds its batches, none after.
        assertThat(held(endOf(13), 13, endOf(13)))
                .isEqualTo(new RaftLogTail.Held(13, endOf(13), 19, endOf(19)));
        // A store without even the snapshot's batches (it lost what was forced): nothing to cut back to.
        assertThat(held(endOf(13) - 1, 13, endOf(13))).isNull();
        // A snapshot past the log: every entry is in it.
        assertThat(held(endOf(25), 25, endOf(25)))
                .isEqualTo(new RaftLogTail.Held(25, endOf(25), 25, endOf(25)));
    }

    @Test
    void aLogThatDoesNotFollowOnFromTheSnapshotIsNotCutBack() throws IOException {
        write("log_inprogress_10", 10, 19, true);
        // The store holds none of the log's batches, and entries 6 to 9 are missing between the snapshot and the log.
        assertThat(held(endOf(9), 5, endOf(5))).isNull();
        assertThat(held(endOf(14), 9, endOf(9)))
                .isEqualTo(new RaftLogTail.Held(14, endOf(14), 19, endOf(19)));
    }

    @Test
    void aCutInTheOpenSegmentClosesItAfterTheEntry() throws IOException {
        twoSegments();
        assertThat(RaftLogTail.cutAfter(dir, 14, MAX)).as("entries cut").isEqualTo(5);
        assertThat(files()).containsExactly("log_0-9", "log_10-14");
        assertThat(indexes("log_10-14")).containsExactly(10L, 11L, 12L, 13L, 14L);
        OpenSegmentBelowSnapshot.Scan scan = OpenSegmentBelowSnapshot.scan(dir.resolve("log_10-14"), MAX,
                Long.MAX_VALUE);
        assertThat(scan.clean()).isTrue();
        assertThat(scan.end()).as("nothing after the last entry kept").isEqualTo(Files.size(dir.resolve("log_10-14")));
        assertThat(held(endOf(14), -1, 0).isShort()).isFalse();
        // Cut again at the same entry: nothing more to do.
        assertThat(RaftLogTail.cutAfter(dir, 14, MAX)).isZero();
        assertThat(files()).containsExactly("log_0-9", "log_10-14");
    }

    @Test
    void aCutInAClosedSegmentDeletesTheLaterOnes() throws IOException {
        twoSegments();
        assertThat(RaftLogTail.cutAfter(dir, 6, MAX)).as("entries cut").isEqualTo(13);
        assertThat(files()).containsExactly("log_0-6");
        assertThat(indexes("log_0-6")).containsExactly(0L, 1L, 2L, 3L, 4L, 5L, 6L);
        assertThat(held(endOf(6), -1, 0))
                .isEqualTo(new RaftLogTail.Held(6, endOf(6), 6, endOf(6)));
    }

    @Test
    void aCutAtASegmentsLastEntryOrBeforeEveryEntry() throws IOException {
        twoSegments();
        assertThat(RaftLogTail.cutAfter(dir, 9, MAX)).isEqualTo(10);
        assertThat(files()).containsExactly("log_0-9");
        assertThat(RaftLogTail.cutAfter(dir, -1, MAX)).isEqualTo(10);
        assertThat(files()).isEmpty();
    }

    @Test
    void aClosedSegmentShorterThanItsNameIsRefused() throws IOException {
        write("log_0-9", 0, 5, false);
        assertThatThrownBy(() -> RaftLogTail.cutAfter(dir, 7, MAX)).isInstanceOf(IOException.class)
                .hasMessageContaining("not the 8 up to entry 7");
    }
}
