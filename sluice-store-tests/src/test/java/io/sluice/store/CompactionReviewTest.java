package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Defects found reviewing compaction ({@link Store#compact}). Each test fails on the code as reviewed; its Javadoc
 * says what it shows.
 */
@ExtendWith(NoLeaks.class)
class CompactionReviewTest {

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    private StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).clock(clock).build();
    }

    /** One stored batch: where the store put it and its bytes as stored. */
    record Stored(AppendResult at, byte[] bytes) {
        long first() {
            return at.firstQueueOffset();
        }
    }

    /** Appends batches of 1 to 5 records to queue 0 of "c" and returns them as stored, in order. */
    private static List<Stored> fill(Store store, int appends, long seed) {
        Random random = new Random(seed);
        List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
        List<byte[]> batches = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            int count = 1 + random.nextInt(5);
            List<byte[]> values = new ArrayList<>();
            for (int k = 0; k < count; k++) {
                byte[] value = new byte[20 + random.nextInt(400)];
                random.nextBytes(value);
                values.add(value);
            }
            byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, values);
            batches.add(batch);
            futures.add(store.appendOpaque("c", 0, MemorySegment.ofArray(batch), count));
        }
        List<Stored> stored = new ArrayList<>();
        for (int i = 0; i < appends; i++) {
            AppendResult result = futures.get(i).join();
            byte[] copy = batches.get(i).clone();
            ByteBuffer.wrap(copy).putLong(0, result.firstQueueOffset());
            stored.add(new Stored(result, copy));
        }
        return stored;
    }

    /** The same batch with every record's value one byte: its offsets, fewer bytes. */
    private static byte[] shrunk(MemorySegment batch) {
        int count = batch.get(INT, 23) + 1;
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            values.add(new byte[] {(byte) i});
        }
        byte[] copy = KafkaBatch.of(batch.get(LONG, 27), values);
        ByteBuffer.wrap(copy).putLong(0, batch.get(LONG, 0));
        return copy;
    }

    /** Drops every batch whose first offset is a multiple of 3, shrinks those one past, keeps the rest. */
    private static final BatchCleaner THIRDS = batch -> {
        long first = batch.get(LONG, 0);
        return switch ((int) (first % 3)) {
            case 0 -> null;
            case 1 -> MemorySegment.ofArray(shrunk(batch));
            default -> batch;
        };
    };

    private static List<byte[]> split(byte[] bytes) {
        List<byte[]> batches = new ArrayList<>();
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.remaining() >= 12) {
            int size = buffer.getInt(buffer.position() + 8) + 12;
            if (size < 12 || size > buffer.remaining()) {
                byte[] rest = new byte[buffer.remaining()];
                buffer.get(rest);
                batches.add(rest);
                break;
            }
            byte[] batch = new byte[size];
            buffer.get(batch);
            batches.add(batch);
        }
        return batches;
    }

    /**
     * Compaction.Rewrite.write assigns the offset after the segment's last batch to its parameter {@code endOffset},
     * which shadows the field of that name: the field stays -1, so every report says endOffset -1 ("no segment was
     * read"). The log cleaner records a partition's progress only when the report's endOffset is 0 or more, so it
     * never records any: each round maps the whole log again, min.cleanable.dirty.ratio is never applied (every
     * round finds a dirty ratio of 1), a tombstone's horizon never makes a partition due, and a log with more keys
     * than the offset map holds is cleaned up to the same offset for ever (the rest is never compacted).
     */
    @Test
    void theReportSaysWhereTheSegmentsReadEnd() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            fill(store, 600, 3);
            store.sync();
            CompactionReport report = store.compact("c", 0, Long.MAX_VALUE, batch -> batch);
            assertThat(report.segmentsRead()).isPositive();
            assertThat(report.endOffset()).as("the offset after the last segment read").isPositive()
                    .isLessThanOrEqualTo(store.maxOffset("c", 0));
        }
    }

    /**
     * A reader that holds a write-buffer page of a segment (an open ReadResult of the tail) across the swap of that
     * segment: when it lets go, the page's last release hands its memory to the read cache (WriteBufferPool.Page.free
     * calls ReadCache.adopt), which puts in the bytes of the segment as it was before compaction. ReadCache.adopt does
     * not look at the invalidation count that ReadCache.invalidate keeps for loads, so every later read of those
     * positions gets the old bytes at the new positions: the reads below fail as "the store is damaged" (and a
     * fetch's transfer, which is not checked against the index, would send the old bytes).
     */
    @Test
    void aWriteBufferPageLetGoAfterASwapDoesNotBringTheOldBytesBack() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.WRITE_BUFFER, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = new ArrayList<>(fill(store, 1, 1));
            ReadResult held = store.read("c", 0, 0, 1, 1 << 20); // served from the write-buffer page, pinned
            try {
                assertThat(held.messages()).hasSize(1);
                stored.addAll(fill(store, 600, 2));
                store.sync();
                CompactionReport report = store.compact("c", 0, Long.MAX_VALUE,
                        batch -> batch.get(LONG, 0) == 0 ? null : batch);
                assertThat(report.segmentsRewritten()).isPositive();
            } finally {
                held.close();
            }
            for (Stored batch : stored.subList(1, 40)) {
                try (ReadResult read = store.read("c", 0, batch.first(), 1, 1 << 20)) {
                    assertThat(read.messages()).singleElement().satisfies(message ->
                            assertThat(message.bodyBytes()).as("batch at offset %d", batch.first())
                                    .isEqualTo(batch.bytes()));
                }
            }
        }
    }

    /**
     * LogOpaqueSlice.transferTo checks that the segment it chose is still the log's ({@code CommitLog.transfer}), then
     * LogViews.transfer looks the segment up again and sends with {@code StoreFile.transferTo}, whose channel
     * NativeFileIO opens by path the first time (and again after an interrupt closed it). A swap between the check
     * and that open makes the transfer read the rewritten file at positions chosen in the old one. The hook pauses the
     * transfer at exactly that point (no lock is held there) while another thread compacts.
     */
    @Test
    void aTransferPausedAfterItsCheckStillSendsWhatItChose() throws Exception {
        HookedFileIO io = new HookedFileIO();
        AtomicReference<Store> opened = new AtomicReference<>();
        AtomicBoolean armed = new AtomicBoolean();
        AtomicReference<Throwable> compactionFailure = new AtomicReference<>();
        io.hook((op, path) -> {
            if (op == HookedFileIO.Op.TRANSFER && armed.compareAndSet(true, false)) {
                Thread compactor = Thread.ofPlatform().start(() -> {
                    try {
                        opened.get().compact("c", 0, Long.MAX_VALUE, THIRDS);
                    } catch (Throwable t) {
                        compactionFailure.set(t);
                    }
                });
                try {
                    compactor.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        });
        try (Store store = Store.open(dir, TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC).clock(clock)
                .fileIO(io).build())) {
            opened.set(store);
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 600, 3);
            store.sync();
            OpaqueSlice chosen = store.sliceOpaque("c", 0, 0, 1 << 20);
            armed.set(true);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            chosen.transferTo(Channels.newChannel(sink));
            assertThat(compactionFailure.get()).isNull();
            assertThat(armed.get()).as("the swap ran during the transfer").isFalse();
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            for (Stored batch : stored.subList(0, chosen.batches())) {
                expected.write(batch.bytes());
            }
            byte[] sent = sink.toByteArray();
            List<byte[]> batches = split(sent);
            assertThat(Arrays.mismatch(expected.toByteArray(), sent))
                    .as("the first byte sent that is not what was chosen (-1 for none); the first batch sent holds %d"
                            + " records and covers offsets from %d", ByteBuffer.wrap(batches.getFirst()).getInt(57),
                            ByteBuffer.wrap(batches.getFirst()).getLong(0))
                    .isEqualTo(-1);
        }
    }

    /**
     * Retention takes segments out without the append lock (CommitLog.retireOldest), and a retired segment's last
     * release deletes its file by path. Compaction checks under the append lock that retention has not taken the
     * segment, then renames its copy over the segment's path, forces the directory and opens the copy. If retention
     * retires the old segment in between (compact,delete: both start from the oldest segment), the old segment's
     * release deletes the path, which now names the copy: the open fails, Compaction wraps it as SwapFailedException
     * and LogStore.compact turns the whole log read-only, refusing appends until the store is opened again. The hook
     * pauses the swap right after the rename (at its directory force) while a retention pass runs.
     */
    @Test
    void retentionTakingTheSegmentBeingSwappedLeavesTheLogWritable() throws Exception {
        HookedFileIO io = new HookedFileIO();
        AtomicReference<Store> opened = new AtomicReference<>();
        AtomicBoolean renamed = new AtomicBoolean();
        AtomicBoolean triggered = new AtomicBoolean();
        AtomicReference<Thread> retention = new AtomicReference<>();
        AtomicReference<Throwable> retentionFailure = new AtomicReference<>();
        io.hook((op, path) -> {
            if (op == HookedFileIO.Op.RENAME && HookedFileIO.isSegment(path)) {
                renamed.set(true);
            } else if (op == HookedFileIO.Op.SYNC_DIRECTORY && renamed.get() && triggered.compareAndSet(false, true)) {
                retention.set(Thread.ofPlatform().start(() -> {
                    try {
                        opened.get().enforceRetention();
                    } catch (Throwable t) {
                        retentionFailure.set(t);
                    }
                }));
                Path first = path.resolve(String.format("%020d", 0));
                long deadline = System.nanoTime() + 10_000_000_000L;
                while (Files.exists(first) && System.nanoTime() < deadline) {
                    try {
                        Thread.sleep(5);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        return;
                    }
                }
            }
        });
        // At most 300,000 bytes of log (segments of 64, 128 and 256 KiB): the first segments go; no pass of its own.
        StoreConfig config = TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC).clock(clock).fileIO(io)
                .retention(new RetentionPolicy(72L * 3_600_000, 300_000, 0.99, 0.99, 1.0, 3_600_000, false)).build();
        try (Store store = Store.open(dir, config)) {
            opened.set(store);
            store.createTopic("c", TopicLayout.BATCHES, 1);
            fill(store, 600, 3);
            store.sync();
            Throwable compaction = null;
            try {
                store.compact("c", 0, Long.MAX_VALUE, THIRDS);
            } catch (RuntimeException e) {
                compaction = e;
            }
            if (retention.get() != null) {
                retention.get().join(20_000);
            }
            assertThat(triggered.get()).as("retention ran during the swap").isTrue();
            assertThat(retentionFailure.get()).isNull();
            byte[] batch = KafkaBatch.of(1_800_000_000_000L, List.of(new byte[] {1}));
            String thrown = String.valueOf(compaction);
            assertThat(store.appendOpaque("c", 0, MemorySegment.ofArray(batch), 1))
                    .as("an append after the compaction, which threw %s", thrown)
                    .succeedsWithin(java.time.Duration.ofSeconds(10));
        }
    }

    /**
     * Store.transferTo ("a queue's records, as stored, to a channel") walks the index in RecordTransfer, which neither
     * steps over gaps, as every other read does, nor takes the layout lock (so a swap between reading an entry and
     * sending its bytes sends the rewritten file at the old position). A BATCHES queue's gap reaches the channel.
     */
    @Test
    void aTransferOfABatchQueueSendsNoGap() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            byte[] before = KafkaBatch.of(1_700_000_000_000L, List.of(new byte[] {1}));
            byte[] after = KafkaBatch.of(1_700_000_000_001L, List.of(new byte[] {2}));
            store.appendOpaque("c", 0, MemorySegment.ofArray(before), 1).join();
            store.appendGap("c", 0, 10, 1_700_000_000_000L, Durability.ACKNOWLEDGED).join();
            store.appendOpaque("c", 0, MemorySegment.ofArray(after), 1).join();
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            store.transferTo("c", 0, 0, 1 << 20, Channels.newChannel(sink));
            assertThat(split(sink.toByteArray())).as("batches sent").extracting(batch -> batch.length)
                    .containsExactly(before.length, after.length);
        }
    }

    /**
     * A log whose last append filled its active segment to the byte: the segment stays active (the roll comes with the
     * next append) while its end equals the write position, so once forced it passes Compaction.run's test ("end <=
     * flushed and <= written") and is rewritten. The swap renames the copy over the active segment's file, and only
     * then does CommitLog.replaceSegment refuse the active segment, with an IllegalArgumentException that nothing
     * catches: the call fails, the file on disk is no longer the one the log has open, and the .reindex marker stays
     * (the next open rebuilds every index). The active segment must simply not be compacted.
     */
    @Test
    void anActiveSegmentFilledToTheByteIsNotCompacted() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            long segmentBytes = StoreConfig.MIN_SEGMENT_SIZE_BYTES; // a log of its own starts with one this size
            long position = 0;
            for (int i = 0; position < segmentBytes; i++) {
                long remaining = segmentBytes - position;
                int value = remaining >= 2_000 ? 1_000 : (int) remaining - 70;
                byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, List.of(new byte[value]));
                assertThat((long) batch.length).as("a batch that fits").isLessThanOrEqualTo(remaining);
                AppendResult appended = store.appendOpaque("c", 0, MemorySegment.ofArray(batch), 1).join();
                position = appended.logPosition() + appended.recordBytes();
            }
            assertThat(position).as("the first segment filled to the byte").isEqualTo(segmentBytes);
            store.sync();
            CompactionReport report = store.compact("c", 0, Long.MAX_VALUE,
                    batch -> batch.get(LONG, 0) == 0 ? null : batch);
            assertThat(report.segmentsRewritten()).as("the active segment left alone").isZero();
        }
        try (Stream<Path> files = Files.list(dir.resolve("logs/c/0/log"))) {
            assertThat(files.map(file -> file.getFileName().toString())).noneMatch(name -> name.contains("."));
        }
    }

    /**
     * The state a power cut in the middle of a swap leaves (a segment renamed over, its index entries not yet
     * rewritten, the .reindex marker present) is one the next open repairs (row 15: the indexes are rebuilt). The
     * verifier knows nothing of the marker (internal.verify never looks for it): it checks the old entries against
     * the new segment and reports corruption, which would send an operator to sluice recover --truncate for a store
     * that is fine.
     */
    @Test
    void theVerifierKnowsAnInterruptedSwapIsRepairedAtOpen() throws Exception {
        Path before = Files.createTempDirectory("compaction-before");
        try {
            try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
                store.createTopic("c", TopicLayout.BATCHES, 1);
                fill(store, 600, 9);
            }
            copyTree(dir, before);
            try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
                assertThat(store.compact("c", 0, Long.MAX_VALUE, THIRDS).segmentsRewritten()).isPositive();
            }
            Path log = dir.resolve("logs/c/0/log");
            Path oldLog = before.resolve("logs/c/0/log");
            try (Stream<Path> files = Files.list(log)) {
                Path first = files.sorted().findFirst().orElseThrow();
                Files.copy(first, oldLog.resolve(first.getFileName()), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                Files.createFile(oldLog.resolve(first.getFileName() + ".reindex"));
            }
            Files.deleteIfExists(before.resolve(io.sluice.store.internal.recovery.StoreDirectory.CLEAN_SHUTDOWN_FILE));
            assertThat(StoreVerifier.verify(before).faults()).as("faults of a store the next open repairs").isEmpty();
        } finally {
            try (Stream<Path> files = Files.walk(before)) {
                for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                    Files.delete(file);
                }
            }
        }
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path source : files.toList()) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(source, target, java.nio.file.StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }
}
