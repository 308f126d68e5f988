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
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.function.Consumer;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut at every file system operation of a change of a topic's configs, and of a topic's creation with configs,
 * under each crash model: after it the store opens, the topic holds exactly its old configs or its new ones (the new
 * for certain if the call returned), never a mix, and every topic keeps its layout, queue count, configs and messages.
 * The registry spans two pages, so a save that tore it would show. The store then saves the registry again over what
 * the cut left, and that save survives a second cut.
 */
class TopicConfigsPowerCutTest {

    private static final Path ROOT = Path.of("/sim/configs");
    private static final int MESSAGES = 20;
    private static final Map<String, String> OLD = Map.of("seq", "1", "retention.ms", "-1", "note", "a".repeat(3000));
    private static final Map<String, String> NEW = Map.of("seq", "2", "retention.bytes", "1048576",
            "cleanup.policy", "compact,delete", "note", "b".repeat(5000));
    private static final Map<String, String> OTHER = Map.of("seq", "7", "retention.ms", "3600000");
    private static final Map<String, String> AFTER = Map.of("seq", "3");

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

    private static Message message(String topic, int i) {
        return Message.of((topic + "-" + i).getBytes(StandardCharsets.UTF_8));
    }

    private static List<String> bodies(Store store, String topic) {
        List<String> bodies = new ArrayList<>();
        try (ReadResult read = store.read(topic, 0, 0, 1000, 1 << 20)) {
            for (StoredMessage message : read.messages()) {
                bodies.add(new String(message.bodyBytes(), StandardCharsets.UTF_8));
            }
        }
        return bodies;
    }

    private static List<String> expected(String topic) {
        List<String> bodies = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            bodies.add(topic + "-" + i);
        }
        return bodies;
    }

    /** "orders" (QUEUE, 2 queues, configs OLD) and "other" (TOPIC, 1 queue, configs OTHER) with durable messages. */
    private SimFileSystem populated() {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        store.createTopic("orders", TopicLayout.QUEUE, 2, OLD);
        store.createTopic("other", TopicLayout.TOPIC, 1, OTHER);
        List<CompletableFuture<?>> appends = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            appends.add(store.append("orders", 0, message("orders", i)));
            appends.add(store.append("other", 0, message("other", i)));
        }
        settle(scheduler);
        appends.forEach(a -> assertThat(a).isCompleted());
        store.close();
        return fs;
    }

    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfAConfigChangeLeavesTheOldConfigsOrTheNew(Model model) {
        int cuts = cutAtEveryStep(model, store -> store.setTopicConfigs("orders", NEW), (store, returned, where) -> {
            Map<String, String> found = store.topicConfigs("orders");
            if (returned) {
                assertThat(found).as(where + ": a change that returned is durable").isEqualTo(NEW);
            } else {
                assertThat(found).as(where + ": the old configs or the new, whole").isIn(OLD, NEW);
            }
            assertThat(store.layout("orders")).as(where).isEqualTo(TopicLayout.QUEUE);
            assertThat(store.queueCount("orders")).as(where).isEqualTo(2);
            assertThat(bodies(store, "orders")).as(where).isEqualTo(expected("orders"));
        });
        // A registry save: open, truncate, write, force, rename, directory sync.
        assertThat(cuts).as("operations a config change performs, each cut once").isGreaterThanOrEqualTo(6);
    }

    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfACreationWithConfigsLeavesNoTopicOrTheWholeOne(Model model) {
        int cuts = cutAtEveryStep(model, store -> store.createTopic("fresh", TopicLayout.QUEUE, 3, NEW),
                (store, returned, where) -> {
                    if (returned || store.queueCount("fresh") != 0) {
                        assertThat(store.queueCount("fresh")).as(where).isEqualTo(3);
                        assertThat(store.layout("fresh")).as(where).isEqualTo(TopicLayout.QUEUE);
                        assertThat(store.topicConfigs("fresh")).as(where).isEqualTo(NEW);
                    } else {
                        assertThat(store.layout("fresh")).as(where).isEqualTo(TopicLayout.SHARED);
                        assertThat(store.topicConfigs("fresh")).as(where).isEmpty();
                    }
                    assertThat(store.topicConfigs("orders")).as(where).isEqualTo(OLD);
                    assertThat(bodies(store, "orders")).as(where).isEqualTo(expected("orders"));
                });
        assertThat(cuts).as("operations a creation performs, each cut once").isGreaterThanOrEqualTo(6);
    }

    /** What must hold after a cut; {@code returned} says whether the call under the cut returned. */
    private interface AfterCut {
        void check(Store store, boolean returned, String where);
    }

    /**
     * Runs {@code change} on a populated store with the power cut at its first operation, then its second, and so on
     * until it finishes before the cut (which then strikes after it), checking what each cut left.
     *
     * @return how many cuts struck inside the change
     */
    private int cutAtEveryStep(Model model, Consumer<Store> change, AfterCut after) {
        int cuts = 0;
        for (int at = 1; ; at++) {
            SimFileSystem fs = populated();
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler));
            fs.armPowerCut(at, new SplittableRandom(at), model.model);
            boolean returned = false;
            try {
                change.accept(store);
                returned = true;
            } catch (RuntimeException e) {
                assertThat(fs.afterPowerCut()).as("a change fails only for the cut").isNotNull();
            }
            SimFileSystem survived = fs.afterPowerCut();
            boolean struck = survived != null;
            if (!struck) {
                fs.disarmPowerCut();
                survived = fs.crash(new SplittableRandom(at), model.model);
            } else {
                cuts++;
            }
            scheduler.discardAll();
            closeQuietly(store);
            String where = "cut at operation " + at + ", " + model;
            checkAfterCut(survived, returned, where, after);
            fs.release();
            survived.release();
            if (!struck) {
                return cuts;
            }
        }
    }

    /**
     * Opens what the cut left and checks it; then saves the registry again over what the cut left (a leftover
     * temporary file, say) and cuts once more, keeping only what was forced: the second save is what opens.
     */
    private void checkAfterCut(SimFileSystem fs, boolean returned, String where, AfterCut after) {
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        SimFileSystem second = null;
        try {
            after.check(store, returned, where);
            assertThat(store.layout("other")).as(where).isEqualTo(TopicLayout.TOPIC);
            assertThat(store.queueCount("other")).as(where).isEqualTo(1);
            assertThat(store.topicConfigs("other")).as(where).isEqualTo(OTHER);
            assertThat(bodies(store, "other")).as(where).isEqualTo(expected("other"));
            store.setTopicConfigs("orders", AFTER);
            second = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
            scheduler.discardAll();
            closeQuietly(store);
            ManualScheduler again = new ManualScheduler(clock);
            store = Store.open(ROOT, config(second, again));
            assertThat(store.topicConfigs("orders")).as(where + ", then a change and a second cut").isEqualTo(AFTER);
            assertThat(store.topicConfigs("other")).as(where + ", then a change and a second cut").isEqualTo(OTHER);
        } finally {
            closeQuietly(store);
            if (second != null) {
                second.release();
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
