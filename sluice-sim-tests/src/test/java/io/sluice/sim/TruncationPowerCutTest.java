package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut at every file system operation of a queue truncation ({@link Store#truncateQueue}), under each crash
 * model, with every batch forced before the truncation starts: after it the queue holds exactly what it held or
 * exactly the batches before the cut (the cut for certain if the truncation returned), the other queue keeps all of
 * its batches, and batches appended after the open are never followed by a truncated one, across another cut.
 */
class TruncationPowerCutTest {

    private static final Path ROOT = Path.of("/sim/truncation");
    private static final int BATCHES = 60;
    /** The cut: the first batch removed (each batch covers two offsets). */
    private static final int KEEP = 41;

    enum Model {
        LOSE_ALL(CrashModel.LOSE_ALL), KEEP_ALL(CrashModel.KEEP_ALL), UNIFORM(CrashModel.UNIFORM),
        HOLE(CrashModel.HOLE), MOSTLY_KEPT(CrashModel.MOSTLY_KEPT);

        final CrashModel model;

        Model(CrashModel model) {
            this.model = model;
        }
    }

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.MMAP)
                .flushMode(FlushMode.SYNC).maxMessageBytes(4096).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000).checkpointIntervalMillis(1_000_000)
                .fileIO(fs).scheduler(scheduler).clock(clock).build();
    }

    private static void settle(ManualScheduler scheduler) {
        scheduler.settle(new SplittableRandom(1), 100);
    }

    /** Batch {@code i} of a queue: two records whose values name it, about 1.5 KiB (so the queue spans segments). */
    private static byte[] batch(String label, int i) {
        byte[] value = new byte[700];
        byte[] name = (label + "-" + i + "-").getBytes(StandardCharsets.UTF_8);
        for (int at = 0; at < value.length; at++) {
            value[at] = name[at % name.length];
        }
        return KafkaBatch.of(1_700_000_000_000L + i, List.of(value, value));
    }

    private static List<String> labels(Store store, int queue) {
        List<String> labels = new ArrayList<>();
        long offset = store.minOffset("b", queue);
        while (offset < store.maxOffset("b", queue)) {
            try (ReadResult read = store.read("b", queue, offset, 100, 1 << 20)) {
                for (StoredMessage message : read.messages()) {
                    String text = new String(message.bodyBytes(), StandardCharsets.ISO_8859_1);
                    int at = text.indexOf("q" + queue + "-");
                    labels.add(text.substring(at, text.indexOf('-', at + 3)));
                }
                offset = read.nextOffset();
            }
        }
        return labels;
    }

    private static List<String> expected(String label, int from, int to) {
        List<String> labels = new ArrayList<>();
        for (int i = from; i < to; i++) {
            labels.add(label + "-" + i);
        }
        return labels;
    }

    private static void append(Store store, int queue, String label, int from, int to, ManualScheduler scheduler) {
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        for (int i = from; i < to; i++) {
            appends.add(store.appendOpaque("b", queue, MemorySegment.ofArray(batch(label, i)), 2));
        }
        settle(scheduler);
        appends.forEach(a -> assertThat(a).isCompleted());
    }

    /** A BATCHES topic of two queues, every batch forced; then a clean close. */
    private SimFileSystem populated() {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        store.createTopic("b", TopicLayout.BATCHES, 2);
        append(store, 0, "q0", 0, BATCHES, scheduler);
        append(store, 1, "q1", 0, BATCHES, scheduler);
        store.close();
        return fs;
    }

    /** What is checked after each cut: @return true if the queue was found changed (cut or emptied) */
    @FunctionalInterface
    private interface AfterCut {
        boolean check(SimFileSystem fs, boolean returned, String where);
    }

    /**
     * Runs {@code action} on a freshly populated store once per file operation it performs, the power cut at that
     * operation (and once more, uncut, with a crash after it), and checks the files left each time.
     *
     * @return how many times the queue was found changed, and how many times as it was
     */
    private int[] cutAtEveryOperation(Model model, java.util.function.Consumer<Store> action, AfterCut check) {
        int cuts = 0;
        int[] seen = new int[2];
        for (int at = 1; ; at++) {
            SimFileSystem fs = populated();
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler));
            fs.armPowerCut(at, new SplittableRandom(at), model.model);
            boolean returned;
            try {
                action.accept(store);
                returned = true;
            } catch (RuntimeException e) {
                returned = false;
            }
            SimFileSystem after = fs.afterPowerCut();
            if (after == null) {
                fs.disarmPowerCut();
                assertThat(returned).isTrue();
                after = fs.crash(new SplittableRandom(at), model.model);
            } else {
                cuts++;
            }
            scheduler.discardAll();
            closeQuietly(store);
            boolean changed = check.check(after, returned, "cut at operation " + at + ", " + model);
            seen[changed ? 0 : 1]++;
            fs.release();
            after.release();
            if (fs.afterPowerCut() == null) {
                break;
            }
        }
        assertThat(cuts).as("file operations performed, each cut once").isGreaterThan(5);
        return seen;
    }

    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfATruncationLeavesTheQueueAsItWasOrCut(Model model) {
        int[] seen = cutAtEveryOperation(model, store -> store.truncateQueue("b", 0, 2L * KEEP), this::checkAfterCut);
        assertThat(seen[0]).as("cuts after which the queue was cut").isPositive();
        assertThat(seen[1]).as("cuts after which the queue was whole").isPositive();
    }

    /**
     * {@link Store#emptyQueueAt} cut at every file operation: the queue is as it was or empty, its next offset then
     * {@link #RESTART} or lower ({@code RESTART} for certain if the call returned); the other queue keeps its batches,
     * and what is appended next follows, across another cut.
     */
    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfEmptyingAQueueLeavesItAsItWasOrEmpty(Model model) {
        int[] seen = cutAtEveryOperation(model, store -> store.emptyQueueAt("b", 0, RESTART), this::checkAfterEmptying);
        assertThat(seen[0]).as("cuts after which the queue was empty").isPositive();
        assertThat(seen[1]).as("cuts after which the queue was whole").isPositive();
    }

    /** Where {@link #aPowerCutAtEveryStepOfEmptyingAQueueLeavesItAsItWasOrEmpty} starts the queue again. */
    private static final long RESTART = 1_000;

    /** @return true if the queue was found empty */
    private boolean checkAfterEmptying(SimFileSystem fs, boolean returned, String where) {
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        try {
            assertThat(labels(store, 1)).as(where).isEqualTo(expected("q1", 0, BATCHES));
            List<String> held = labels(store, 0);
            boolean empty = held.isEmpty();
            long next = store.maxOffset("b", 0);
            if (empty) {
                assertThat(next).as(where + ": an empty queue's next offset").isBetween(0L, RESTART);
                assertThat(store.minOffset("b", 0)).as(where).isEqualTo(next);
            } else {
                assertThat(held).as(where + ": as it was or empty, never between")
                        .isEqualTo(expected("q0", 0, BATCHES));
            }
            if (returned) {
                assertThat(next).as(where + ": a queue emptied by a call that returned").isEqualTo(RESTART);
            }
            append(store, 0, "q0", 1000, 1005, scheduler);
            SimFileSystem second = fs.crash(new SplittableRandom(2), CrashModel.LOSE_ALL);
            scheduler.discardAll();
            closeQuietly(store);
            store = Store.open(ROOT, config(second, new ManualScheduler(clock)));
            List<String> expected = empty ? new ArrayList<>() : expected("q0", 0, BATCHES);
            expected.addAll(expected("q0", 1000, 1005));
            assertThat(labels(store, 0)).as(where + ", then appends and another cut").isEqualTo(expected);
            assertThat(store.maxOffset("b", 0)).as(where + ", then appends and another cut").isEqualTo(next + 10);
            closeQuietly(store);
            store = null;
            second.release();
            return empty;
        } finally {
            if (store != null) {
                closeQuietly(store);
            }
        }
    }

    /** @return true if the queue was found cut */
    private boolean checkAfterCut(SimFileSystem fs, boolean returned, String where) {
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        try {
            assertThat(labels(store, 1)).as(where).isEqualTo(expected("q1", 0, BATCHES));
            List<String> held = labels(store, 0);
            boolean cut = held.size() == KEEP;
            assertThat(held).as(where + ": as it was or cut, never between")
                    .isEqualTo(expected("q0", 0, cut ? KEEP : BATCHES));
            if (returned) {
                assertThat(cut).as(where + ": a truncation that returned is durable").isTrue();
            }
            // What is appended now follows the kept batches, and stays so across a cut keeping only what was forced.
            int kept = held.size();
            append(store, 0, "q0", 1000, 1005, scheduler);
            SimFileSystem second = fs.crash(new SplittableRandom(2), CrashModel.LOSE_ALL);
            scheduler.discardAll();
            closeQuietly(store);
            store = Store.open(ROOT, config(second, new ManualScheduler(clock)));
            List<String> expected = expected("q0", 0, kept);
            expected.addAll(expected("q0", 1000, 1005));
            assertThat(labels(store, 0)).as(where + ", then appends and another cut").isEqualTo(expected);
            closeQuietly(store);
            store = null;
            second.release();
            return cut;
        } finally {
            if (store != null) {
                closeQuietly(store);
            }
        }
    }

    private static void closeQuietly(Store store) {
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system may be gone
        }
    }
}
