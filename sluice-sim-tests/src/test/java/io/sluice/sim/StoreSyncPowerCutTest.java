package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * {@link Store#sync}: under ASYNC nothing is forced by an append, and a power cut that loses every unforced page loses
 * it; after {@code sync()} returns, no crash model loses any of it (batches in logs of their own, messages in the
 * shared log).
 */
class StoreSyncPowerCutTest {

    private static final Path ROOT = Path.of("/sim/sync");
    private static final int BATCHES = 40;
    private static final int MESSAGES = 50;

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, WritePath path) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(path)
                .flushMode(FlushMode.ASYNC).maxMessageBytes(4096).writeBufferBytes(16 * 1024).queueIndexEntriesPerFile(64)
                .keyIndexSlotsPerFile(16).keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000)
                .checkpointIntervalMillis(1_000_000).commitIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler)
                .clock(clock).build();
    }

    private static byte[] batch(int i) {
        byte[] value = ("batch-" + i + "-").repeat(40).getBytes(StandardCharsets.UTF_8);
        return KafkaBatch.of(1_700_000_000_000L + i, List.of(value, value));
    }

    /** A store holding the topics, closed cleanly (so the topics themselves are durable), then opened again. */
    private SimFileSystem created(WritePath path) {
        SimFileSystem fs = new SimFileSystem();
        Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock), path));
        store.createTopic("b", TopicLayout.BATCHES, 2);
        store.createTopic("m", TopicLayout.SHARED, 1);
        store.close();
        return fs;
    }

    /** Appends the batches and messages, none of them forced (nothing scheduled runs). */
    private static void appendAll(Store store) {
        for (int i = 0; i < BATCHES; i++) {
            store.appendOpaque("b", i % 2, MemorySegment.ofArray(batch(i)), 2);
        }
        for (int i = 0; i < MESSAGES; i++) {
            store.append("m", 0, Message.of(("message-" + i).getBytes(StandardCharsets.UTF_8)));
        }
    }

    private static long held(Store store) {
        return store.maxOffset("b", 0) + store.maxOffset("b", 1) + store.maxOffset("m", 0);
    }

    private long heldAfter(SimFileSystem crashed, WritePath path) {
        Store store = Store.open(ROOT, config(crashed, new ManualScheduler(clock), path));
        try {
            return held(store);
        } finally {
            store.close();
        }
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER", "CHANNEL"})
    void withoutSyncAPowerCutLosesWhatAsyncAppendsHeld(WritePath path) {
        SimFileSystem fs = created(path);
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler, path));
        appendAll(store);
        SimFileSystem crashed = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
        scheduler.discardAll();
        assertThat(heldAfter(crashed, path)).as("records kept of %d appended, none forced", 2 * BATCHES + MESSAGES)
                .isZero();
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER", "CHANNEL"})
    void afterSyncNoCrashModelLosesAnything(WritePath path) {
        for (CrashModel model : List.of(CrashModel.LOSE_ALL, CrashModel.UNIFORM, CrashModel.HOLE,
                CrashModel.MOSTLY_KEPT)) {
            for (int seed = 1; seed <= 5; seed++) {
                SimFileSystem fs = created(path);
                ManualScheduler scheduler = new ManualScheduler(clock);
                Store store = Store.open(ROOT, config(fs, scheduler, path));
                appendAll(store);
                store.sync();
                // Appended after the sync: the cut may take these, never what came before.
                store.appendOpaque("b", 0, MemorySegment.ofArray(batch(1000)), 2);
                SimFileSystem crashed = fs.crash(new SplittableRandom(seed), model);
                scheduler.discardAll();
                assertThat(heldAfter(crashed, path)).as("%s, seed %d", model, seed)
                        .isBetween(2L * BATCHES + MESSAGES, 2L * BATCHES + MESSAGES + 2);
            }
        }
    }

    @Test
    void aClosedOrReadOnlyStoreRefusesToSync() {
        SimFileSystem fs = created(WritePath.MMAP);
        Store readOnly = Store.openReadOnly(ROOT, config(fs, new ManualScheduler(clock), WritePath.MMAP));
        assertThatThrownBy(readOnly::sync).hasMessageContaining("reading only");
        readOnly.close();
        Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock), WritePath.MMAP));
        store.close();
        assertThatThrownBy(store::sync).isInstanceOfAny(StoreException.class, IllegalStateException.class)
                .hasMessageContaining("closed");
    }
}
