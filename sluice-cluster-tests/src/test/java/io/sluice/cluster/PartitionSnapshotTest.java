package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.SizeInBytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A partition replica's snapshot file: the offset its batches end at and the partition's log start there. */
class PartitionSnapshotTest {

    private static final ClusterNode.PartitionId PARTITION = new ClusterNode.PartitionId("t", 0);

    @TempDir
    Path dir;

    private RaftStorage raftStorage() throws IOException {
        RaftStorage storage = RaftStorage.newBuilder().setDirectory(dir.toFile())
                .setOption(RaftStorage.StartupOption.FORMAT).setStorageFreeSpaceMin(SizeInBytes.ONE_MB).build();
        storage.initialize();
        return storage;
    }

    private static PartitionSnapshot read(File file, TermIndex at) throws IOException {
        return PartitionSnapshot.read(new SingleFileSnapshotInfo(new FileInfo(file.toPath(), null), at), PARTITION);
    }

    @Test
    void aSnapshotReadsBackWithItsLogStart() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            TermIndex at = TermIndex.valueOf(2, 40);
            PartitionSnapshot written = PartitionSnapshot.write(storage, at, 900, 350);

            assertThat(read(storage.getSnapshotFile(2, 40), at)).isEqualTo(written);
            assertThat(written.logStart()).isEqualTo(350);
            assertThat(Files.readString(storage.getSnapshotFile(2, 40).toPath())).contains("log.start=350\n");
        }
    }

    @Test
    void aSnapshotWithoutDeletedRecordsIsTheFileEarlierVersionsWroteAndReadsAsLogStartZero() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            TermIndex at = TermIndex.valueOf(1, 10);
            PartitionSnapshot.write(storage, at, 900, 0);
            File file = storage.getSnapshotFile(1, 10);

            // As written before log starts: the end, then the CRC32C of its line.
            assertThat(Files.readString(file.toPath())).isEqualTo(PartitionSnapshot.text(900, 0))
                    .startsWith("offset.end=900\ncrc32c=");
            assertThat(read(file, at).logStart()).isZero();
            assertThat(read(file, at).end()).isEqualTo(900);
        }
    }

    @Test
    void aDamagedLogStartIsRefused() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            TermIndex at = TermIndex.valueOf(1, 10);
            PartitionSnapshot.write(storage, at, 900, 350);
            File file = storage.getSnapshotFile(1, 10);
            Files.writeString(file.toPath(), Files.readString(file.toPath()).replace("log.start=350", "log.start=351"));

            assertThatThrownBy(() -> read(file, at)).hasMessageContaining("damaged");
        }
    }
}
