package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.LogDirectories;
import io.sluice.store.internal.recovery.Recovery;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * One test (or more) per row of the decision table in {@code Recovery}. States are made on disk by hand: a
 * crash is the clean-shutdown marker removed; a checkpoint older than the log's end is the checkpoint file
 * rewritten with a lower durable position; lost or torn writes are bytes overwritten. The power-loss
 * simulation (module sluice-sim) drives the same table with states a power cut actually produces.
 */
@ExtendWith(NoLeaks.class)
class RecoveryTest {

    private static final long SEED = 77;

    @TempDir
    Path dir;

    private final List<AppendResult> appended = new ArrayList<>();

    private static StoreConfig config(WritePath path) {
        return TestStores.small(path, FlushMode.SYNC).build();
    }

    private static byte[] body(long i) {
        return TestStores.body(SEED, 0, i, 300);
    }

    /** Appends {@code count} messages to t-0 with keys {@code k<i>}, closes cleanly. */
    private void fill(WritePath path, int count) {
        try (Store store = Store.open(dir, config(path))) {
            for (int i = 0; i < count; i++) {
                appended.add(store.append("t", 0, Message.builder().keys("k" + i).body(body(i)).build()).join());
            }
        }
    }

    private void simulateCrash() throws IOException {
        Files.deleteIfExists(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
    }

    private Checkpoint checkpoint() throws IOException {
        return Checkpoint.read(FileIO.DEFAULT, dir);
    }

    /** Makes the checkpoint claim less for {@code log}: as if the last one was written when the log ended there. */
    private void setDurable(String log, long position) throws IOException {
        Checkpoint current = checkpoint();
        Map<String, Checkpoint.Log> logs = new TreeMap<>(current.logs());
        logs.put(log, new Checkpoint.Log(position, logs.get(log).start()));
        new Checkpoint(logs, current.writtenMillis()).write(FileIO.DEFAULT, dir);
    }

    private List<Path> segments(Path logRoot) throws IOException {
        try (Stream<Path> files = Files.list(logRoot.resolve("log"))) {
            return files.sorted(Comparator.comparing(Path::toString)).toList();
        }
    }

    private Path segmentOf(Path logRoot, long position) throws IOException {
        Path found = null;
        for (Path segment : segments(logRoot)) {
            if (Long.parseLong(segment.getFileName().toString()) <= position) {
                found = segment;
            }
        }
        return found;
    }

    private void overwrite(long logPosition, byte[] bytes) throws IOException {
        overwrite(dir, logPosition, bytes);
    }

    private void overwrite(Path logRoot, long logPosition, byte[] bytes) throws IOException {
        Path segment = segmentOf(logRoot, logPosition);
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.seek(logPosition - Long.parseLong(segment.getFileName().toString()));
            file.write(bytes);
        }
    }

