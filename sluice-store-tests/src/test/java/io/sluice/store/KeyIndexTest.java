package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.recovery.StoreDirectory;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/** Lookups by message key: completeness, order, collisions, time ranges, batches, recovery. */
@ExtendWith(NoLeaks.class)
class KeyIndexTest {

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_000_000);

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    /** Tiny key files and few slots: many files, long chains, constant slot collisions. */
    private StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).keyIndexSlotsPerFile(16).keyIndexEntriesPerFile(64)
                .clock(() -> Instant.ofEpochMilli(now.get())).build();
    }

    private static byte[] body(int i) {
        return TestStores.body(11, 0, i, 40 + i % 300);
    }

    private static List<Long> offsets(LookupResult result) {
        return result.messages().stream().map(StoredMessage::queueOffset).toList();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("matrix")
    void everyMessageWithTheKeyIsFoundNewestFirstAndNothingElse(WritePath path, FlushMode mode) {
        int count = 1_500;
        try (Store store = Store.open(dir, config(path, mode))) {
            for (int i = 0; i < count; i++) {
                now.incrementAndGet();
                store.append("orders", 0, Message.builder().keys("k-" + i % 37, "unique-" + i).body(body(i)).build())
                        .join();
            }
            assertLookups(store, count);
        }
        try (Store store = Store.open(dir, config(path, mode))) {
            assertLookups(store, count);
        }
        assertThat(verify().faults()).isEmpty();
    }

    private static void assertLookups(Store store, int count) {
        for (int k = 0; k < 37; k++) {
            List<Long> expected = new ArrayList<>();
            for (int i = count - 1; i >= 0; i--) {
                if (i % 37 == k) {
                    expected.add((long) i);
                }
            }
            try (LookupResult found = store.lookupByKey("orders", "k-" + k, 1000, 0, Long.MAX_VALUE)) {
                assertThat(offsets(found)).isEqualTo(expected);
                for (StoredMessage m : found.messages()) {
                    assertThat(m.bodyBytes()).isEqualTo(body((int) m.queueOffset()));
                    assertThat(m.keys()).contains("k-" + k);
                }
            }
        }
        try (LookupResult found = store.lookupByKey("orders", "unique-777", 10, 0, Long.MAX_VALUE)) {
            assertThat(offsets(found)).containsExactly(777L);
        }
        try (LookupResult found = store.lookupByKey("orders", "absent", 10, 0, Long.MAX_VALUE)) {
            assertThat(found.messages()).isEmpty();
        }
    }

    @Test
    void aKeyWhoseHashCollidesNeverReturnsTheOtherKeysMessages() {
        // Two distinct keys with the same 32-bit hash: the index cannot tell them apart, the re-check must.
        Map<Integer, String> seen = new HashMap<>();
        String first = null;
        String second = null;
        for (int i = 0; first == null; i++) {
            String key = "c-" + i;
            String previous = seen.putIfAbsent(KeyIndex.hash("t", key), key);
            if (previous != null) {
                first = previous;
                second = key;
            }
        }
        String a = first;
        String b = second;
        assertThat(KeyIndex.hash("t", a)).isEqualTo(KeyIndex.hash("t", b));
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC))) {
            store.append("t", 0, Message.builder().keys(a).body(body(1)).build()).join();
            store.append("t", 1, Message.builder().keys(b).body(body(2)).build()).join();
            store.append("other", 0, Message.builder().keys(a).body(body(3)).build()).join();
            try (LookupResult found = store.lookupByKey("t", a, 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> {
                    assertThat(m.topic()).isEqualTo("t");
                    assertThat(m.queueId()).isZero();
                    assertThat(m.keys()).containsExactly(a);
                });
            }
            try (LookupResult found = store.lookupByKey("t", b, 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> assertThat(m.queueId()).isEqualTo(1));
            }
            try (LookupResult found = store.lookupByKey("other", a, 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> assertThat(m.topic()).isEqualTo("other"));
            }
        }
    }

    @Test
    void timeRangeAndMaxResultsBoundTheAnswer() {
        try (Store store = Store.open(dir, config(WritePath.WRITE_BUFFER, FlushMode.ASYNC))) {
            for (int i = 0; i < 300; i++) {
                now.set(10_000 + i * 10L);
                store.append("t", 0, Message.builder().keys("same").body(body(i)).build()).join();
            }
            // Store times 10_000 + 10 i: [11_000, 11_500] holds messages 100..150.
            try (LookupResult found = store.lookupByKey("t", "same", 1000, 11_000, 11_500)) {
                assertThat(offsets(found)).hasSize(51).startsWith(150L).endsWith(100L);
            }
            try (LookupResult found = store.lookupByKey("t", "same", 5, 0, Long.MAX_VALUE)) {
                assertThat(offsets(found)).containsExactly(299L, 298L, 297L, 296L, 295L);
            }
            try (LookupResult found = store.lookupByKey("t", "same", 5, 0, 9_999)) {
                assertThat(found.messages()).isEmpty();
            }
        }
    }

    @Test
    void eachMessageOfABatchIsFoundByItsOwnKey() {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.SYNC))) {
            store.append("t", 0, Message.of(body(0))).join();
            List<Message> batch = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                batch.add(Message.builder().keys("b-" + i).body(body(10 + i)).build());
            }
            store.appendBatch("t", 0, batch).join();
            for (int i = 0; i < 5; i++) {
                try (LookupResult found = store.lookupByKey("t", "b-" + i, 10, 0, Long.MAX_VALUE)) {
                    int n = i;
                    assertThat(found.messages()).singleElement().satisfies(m -> {
                        assertThat(m.queueOffset()).isEqualTo(1 + n);
                        assertThat(m.bodyBytes()).isEqualTo(body(10 + n));
                    });
                }
            }
        }
    }

    @Test
    void badLookupsAreRejectedNamingTheRule() {
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC))) {
            assertThatThrownBy(() -> store.lookupByKey("t", "", 1, 0, 1)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("key must not be empty");
            assertThatThrownBy(() -> store.lookupByKey("t", "k", 1, 5, 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("time range");
            assertThatThrownBy(() -> store.lookupByKey("t", "k", 1, -1, 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("time range");
            assertThatThrownBy(() -> store.lookupByKey("t", "k", 0, 0, 4)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("maxResults");
            assertThatThrownBy(() -> store.lookupByKey("bad topic", "k", 1, 0, 4))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    /**
     * Appends {@code count} messages keyed {@code r-<i % 10>}, then, if asked, unkeyed ones until the log has
     * rolled to a new segment; closes, and marks the store as crashed.
     */
    private void fillAndCrash(int count, boolean unkeyedSegmentAfter) throws IOException {
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.SYNC))) {
            for (int i = 0; i < count; i++) {
                now.incrementAndGet();
                store.append("t", 0, Message.builder().keys("r-" + i % 10).body(body(i)).build()).join();
            }
            int segments = store.status().segmentCount();
            while (unkeyedSegmentAfter && store.status().segmentCount() == segments) {
                store.append("u", 0, Message.of(new byte[1000])).join();
            }
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
    }

    private void assertRecovered(int count) {
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.SYNC))) {
            for (int k = 0; k < 10; k++) {
                try (LookupResult found = store.lookupByKey("t", "r-" + k, 10_000, 0, Long.MAX_VALUE)) {
                    int key = k;
                    assertThat(offsets(found)).hasSize((count - key + 9) / 10)
                            .allSatisfy(offset -> assertThat(offset % 10).isEqualTo(key))
                            .isSortedAccordingTo(Comparator.reverseOrder());
                }
            }
        }
        assertThat(verify().faults()).isEmpty();
    }

    @Test
    void afterACrashEntriesPastTheCheckpointAreRebuilt() throws IOException {
        fillAndCrash(1_000, false);
        assertRecovered(1_000);
    }

    @Test
    void anEntryLeftPastTheCountIsNeverTrusted() throws IOException {
        // Every key entry lies before the scan start (the last segment holds no keyed record), so recovery keeps
        // the last key file and must stop at its count, not at the first entry that looks unwritten.
        fillAndCrash(1_000, true);
        Path last = keyFiles().getLast();
        java.nio.ByteBuffer header = java.nio.ByteBuffer.allocate(64).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        java.nio.ByteBuffer entry = java.nio.ByteBuffer.allocate(32).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        try (FileChannel channel = FileChannel.open(last, StandardOpenOption.READ, StandardOpenOption.WRITE)) {
            channel.read(header, 0);
            int slots = header.getInt(8);
            int count = header.getInt(48);
            assertThat(count).isBetween(1, 63);
            // A well-formed entry for key r-5 pointing at the first record, which carries r-0.
            entry.putLong(0, 0).putLong(8, now.get()).putInt(16, KeyIndex.hash("t", "r-5")).putInt(20, 0)
                    .putInt(24, 0).putInt(28, 0x3159454B);
            channel.write(entry, 64 + slots * 4L + count * 32L);
        }
        assertRecovered(1_000);
    }

    @Test
    void aDeletedKeyIndexIsRebuiltFromTheLog() throws IOException {
        fillAndCrash(700, false);
        try (Stream<Path> files = Files.walk(dir.resolve("keys"))) {
            for (Path p : files.sorted(Comparator.reverseOrder()).toList()) {
                Files.delete(p);
            }
        }
        assertRecovered(700);
    }

    @Test
    void aKeyFileMissingBetweenOthersOrWithADamagedHeaderForcesARebuild() throws IOException {
        fillAndCrash(900, false);
        List<Path> files = keyFiles();
        assertThat(files).hasSizeGreaterThan(3);
        Files.delete(files.get(1));
        assertRecovered(900);
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (FileChannel channel = FileChannel.open(keyFiles().get(2), StandardOpenOption.WRITE)) {
            channel.write(java.nio.ByteBuffer.wrap(new byte[] {0, 0, 0, 0}), 0);
        }
        assertRecovered(900);
    }

    private List<Path> keyFiles() throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve("keys"))) {
            return files.sorted().toList();
        }
    }

    private StoreVerifier.Report verify() {
        try {
            return StoreVerifier.verify(dir);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
