package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.StoreDirectory;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * {@link Store#truncateQueue}: a BATCHES queue cut back at one of its batches, as a Raft follower cuts its log to
 * its leader's. The cut is durable, never half done, and nothing past it comes back.
 */
@ExtendWith(NoLeaks.class)
class QueueTruncationTest {

    @TempDir
    Path dir;

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    /** Appends {@code appends} batches of random values to queue 0 of "b"; returns them as stored, in order. */
    private static List<byte[]> fill(Store store, int appends, Random random) {
        List<byte[]> batches = new ArrayList<>();
        List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            int count = 1 + random.nextInt(8);
            List<byte[]> values = new ArrayList<>();
            for (int v = 0; v < count; v++) {
                byte[] value = new byte[10 + random.nextInt(i % 7 == 0 ? 3000 : 300)];
                random.nextBytes(value);
                values.add(value);
            }
            byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, values);
            batches.add(batch);
            futures.add(store.appendOpaque("b", 0, MemorySegment.ofArray(batch), count));
        }
        List<byte[]> stored = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            byte[] copy = batches.get(i).clone();
            ByteBuffer.wrap(copy).putLong(0, futures.get(i).join().firstQueueOffset());
            stored.add(copy);
        }
        return stored;
    }

    private static long offsetCount(byte[] batch) {
        return ByteBuffer.wrap(batch).getInt(23) + 1L;
    }

    private static long firstOffset(byte[] batch) {
        return ByteBuffer.wrap(batch).getLong(0);
    }

    /** The queue holds exactly {@code expected}, batch by batch, and ends after the last. */
    private static void assertHolds(Store store, List<byte[]> expected) {
        long offset = 0;
        for (byte[] batch : expected) {
            try (ReadResult read = store.read("b", 0, offset, 1, 1)) {
                assertThat(read.messages()).as("batch at offset %d", offset).singleElement()
                        .satisfies(message -> assertThat(message.bodyBytes()).isEqualTo(batch));
                offset = read.nextOffset();
            }
        }
        assertThat(store.maxOffset("b", 0)).isEqualTo(offset);
        try (ReadResult read = store.read("b", 0, offset, 10, 1 << 20)) {
            assertThat(read.messages()).isEmpty();
        }
    }

    private StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).build();
    }

    private List<Path> segments() throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve("logs").resolve("b").resolve("0").resolve("log"))) {
            return files.sorted().toList();
        }
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void aTruncatedQueueEndsAtTheCutAndItsNextBatchesTakeTheOffsetsAcrossRestartsAndCrashes(WritePath path,
                                                                                            FlushMode mode)
            throws Exception {
        Random random = new Random(path.ordinal() * 31L + mode.ordinal());
        List<byte[]> expected;
        try (Store store = Store.open(dir, config(path, mode))) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            expected = new ArrayList<>(fill(store, 400, random));
            int segmentsBefore = segments().size();
            assertThat(segmentsBefore).as("the queue spans several segments").isGreaterThan(3);
            // A deep cut (across segments), then a short one at the tail, as Raft makes them.
            for (int keep : new int[] {120, 119}) {
                long cut = firstOffset(expected.get(keep));
                store.truncateQueue("b", 0, cut);
                expected.subList(keep, expected.size()).clear();
                assertHolds(store, expected);
            }
            assertThat(segments().size()).isLessThan(segmentsBefore);
            List<byte[]> more = fill(store, 150, random);
            assertThat(firstOffset(more.getFirst())).isEqualTo(firstOffset(expected.getLast())
                    + offsetCount(expected.getLast()));
            expected.addAll(more);
            assertHolds(store, expected);
        }
        try (Store store = Store.open(dir, config(path, mode))) {
            assertThat(store.openedClean()).isTrue();
            assertHolds(store, expected);
            store.truncateQueue("b", 0, firstOffset(expected.get(200)));
            expected.subList(200, expected.size()).clear();
            expected.addAll(fill(store, 20, random));
        }
        // A crash (no clean-shutdown marker): recovery walks the batches and finds the same end.
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config(path, mode))) {
            assertThat(store.openedClean()).isFalse();
            assertHolds(store, expected);
            assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        }
    }

    @Test
    void truncatingEverythingOrNothingWorksAndBadCutsAreRefusedWithoutChangingTheQueue() {
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC))) {
            store.createTopic("b", TopicLayout.BATCHES, 2);
            store.createTopic("q", TopicLayout.QUEUE, 1);
            store.truncateQueue("b", 1, 0); // an empty queue, cut at its end: nothing to do
            assertThatThrownBy(() -> store.truncateQueue("b", 1, 3))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds nothing");
            List<byte[]> expected = new ArrayList<>(fill(store, 10, new Random(5)));
            long next = store.maxOffset("b", 0);
            store.truncateQueue("b", 0, next); // at the end: nothing to do
            assertHolds(store, expected);
            long inside = firstOffset(expected.get(3)) + 1;
            if (offsetCount(expected.get(3)) > 1) {
                assertThatThrownBy(() -> store.truncateQueue("b", 0, inside))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("inside the batch that starts at offset " + firstOffset(expected.get(3)));
            }
            assertThatThrownBy(() -> store.truncateQueue("b", 0, next + 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("holds offsets 0 to");
            assertThatThrownBy(() -> store.truncateQueue("q", 0, 0))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("BATCHES");
            assertThatThrownBy(() -> store.truncateQueue("b", -1, 0)).isInstanceOf(IllegalArgumentException.class);
            assertHolds(store, expected);
            store.truncateQueue("b", 0, 0);
            assertHolds(store, List.of());
            List<byte[]> again = fill(store, 3, new Random(6));
            assertThat(firstOffset(again.getFirst())).isZero();
            assertHolds(store, again);
        }
        Store closed = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC));
        closed.close();
        assertThatThrownBy(() -> closed.truncateQueue("b", 0, 0)).isInstanceOf(IllegalStateException.class);
    }

    /**
     * A process killed at each file operation of a truncation leaves a store that opens with the queue as it was or
     * cut, never between: each stop's files (as the page cache holds them) are copied aside and opened.
     */
    @Test
    void aCrashAtAnyStepOfATruncationLeavesTheQueueAsItWasOrCut() throws Exception {
        Path live = dir.resolve("live");
        AtomicInteger step = new AtomicInteger(-1);
        List<Path> images = new ArrayList<>();
        HookedFileIO io = new HookedFileIO().hook((op, file) -> {
            if (step.get() >= 0 && op != HookedFileIO.Op.READ && op != HookedFileIO.Op.TRANSFER) {
                Path image = dir.resolve("image-" + step.getAndIncrement());
                copyTree(live, image);
                images.add(image);
            }
        });
        // SYNC: every batch is forced before the truncation starts, so a queue found shorter than it was can only be
        // the truncation's doing.
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.SYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).fileIO(io).build();
        List<byte[]> before;
        int keep = 60;
        try (Store store = Store.open(live, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            before = fill(store, 100, new Random(9));
            step.set(0);
            store.truncateQueue("b", 0, firstOffset(before.get(keep)));
            step.set(-1);
        }
        assertThat(images).hasSizeGreaterThan(5);
        int cut = 0;
        int whole = 0;
        for (Path image : images) {
            try (Store store = Store.open(image, config(WritePath.WRITE_BUFFER, FlushMode.SYNC))) {
                long end = store.maxOffset("b", 0);
                boolean isCut = end == firstOffset(before.get(keep));
                assertThat(isCut || end == firstOffset(before.getLast()) + offsetCount(before.getLast()))
                        .as("%s ends at %d: neither as it was nor cut", image.getFileName(), end).isTrue();
                assertHolds(store, isCut ? before.subList(0, keep) : before);
                cut += isCut ? 1 : 0;
                whole += isCut ? 0 : 1;
                // What is appended next is never followed by a truncated batch, after a clean close or a crash.
                List<byte[]> after = new ArrayList<>(isCut ? before.subList(0, keep) : before);
                after.addAll(fill(store, 5, new Random(10)));
                assertHolds(store, after);
            }
            Files.delete(image.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
            try (Store store = Store.open(image, config(WritePath.WRITE_BUFFER, FlushMode.SYNC))) {
                assertThat(store.openedClean()).isFalse();
                assertThat(StoreVerifier.verify(image).faults()).isEmpty();
            }
        }
        assertThat(cut).as("images with the queue cut").isPositive();
        assertThat(whole).as("images with the queue as it was").isPositive();
    }

    private static byte[] plainBatch(int count, int valueBytes, long timestamp) {
        List<byte[]> values = new ArrayList<>();
        for (int v = 0; v < count; v++) {
            byte[] value = new byte[valueBytes];
            ByteBuffer.wrap(value).putLong(0, timestamp);
            values.add(value);
        }
        return KafkaBatch.of(timestamp, values);
    }

    private static long append(Store store, byte[] batch, int count) {
        return store.appendOpaque("b", 0, MemorySegment.ofArray(batch), count).join().firstQueueOffset();
    }

    /**
     * The closed log's next segment was still being made in the background when the truncation reopened the log;
     * once done, its creation deleted by name the file the reopened log had made its own meanwhile (acknowledged
     * SYNC batches lost, and a store that refused to open after a crash).
     */
    @Test
    void theClosedLogsSegmentPreparationNeverDeletesASegmentOfTheReopenedLog() throws Exception {
        CountDownLatch preparing = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean armed = new AtomicBoolean();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.ALLOCATE && HookedFileIO.isSegment(path) && armed.compareAndSet(true, false)) {
                preparing.countDown();
                HookedFileIO.awaitBounded(release);
            }
        });
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.SYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).fileIO(io).build();
        List<byte[]> stored = new ArrayList<>();
        Thread releaser = Thread.ofVirtual().unstarted(() -> {
            try {
                Thread.sleep(300);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            release.countDown();
        });
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            append(store, plainBatch(1, 100, 1L), 1);
            stored.add(null);
            armed.set(true);
            for (int i = 0; preparing.getCount() > 0 && i < 10_000; i++) {
                byte[] batch = plainBatch(2, 500, 1_700_000_000_000L + i);
                ByteBuffer.wrap(batch).putLong(0, append(store, batch, 2));
                stored.add(batch);
            }
            assertThat(preparing.getCount()).as("a segment preparation under way").isZero();
            // The truncation's close waits for the preparation (released a moment later) and undoes it.
            releaser.start();
            store.truncateQueue("b", 0, firstOffset(stored.get(stored.size() - 2)));
            stored.subList(stored.size() - 2, stored.size()).clear();
            for (int i = 0; i < 400; i++) {
                byte[] batch = plainBatch(2, 500, 1_800_000_000_000L + i);
                ByteBuffer.wrap(batch).putLong(0, append(store, batch, 2));
                stored.add(batch);
            }
        } finally {
            release.countDown();
            releaser.join();
        }
        stored.removeFirst();
        for (boolean crash : new boolean[] {false, true}) {
            if (crash) {
                Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
            }
            try (Store store = Store.open(dir, config(WritePath.WRITE_BUFFER, FlushMode.SYNC))) {
                long offset = 1;
                for (byte[] batch : stored) {
                    try (ReadResult read = store.read("b", 0, offset, 1, 1)) {
                        assertThat(read.messages()).as("batch at offset %d (crash: %s)", offset, crash)
                                .singleElement().satisfies(m -> assertThat(m.bodyBytes()).isEqualTo(batch));
                        offset = read.nextOffset();
                    }
                }
            }
        }
    }

    /**
     * A cut at the first offset retention left, where an index file starts: every segment and index file went, and the
     * queue's next offset lived on only in memory: after a restart the queue started again at offset 0.
     */
    @Test
    void aCutAtTheFirstStoredOffsetAfterRetentionKeepsTheNextOffsetAcrossRestarts() throws Exception {
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.SYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).queueIndexEntriesPerFile(64)
                .retention(RetentionPolicy.defaults().withRetentionBytes(1).withCheckIntervalMillis(3_600_000))
                .build();
        long min;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            for (int i = 0; i < 200; i++) {
                append(store, plainBatch(64, 10, 1_700_000_000_000L + i), 64);
            }
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            min = store.minOffset("b", 0);
            assertThat(min).isPositive();
            store.truncateQueue("b", 0, min);
            assertThat(store.maxOffset("b", 0)).isEqualTo(min);
        }
        for (boolean crash : new boolean[] {false, true}) {
            if (crash) {
                Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
            }
            try (Store store = Store.open(dir, config)) {
                assertThat(store.maxOffset("b", 0)).as("after a %s", crash ? "crash" : "clean close").isEqualTo(min);
                if (crash) {
                    assertThat(append(store, plainBatch(64, 10, 1_800_000_000_000L), 64)).isEqualTo(min);
                }
            }
        }
    }

    /**
     * {@link Store#emptyQueueAt}: a queue whose first offsets retention removed, a queue never written and an empty
     * one start again at an offset past or below their end; the next batch gets it, across a clean close and a
     * crash, and what the queue held never comes back.
     */
    @Test
    void anEmptiedQueueStartsAtTheOffsetGivenAcrossRestartsAndCrashes() throws Exception {
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.ASYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).queueIndexEntriesPerFile(64)
                .retention(RetentionPolicy.defaults().withRetentionBytes(1).withCheckIntervalMillis(3_600_000))
                .build();
        long restartAt;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 3);
            store.createTopic("q", TopicLayout.QUEUE, 1);
            for (int i = 0; i < 200; i++) {
                append(store, plainBatch(64, 10, 1_700_000_000_000L + i), 64);
            }
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            long min = store.minOffset("b", 0);
            long next = store.maxOffset("b", 0);
            assertThat(min).isPositive();
            restartAt = next + 1_000;
            store.emptyQueueAt("b", 0, restartAt);
            assertThat(store.minOffset("b", 0)).isEqualTo(restartAt);
            assertThat(store.maxOffset("b", 0)).isEqualTo(restartAt);
            try (ReadResult read = store.read("b", 0, min, 10, 1 << 20)) {
                assertThat(read.messages()).isEmpty();
            }
            // A queue never written starts where it is told; an empty one can start lower than its end.
            store.emptyQueueAt("b", 1, 77);
            assertThat(store.maxOffset("b", 1)).isEqualTo(77);
            store.emptyQueueAt("b", 2, 500);
            store.emptyQueueAt("b", 2, 40);
            assertThat(store.minOffset("b", 2)).isEqualTo(40);
            assertThatThrownBy(() -> store.emptyQueueAt("q", 0, 5))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("BATCHES");
            assertThatThrownBy(() -> store.emptyQueueAt("b", 0, -1)).isInstanceOf(IllegalArgumentException.class);
        }
        for (boolean crash : new boolean[] {false, true}) {
            if (crash) {
                Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
            }
            try (Store store = Store.open(dir, config)) {
                String after = "after a " + (crash ? "crash" : "clean close");
                assertThat(store.minOffset("b", 0)).as(after).isEqualTo(restartAt);
                assertThat(store.maxOffset("b", 0)).as(after).isEqualTo(restartAt);
                assertThat(store.maxOffset("b", 1)).as(after).isEqualTo(77);
                assertThat(store.maxOffset("b", 2)).as(after).isEqualTo(40);
                if (crash) {
                    byte[] batch = plainBatch(3, 10, 1_800_000_000_000L);
                    assertThat(append(store, batch, 3)).isEqualTo(restartAt);
                    try (ReadResult read = store.read("b", 0, restartAt, 10, 1 << 20)) {
                        assertThat(read.messages()).singleElement().satisfies(m -> assertThat(m.queueOffset())
                                .isEqualTo(restartAt));
                    }
                }
            }
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config)) {
            assertThat(store.minOffset("b", 0)).isEqualTo(restartAt);
            assertThat(store.maxOffset("b", 0)).isEqualTo(restartAt + 3);
            assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        }
    }

    /** Retention took index files out, to be deleted at the next checkpoint; a truncation came first (NoLeaks). */
    @Test
    void indexFilesRetentionTookOutAreReleasedByATruncationBeforeACheckpoint() {
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.SYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).queueIndexEntriesPerFile(64)
                .checkpointIntervalMillis(600_000)
                .retention(RetentionPolicy.defaults().withRetentionBytes(1).withCheckIntervalMillis(3_600_000))
                .build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            long last = 0;
            for (int i = 0; i < 2000; i++) {
                last = append(store, plainBatch(3, 10, 1_700_000_000_000L + i), 3);
            }
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            store.truncateQueue("b", 0, last);
            assertThat(store.maxOffset("b", 0)).isEqualTo(last);
        }
    }

    /**
     * A truncation whose erasure fails once: the queue is then as it was (the erasure never happened) and still served,
     * and a retry cuts it; it used to read as empty, and a retry at 0 did nothing.
     */
    @Test
    void aTruncationThatFailsLeavesTheQueueAsItWasAndServedAndARetryCutsIt() {
        AtomicBoolean fail = new AtomicBoolean();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.ZERO_RANGE && fail.compareAndSet(true, false)) {
                throw new IOException("injected failure");
            }
        });
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.SYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).fileIO(io).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            for (int i = 0; i < 20; i++) {
                append(store, plainBatch(2, 100, 1_700_000_000_000L + i), 2);
            }
            fail.set(true);
            assertThatThrownBy(() -> store.truncateQueue("b", 0, 30)).isInstanceOf(StoreException.class)
                    .hasMessageContaining("injected failure");
            assertThat(fail).isFalse();
            assertThat(store.maxOffset("b", 0)).isEqualTo(40);
            assertThat(store.queues("b")).containsExactly(0);
            store.truncateQueue("b", 0, 30);
            assertThat(store.maxOffset("b", 0)).isEqualTo(30);
            assertThat(append(store, plainBatch(2, 100, 1_800_000_000_000L), 2)).isEqualTo(30);
        }
    }

    /**
     * A truncation whose force fails: the log refuses appends and reads until the store opens again (it used to be
     * opened at once, trusting bytes whose write-back had failed).
     */
    @Test
    void aForceThatFailsDuringATruncationLeavesTheQueueRefusingAppends() {
        AtomicBoolean fail = new AtomicBoolean();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.FORCE && HookedFileIO.isSegment(path) && fail.get()) {
                throw new IOException("injected EIO");
            }
        });
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.ASYNC)
                .segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).flushIntervalMillis(60_000)
                .commitIntervalMillis(60_000).checkpointIntervalMillis(60_000).fileIO(io).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            for (int i = 0; i < 20; i++) {
                append(store, plainBatch(2, 100, 1_700_000_000_000L + i), 2);
            }
            fail.set(true);
            assertThatThrownBy(() -> store.truncateQueue("b", 0, 30)).isInstanceOf(StoreException.class);
            fail.set(false);
            CompletableFuture<AppendResult> after = store.appendOpaque("b", 0,
                    MemorySegment.ofArray(plainBatch(2, 100, 1_800_000_000_000L)), 2);
            assertThat(after).isCompletedExceptionally();
            assertThatThrownBy(after::join).hasMessageContaining("refuses appends");
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> all = Files.walk(from)) {
            for (Path source : all.sorted(Comparator.comparing(Path::toString)).toList()) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                } else if (!source.getFileName().toString().equals("lock")) {
                    Files.copy(source, target);
                }
            }
        }
    }
}
