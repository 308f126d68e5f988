package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut at every file system operation of a topic deletion, under each crash model: after it the store opens,
 * the other topics keep every acknowledged message and position, and the deleted topic is either whole (the
 * deletion had not committed) or gone without a trace (no files, no count, no positions); gone for certain if the
 * deletion returned. A topic created again under the name starts empty and stays so across another cut.
 */
class TopicDeletionPowerCutTest {

    private static final Path ROOT = Path.of("/sim/deletion");
    private static final int MESSAGES = 30;

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

    private static Message message(String topic, int queue, int i) {
        return Message.of((topic + "-" + queue + "-" + i).getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> bodies(Store store, String topic, int queue) {
        List<String> bodies = new ArrayList<>();
        try (ReadResult read = store.read(topic, queue, store.minOffset(topic, queue), 1000, 1 << 20)) {
            for (StoredMessage message : read.messages()) {
                bodies.add(new String(message.bodyBytes(), StandardCharsets.UTF_8));
            }
        }
        return bodies;
    }

    private static List<String> expected(String topic, int queue, int count) {
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            bodies.add(topic + "-" + queue + "-" + i);
        }
        return bodies;
    }

    /** Two QUEUE topics and a TOPIC one with durable messages and saved positions; then a clean close. */
    private SimFileSystem populated() {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        store.createTopic("gone", TopicLayout.QUEUE, 2);
        store.createTopic("kept", TopicLayout.QUEUE, 2);
        store.createTopic("whole", TopicLayout.TOPIC, 1);
        List<CompletableFuture<?>> appends = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            for (int q = 0; q < 2; q++) {
                appends.add(store.append("gone", q, message("gone", q, i)));
                appends.add(store.append("kept", q, message("kept", q, i)));
            }
            appends.add(store.append("whole", 0, message("whole", 0, i)));
        }
        settle(scheduler);
        appends.forEach(a -> assertThat(a).isCompleted());
        store.commitOffset("g", "gone", 0, 7);
        store.commitOffset("g", "kept", 1, 9);
        store.close();
        return fs;
    }

    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfADeletionLeavesTheTopicWholeOrGone(Model model) throws IOException {
        int cuts = 0;
        for (int at = 1; ; at++) {
            SimFileSystem fs = populated();
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler));
            fs.armPowerCut(at, new SplittableRandom(at), model.model);
            boolean returned;
            try {
                returned = store.deleteTopic("gone");
            } catch (RuntimeException e) {
                returned = false;
            }
            SimFileSystem after = fs.afterPowerCut();
            if (after == null) {
                // The deletion finished before the cut's turn: cut now.
                fs.disarmPowerCut();
                assertThat(returned).isTrue();
                after = fs.crash(new SplittableRandom(at), model.model);
            } else {
                cuts++;
            }
            scheduler.discardAll();
            closeQuietly(store);
            checkAfterCut(after, returned, "cut at operation " + at + ", " + model);
            fs.release();
            after.release();
            if (fs.afterPowerCut() == null) {
                break;
            }
        }
        assertThat(cuts).as("operations a deletion performs, each cut once").isGreaterThan(5);
    }

    private void checkAfterCut(SimFileSystem fs, boolean deletionReturned, String where) {
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        try {
            for (int q = 0; q < 2; q++) {
                assertThat(bodies(store, "kept", q)).as(where).isEqualTo(expected("kept", q, MESSAGES));
            }
            assertThat(bodies(store, "whole", 0)).as(where).isEqualTo(expected("whole", 0, MESSAGES));
            assertThat(store.committedOffset("g", "kept", 1)).as(where).hasValue(9);
            boolean gone = store.queueCount("gone") == 0;
            if (deletionReturned) {
                assertThat(gone).as(where + ": a deletion that returned is durable").isTrue();
            }
            if (gone) {
                assertThat(store.layout("gone")).as(where).isEqualTo(TopicLayout.SHARED);
                assertThat(store.topics()).as(where).doesNotContain("gone");
                assertThat(store.committedOffset("g", "gone", 0)).as(where).isEmpty();
                assertThat(fs.exists(ROOT.resolve("logs").resolve("gone"))).as(where).isFalse();
                // Created again: empty, and still so after a second cut that keeps only what was forced.
                store.createTopic("gone", TopicLayout.QUEUE, 2);
                CompletableFuture<?> appended = store.append("gone", 1, message("new", 1, 0));
                settle(scheduler);
                assertThat(appended).isCompleted();
                SimFileSystem second = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
                scheduler.discardAll();
                closeQuietly(store);
                ManualScheduler again = new ManualScheduler(clock);
                store = Store.open(ROOT, config(second, again));
                assertThat(bodies(store, "gone", 1)).as(where).containsExactly("new-1-0");
                assertThat(store.maxOffset("gone", 0)).as(where).isZero();
                closeQuietly(store);
                store = null;
                second.release();
            } else {
                assertThat(store.layout("gone")).as(where).isEqualTo(TopicLayout.QUEUE);
                assertThat(store.committedOffset("g", "gone", 0)).as(where + ": positions go only with the topic")
                        .hasValue(7);
                for (int q = 0; q < 2; q++) {
                    assertThat(bodies(store, "gone", q)).as(where).isEqualTo(expected("gone", q, MESSAGES));
                }
            }
        } catch (IOException e) {
            throw new AssertionError(where, e);
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
