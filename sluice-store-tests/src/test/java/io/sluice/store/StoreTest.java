package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

@ExtendWith(NoLeaks.class)
class StoreTest {

    @Test
    void indexFilesCreatedByAppendsHaveTheirDirectoryForcedByTheCheckpointNotTheAppender(@TempDir Path dir)
            throws Exception {
        FaultyFileIO io = new FaultyFileIO();
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).fileIO(io).queueIndexEntriesPerFile(64)
                .keyIndexEntriesPerFile(16).build();
        String appender = Thread.currentThread().getName();
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 300; i++) { // about five queue-index files and nineteen key-index files
                store.append("d", 0, Message.builder().keys("k" + i).body(new byte[10]).build()).get();
            }
            Path queueDirectory = dir.resolve("index").resolve("d").resolve("0");
            Path keyDirectory = dir.resolve("keys");
            assertThat(io.directorySyncs).noneMatch(sync -> sync.equals(appender + "|" + queueDirectory)
                    || sync.equals(appender + "|" + keyDirectory));
            long deadline = System.nanoTime() + 10_000_000_000L;
            java.util.function.Predicate<Path> syncedInBackground = directory -> io.directorySyncs.stream()
                    .anyMatch(sync -> sync.startsWith("sluice-io-") && sync.endsWith("|" + directory));
            while (!(syncedInBackground.test(queueDirectory) && syncedInBackground.test(keyDirectory))
                    && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            assertThat(syncedInBackground.test(queueDirectory)).isTrue();
            assertThat(syncedInBackground.test(keyDirectory)).isTrue();
        }
    }

    @Test
    void openingAStoreOnlyToReadItCreatesNoSegmentFile(@TempDir Path dir) throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            store.append("r", 0, Message.of(new byte[10])).get();
        }
        List<String> before;
        // (The next segment the first store prepared is deleted at its close, or failing that at the next open.)
        try (var files = java.nio.file.Files.list(dir.resolve("log"))) {
            before = files.map(p -> p.getFileName().toString()).sorted().toList();
        }
        // Opened as the CLI's read-only commands open it: with other settings, reading only.
        try (Store store = Store.open(dir, StoreConfig.defaults()); ReadResult r = store.read("r", 0, 0, 10, 1 << 20)) {
            assertThat(r.messages()).hasSize(1);
        }
        try (var files = java.nio.file.Files.list(dir.resolve("log"))) {
            assertThat(files.map(p -> p.getFileName().toString()).sorted().toList()).isSubsetOf(before);
        }
    }

    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(WritePath.class)
    void asyncFlushForcesAppendedBytesWithinTheIntervalOnEveryPath(WritePath path, @TempDir Path dir) throws Exception {
        FaultyFileIO io = new FaultyFileIO();
        StoreConfig config = TestStores.small(path, FlushMode.ASYNC).fileIO(io).flushIntervalMillis(20)
                .flushDirtyBytes(Long.MAX_VALUE).build();
        try (Store store = Store.open(dir, config)) {
            long forcesBefore = io.forces.get();
            for (int i = 0; i < 100; i++) {
                store.append("f", 0, Message.of(new byte[100]));
            }
            long end = store.status().writePosition();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (store.status().flushedPosition() < end && System.nanoTime() < deadline) {
                java.util.concurrent.locks.LockSupport.parkNanos(1_000_000);
            }
            assertThat(store.status().flushedPosition()).isEqualTo(end);
            assertThat(io.forces.get()).isGreaterThan(forcesBefore);
        }
    }

    @TempDir
    Path dir;

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("matrix")
    void appendsReadBackAcrossSegmentRollsAndReopen(WritePath path, FlushMode mode) {
        StoreConfig config = TestStores.small(path, mode).build();
        int count = 2_000;
        List<Long> positions = new ArrayList<>();
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < count; i++) {
                AppendResult result = store.append("orders", i % 2, Message.builder()
                        .keys("k-" + i).tag(i % 3 == 0 ? "red" : "").property("n", Integer.toString(i))
                        .bornTimestamp(1000 + i).body(TestStores.body(7, 0, i, 100 + i % 500)).build()).join();
                assertThat(result.firstQueueOffset()).isEqualTo(i / 2);
                positions.add(result.logPosition());
            }
            assertThat(store.status().segmentCount()).isGreaterThan(2);
            assertQueues(store, count);
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(store.openedClean()).isTrue();
            assertQueues(store, count);
            try (ReadResult record = store.readAt(positions.get(10))) {
                assertThat(record.messages()).singleElement().satisfies(m -> {
                    assertThat(m.queueOffset()).isEqualTo(5);
                    assertThat(m.bodyBytes()).isEqualTo(TestStores.body(7, 0, 10, 110));
                });
            }
            // Appends continue where the log ended.
            assertThat(store.append("orders", 0, Message.of(new byte[10])).join().firstQueueOffset())
                    .isEqualTo(count / 2);
        }
    }

    private static void assertQueues(Store store, int count) {
        assertThat(store.topics()).containsExactly("orders");
        assertThat(store.queues("orders")).containsExactly(0, 1);
        for (int queue = 0; queue < 2; queue++) {
            assertThat(store.minOffset("orders", queue)).isZero();
            assertThat(store.maxOffset("orders", queue)).isEqualTo(count / 2);
            long offset = 0;
            while (offset < count / 2) {
                try (ReadResult result = store.read("orders", queue, offset, 77, 1 << 20)) {
                    assertThat(result.status()).isEqualTo(ReadResult.Status.FOUND);
                    for (StoredMessage m : result.messages()) {
                        int i = (int) (m.queueOffset() * 2 + queue);
                        assertThat(m.queueOffset()).isEqualTo(offset++);
                        assertThat(m.bodyBytes()).isEqualTo(TestStores.body(7, 0, i, 100 + i % 500));
                        assertThat(m.keys()).containsExactly("k-" + i);
                        assertThat(m.tag()).isEqualTo(i % 3 == 0 ? "red" : "");
                        assertThat(m.properties()).containsEntry("n", Integer.toString(i));
                        assertThat(m.bornTimestamp()).isEqualTo(1000 + i);
                        assertThat(m.body().isNative() || m.body().isMapped()).as("body is a view, not a copy").isTrue();
                        assertThat(m.body().isReadOnly()).isTrue();
                    }
                    assertThat(result.nextOffset()).isEqualTo(offset);
                }
            }
            try (ReadResult end = store.read("orders", queue, offset, 10, 1000)) {
                assertThat(end.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
            }
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("matrix")
    void batchIsOneRecordCoveringConsecutiveOffsets(WritePath path, FlushMode mode) {
        try (Store store = Store.open(dir, TestStores.small(path, mode).build())) {
            store.append("t", 3, Message.of("first".getBytes(StandardCharsets.UTF_8))).join();
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                batch.add(Message.of(("b" + i).getBytes(StandardCharsets.UTF_8)));
            }
            AppendResult result = store.appendBatch("t", 3, batch).join();
            assertThat(result.firstQueueOffset()).isEqualTo(1);
            assertThat(result.messageCount()).isEqualTo(5);
            assertThat(result.nextQueueOffset()).isEqualTo(6);
            try (ReadResult middle = store.read("t", 3, 3, 2, 1 << 20)) {
                assertThat(middle.messages()).extracting(m -> new String(m.bodyBytes(), StandardCharsets.UTF_8))
                        .containsExactly("b2", "b3");
                assertThat(middle.messages()).allSatisfy(m -> assertThat(m.logPosition()).isEqualTo(result.logPosition()));
                assertThat(middle.nextOffset()).isEqualTo(5);
            }
            try (ReadResult whole = store.readAt(result.logPosition())) {
                assertThat(whole.messages()).hasSize(5);
                assertThat(whole.nextOffset()).isEqualTo(6);
            }
        }
    }

    @Test
    void maxBytesStopsBeforeTheMessageThatWouldExceedItButReturnsAtLeastOne() {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            for (int i = 0; i < 4; i++) {
                store.append("t", 0, Message.of(new byte[1000])).join();
            }
            try (ReadResult result = store.read("t", 0, 0, 100, 2500)) {
                assertThat(result.messages()).hasSize(2);
            }
            try (ReadResult result = store.read("t", 0, 0, 100, 10)) {
                assertThat(result.messages()).hasSize(1);
            }
        }
    }

    @Test
    void offsetForTimestampBinarySearchesStoreTime() {
        AtomicLong now = new AtomicLong(10_000);
        InstantSource clock = () -> Instant.ofEpochMilli(now.get());
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).clock(clock).build())) {
            for (int i = 0; i < 100; i++) {
                now.set(10_000 + i * 10L);
                store.append("t", 0, Message.of(new byte[8])).join();
            }
            assertThat(store.offsetForTimestamp("t", 0, 0)).isZero();
            assertThat(store.offsetForTimestamp("t", 0, 10_000)).isZero();
            assertThat(store.offsetForTimestamp("t", 0, 10_005)).isEqualTo(1);
            assertThat(store.offsetForTimestamp("t", 0, 10_500)).isEqualTo(50);
            assertThat(store.offsetForTimestamp("t", 0, 99_999)).isEqualTo(100);
            try (ReadResult r = store.read("t", 0, 50, 1, 100)) {
                assertThat(r.messages().getFirst().storeTimestamp()).isEqualTo(10_500);
            }
        }
    }

    @Test
    void readStatusesForUnknownQueuesAndOffsetsPastTheEnd() {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            try (ReadResult r = store.read("none", 0, 0, 1, 1)) {
                assertThat(r.status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
            }
            store.append("t", 0, Message.of(new byte[1])).join();
            try (ReadResult r = store.read("t", 0, 5, 1, 1)) {
                assertThat(r.status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
                assertThat(r.nextOffset()).isEqualTo(1);
            }
            assertThatThrownBy(() -> store.readAt(3)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("no record starts at log position 3");
        }
    }

    @Test
    void badInputIsRejectedNamingTheRule() {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            Message m = Message.of(new byte[1]);
            assertThatThrownBy(() -> store.append("", 0, m)).hasMessageContaining("must not be empty");
            assertThatThrownBy(() -> store.append("x".repeat(250), 0, m)).hasMessageContaining("at most 249");
            assertThatThrownBy(() -> store.append("a/b", 0, m)).hasMessageContaining("[a-zA-Z0-9._-]");
            assertThatThrownBy(() -> store.append("..", 0, m)).hasMessageContaining("'.' or '..'");
            assertThatThrownBy(() -> store.append("t", -1, m)).hasMessageContaining("must not be negative");
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[40 * 1024])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxMessageBytes");
            assertThatThrownBy(() -> store.appendBatch("t", 0, List.of()))
                    .hasMessageContaining("at least one message");
            assertThatThrownBy(() -> store.append("t", 0, Message.builder().keys("").body(new byte[1]).build()))
                    .hasMessageContaining("key must not be empty");
            assertThatThrownBy(() -> store.read("t", 0, -1, 1, 1)).isInstanceOf(IllegalArgumentException.class);
            // Nothing was stored by the rejected calls.
            assertThat(store.topics()).isEmpty();
            store.append("t", 0, m).join();
            assertThat(store.maxOffset("t", 0)).isEqualTo(1);
        }
    }

    @Test
    void closedStoreRefusesWithIllegalStateAndCloseIsIdempotent() {
        Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build());
        store.close();
        store.close();
        assertThat(store.status().state()).isEqualTo(StoreStatus.State.CLOSED);
        assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[1])))
                .isInstanceOf(IllegalStateException.class).hasMessageContaining("closed");
        assertThatThrownBy(() -> store.read("t", 0, 0, 1, 1)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aStoreCannotBeOpenedTwice() {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.OPEN);
            assertThatThrownBy(() -> Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build()))
                    .isInstanceOf(StoreException.class).hasMessageContaining("already open");
        }
    }

    @Test
    void autoAllocationZeroFillsUnderSyncExceptOnMmapAndFallocatesUnderAsync() {
        assertThat(StoreConfig.defaults().segmentAllocation()).isEqualTo(SegmentAllocation.AUTO);
        for (WritePath path : List.of(WritePath.WRITE_BUFFER, WritePath.CHANNEL, WritePath.DIRECT)) {
            assertThat(SegmentAllocation.AUTO.resolve(FlushMode.SYNC, path)).isEqualTo(SegmentAllocation.ZERO_FILL);
        }
        assertThat(SegmentAllocation.AUTO.resolve(FlushMode.SYNC, WritePath.MMAP))
                .isEqualTo(SegmentAllocation.FALLOCATE);
        for (WritePath path : WritePath.values()) {
            assertThat(SegmentAllocation.AUTO.resolve(FlushMode.ASYNC, path)).isEqualTo(SegmentAllocation.FALLOCATE);
            assertThat(SegmentAllocation.ZERO_FILL.resolve(FlushMode.ASYNC, path))
                    .isEqualTo(SegmentAllocation.ZERO_FILL);
        }
        assertThat(SegmentAllocation.FALLOCATE.resolve(FlushMode.SYNC, WritePath.CHANNEL))
                .isEqualTo(SegmentAllocation.FALLOCATE);
    }

    @Test
    void configValidationNamesTheField() {
        assertThatThrownBy(() -> StoreConfig.builder().segmentSizeBytes(1000).build())
                .hasMessageContaining("segmentSizeBytes");
        assertThatThrownBy(() -> StoreConfig.builder().segmentSizeBytes(64 * 1024 + 1).build())
                .hasMessageContaining("segmentSizeBytes must be a multiple of 4096");
        assertThatThrownBy(() -> StoreConfig.builder().segmentSizeBytes(64 * 1024).build())
                .hasMessageContaining("maxMessageBytes");
        assertThatThrownBy(() -> StoreConfig.builder().writeBufferCount(1).build())
                .hasMessageContaining("writeBufferCount");
        assertThatThrownBy(() -> StoreConfig.builder().flushIntervalMillis(0).build())
                .hasMessageContaining("flushIntervalMillis");
        assertThatThrownBy(() -> StoreConfig.builder().writePath(WritePath.WRITE_BUFFER).writeBufferBytes(8192).build())
                .hasMessageContaining("writeBufferBytes");
        assertThat(StoreConfig.defaults().segmentSizeBytes()).isEqualTo(1L << 30);
        assertThat(StoreConfig.defaults().maxMessageBytes()).isEqualTo(4 * 1024 * 1024);
    }
}
