package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.apache.ratis.server.protocol.TermIndex;
import org.apache.ratis.server.storage.FileInfo;
import org.apache.ratis.server.storage.RaftStorage;
import org.apache.ratis.statemachine.SnapshotRetentionPolicy;
import org.apache.ratis.statemachine.impl.SingleFileSnapshotInfo;
import org.apache.ratis.util.SizeInBytes;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SnapshotStorageTest {

    @TempDir
    Path dir;

    private RaftStorage raftStorage() throws IOException {
        RaftStorage storage = RaftStorage.newBuilder().setDirectory(dir.toFile())
                .setOption(RaftStorage.StartupOption.FORMAT).setStorageFreeSpaceMin(SizeInBytes.ONE_MB).build();
        storage.initialize();
        return storage;
    }

    /** A snapshot file as a partition's machine writes one, found by a listing of the directory. */
    private static File snapshotFile(SnapshotStorage storage, long term, long index)
            throws IOException {
        File file = storage.getSnapshotFile(term, index);
        Files.writeString(file.toPath(), "offset.end=0\n");
        return file;
    }

    @Test
    void withNoSnapshotTheDirectoryIsListedOnceNotAtEachQuestion() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            assertThat(storage.getLatestSnapshot()).isNull();

            // A file that appears behind the machine's back is not looked for at each question (each follower
            // append asks): Ratis's storage listed the directory every time, and found it.
            snapshotFile(storage, 1, 10);
            assertThat(storage.getLatestSnapshot()).isNull();
            assertThat(storage.getLatestSnapshot()).isNull();

            // Told to load again (after an install), it lists the directory.
            assertThat(storage.loadLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(1, 10));
            assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(1, 10));
        }
    }

    @Test
    void aSnapshotTheMachineRecordsIsTheLatestAndAnOlderOneDoesNotReplaceIt() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            File newer = snapshotFile(storage, 2, 20);
            storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(newer.toPath(), null),
                    TermIndex.valueOf(2, 20)));
            assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(2, 20));

            File older = snapshotFile(storage, 1, 10);
            storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(older.toPath(), null),
                    TermIndex.valueOf(1, 10)));
            assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(2, 20));
            assertThat(storage.loadLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(2, 20));
        }
    }

    @Test
    void aSnapshotOnDiskWhenTheGroupStartsIsFound() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage first = new SnapshotStorage();
            first.init(raft);
            snapshotFile(first, 3, 30);

            SnapshotStorage restarted = new SnapshotStorage();
            restarted.init(raft);
            assertThat(restarted.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(3, 30));
        }
    }

    @Test
    void aListingThatFailsIsNotTakenForNoSnapshot() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            Path directory = raft.getStorageDir().getStateMachineDir().toPath();
            Files.delete(directory);
            assertThat(storage.loadLatestSnapshot()).as("a listing that failed").isNull();

            Files.createDirectories(directory);
            snapshotFile(storage, 4, 40);
            assertThat(storage.getLatestSnapshot()).as("the next question lists again").isNotNull();
            assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(4, 40));
        }
    }

    @Test
    void snapshotsPastTheRetainedCountAreDeletedOldestFirst() throws IOException {
        try (RaftStorage raft = raftStorage()) {
            SnapshotStorage storage = new SnapshotStorage();
            storage.init(raft);
            snapshotFile(storage, 1, 10);
            snapshotFile(storage, 1, 20);
            snapshotFile(storage, 2, 30);
            File latest = snapshotFile(storage, 2, 40);
            storage.updateLatestSnapshot(new SingleFileSnapshotInfo(new FileInfo(latest.toPath(), null),
                    TermIndex.valueOf(2, 40)));

            // Ratis keeps that many snapshots with an MD5 file beside them, and a partition's have none: it kept all.
            storage.cleanupOldSnapshots(new SnapshotRetentionPolicy() {
                @Override
                public int getNumSnapshotsRetained() {
                    return 2;
                }
            });
            try (var files = Files.list(raft.getStorageDir().getStateMachineDir().toPath())) {
                assertThat(files.map(file -> file.getFileName().toString()).sorted().toList())
                        .containsExactly("snapshot.2_30", "snapshot.2_40");
            }
            assertThat(storage.getLatestSnapshot().getTermIndex()).isEqualTo(TermIndex.valueOf(2, 40));
        }
    }
}
