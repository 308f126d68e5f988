package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.StoreDirectory;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * One test per row of the decision table in {@code Recovery}. Crashes are simulated by removing the
 * clean-shutdown marker (what a killed process leaves behind) and then damaging files.
 */
@ExtendWith(NoLeaks.class)
class RecoveryTest {

    private static final long SEED = 77;

    @TempDir
    Path dir;

    private final List<AppendResult> appended = new ArrayList<>();

    private StoreConfig config(WritePath path) {
        return TestStores.small(path, FlushMode.SYNC).build();
    }

    /** Appends {@code count} messages to t-0, closes cleanly, returns their results. */
    private void fill(WritePath path, int count) {
        try (Store store = Store.open(dir, config(path))) {
            for (int i = 0; i < count; i++) {
                appended.add(store.append("t", 0, Message.of(TestStores.body(SEED, 0, i, 300))).join());
            }
        }
    }

    private void simulateCrash() throws IOException {
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
    }

    private List<Path> segments() throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve("log"))) {
            return files.sorted(Comparator.comparing(Path::toString)).toList();
        }
    }

    private Path segmentOf(long position) throws IOException {
        Path found = null;
        for (Path segment : segments()) {
            if (Long.parseLong(segment.getFileName().toString()) <= position) {
                found = segment;
            }
        }
        return found;
    }

    private void overwrite(long logPosition, byte[] bytes) throws IOException {
        Path segment = segmentOf(logPosition);
        try (RandomAccessFile file = new RandomAccessFile(segment.toFile(), "rw")) {
            file.seek(logPosition - Long.parseLong(segment.getFileName().toString()));
            file.write(bytes);
        }
    }

    private void assertFirst(Store store, int count) {
        assertThat(store.maxOffset("t", 0)).isEqualTo(count);
        for (int i = 0; i < count; i++) {
            try (ReadResult r = store.read("t", 0, i, 1, 1 << 20)) {
                assertThat(r.messages().getFirst().bodyBytes()).isEqualTo(TestStores.body(SEED, 0, i, 300));
            }
        }
    }

    @Test
    void row1CleanShutdownOpensFastWithoutScanning() {
        fill(WritePath.MMAP, 50);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(store.openedClean()).isTrue();
            assertFirst(store, 50);
        }
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void row2CrashRevalidatesFromTheCheckpointAndKeepsEverything(WritePath path) throws IOException {
        fill(path, 1_500);
        simulateCrash();
        try (Store store = Store.open(dir, config(path))) {
            assertThat(store.openedClean()).isFalse();
            assertFirst(store, 1_500);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void row3MissingCheckpointRebuildsEveryIndexFromTheLog() throws IOException {
        fill(WritePath.MMAP, 1_500);
        simulateCrash();
        Files.delete(dir.resolve("checkpoint"));
        deleteTree(dir.resolve("index"));
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 1_500);
        }
    }

    /** Every torn tail under every write path. */
    static List<Arguments> tornTails() {
        List<Arguments> all = new ArrayList<>();
        for (TornTail tear : TornTail.values()) {
            for (WritePath path : WritePath.values()) {
                all.add(Arguments.of(tear, path));
            }
        }
        return all;
    }

    @ParameterizedTest
    @MethodSource("tornTails")
    void row4TornTailRecoversToTheLastGoodRecord(TornTail tear, WritePath path) throws IOException {
        fill(path, 400);
        AppendResult last = appended.getLast();
        simulateCrash();
        tear.apply(this, last);
        try (Store store = Store.open(dir, config(path))) {
            assertFirst(store, 399);
            // Appends continue at the cut, with the lost offset reused.
            assertThat(store.append("t", 0, Message.of(new byte[] {9})).join().logPosition())
                    .isEqualTo(last.logPosition());
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    enum TornTail {
        CUT_MID_RECORD {
            @Override
            void apply(RecoveryTest test, AppendResult last) throws IOException {
                // A crash mid-write: the record's second half never reached the file.
                test.overwrite(last.logPosition() + last.recordBytes() / 2, new byte[last.recordBytes() / 2]);
            }
        },
        RANDOM_BYTES_AFTER_LAST_RECORD {
            @Override
            void apply(RecoveryTest test, AppendResult last) throws IOException {
                byte[] noise = new byte[4096];
                new SplittableRandom(SEED).nextBytes(noise);
                test.overwrite(last.logPosition(), noise);
            }
        },
        ZEROED_TAIL {
            @Override
            void apply(RecoveryTest test, AppendResult last) throws IOException {
                test.overwrite(last.logPosition(), new byte[last.recordBytes()]);
            }
        };

        abstract void apply(RecoveryTest test, AppendResult last) throws IOException;
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void row5MidLogCorruptionIsRefusedNamingSegmentAndPosition(WritePath path) throws IOException {
        fill(path, 400);
        AppendResult victim = appended.get(100);
        simulateCrash();
        Files.delete(dir.resolve("checkpoint"));
        overwrite(victim.logPosition() + 60, new byte[] {1, 2, 3});
        assertThatThrownBy(() -> Store.open(dir, config(path)))
                .isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining("log position " + victim.logPosition())
                .hasMessageContaining(segmentOf(victim.logPosition()).toString())
                .hasMessageContaining("truncateOnCorruption");
        assertThat(StoreVerifier.verify(dir).faults()).isNotEmpty();
    }

    @Test
    void row5CorruptionCanBeTruncatedWhenTheUserOptsIn() throws IOException {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        Files.delete(dir.resolve("checkpoint"));
        overwrite(appended.get(100).logPosition() + 60, new byte[] {1, 2, 3});
        try (Store store = Store.open(dir, config(WritePath.MMAP).toBuilder().truncateOnCorruption(true).build())) {
            assertFirst(store, 100);
        }
    }

    @Test
    void row6MissingSegmentIsRefused() throws IOException {
        fill(WritePath.MMAP, 1_500);
        List<Path> segments = segments();
        assertThat(segments).hasSizeGreaterThan(2);
        Files.delete(segments.get(1));
        assertThatThrownBy(() -> Store.open(dir, config(WritePath.MMAP)))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("segment missing");
    }

    @Test
    void row7IndexEntriesPastTheValidEndAreDropped() throws IOException {
        fill(WritePath.MMAP, 400);
        AppendResult last = appended.getLast();
        simulateCrash();
        // The index reached the disk, the record did not.
        overwrite(last.logPosition(), new byte[last.recordBytes()]);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertThat(store.maxOffset("t", 0)).isEqualTo(399);
            try (ReadResult r = store.read("t", 0, 399, 1, 100)) {
                assertThat(r.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
            }
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void row8MissingIndexEntriesAreRebuilt() throws IOException {
        fill(WritePath.MMAP, 400);
        simulateCrash();
        deleteTree(dir.resolve("index"));
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 400);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void row9IndexThatLostEntriesBeforeTheCheckpointIsRebuiltWhole() throws IOException {
        fill(WritePath.MMAP, 3_000);
        simulateCrash();
        // Lose a middle index file (entries 1024..2047) although the checkpoint says they were durable.
        Path queueDir = dir.resolve("index/t/0");
        Files.delete(queueDir.resolve(String.format("%020d", 1024)));
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 3_000);
        }
    }

    @Test
    void row10UnknownFormatVersionAndForeignDirectoriesAreRefused() throws IOException {
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
        AppendResult last = appended.getLast();
        simulateCrash();
        overwrite(last.logPosition(), new byte[last.recordBytes()]);
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 399);
        }
        simulateCrash();
        try (Store store = Store.open(dir, config(WritePath.MMAP))) {
            assertFirst(store, 399);
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
    }
}
