package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.io.FileIO;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * BATCHES topics: Kafka record batches stored back to back with no store framing between them, read and sent
 * as appended, recovered by their own length, CRC32C and offsets.
 */
@ExtendWith(NoLeaks.class)
class BatchLogTest {

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    /** A batch of {@code count} records of random values, {@code valueBytes} each. */
    private static byte[] batch(Random random, int count, int valueBytes) {
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            byte[] value = new byte[valueBytes];
            random.nextBytes(value);
            values.add(value);
        }
        return KafkaBatch.of(1_700_000_000_000L + random.nextInt(1000), values);
    }

    private static byte[] stamped(byte[] batch, long first) {
        byte[] copy = batch.clone();
        ByteBuffer.wrap(copy).putLong(0, first);
        return copy;
    }

    /** Appends {@code appends} batches to queue 0 of "b"; returns them as stored (baseOffset set), in order. */
    private static List<byte[]> fill(Store store, int appends, long seed) {
        Random random = new Random(seed);
        List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
        List<byte[]> batches = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            int count = 1 + random.nextInt(20);
            byte[] batch = batch(random, count, 10 + random.nextInt(i % 9 == 0 ? 1200 : 200));
            batches.add(batch);
            futures.add(store.appendOpaque("b", 0, MemorySegment.ofArray(batch), count));
        }
        List<byte[]> stored = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            AppendResult result = futures.get(i).join();
            stored.add(stamped(batches.get(i), result.firstQueueOffset()));
        }
        return stored;
    }

    private static void assertReadsBack(Store store, List<byte[]> stored) {
        long offset = 0;
        for (byte[] batch : stored) {
            try (ReadResult read = store.read("b", 0, offset, 1, 1)) {
                assertThat(read.messages()).singleElement().satisfies(message -> {
                    assertThat(message.bodyBytes()).isEqualTo(batch);
                    assertThat(message.opaqueCount()).isEqualTo(ByteBuffer.wrap(batch).getInt(23) + 1);
                });
                offset = read.nextOffset();
            }
        }
        assertThat(store.maxOffset("b", 0)).isEqualTo(offset);
    }

    private static byte[] concat(List<byte[]> batches) {
        ByteArrayOutputStream all = new ByteArrayOutputStream();
        batches.forEach(all::writeBytes);
        return all.toByteArray();
    }

    /** Sends every batch of queue 0 from {@code from} with {@link OpaqueSlice#transferTo}. */
    private static byte[] sliceAll(Store store, long from) throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        long offset = from;
        while (offset < store.maxOffset("b", 0)) {
            OpaqueSlice slice = store.sliceOpaque("b", 0, offset, 1 << 20);
            assertThat(slice.messagesNext()).isFalse();
            slice.transferTo(Channels.newChannel(sink));
            offset = slice.nextOffset();
        }
        return sink.toByteArray();
    }

    private StoreConfig.Builder config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).clock(clock);
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void batchesAreStoredBackToBackAndReadAndSentAsAppended(WritePath path, FlushMode mode) throws Exception {
        List<byte[]> stored;
        try (Store store = Store.open(dir, config(path, mode).build())) {
            store.createTopic("b", TopicLayout.BATCHES, 2);
            stored = fill(store, 300, 11);
            assertReadsBack(store, stored);
            assertThat(sliceAll(store, 0)).isEqualTo(concat(stored));
            ByteArrayOutputStream records = new ByteArrayOutputStream();
            TransferResult sent = store.transferTo("b", 0, 0, Long.MAX_VALUE, Channels.newChannel(records));
            assertThat(sent.nextOffset()).isEqualTo(store.maxOffset("b", 0));
            assertThat(records.toByteArray()).isEqualTo(concat(stored));
            assertThat(store.offsetForTimestamp("b", 0, 0)).isZero();
        }
        // On disk: the segments hold the batches and nothing else, bar zeros (or a filler) at each segment's end: a
        // batch follows the one before it directly, except where a new segment starts.
        List<byte[]> segments = segmentBytes();
        byte[] onDisk = concat(segments);
        int at = 0;
        int gaps = 0;
        for (byte[] batch : stored) {
            int found = indexOf(onDisk, batch, at);
            assertThat(found).as("batch at or after byte %d", at).isGreaterThanOrEqualTo(at);
            gaps += found == at ? 0 : 1;
            at = found + batch.length;
        }
        assertThat(gaps).as("batches not right after the one before (%d segments)", segments.size())
                .isLessThan(segments.size());
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config(path, mode).build())) {
            assertThat(store.openedClean()).isFalse();
            assertReadsBack(store, stored);
            assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        }
    }

    private static int indexOf(byte[] haystack, byte[] needle, int from) {
        outer:
        for (int i = from; i <= haystack.length - needle.length; i++) {
            for (int j = 0; j < needle.length; j++) {
                if (haystack[i + j] != needle[j]) {
                    continue outer;
                }
            }
            return i;
        }
        return -1;
    }

    private Path logRoot() {
        return dir.resolve("logs").resolve("b").resolve("0");
    }

    private List<Path> segments() throws IOException {
        try (Stream<Path> files = Files.list(logRoot().resolve("log"))) {
            return files.sorted().toList();
        }
    }

    private List<byte[]> segmentBytes() throws IOException {
        List<byte[]> all = new ArrayList<>();
        for (Path segment : segments()) {
            all.add(Files.readAllBytes(segment));
        }
        return all;
    }

    /** A replicated partition's consumers read below its high watermark: a slice takes no batch from there on. */
    @Test
    void aSliceTakesNoBatchFromTheOffsetItIsToldToStopAt() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC).build())) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            List<byte[]> stored = fill(store, 30, 5);
            long until = ByteBuffer.wrap(stored.get(20)).getLong(0);
            OpaqueSlice slice = store.sliceOpaque("b", 0, 0, Long.MAX_VALUE, until);
            assertThat(slice.nextOffset()).isEqualTo(until);
            ByteArrayOutputStream sent = new ByteArrayOutputStream();
            slice.transferTo(Channels.newChannel(sent));
            assertThat(sent.toByteArray()).isEqualTo(concat(stored.subList(0, 20)));
            assertThat(store.sliceOpaque("b", 0, until, Long.MAX_VALUE, until).batches()).isZero();
            assertThat(store.sliceOpaque("b", 0, 0, Long.MAX_VALUE).nextOffset()).isEqualTo(store.maxOffset("b", 0));
        }
    }

    @Test
    void aSliceOfBatchesInOneSegmentGoesInOneTransfer() throws Exception {
        AtomicInteger transfers = new AtomicInteger();
        HookedFileIO io = new HookedFileIO().hook((op, file) -> {
            if (op == HookedFileIO.Op.TRANSFER) {
                transfers.incrementAndGet();
            }
        });
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.SYNC).fileIO(io).build())) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            Random random = new Random(5);
            List<byte[]> stored = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                byte[] batch = batch(random, 5, 100);
                long first = store.appendOpaque("b", 0, MemorySegment.ofArray(batch), 5).join().firstQueueOffset();
                stored.add(stamped(batch, first));
            }
            assertThat(segments()).hasSize(1);
            OpaqueSlice slice = store.sliceOpaque("b", 0, 0, 1 << 20);
            assertThat(slice.batches()).isEqualTo(40);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            transfers.set(0);
            slice.transferTo(Channels.newChannel(sink));
            assertThat(transfers).hasValue(1);
            assertThat(sink.toByteArray()).isEqualTo(concat(stored));
        }
    }

    @Test
    void messagesAndMalformedBatchesAreRefusedAndNothingIsStored() {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.SYNC).build())) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            Random random = new Random(3);
            byte[] good = batch(random, 3, 50);
            assertThatThrownBy(() -> store.append("b", 0, Message.of(new byte[10])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("layout BATCHES");
            byte[] badCrc = good.clone();
            badCrc[good.length - 1] ^= 1;
            byte[] badLength = good.clone();
            ByteBuffer.wrap(badLength).putInt(8, good.length);
            byte[] badMagic = good.clone();
            badMagic[16] = 1;
            for (byte[] bad : List.of(badCrc, badLength, badMagic, new byte[40])) {
                assertThatThrownBy(() -> store.appendOpaque("b", 0, MemorySegment.ofArray(bad), 3))
                        .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("Kafka record batches");
            }
            assertThatThrownBy(() -> store.appendOpaque("b", 0, MemorySegment.ofArray(good), 2))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lastOffsetDelta");
            assertThat(store.maxOffset("b", 0)).isZero();
            assertThat(store.appendOpaque("b", 0, MemorySegment.ofArray(good), 3).join().firstQueueOffset()).isZero();
            assertThat(store.maxOffset("b", 0)).isEqualTo(3);
        }
    }

    private Checkpoint checkpoint() throws IOException {
        return Checkpoint.read(FileIO.DEFAULT, dir);
    }

    /** As if the last checkpoint had been written when the log ended at {@code position}. */
    private void setDurable(long position) throws IOException {
        Checkpoint current = checkpoint();
        Map<String, Checkpoint.Log> logs = new TreeMap<>(current.logs());
        logs.put("b/0", new Checkpoint.Log(position, logs.get("b/0").start()));
        new Checkpoint(logs, current.writtenMillis()).write(FileIO.DEFAULT, dir);
    }

    private void overwrite(long logPosition, byte[] bytes) throws IOException {
        Path found = null;
        for (Path segment : segments()) {
            if (Long.parseLong(segment.getFileName().toString()) <= logPosition) {
                found = segment;
            }
        }
        try (RandomAccessFile file = new RandomAccessFile(found.toFile(), "rw")) {
            file.seek(logPosition - Long.parseLong(found.getFileName().toString()));
            file.write(bytes);
        }
    }

    /** Creates "b" (BATCHES, one queue), appends {@code appends} batches, closes the store cleanly. */
    private List<AppendResult> closedWithBatches(StoreConfig config, long seed, int appends) {
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            return appendBatches(store, new Random(seed), appends);
        }
    }

    /** Appends batches and returns each one's append result. */
    private static List<AppendResult> appendBatches(Store store, Random random, int appends) {
        List<AppendResult> results = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            byte[] batch = batch(random, 4, 200);
            results.add(store.appendOpaque("b", 0, MemorySegment.ofArray(batch), 4).join());
        }
        return results;
    }

    @Test
    void aTornBatchPastTheDurablePositionEndsTheLogAndNothingPastItComesBack() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        Random random = new Random(9);
        List<AppendResult> first;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            first = appendBatches(store, random, 50);
        }
        // A crash whose last checkpoint covered 30 batches; batch 40 was torn, 41-49 reached the disk.
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        setDurable(first.get(30).logPosition());
        overwrite(first.get(40).logPosition() + 100, new byte[] {1, 2, 3});
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("b", 0)).isEqualTo(first.get(40).firstQueueOffset());
            assertThat(store.recoveryReports().get("b/0").cutAt()).isEqualTo(first.get(40).logPosition());
            // Batches as long as the lost ones, appended where they were: the old ones past them must not return.
            List<AppendResult> again = appendBatches(store, random, 3);
            assertThat(again.getFirst().logPosition()).isEqualTo(first.get(40).logPosition());
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        setDurable(first.get(30).logPosition());
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("b", 0)).isEqualTo(first.get(40).firstQueueOffset() + 12);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void aCrashKeepsTheStoreTimesOfBatchesBelowTheDurablePosition() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        long producerTime = 946_684_800_000L; // a replay of old records: their own times are years back
        List<AppendResult> appended = new ArrayList<>();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            for (int i = 0; i < 50; i++) {
                byte[] batch = KafkaBatch.of(producerTime + i, List.of(new byte[100], new byte[100]));
                appended.add(store.appendOpaque("b", 0, MemorySegment.ofArray(batch), 2).join());
            }
        }
        assertThat(segments()).hasSize(1);
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        setDurable(appended.get(30).logPosition());
        now.addAndGet(3_600_000);
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("b", 0)).isEqualTo(100);
            for (int i = 0; i < 50; i++) {
                try (ReadResult read = store.read("b", 0, 2L * i, 1, 1)) {
                    long expected = i < 30 ? appended.get(i).storeTimestamp()
                            : Math.max(appended.get(29).storeTimestamp(), producerTime + i);
                    assertThat(read.messages().getFirst().storeTimestamp()).as("batch %d", i).isEqualTo(expected);
                }
            }
        }
    }

    @Test
    void withoutACheckpointABatchInsideATornBatchsValueIsNotTakenForALaterOne() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        List<AppendResult> appended;
        // A mirrored batch as a record's value: itself a valid batch, at offset 0.
        byte[] nested = KafkaBatch.of(1_700_000_000_000L, List.of(new byte[30], new byte[30]));
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            appended = appendBatches(store, new Random(6), 5);
            byte[] carrier = KafkaBatch.of(1_700_000_000_000L, List.of(nested));
            appended.add(store.appendOpaque("b", 0, MemorySegment.ofArray(carrier), 1).join());
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        Files.delete(dir.resolve("checkpoint"));
        overwrite(appended.get(5).logPosition() + 30, new byte[] {9}); // the carrier is torn; its value is intact
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("b", 0)).isEqualTo(appended.get(5).firstQueueOffset());
        }
    }

    /** Overwrites the queue-index entry of {@code offset} with bytes no entry has (its check word fails). */
    private void damageIndexEntry(long offset) throws IOException {
        Path file = logRoot().resolve("index").resolve("b").resolve("0").resolve("00000000000000000000");
        try (RandomAccessFile index = new RandomAccessFile(file.toFile(), "rw")) {
            index.seek(offset * 32);
            byte[] junk = new byte[32];
            java.util.Arrays.fill(junk, (byte) 0x55);
            index.write(junk);
        }
    }

    private void assertEveryBatchReads(StoreConfig config, List<AppendResult> appended) {
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("b", 0)).isEqualTo(appended.getLast().nextQueueOffset());
            for (AppendResult batch : appended) {
                for (long offset = batch.firstQueueOffset(); offset < batch.nextQueueOffset(); offset++) {
                    try (ReadResult read = store.read("b", 0, offset, 1, 1)) {
                        assertThat(read.messages().getFirst().logPosition()).isEqualTo(batch.logPosition());
                    }
                }
            }
        }
    }

    @Test
    void aCleanCloseWhoseLastEntryIsDamagedIndexesItsBatchesAgain() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        List<AppendResult> appended = closedWithBatches(config, 12, 10);
        damageIndexEntry(appended.getLast().nextQueueOffset() - 1);
        assertEveryBatchReads(config, appended);
        assertEveryBatchReads(config, appended);
    }

    @Test
    void aCrashWithADamagedEntryBelowTheDurablePositionRebuildsTheIndex() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        List<AppendResult> appended = closedWithBatches(config, 13, 10);
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE)); // the checkpoint covers every batch
        damageIndexEntry(appended.get(4).firstQueueOffset() + 1);
        assertEveryBatchReads(config, appended);
    }

    @Test
    void aDamagedBatchBelowTheDurablePositionIsCorruption() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC).build();
        List<AppendResult> appended = closedWithBatches(config, 4, 20);
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        overwrite(appended.get(5).logPosition() + 80, new byte[] {7});
        assertThat(StoreVerifier.verify(dir).faults()).first().asString()
                .contains("invalid batch at log position " + appended.get(5).logPosition()).contains("corruption");
        assertThatThrownBy(() -> Store.open(dir, config)).isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining("below the durable position");
    }

    @Test
    void aLostCheckpointRebuildsTheIndexFromTheBatches() throws Exception {
        StoreConfig config = config(WritePath.MMAP, FlushMode.SYNC).build();
        List<byte[]> stored;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            stored = fill(store, 200, 21);
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        Files.delete(dir.resolve("checkpoint"));
        try (Store store = Store.open(dir, config)) {
            assertReadsBack(store, stored);
            // Rebuilt entries take the batches' own timestamps: the first batch's is at most 1 s past this.
            assertThat(store.offsetForTimestamp("b", 0, 1_700_000_000_000L)).isZero();
        }
    }

    @Test
    void retentionAgesBatchSegmentsByTheirIndexedTimes() throws Exception {
        StoreConfig config = config(WritePath.CHANNEL, FlushMode.SYNC)
                .retention(RetentionPolicy.defaults().withRetentionHours(24).withCheckIntervalMillis(3_600_000))
                .build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("b", TopicLayout.BATCHES, 1);
            appendBatches(store, new Random(8), 2000);
            int before = segments().size();
            assertThat(before).isGreaterThan(3);
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
            now.addAndGet(25 * 3_600_000L);
            appendBatches(store, new Random(9), 1);
            RetentionReport report = store.enforceRetention();
            assertThat(report.reason()).isEqualTo("age");
            assertThat(report.segmentsDeleted()).isGreaterThanOrEqualTo(before - 1);
            assertThat(store.minOffset("b", 0)).isPositive();
        }
    }
}
