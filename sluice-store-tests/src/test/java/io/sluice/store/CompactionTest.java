package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.StoreDirectory;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Compaction of a BATCHES queue ({@link Store#compact}): sealed segments rewritten with what a cleaner keeps, offsets
 * kept, dropped batches read as gaps that reads step over, across reopening, a crash, and an interrupted swap.
 */
@ExtendWith(NoLeaks.class)
class CompactionTest {

    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    private StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).clock(clock).build();
    }

    /** One stored batch: its first offset and bytes as stored. */
    record Stored(long first, byte[] bytes) {
        int count() {
            return ByteBuffer.wrap(bytes).getInt(23) + 1;
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
            long first = futures.get(i).join().firstQueueOffset();
            byte[] copy = batches.get(i).clone();
            ByteBuffer.wrap(copy).putLong(0, first);
            stored.add(new Stored(first, copy));
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

    /** Sends every batch of queue 0 from {@code from} and splits what was sent into batches. */
    private static List<byte[]> sliceAll(Store store, long from) throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        long offset = from;
        while (offset < store.maxOffset("c", 0)) {
            OpaqueSlice slice = store.sliceOpaque("c", 0, offset, 1 << 20);
            slice.transferTo(Channels.newChannel(sink));
            assertThat(slice.nextOffset()).isGreaterThan(offset);
            offset = slice.nextOffset();
        }
        return split(sink.toByteArray());
    }

    private static List<byte[]> split(byte[] bytes) {
        List<byte[]> batches = new ArrayList<>();
        ByteBuffer buffer = ByteBuffer.wrap(bytes);
        while (buffer.hasRemaining()) {
            int size = buffer.getInt(buffer.position() + 8) + 12;
            byte[] batch = new byte[size];
            buffer.get(batch);
            batches.add(batch);
        }
        return batches;
    }

    /**
     * Checks what reads return after THIRDS compacted a prefix of the queue: every batch of the prefix as THIRDS
     * decided, every batch after it as stored, no gap ever sent, and a read from any offset starting at the batch
     * holding it or, in a gap, at the next batch kept.
     *
     * @return how many batches the prefix holds
     */
    private static int checkCompacted(Store store, List<Stored> stored) throws IOException {
        List<byte[]> read = sliceAll(store, 0);
        int at = 0;
        int prefix = -1;
        List<Stored> kept = new ArrayList<>();
        for (int i = 0; i < stored.size(); i++) {
            Stored batch = stored.get(i);
            byte[] next = at < read.size() ? read.get(at) : null;
            long nextFirst = next == null ? -1 : ByteBuffer.wrap(next).getLong(0);
            boolean same = next != null && java.util.Arrays.equals(next, batch.bytes());
            if (prefix < 0 && batch.first() % 3 != 2 && same) {
                prefix = i; // the first batch THIRDS would have changed, unchanged: compaction stopped before it
            }
            if (prefix < 0) {
                switch ((int) (batch.first() % 3)) {
                    case 0 -> assertThat(nextFirst).as("batch at %d dropped", batch.first())
                            .isNotEqualTo(batch.first());
                    case 1 -> assertThat(next).as("batch at %d shrunk", batch.first())
                            .isEqualTo(shrunk(MemorySegment.ofArray(batch.bytes())));
                    default -> assertThat(next).as("batch at %d kept", batch.first()).isEqualTo(batch.bytes());
                }
            } else {
                assertThat(next).as("batch at %d, past the compacted prefix", batch.first()).isEqualTo(batch.bytes());
            }
            if (nextFirst == batch.first()) {
                kept.add(batch);
                at++;
            }
        }
        assertThat(at).as("batches read").isEqualTo(read.size());
        // From every offset: the batch holding it, or the next one kept.
        int k = 0;
        for (long offset = 0; offset < store.maxOffset("c", 0); offset++) {
            while (kept.get(k).first() + kept.get(k).count() <= offset) {
                k++;
            }
            OpaqueSlice slice = store.sliceOpaque("c", 0, offset, 1);
            ByteArrayOutputStream one = new ByteArrayOutputStream();
            slice.transferTo(Channels.newChannel(one));
            assertThat(ByteBuffer.wrap(one.toByteArray()).getLong(0)).as("first batch read from offset %d", offset)
                    .isEqualTo(kept.get(k).first());
            long expected = kept.get(k).first();
            try (ReadResult result = store.read("c", 0, offset, 1, 1)) {
                assertThat(result.messages()).singleElement()
                        .satisfies(m -> assertThat(m.queueOffset()).isEqualTo(expected));
            }
        }
        return prefix < 0 ? stored.size() : prefix;
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void sealedSegmentsAreRewrittenWithWhatTheCleanerKeeps(WritePath path, FlushMode mode) throws Exception {
        List<Stored> stored;
        int prefix;
        CompactionReport report;
        try (Store store = Store.open(dir, config(path, mode))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            stored = fill(store, 1500, 7);
            store.sync();
            long diskBefore = diskBytes(dir);
            report = store.compact("c", 0, Long.MAX_VALUE, THIRDS);
            assertThat(report.segmentsRewritten()).isGreaterThan(1);
            assertThat(report.batchesDropped()).isPositive();
            assertThat(report.batchesCleaned()).isPositive();
            assertThat(report.bytesAfter()).isLessThan(report.bytesBefore());
            assertThat(diskBytes(dir)).as("blocks on disk").isLessThan(diskBefore);
            prefix = checkCompacted(store, stored);
            assertThat(prefix).isGreaterThan(stored.size() / 2);
            // A second run finds nothing more to drop or clean in what it rewrote.
            CompactionReport again = store.compact("c", 0, Long.MAX_VALUE, batch -> batch);
            assertThat(again.segmentsRewritten()).isZero();
            // Appends go on after it.
            stored = new ArrayList<>(stored);
            long next = store.maxOffset("c", 0);
            byte[] later = KafkaBatch.of(1_800_000_000_000L, List.of(new byte[] {1}));
            assertThat(store.appendOpaque("c", 0, MemorySegment.ofArray(later), 1).join().firstQueueOffset())
                    .isEqualTo(next);
            ByteBuffer.wrap(later).putLong(0, next);
            stored.add(new Stored(next, later));
            store.sync();
            assertThat(checkCompacted(store, stored)).isEqualTo(prefix);
        }
        try (Store store = Store.open(dir, config(path, mode))) {
            assertThat(store.openedClean()).isTrue();
            assertThat(checkCompacted(store, stored)).isEqualTo(prefix);
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config(path, mode))) {
            assertThat(store.openedClean()).isFalse();
            assertThat(checkCompacted(store, stored)).isEqualTo(prefix);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void aSliceChosenBeforeASwapSendsWhatItChose() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 600, 3);
            store.sync();
            OpaqueSlice chosen = store.sliceOpaque("c", 0, 0, 1 << 20);
            store.compact("c", 0, Long.MAX_VALUE, THIRDS);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            chosen.transferTo(Channels.newChannel(sink));
            List<byte[]> sent = split(sink.toByteArray());
            assertThat(sent).hasSize(chosen.batches());
            for (int i = 0; i < sent.size(); i++) {
                assertThat(sent.get(i)).isEqualTo(stored.get(i).bytes());
            }
        }
    }

    /**
     * A fetch that chooses its batches after a copy was renamed over their segment, before the copy is swapped in (its
     * directory being forced), sends the batches its index entries point at: the old file's. Before a9f7c4c it sent the
     * copy's bytes at the old positions (CompactionKillTest's consumer read a corrupt record): the segment's file, never
     * sent from before, opened its channel for transfers by its name, which named the copy by then. Unlike
     * CompactionReviewTest's paused transfer, the batches here are chosen inside the window.
     */
    @Test
    void aSliceChosenBetweenTheRenameAndTheSwapSendsTheOldFilesBatches() throws Exception {
        AtomicReference<Store> opened = new AtomicReference<>();
        AtomicBoolean renamed = new AtomicBoolean();
        AtomicReference<List<byte[]>> sent = new AtomicReference<>();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.RENAME && HookedFileIO.isSegment(path)) {
                renamed.set(true);
            } else if (op == HookedFileIO.Op.SYNC_DIRECTORY && renamed.getAndSet(false) && sent.get() == null) {
                sent.set(sliceAll(opened.get(), 0)); // the directory force after the first rename
            }
        });
        try (Store store = Store.open(dir, TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC).clock(clock)
                .fileIO(io).build())) {
            opened.set(store);
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 600, 23);
            store.sync();
            assertThat(store.compact("c", 0, Long.MAX_VALUE, THIRDS).segmentsRewritten()).isPositive();
            assertThat(sent.get()).as("batches sent while the first copy was renamed but not swapped in")
                    .hasSize(stored.size());
            for (int i = 0; i < stored.size(); i++) {
                assertThat(sent.get().get(i)).as("batch %d", i).isEqualTo(stored.get(i).bytes());
            }
            checkCompacted(store, stored);
        }
    }

    @Test
    void readsGoOnWhileSegmentsAreSwapped() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.WRITE_BUFFER, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            fill(store, 1500, 5);
            store.sync();
            AtomicBoolean done = new AtomicBoolean();
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicLong rounds = new AtomicLong();
            Thread reader = Thread.ofPlatform().start(() -> {
                try {
                    while (!done.get()) {
                        long previous = -1;
                        for (byte[] batch : sliceAll(store, 0)) {
                            long first = ByteBuffer.wrap(batch).getLong(0);
                            assertThat(first).isGreaterThan(previous);
                            assertThat(KafkaBatch.problem(MemorySegment.ofArray(batch))).isNull();
                            previous = first;
                        }
                        rounds.incrementAndGet();
                    }
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            for (int pass = 0; pass < 3; pass++) {
                int drop = pass;
                store.compact("c", 0, Long.MAX_VALUE,
                        batch -> batch.get(LONG, 0) % 4 == drop ? null : batch);
            }
            done.set(true);
            reader.join();
            assertThat(failure.get()).isNull();
            assertThat(rounds.get()).isPositive();
        }
    }

    @Test
    void anInterruptedSwapHasTheIndexesRebuiltFromTheLog() throws Exception {
        List<Stored> stored;
        Path before = Files.createTempDirectory("compaction-before");
        try {
            try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC))) {
                store.createTopic("c", TopicLayout.BATCHES, 1);
                stored = fill(store, 1500, 9);
            }
            copyTree(dir, before);
            try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC))) {
                assertThat(store.compact("c", 0, Long.MAX_VALUE, THIRDS).segmentsRewritten()).isGreaterThan(1);
            }
            // The state a crash right after the renames leaves: the rewritten segments in place, the old index
            // entries, and the markers (with a copy that was never swapped in).
            Path log = dir.resolve("logs/c/0/log");
            Path oldLog = before.resolve("logs/c/0/log");
            try (Stream<Path> files = Files.list(log)) {
                for (Path segment : files.toList()) {
                    Files.copy(segment, oldLog.resolve(segment.getFileName()), StandardCopyOption.REPLACE_EXISTING);
                    Files.createFile(oldLog.resolve(segment.getFileName() + ".reindex"));
                }
            }
            Files.write(oldLog.resolve("00000000000000000000.cleaned"), new byte[100]);
            Files.deleteIfExists(before.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
            assertThatThrownBy(() -> Store.openReadOnly(before, config(WritePath.MMAP, FlushMode.ASYNC)).close())
                    .isInstanceOf(StoreException.class).hasMessageContaining("compaction was interrupted");
            try (Store store = Store.open(before, config(WritePath.MMAP, FlushMode.ASYNC))) {
                checkCompacted(store, stored);
            }
            try (Stream<Path> files = Files.list(oldLog)) {
                assertThat(files.map(p -> p.getFileName().toString()))
                        .noneMatch(name -> name.endsWith(".reindex") || name.endsWith(".cleaned"));
            }
            assertThat(StoreVerifier.verify(before).faults()).isEmpty();
        } finally {
            deleteTree(before);
        }
    }

    @Test
    void aCleanerCopyThatChangesOffsetsIsRefusedAndNothingChanges() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 600, 13);
            store.sync();
            assertThatThrownBy(() -> store.compact("c", 0, Long.MAX_VALUE, batch -> {
                byte[] copy = batch.toArray(ValueLayout.JAVA_BYTE);
                ByteBuffer.wrap(copy).putLong(0, batch.get(LONG, 0) + 1);
                return MemorySegment.ofArray(copy);
            })).isInstanceOf(IllegalArgumentException.class).hasMessageContaining("baseOffset changed");
            List<byte[]> read = sliceAll(store, 0);
            assertThat(read).hasSize(stored.size());
            for (int i = 0; i < read.size(); i++) {
                assertThat(read.get(i)).isEqualTo(stored.get(i).bytes());
            }
            try (Stream<Path> files = Files.list(dir.resolve("logs/c/0/log"))) {
                assertThat(files.map(p -> p.getFileName().toString())).noneMatch(n -> n.contains("."));
            }
        }
    }

    @Test
    void onlyBatchesBelowTheEndOffsetAreTouched() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 1500, 17);
            store.sync();
            long end = stored.get(stored.size() / 3).first();
            store.compact("c", 0, end, batch -> {
                assertThat(batch.get(LONG, 0) + batch.get(INT, 23) + 1).isLessThanOrEqualTo(end);
                return null;
            });
            List<byte[]> read = sliceAll(store, 0);
            assertThat(ByteBuffer.wrap(read.getFirst()).getLong(0)).isPositive().isLessThan(end);
            assertThat(read.getLast()).isEqualTo(stored.getLast().bytes());
            assertThatThrownBy(() -> store.compact("nope", 0, 1, batch -> batch))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }

    @Test
    void aRetentionHoldHoldsCompactionBackToo() throws Exception {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, FlushMode.ASYNC))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            List<Stored> stored = fill(store, 1500, 19);
            store.sync();
            long held = stored.get(stored.size() / 4).first();
            store.holdRetention("raft-log", "c", 0, held);
            CompactionReport report = store.compact("c", 0, Long.MAX_VALUE, batch -> {
                assertThat(batch.get(LONG, 0) + batch.get(INT, 23) + 1).isLessThanOrEqualTo(held);
                return null;
            });
            assertThat(report.segmentsRewritten()).isPositive();
            assertThat(report.endOffset()).isLessThanOrEqualTo(held);
            List<byte[]> read = sliceAll(store, 0);
            int from = stored.size() - read.size();
            for (int i = 0; i < read.size(); i++) {
                assertThat(read.get(i)).isEqualTo(stored.get(from + i).bytes());
            }
            assertThat(stored.get(from).first()).isLessThanOrEqualTo(held);
        }
    }

    @ParameterizedTest
    @MethodSource("matrix")
    void aGapAppendedIsSteppedOverAndRecovered(WritePath path, FlushMode mode) throws Exception {
        byte[] before = KafkaBatch.of(1_700_000_000_000L, List.of(new byte[] {1}, new byte[] {2}));
        byte[] after = KafkaBatch.of(1_700_000_000_001L, List.of(new byte[] {3}));
        try (Store store = Store.open(dir, config(path, mode))) {
            store.createTopic("c", TopicLayout.BATCHES, 1);
            store.appendOpaque("c", 0, MemorySegment.ofArray(before), 2).join();
            assertThat(store.appendGap("c", 0, 1_000_000, 1_700_000_000_000L, Durability.ACKNOWLEDGED).join()
                    .firstQueueOffset()).isEqualTo(2);
            assertThat(store.appendOpaque("c", 0, MemorySegment.ofArray(after), 1).join().firstQueueOffset())
                    .isEqualTo(1_000_002);
            assertThatThrownBy(() -> store.appendOpaque("c", 0, MemorySegment.ofArray(gapBytes()), 5))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("no record");
        }
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config(path, mode))) {
            ByteBuffer.wrap(after).putLong(0, 1_000_002);
            for (long from : new long[] {2, 500_000, 1_000_001}) {
                List<byte[]> read = sliceAll(store, from);
                assertThat(read).hasSize(1);
                assertThat(read.getFirst()).isEqualTo(after);
            }
            assertThat(sliceAll(store, 0)).hasSize(2);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    private static byte[] gapBytes() {
        byte[] gap = new byte[KafkaBatch.HEADER_BYTES];
        io.sluice.store.internal.log.BatchFormat.encodeGap(MemorySegment.ofArray(gap), 0, 5, 0, -1);
        return gap;
    }

    /** @return the bytes of the blocks the files under {@code root} take (du) */
    private static long diskBytes(Path root) throws IOException, InterruptedException {
        Process du = new ProcessBuilder("du", "-s", "-B1", root.toString()).redirectErrorStream(true).start();
        String out = new String(du.getInputStream().readAllBytes()).trim();
        assertThat(du.waitFor()).as(out).isZero();
        return Long.parseLong(out.split("\\s+")[0]);
    }

    private static void copyTree(Path from, Path to) throws IOException {
        try (Stream<Path> files = Files.walk(from)) {
            for (Path source : files.toList()) {
                Path target = to.resolve(from.relativize(source).toString());
                if (Files.isDirectory(source)) {
                    Files.createDirectories(target);
                } else {
                    Files.copy(source, target, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.delete(file);
            }
        }
    }
}
