package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.CompactionReport;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.EnumSet;
import java.util.List;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A power cut at every file system operation of a compaction ({@link Store#compact}) of a BATCHES queue, under each
 * crash model: inside the write of a segment's copy, the marker's creation, the rename over the segment, the
 * rewritten index entries' force and the marker's deletion, and in the appends and the checkpoint that run while a
 * segment is read. After each cut the store opens with no compaction leftover; each sealed segment holds its batches
 * as appended or as the cleaner left them, never a mix, the compacted ones a prefix (all of them if the compaction
 * returned); every acknowledged batch is there, the appended ones a prefix of what was appended; a read from any
 * offset starts at the batch holding it or, in a gap, at the next batch kept; and the verifier finds no fault. Then a
 * compaction over what the cut left runs to its end, the power is cut again, and every sealed segment reads as
 * compacted.
 *
 * <p>The cleaner drops a whole segment (segment 2, which becomes one gap), and elsewhere drops a third of the batches,
 * rebuilds a third with one-byte values and the same offsets, and keeps the rest. The checkpoint's durable position
 * lies inside segment 1, so a cut after its swap reopens with a position of the old layout inside the new one.
 */
class CompactionPowerCutTest {

    private static final Path ROOT = Path.of("/sim/compaction");
    private static final Path LOG_DIRECTORY = ROOT.resolve("logs/c/0/log");
    private static final long SEGMENT_BYTES = StoreConfig.MIN_SEGMENT_SIZE_BYTES;
    /** Sealed segments the compaction rewrites; the log's last segment is the active one. */
    private static final int SEALED = 3;
    /** The segment the cleaner drops whole, and whose reading appends batches and runs a checkpoint. */
    private static final int DROPPED_SEGMENT = 2;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    enum Model {
        LOSE_ALL(CrashModel.LOSE_ALL), KEEP_ALL(CrashModel.KEEP_ALL), UNIFORM(CrashModel.UNIFORM),
        HOLE(CrashModel.HOLE), MOSTLY_KEPT(CrashModel.MOSTLY_KEPT);

        final CrashModel model;

        Model(CrashModel model) {
            this.model = model;
        }
    }

    /** Where a compaction was when the power went, from the names in its log directory then. */
    enum Phase {
        /** No copy and no marker: reading a segment, between segments, or past the last swap. */
        NONE,
        /** A copy without a marker: writing or forcing it, or creating the marker. */
        COPY,
        /** A copy and a marker: syncing the marker's name, or renaming the copy. */
        MARKER,
        /** A marker without a copy: the copy renamed, its index entries rewritten, forced, or the marker deleted. */
        SWAPPED,
        /** SWAPPED, with an index file forced last: inside the index force. */
        INDEX_FORCE
    }

    /** Each crash model with a write path, so that every model and every write path is cut. */
    static Stream<Arguments> cases() {
        WritePath[] paths = WritePath.values();
        Model[] models = Model.values();
        return Stream.iterate(0, i -> i + 1).limit(models.length)
                .map(i -> Arguments.of(models[i], paths[i % paths.length]));
    }

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, Run run) {
        return StoreConfig.builder().segmentSizeBytes(SEGMENT_BYTES).writePath(run.path).flushMode(FlushMode.SYNC)
                .maxMessageBytes(4096).writeBufferBytes(16 * 1024).queueIndexEntriesPerFile(run.indexEntriesPerFile)
                .keyIndexSlotsPerFile(16).keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000)
                .flushDirtyBytes(1 << 30).checkpointIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler)
                .clock(clock).build();
    }

    /** One batch of the queue: its offsets, its bytes as stored, and the segment it was appended to. */
    record Batch(long first, int count, byte[] stored, int segment) {
        long end() {
            return first + count;
        }
    }

    /** The store with its batches, open, before the compaction. */
    private final class Run {
        final SimFileSystem fs = new SimFileSystem();
        final ManualScheduler scheduler = new ManualScheduler(clock);
        final WritePath path;
        final int indexEntriesPerFile;
        final Store store;
        final List<Batch> batches = new ArrayList<>();
        /** Batches the cleaner appends while it reads segment 2, and their appends. */
        final List<byte[]> appended = new ArrayList<>();
        final List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        long droppedFrom = -1;
        long droppedTo = -1;
        long end;
        boolean sideEffects = true;
        int cleanerCalls;

        /**
         * @param path the write path
         * @param indexEntriesPerFile the queue index's files: small, so a swap rewrites and forces several
         */
        Run(WritePath path, int indexEntriesPerFile) {
            this.path = path;
            this.indexEntriesPerFile = indexEntriesPerFile;
            this.store = Store.open(ROOT, config(fs, scheduler, this));
            store.createTopic("c", TopicLayout.BATCHES, 1);
            SplittableRandom random = new SplittableRandom(7);
            List<CompletableFuture<AppendResult>> futures = new ArrayList<>();
            List<byte[]> bodies = new ArrayList<>();
            boolean synced = false;
            long position = 0;
            while (position < SEALED * SEGMENT_BYTES + 8192) {
                byte[] batch = batch(random, futures.size());
                bodies.add(batch);
                futures.add(store.appendOpaque("c", 0, MemorySegment.ofArray(batch), KafkaBatch.offsetCount(
                        MemorySegment.ofArray(batch))));
                if (futures.size() % 16 == 0) {
                    scheduler.runAll(random); // forced and acknowledged (SYNC): durable
                    position = futures.getLast().join().logPosition();
                    if (!synced && position > SEGMENT_BYTES + SEGMENT_BYTES / 2) {
                        store.sync(); // the checkpoint's durable position: inside segment 1
                        synced = true;
                    }
                }
            }
            for (int i = 0; i < futures.size(); i++) {
                AppendResult result = futures.get(i).join();
                byte[] stored = bodies.get(i).clone();
                ByteBuffer.wrap(stored).putLong(0, result.firstQueueOffset());
                Batch batch = new Batch(result.firstQueueOffset(), result.messageCount(), stored,
                        (int) (result.logPosition() / SEGMENT_BYTES));
                batches.add(batch);
                if (batch.segment == DROPPED_SEGMENT) {
                    droppedFrom = droppedFrom < 0 ? batch.first : droppedFrom;
                    droppedTo = batch.end();
                }
            }
            end = batches.getLast().end();
            for (int i = 0; i < 8; i++) {
                appended.add(batch(random, 10_000 + i));
            }
        }

        /**
         * The cleaner ({@link io.sluice.store.BatchCleaner}): every batch of segment 2 dropped; elsewhere, by first
         * offset, a third dropped, a third rebuilt smaller with the same offsets, a third kept; a batch appended during
         * the compaction kept. While it reads segment 2 (after segment 1's swap, while the checkpoint's position still
         * lies inside segment 1) it appends a batch every 10 batches, each forced and acknowledged before it goes on,
         * and once runs a checkpoint (which moves that position past the sealed segments).
         */
        MemorySegment clean(MemorySegment batch) {
            long first = batch.get(LONG, 0);
            if (sideEffects && first >= droppedFrom && first < end) {
                cleanerCalls++;
                if (cleanerCalls % 10 == 0 && appends.size() < appended.size()) {
                    appends.add(store.appendOpaque("c", 0, MemorySegment.ofArray(appended.get(appends.size())),
                            KafkaBatch.offsetCount(MemorySegment.ofArray(appended.get(appends.size())))));
                    scheduler.runAll(new SplittableRandom(first));
                } else if (cleanerCalls == 35) {
                    store.sync();
                }
            }
            byte[] cleaned = cleaned(first, batch.toArray(ValueLayout.JAVA_BYTE));
            return cleaned == null ? null : Arrays.equals(cleaned, batch.toArray(ValueLayout.JAVA_BYTE)) ? batch
                    : MemorySegment.ofArray(cleaned);
        }

        /** @return what the cleaner makes of the batch at {@code first}, as stored: null if dropped */
        byte[] cleaned(long first, byte[] stored) {
            if (first >= end) {
                return stored;
            }
            if (first >= droppedFrom && first < droppedTo) {
                return null;
            }
            return switch ((int) (first % 3)) {
                case 0 -> null;
                case 1 -> shrunk(stored);
                default -> stored;
            };
        }

        List<Batch> batchesOf(int segment) {
            return batches.stream().filter(batch -> batch.segment == segment).toList();
        }

        /** @return appends the cleaner made that were acknowledged */
        int acknowledged() {
            int acknowledged = 0;
            while (acknowledged < appends.size() && appends.get(acknowledged).isDone()
                    && !appends.get(acknowledged).isCompletedExceptionally()) {
                acknowledged++;
            }
            return acknowledged;
        }
    }

    /** A batch of 1 to 5 records with values of 20 to 420 random bytes. */
    private static byte[] batch(SplittableRandom random, int i) {
        int count = 1 + random.nextInt(5);
        List<byte[]> values = new ArrayList<>();
        for (int k = 0; k < count; k++) {
            byte[] value = new byte[20 + random.nextInt(400)];
            random.nextBytes(value);
            values.add(value);
        }
        return KafkaBatch.of(1_700_000_000_000L + i, values);
    }

    /** The same batch with every record's value one byte: the same offsets and timestamps, fewer bytes. */
    private static byte[] shrunk(byte[] stored) {
        MemorySegment batch = MemorySegment.ofArray(stored);
        int count = batch.get(INT, KafkaBatch.LAST_OFFSET_DELTA) + 1;
        List<byte[]> values = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            values.add(new byte[] {(byte) i});
        }
        byte[] copy = KafkaBatch.of(batch.get(LONG, KafkaBatch.BASE_TIMESTAMP), values);
        ByteBuffer.wrap(copy).putLong(0, batch.get(LONG, 0));
        return copy;
    }

    @ParameterizedTest
    @MethodSource("cases")
    void aPowerCutAtEveryStepOfACompactionLeavesEachSegmentAsItWasOrAsCleaned(Model model, WritePath path) {
        Set<Phase> struck = EnumSet.noneOf(Phase.class);
        for (int at = 1; ; at++) {
            Run run = new Run(path, 64);
            run.fs.armPowerCut(at, new SplittableRandom(at), model.model);
            CompactionReport report = null;
            try {
                report = run.store.compact("c", 0, Long.MAX_VALUE, run::clean);
            } catch (RuntimeException e) {
                assertThat(run.fs.afterPowerCut()).as("a compaction fails only for the cut").isNotNull();
            }
            SimFileSystem survived = run.fs.afterPowerCut();
            boolean cut = survived != null;
            if (cut) {
                struck.add(phase(run.fs));
            } else {
                assertThat(report.segmentsRewritten()).isEqualTo(SEALED);
                run.fs.disarmPowerCut();
                survived = run.fs.crash(new SplittableRandom(at), model.model);
            }
            boolean returned = !cut;
            int acknowledged = run.acknowledged();
            run.scheduler.discardAll();
            closeQuietly(run.store);
            String where = "cut at operation " + at + " of the compaction, " + model + ", " + path;
            // Compacting again over what the cut left: where it left a copy or a marker, and after the last cut.
            boolean again = !cut || !leftovers(survived).isEmpty();
            try {
                checkAfterCut(run, survived, returned, acknowledged, again, where);
            } finally {
                run.fs.release();
                survived.release();
            }
            if (!cut) {
                assertThat(at).as("operations a compaction of %d segments performs", SEALED).isGreaterThan(40);
                assertThat(struck).as("where the cuts struck").containsAll(EnumSet.allOf(Phase.class));
                return;
            }
        }
    }

    /**
     * A power cut at every operation of the open that follows a cut inside the index force of segment 0's swap (its
     * marker there, its copy renamed over it, some index files forced with the new positions, some not), under each
     * crash model: the open rebuilds every index from the log and deletes the marker only once the rebuilt indexes
     * are forced, so whatever a cut leaves of the rebuild, the next open finds segment 0 compacted, the others as
     * appended, and no leftover.
     */
    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfTheRecoveryOfAnInterruptedSwapRecoversTheSameState(Model model) {
        Run run = interruptedInsideTheIndexForce();
        SimFileSystem interrupted = run.fs.afterPowerCut();
        try {
            assertThat(names(interrupted)).as("what the cut left").contains(Segment0.MARKER).doesNotContain(
                    Segment0.COPY);
            int cuts = 0;
            for (int at = 1; ; at++) {
                SimFileSystem fs = interrupted.copy();
                ManualScheduler scheduler = new ManualScheduler(clock);
                fs.armPowerCut(at, new SplittableRandom(at), model.model);
                Store store = null;
                try {
                    store = Store.open(ROOT, config(fs, scheduler, run));
                } catch (RuntimeException e) {
                    assertThat(fs.afterPowerCut()).as("an open fails only for the cut").isNotNull();
                }
                SimFileSystem survived = fs.afterPowerCut();
                boolean struck = survived != null;
                if (struck) {
                    cuts++;
                } else {
                    fs.disarmPowerCut();
                    survived = fs.crash(new SplittableRandom(at), model.model);
                }
                scheduler.discardAll();
                closeQuietly(store);
                String where = "cut at operation " + at + " of the recovery of an interrupted swap, " + model;
                try {
                    checkRecovered(run, survived, where);
                } finally {
                    fs.release();
                    survived.release();
                }
                if (!struck) {
                    assertThat(cuts).as("operations of the recovery, each cut once").isGreaterThan(20);
                    return;
                }
            }
        } finally {
            interrupted.release();
            run.fs.release();
        }
    }

    /** The names of segment 0's compaction files. */
    private static final class Segment0 {
        static final String MARKER = "00000000000000000000.reindex";
        static final String COPY = "00000000000000000000.cleaned";
    }

    /**
     * @return a run whose compaction a power cut stopped inside the index force of its first swap, every unforced
     *     byte and name lost
     */
    private Run interruptedInsideTheIndexForce() {
        for (int at = 1; ; at++) {
            Run run = new Run(WritePath.MMAP, 1024); // few index files: fewer operations to cut
            run.fs.armPowerCut(at, new SplittableRandom(at), CrashModel.LOSE_ALL);
            try {
                run.store.compact("c", 0, Long.MAX_VALUE, run::clean);
            } catch (RuntimeException e) {
                // the cut
            }
            assertThat(run.fs.afterPowerCut()).as("a cut before the first swap's index force ends").isNotNull();
            run.scheduler.discardAll();
            closeQuietly(run.store);
            if (phase(run.fs) == Phase.INDEX_FORCE) {
                return run;
            }
            run.fs.afterPowerCut().release();
            run.fs.release();
        }
    }

    /** Opens what the cut left: segment 0 compacted, the others as appended, no leftover, no fault. */
    private void checkRecovered(Run run, SimFileSystem fs, String where) {
        try (Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock), run))) {
            assertThat(leftovers(fs)).as(where + ": compaction leftovers after the open").isEmpty();
            assertThat(checkQueue(store, run, 0, 0, true, where).compacted).as(where + ": segments compacted")
                    .isEqualTo(1);
        } catch (IOException | RuntimeException e) {
            throw new AssertionError(where + ": " + e, e);
        }
        try {
            assertThat(StoreVerifier.verify(ROOT, fs).faults()).as(where).isEmpty();
        } catch (IOException e) {
            throw new AssertionError(where + ": the verifier could not read the store", e);
        }
    }

    /** Where the compaction was when the power went, from the names it saw then and the file it forced last. */
    private static Phase phase(SimFileSystem dead) {
        boolean copy = false;
        boolean marker = false;
        for (String line : dead.describe().lines().toList()) {
            if (line.startsWith(LOG_DIRECTORY.toString())) {
                copy |= line.contains(".cleaned");
                marker |= line.contains(".reindex");
            }
        }
        if (!marker) {
            return copy ? Phase.COPY : Phase.NONE;
        }
        if (copy) {
            return Phase.MARKER;
        }
        List<String> forced = dead.counters().forcedFiles;
        return forced.getLast().contains("/index/") ? Phase.INDEX_FORCE : Phase.SWAPPED;
    }

    /**
     * Opens what the cut left and checks it; then, if {@code compactAgain}, compacts over it to the end, cuts once
     * more (only what was forced survives), and checks that every sealed segment reads as compacted.
     */
    private void checkAfterCut(Run run, SimFileSystem fs, boolean returned, int acknowledged, boolean compactAgain,
                               String where) {
        Store store = null;
        SimFileSystem second = null;
        try {
            store = Store.open(ROOT, config(fs, new ManualScheduler(clock), run));
            assertThat(leftovers(fs)).as(where + ": compaction leftovers after the open").isEmpty();
            Found found = checkQueue(store, run, acknowledged, run.appended.size(), true, where);
            if (returned) {
                assertThat(found.compacted).as(where + ": a compaction that returned is durable").isEqualTo(SEALED);
            }
            store.close();
            assertThat(StoreVerifier.verify(ROOT, fs).faults()).as(where).isEmpty();
            if (!compactAgain) {
                return;
            }
            ManualScheduler scheduler = new ManualScheduler(clock);
            store = Store.open(ROOT, config(fs, scheduler, run));
            run.sideEffects = false;
            store.compact("c", 0, Long.MAX_VALUE, run::clean);
            second = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
            scheduler.discardAll();
            closeQuietly(store);
            store = Store.open(ROOT, config(second, new ManualScheduler(clock), run));
            String again = where + ", then a compaction to its end and a second cut";
            assertThat(leftovers(second)).as(again).isEmpty();
            // Reads from every offset were checked above, and again where the compaction that returned was cut.
            assertThat(checkQueue(store, run, found.appended, found.appended, false, again).compacted)
                    .as(again + ": segments compacted").isEqualTo(SEALED);
            store.close();
            assertThat(StoreVerifier.verify(ROOT, second).faults()).as(again).isEmpty();
        } catch (IOException | RuntimeException e) {
            throw new AssertionError(where + ": " + e, e);
        } finally {
            closeQuietly(store);
            if (second != null) {
                second.release();
            }
        }
    }

    /** @return the names of compaction's files in the queue's log directory */
    private static List<String> leftovers(SimFileSystem fs) {
        return names(fs).stream().filter(name -> name.contains(".")).toList();
    }

    /** @return the names in the queue's log directory */
    private static List<String> names(SimFileSystem fs) {
        try {
            return fs.list(LOG_DIRECTORY).stream().map(file -> file.getFileName().toString()).toList();
        } catch (IOException e) {
            throw new AssertionError("the log directory cannot be listed", e);
        }
    }

    /** What {@link #checkQueue} found: segments that read as compacted, batches appended during the compaction. */
    private record Found(int compacted, int appended) {
    }

    /**
     * Checks the queue against what was appended and what the cleaner makes of it: each sealed segment as appended or
     * as cleaned, the compacted ones a prefix; the active segment as appended; then a prefix of the batches appended
     * during the compaction, from {@code leastAppended} (those acknowledged) to {@code mostAppended} of them; and,
     * if {@code everyOffset}, a read from every offset.
     */
    private static Found checkQueue(Store store, Run run, int leastAppended, int mostAppended, boolean everyOffset,
                                    String where) throws IOException {
        List<byte[]> read = readAll(store);
        List<byte[]> expected = new ArrayList<>();
        int at = 0;
        int compacted = 0;
        int lastSegment = run.batches.getLast().segment;
        for (int segment = 0; segment <= lastSegment; segment++) {
            List<Batch> batches = run.batchesOf(segment);
            List<byte[]> asAppended = batches.stream().map(Batch::stored).toList();
            List<byte[]> asCleaned = batches.stream().map(batch -> run.cleaned(batch.first, batch.stored))
                    .filter(bytes -> bytes != null).toList();
            boolean isCompacted = segment < SEALED && !matches(read, at, asAppended)
                    && matches(read, at, asCleaned);
            List<byte[]> holds = isCompacted ? asCleaned : asAppended;
            assertThat(matches(read, at, holds)).as("%s: segment %d holds its batches as appended or as cleaned, no"
                    + " mix (read %d batches from batch %d)", where, segment, read.size(), at).isTrue();
            if (isCompacted) {
                assertThat(compacted).as("%s: segment %d compacted after one that was not", where, segment)
                        .isEqualTo(segment);
                compacted++;
            }
            expected.addAll(holds);
            at += holds.size();
        }
        int appended = read.size() - at;
        assertThat(appended).as(where + ": batches appended during the compaction").isBetween(leastAppended,
                mostAppended);
        long next = run.end;
        List<long[]> ranges = new ArrayList<>();
        for (int i = 0; i < appended; i++) {
            byte[] stored = run.appended.get(i).clone();
            ByteBuffer.wrap(stored).putLong(0, next);
            expected.add(stored);
            next += KafkaBatch.offsetCount(MemorySegment.ofArray(stored));
        }
        for (int i = 0; i < expected.size(); i++) {
            assertThat(read.get(i)).as("%s: batch %d", where, i).isEqualTo(expected.get(i));
            MemorySegment batch = MemorySegment.ofArray(expected.get(i));
            ranges.add(new long[] {batch.get(LONG, 0), batch.get(LONG, 0) + KafkaBatch.offsetCount(batch)});
        }
        assertThat(store.minOffset("c", 0)).as(where).isZero();
        assertThat(store.maxOffset("c", 0)).as(where + ": the queue's end").isEqualTo(next);
        if (everyOffset) {
            checkEveryOffset(store, ranges, next, where);
        }
        return new Found(compacted, appended);
    }

    /** A read from each offset starts at the batch holding it or, if a gap holds it, at the next batch kept. */
    private static void checkEveryOffset(Store store, List<long[]> ranges, long end, String where) throws IOException {
        int k = 0;
        for (long offset = 0; offset < end; offset++) {
            while (ranges.get(k)[1] <= offset) {
                k++;
            }
            long expected = ranges.get(k)[0];
            OpaqueSlice slice = store.sliceOpaque("c", 0, offset, 1);
            ByteArrayOutputStream one = new ByteArrayOutputStream();
            slice.transferTo(Channels.newChannel(one));
            assertThat(ByteBuffer.wrap(one.toByteArray()).getLong(0)).as("%s: first batch sent from offset %d",
                    where, offset).isEqualTo(expected);
            try (ReadResult result = store.read("c", 0, offset, 1, 1)) {
                assertThat(result.messages()).as("%s: read from offset %d", where, offset).isNotEmpty();
                assertThat(result.messages().getFirst().queueOffset()).as("%s: read from offset %d", where, offset)
                        .isEqualTo(expected);
            }
        }
    }

    private static boolean matches(List<byte[]> read, int from, List<byte[]> batches) {
        if (from + batches.size() > read.size()) {
            return false;
        }
        for (int i = 0; i < batches.size(); i++) {
            if (!Arrays.equals(read.get(from + i), batches.get(i))) {
                return false;
            }
        }
        return true;
    }

    /** @return every batch a fetch from offset 0 sends, in order */
    private static List<byte[]> readAll(Store store) throws IOException {
        ByteArrayOutputStream sink = new ByteArrayOutputStream();
        long offset = 0;
        while (offset < store.maxOffset("c", 0)) {
            OpaqueSlice slice = store.sliceOpaque("c", 0, offset, 1 << 20);
            slice.transferTo(Channels.newChannel(sink));
            assertThat(slice.nextOffset()).isGreaterThan(offset);
            offset = slice.nextOffset();
        }
        List<byte[]> batches = new ArrayList<>();
        ByteBuffer buffer = ByteBuffer.wrap(sink.toByteArray());
        while (buffer.hasRemaining()) {
            byte[] batch = new byte[buffer.getInt(buffer.position() + KafkaBatch.BATCH_LENGTH)
                    + KafkaBatch.LOG_OVERHEAD];
            buffer.get(batch);
            batches.add(batch);
        }
        return batches;
    }

    private static void closeQuietly(Store store) {
        if (store == null) {
            return;
        }
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system may be gone
        }
    }
}