    private byte[] readLog(long logPosition, int length) throws IOException {
        Path segment = segmentOf(dir, logPosition);
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "r")) {
            file.seek(logPosition - Long.parseLong(segment.getFileName().toString()));
            byte[] bytes = new byte[length];
            file.readFully(bytes);
            return bytes;
        }
    }

    private void assertFirst(Store store, int count) {
        assertThat(store.maxOffset("t", 0)).isEqualTo(count);
        for (int i = 0; i < count; i++) {
            try (ReadResult r = store.read("t", 0, i, 1, 1 << 20)) {
                assertThat(r.messages().getFirst().bodyBytes()).isEqualTo(body(i));
            }
        }
    }

    private RecoveryReport report(Store store) {
        return store.recoveryReports().get(LogDirectories.SHARED_LOG);
    }

    @Test
    void row1CleanShutdownOpensFastWithoutScanning() {
        fill(WritePath.MMAP, 50);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(store.openedClean()).isTrue();
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.CLEAN);
            assertThat(report(store).records()).isZero();
            assertFirst(store, 50);
        }
    }

    @Test
    void row1CleanMarkerWithADamagedIndexTailRecovers() throws IOException {
        fill(WritePath.MMAP, 50);
        // The last index entry's check word no longer matches: the marker's claim is not trusted.
        Path index = dir.resolve("index/t/0/" + String.format("%020d", 0));
        try (RandomAccessFile file = new RandomAccessFile(index.toFile(), "rw")) {
            file.seek(49 * 32 + 28);
            file.writeInt(0x12345678);
        }
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.CRASH);
            assertFirst(store, 50);
        }
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void row2CrashRevalidatesFromTheSegmentOfTheDurablePositionAndKeepsEverything(WritePath path) throws IOException {
        fill(path, 1_500);
        simulateCrash();
        long durable = checkpoint().log(LogDirectories.SHARED_LOG).durablePosition();
        try (Store store = Store.open(dir, config(path))) {
            assertThat(store.openedClean()).isFalse();
            RecoveryReport report = report(store);
            assertThat(report.mode()).isEqualTo(RecoveryReport.Mode.CRASH);
            assertThat(report.scanFrom()).isEqualTo(durable - durable % (256 * 1024));
            assertFirst(store, 1_500);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * A hole past the durable position followed by intact records: what out-of-order writeback leaves. The log is
     * cut at the hole, what lies past it is erased (so no old record can come back after later appends and
     * another crash), and the store opens.
     */
    @ParameterizedTest
    @EnumSource(WritePath.class)
    void row3DamagePastTheDurablePositionIsCutAndErased(WritePath path) throws IOException {
        fill(path, 400);
        AppendResult durableEnd = appended.get(300);
        AppendResult hole = appended.get(350);
        simulateCrash();
        setDurable(LogDirectories.SHARED_LOG, durableEnd.logPosition());
        overwrite(hole.logPosition() + 20, new byte[hole.recordBytes() - 20]);
        StoreVerifier.Report before = StoreVerifier.verify(dir);
        assertThat(before.faults()).isEmpty();
        assertThat(before.notes()).anyMatch(note -> note.contains("opening the store cuts the log there"));
        try (Store store = Store.open(dir, config(path))) {
            RecoveryReport report = report(store);
            assertThat(report.cutAt()).isEqualTo(hole.logPosition());
            assertThat(report.bytesDropped()).isGreaterThan(0);
            assertFirst(store, 350);
            AppendResult next = store.append("t", 0, Message.of(body(9999))).join();
            assertThat(next.firstQueueOffset()).isEqualTo(350);
            assertThat(next.logPosition()).isEqualTo(hole.logPosition());
        }
        // The old records past the cut are gone from the file: nothing there can validate again.
        AppendResult later = appended.get(370);
        assertThat(readLog(later.logPosition(), later.recordBytes())).containsOnly(0);
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void row4DamageBelowTheDurablePositionIsRefusedNamingSegmentAndPosition(WritePath path) throws IOException {
        fill(path, 400);
        AppendResult victim = appended.get(100);
        simulateCrash();
        overwrite(victim.logPosition() + 60, new byte[] {1, 2, 3});
        assertThat(StoreVerifier.verify(dir).faults()).anyMatch(f -> f.contains("below the durable position"));
        assertThatThrownBy(() -> Store.open(dir, config(path)))
                .isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining("log position " + victim.logPosition())
                .hasMessageContaining(segmentOf(dir, victim.logPosition()).toString())
                .hasMessageContaining("below the durable position")
                .hasMessageContaining("sluice recover");
    }

    @Test
    void row4CorruptionCanBeTruncatedWhenTheUserOptsIn() throws IOException {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        overwrite(appended.get(100).logPosition() + 60, new byte[] {1, 2, 3});
        try (Store store = Store.open(dir, config(WritePath.MMAP).toBuilder().truncateOnCorruption(true).build())) {
            assertFirst(store, 100);
        }
        AppendResult dropped = appended.get(200);
        assertThat(readLog(dropped.logPosition(), dropped.recordBytes())).containsOnly(0);
    }

    @Test
    void row5NoCheckpointRebuildsEveryIndexAndTellsCorruptionFromATornTail() throws IOException {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        Files.delete(dir.resolve(Checkpoint.FILE_NAME));
        deleteTree(dir.resolve("index"));
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.REBUILD);
            assertFirst(store, 400);
            try (LookupResult found = store.lookupByKey("t", "k17", 5, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> assertThat(m.queueOffset()).isEqualTo(17));
            }
        }
        // A torn last record, no checkpoint: cut.
        AppendResult last = appended.getLast();
        simulateCrash();
        Files.delete(dir.resolve(Checkpoint.FILE_NAME));
        overwrite(last.logPosition() + last.recordBytes() / 2, new byte[last.recordBytes() / 2]);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 399);
        }
        // A damaged middle record with valid ones after it, no checkpoint: refused.
        simulateCrash();
        Files.delete(dir.resolve(Checkpoint.FILE_NAME));
        overwrite(appended.get(100).logPosition() + 60, new byte[] {1, 2, 3});
        assertThatThrownBy(() -> Store.open(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("a valid record follows");
    }

    @Test
    void row6ALogTheCheckpointDoesNotListHasNothingDurableClaimed() throws IOException {
        StoreConfig config = config(WritePath.MMAP);
        List<AppendResult> own = new ArrayList<>();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("o", TopicLayout.TOPIC);
            for (int i = 0; i < 200; i++) {
                own.add(store.append("o", 0, Message.of(body(i))).join());
            }
        }
        simulateCrash();
        Checkpoint current = checkpoint();
        Map<String, Checkpoint.Log> logs = new TreeMap<>(current.logs());
        logs.remove("o");
        new Checkpoint(logs, current.writtenMillis()).write(FileIO.DEFAULT, dir);
        Path logRoot = dir.resolve("logs/o");
        overwrite(logRoot, own.get(100).logPosition() + 60, new byte[] {1, 2, 3});
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("o", 0)).isEqualTo(100);
        }
    }

    @Test
    void row7AMissingSegmentBelowTheDurablePositionIsRefusedAndPastItIsCut() throws IOException {
        fill(WritePath.MMAP, 1_500);
        List<Path> segments = segments(dir);
        assertThat(segments).hasSizeGreaterThan(2);
        Path missing = segments.get(1);
        byte[] saved = Files.readAllBytes(missing);
        Files.delete(missing);
        simulateCrash();
        assertThatThrownBy(() -> Store.open(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("are missing");
        Files.write(missing, saved);
        // The same gap, but the checkpoint claims nothing past the first segment: the log ends at the gap.
        setDurable(LogDirectories.SHARED_LOG, appended.get(10).logPosition());
        Files.delete(missing);
        long gap = Long.parseLong(missing.getFileName().toString());
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).cutAt()).isEqualTo(gap);
            long kept = appended.stream().filter(a -> a.logPosition() + a.recordBytes() <= gap).count();
            assertFirst(store, (int) kept);
        }
        assertThat(segments(dir)).hasSize(1);
    }

    @Test
    void row8AnEmptySegmentFileIsDeleted() throws IOException {
        fill(WritePath.MMAP, 100);
        simulateCrash();
        Path empty = dir.resolve("log").resolve(String.format("%020d", 256 * 1024));
        Files.createFile(empty);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 100);
        }
        assertThat(empty).doesNotExist();
    }

    @Test
    void row9AnIndexMissingAFileIsRebuiltWhole() throws IOException {
        fill(WritePath.MMAP, 3_000);
        simulateCrash();
        // Lose a middle index file (entries 768..1791: files hold 256, 512, then 1,024 entries) although the
        // checkpoint says they were durable.
        Files.delete(dir.resolve("index/t/0").resolve(String.format("%020d", 768)));
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.REBUILD);
            assertFirst(store, 3_000);
        }
    }

    @Test
    void row10AnIndexFileThatLostItsSizeIsRestored() throws IOException {
        fill(WritePath.MMAP, 1_500);
        simulateCrash();
        Path last = dir.resolve("index/t/0").resolve(String.format("%020d", 768)); // entries 768..1791
        long size = Files.size(last);
        // The size was lost; the entries past the durable position are re-derived from the log.
        setDurable(LogDirectories.SHARED_LOG, appended.get(1_000).logPosition());
        try (RandomAccessFile file = new RandomAccessFile(last.toFile(), "rw")) {
            file.setLength(0);
        }
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.CRASH);
            assertFirst(store, 1_500);
        }
        assertThat(Files.size(last)).isEqualTo(size);
    }

    @Test
    void row11AKeyFileWithADamagedHeaderIsDeletedAndItsKeysRederived() throws IOException {
        fill(WritePath.MMAP, 5_000);
        simulateCrash();
        List<Path> keyFiles;
        try (Stream<Path> files = Files.list(dir.resolve("keys"))) {
            keyFiles = files.sorted().toList();
        }
        assertThat(keyFiles).hasSizeGreaterThan(1);
        Path lastKeys = keyFiles.getLast();
        // Created after the checkpoint: everything in it lies past the durable position.
        long firstInLast = 4_096L;
        setDurable(LogDirectories.SHARED_LOG, appended.get((int) firstInLast - 1).logPosition());
        try (RandomAccessFile file = new RandomAccessFile(lastKeys.toFile(), "rw")) {
            file.seek(0);
            file.writeInt(0);
        }
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.CRASH);
            for (int i : new int[] {5, 4_100, 4_999}) {
                try (LookupResult found = store.lookupByKey("t", "k" + i, 5, 0, Long.MAX_VALUE)) {
                    assertThat(found.messages()).as("key k" + i).singleElement()
                            .satisfies(m -> assertThat(m.bodyBytes()).isEqualTo(body(i)));
                }
            }
        }
    }

    @Test
    void row12ReadOnlyAfterACrashShowsUpToTheDurablePositionAndWritesNothing() throws Exception {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        setDurable(LogDirectories.SHARED_LOG, appended.get(300).logPosition());
        Map<String, String> before = fingerprint();
        try (Store store = Store.openReadOnly(dir, config(WritePath.MMAP))) {
            assertThat(report(store).mode()).isEqualTo(RecoveryReport.Mode.READ_ONLY_TO_DURABLE);
            assertFirst(store, 300);
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[1])))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("reading only");
        }
        assertThat(fingerprint()).isEqualTo(before);
    }

    @Test
    void row13ReadOnlyWithoutACheckpointAfterACrashIsRefused() throws IOException {
        fill(WritePath.MMAP, 10);
        simulateCrash();
        Files.delete(dir.resolve(Checkpoint.FILE_NAME));
        assertThatThrownBy(() -> Store.openReadOnly(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreException.class).hasMessageContaining("only a writable open can recover it");
    }

    @Test
    void row14ASegmentBelowTheRecordedStartIsDeletedAgain() throws IOException {
        StoreConfig config = config(WritePath.MMAP).toBuilder()
                .retention(RetentionPolicy.defaults().withRetentionBytes(2 * 256 * 1024)).build();
        Path first;
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 3_000; i++) {
                appended.add(store.append("t", 0, Message.of(body(i))).join());
            }
            first = segments(dir).getFirst();
            byte[] saved = Files.readAllBytes(first);
            store.enforceRetention();
            assertThat(first).doesNotExist();
            long start = store.minOffset("t", 0);
            assertThat(start).isGreaterThan(0);
            // A power cut undid the deletion: the file is back.
            Files.write(first, saved);
        }
        simulateCrash();
        try (Store store = Store.open(dir, config)) {
            assertThat(first).doesNotExist();
            long start = store.minOffset("t", 0);
            try (ReadResult r = store.read("t", 0, start, 1, 1 << 20)) {
                assertThat(r.messages().getFirst().bodyBytes()).isEqualTo(body(start));
            }
        }
    }

    @Test
    void unknownFormatVersionsAndForeignDirectoriesAreRefused() throws IOException {
        fill(WritePath.MMAP, 1);
        Path meta = dir.resolve(StoreDirectory.META_FILE);
        byte[] bytes = Files.readAllBytes(meta);
        bytes[4] = 99;
        Files.write(meta, bytes);
        assertThatThrownBy(() -> Store.open(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("format version 99 is not supported");

        Path foreign = Files.createDirectories(dir.resolve("elsewhere"));
        Files.writeString(foreign.resolve("notes.txt"), "not a store");
        assertThatThrownBy(() -> Store.open(foreign, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("is not a Sluice store");
    }

    @Test
    void recoveryIsIdempotentWhenItselfInterrupted() throws IOException {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        setDurable(LogDirectories.SHARED_LOG, appended.get(300).logPosition());
        AppendResult last = appended.getLast();
        overwrite(last.logPosition(), new byte[last.recordBytes()]);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 399);
        }
        simulateCrash();
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 399);
        }
    }

    /** Every file's name, size and content hash, and every directory: what a read-only open must not change. */
    private Map<String, String> fingerprint() throws IOException {
        Map<String, String> prints = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(dir)) {
            for (Path path : walk.toList()) {
                String name = dir.relativize(path).toString();
                prints.put(name, Files.isDirectory(path) ? "dir"
                        : Files.size(path) + ":" + java.util.Arrays.hashCode(Files.readAllBytes(path)));
            }
        }
        return prints;
    }

    /**
     * Two kinds of damage at once: an index entry lost below the scan start (so re-indexing from there finds a
     * gap and the whole index must be rebuilt) and a corrupt record in an old segment (which the rebuild's
     * validation of the whole log refuses). The refusal must come before anything is written: no index file
     * truncated or re-filled. And the dry run must say what the open does: a rebuild, refused.
     */
    @Test
    void aRefusalFoundOnTheWayToARebuildLeavesEveryFileAsItWas() throws IOException {
        fill(WritePath.MMAP, 1_500);
        simulateCrash();
        List<Path> segments = segments(dir);
        assertThat(segments).hasSizeGreaterThan(2);
        // Entries from 1000 on lost (zeros) although below the durable position: the index ends at 1000, while
        // the records from the scan start hold later offsets. (Truncating the indexes at the scan start would
        // also rewrite the key index.)
        Path indexFile = dir.resolve("index/t/0").resolve(String.format("%020d", 768)); // entries 768..1791
        long scanStartOffset = appended.stream().filter(a -> a.logPosition() >= Long.parseLong(
                segments.getLast().getFileName().toString())).findFirst().orElseThrow().firstQueueOffset();
        assertThat(scanStartOffset).as("the last segment's first offset").isGreaterThan(1_100);
        try (RandomAccessFile file = new RandomAccessFile(indexFile.toFile(), "rw")) {
            file.seek((1_000L - 768) * 32);
            file.write(new byte[500 * 32]);
        }
        overwrite(appended.get(100).logPosition() + 60, new byte[] {1, 2, 3});
        Map<String, String> before = contents(dir);

        Map<String, RecoveryReport> plan = Store.planRecovery(dir, config(WritePath.MMAP));
        assertThatThrownBy(() -> Store.open(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("below the durable position");

        assertThat(plan.get(LogDirectories.SHARED_LOG).mode()).isEqualTo(RecoveryReport.Mode.REBUILD);
        assertThat(plan.get(LogDirectories.SHARED_LOG).problem()).contains("below the durable position");
        assertThat(plan.get(LogDirectories.SHARED_LOG).cutAt()).isEqualTo(appended.get(100).logPosition());
        assertThat(contents(dir)).as("files after the plan and the refused open").isEqualTo(before);
    }

    @Test
    void aRecoveryPlanOfAStoreInUseIsRefused() {
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            store.append("t", 0, Message.of(new byte[10])).join();
            assertThatThrownBy(() -> Store.planRecovery(dir, config(WritePath.MMAP)))
                    .isInstanceOf(StoreException.class).hasMessageContaining("is open");
        }
        assertThat(Store.planRecovery(dir, config(WritePath.MMAP)).get(LogDirectories.SHARED_LOG).mode())
                .isEqualTo(RecoveryReport.Mode.CLEAN);
    }

    /** @return every regular file under {@code root} by relative path, with its bytes' hash */
    private static Map<String, String> contents(Path root) throws IOException {
        Map<String, String> files = new TreeMap<>();
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.filter(Files::isRegularFile).toList()) {
                files.put(root.relativize(path).toString(), Files.size(path) + ":"
                        + java.util.Arrays.hashCode(Files.readAllBytes(path)));
            }
        }
        return files;
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
