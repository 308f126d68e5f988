package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
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
 * SYNC appends to many logs, made durable together by one sync of the file system ({@link StoreConfig#forceTogether()}):
 * a power cut at every file operation of the appends' rounds, under every crash model, loses no acknowledged batch; nor
 * of a checkpoint ({@link Store#sync}) that forces many logs so.
 */
class ForceTogetherPowerCutTest {

    private static final Path ROOT = Path.of("/sim/together");
    private static final int QUEUES = 6;
    private static final int ROUNDS = 3;

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, WritePath path) {
        return config(fs, scheduler, path, FlushMode.SYNC);
    }

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, WritePath path, FlushMode mode) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(path)
                .flushMode(mode).forceTogether(true).flushIntervalMillis(1_000_000).flushDirtyBytes(Long.MAX_VALUE / 2)
                .commitIntervalMillis(1_000_000).maxMessageBytes(32 * 1024).writeBufferBytes(128 * 1024).queueIndexEntriesPerFile(64)
                .keyIndexSlotsPerFile(16).keyIndexEntriesPerFile(64).checkpointIntervalMillis(1_000_000).fileIO(fs)
                .scheduler(scheduler).clock(clock).build();
    }

    /** About 26 KB: three of them pass a log's first segment (64 KiB), so the rounds roll segments too. */
    private static byte[] batch(int queue, int round) {
        byte[] value = ("batch-" + queue + "-" + round + "-").repeat(1_000).getBytes(StandardCharsets.UTF_8);
        return KafkaBatch.of(1_700_000_000_000L + round, List.of(value, value));
    }

    /** A store holding the topic, closed cleanly, so the topic itself is durable before any cut. */
    private SimFileSystem created(WritePath path) {
        SimFileSystem fs = new SimFileSystem();
        Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock), path));
        store.createTopic("b", TopicLayout.BATCHES, QUEUES);
        store.close();
        return fs;
    }

    /**
     * Appends a batch to every queue, round after round, running the scheduler between rounds.
     *
     * @return the batches acknowledged per queue
     */
    private static int[] appendRounds(Store store, ManualScheduler scheduler, SplittableRandom random) {
        int[] acknowledged = new int[QUEUES];
        for (int round = 0; round < ROUNDS; round++) {
            List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
            try {
                for (int queue = 0; queue < QUEUES; queue++) {
                    appends.add(store.appendOpaque("b", queue, MemorySegment.ofArray(batch(queue, round)), 2));
                }
            } catch (RuntimeException e) {
                // The power is gone: the appends made so far may still have been acknowledged.
            }
            try {
                scheduler.runAll(random);
            } catch (RuntimeException e) {
                // as above
            }
            for (int queue = 0; queue < appends.size(); queue++) {
                CompletableFuture<AppendResult> append = appends.get(queue);
                if (append.isDone() && !append.isCompletedExceptionally()) {
                    acknowledged[queue]++;
                }
            }
        }
        return acknowledged;
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER", "CHANNEL"})
    void aPowerCutAtEveryOperationLosesNoAcknowledgedBatch(WritePath path) {
        // The uncut run: its operations bound where a cut can fall, and its rounds did sync the file system.
        SimFileSystem uncut = created(path);
        long before = uncut.operations();
        long syncsBefore = uncut.counters().fileSystemSyncs;
        ManualScheduler uncutScheduler = new ManualScheduler(clock);
        Store whole = Store.open(ROOT, config(uncut, uncutScheduler, path));
        int[] all = appendRounds(whole, uncutScheduler, new SplittableRandom(1));
        long operations = uncut.operations() - before;
        assertThat(all).as("every batch acknowledged without a cut").containsOnly(ROUNDS);
        assertThat(uncut.counters().fileSystemSyncs - syncsBefore).as("syncs of the file system").isPositive();
        whole.close();
        uncut.release();

        List<CrashModel> models = List.of(CrashModel.LOSE_ALL, CrashModel.UNIFORM, CrashModel.HOLE,
                CrashModel.MOSTLY_KEPT);
        int cuts = 0;
        for (long at = 1; at <= operations; at++) {
            CrashModel model = models.get((int) (at % models.size()));
            SimFileSystem fs = created(path);
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler, path));
            fs.armPowerCut(at, new SplittableRandom(at), model);
            int[] acknowledged = appendRounds(store, scheduler, new SplittableRandom(at));
            SimFileSystem after = fs.afterPowerCut();
            scheduler.discardAll();
            if (after == null) {
                fs.disarmPowerCut();
                after = fs.crash(new SplittableRandom(at), model);
            } else {
                cuts++;
            }
            try {
                store.close();
            } catch (RuntimeException e) {
                // the file system is gone
            }
            Store reopened = Store.open(ROOT, config(after, new ManualScheduler(clock), path));
            try {
                for (int queue = 0; queue < QUEUES; queue++) {
                    assertThat(reopened.maxOffset("b", queue)).as("queue %d after a %s cut at operation %d of %d",
                            queue, model, at, operations).isGreaterThanOrEqualTo(2L * acknowledged[queue]);
                }
            } finally {
                reopened.close();
                fs.release();
                after.release();
            }
        }
        assertThat(cuts).as("cuts that struck during the rounds").isPositive();
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER", "CHANNEL"})
    void aPowerCutAtEveryOperationOfACheckpointOverManyLogsLosesNothingItClaimed(WritePath path) {
        SimFileSystem uncut = created(path);
        long syncsBefore = uncut.counters().fileSystemSyncs;
        Store whole = Store.open(ROOT, config(uncut, new ManualScheduler(clock), path, FlushMode.ASYNC));
        appendUnforced(whole);
        long before = uncut.operations();
        whole.sync();
        long operations = uncut.operations() - before;
        assertThat(uncut.counters().fileSystemSyncs - syncsBefore).as("syncs of the file system").isEqualTo(1);
        whole.close();
        uncut.release();

        List<CrashModel> models = List.of(CrashModel.LOSE_ALL, CrashModel.UNIFORM, CrashModel.HOLE,
                CrashModel.MOSTLY_KEPT);
        int cutDuringTheSync = 0;
        for (long at = 1; at <= operations + 1; at++) {
            CrashModel model = models.get((int) (at % models.size()));
            SimFileSystem fs = created(path);
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler, path, FlushMode.ASYNC));
            appendUnforced(store);
            fs.armPowerCut(at, new SplittableRandom(at), model);
            boolean synced;
            try {
                store.sync();
                synced = true;
            } catch (RuntimeException e) {
                synced = false;
            }
            SimFileSystem after = fs.afterPowerCut();
            scheduler.discardAll();
            if (after == null) {
                fs.disarmPowerCut();
                after = fs.crash(new SplittableRandom(at), model);
            }
            try {
                store.close();
            } catch (RuntimeException e) {
                // the file system is gone
            }
            Store reopened = Store.open(ROOT, config(after, new ManualScheduler(clock), path, FlushMode.ASYNC));
            try {
                if (synced) {
                    for (int queue = 0; queue < QUEUES; queue++) {
                        assertThat(reopened.maxOffset("b", queue)).as("queue %d after a %s cut at operation %d of %d",
                                queue, model, at, operations).isEqualTo(2L * ROUNDS);
                    }
                } else {
                    cutDuringTheSync++;
                }
                assertThat(synced || at <= operations).as("a cut past the sync's operations leaves it done").isTrue();
            } finally {
                reopened.close();
                fs.release();
                after.release();
            }
        }
        assertThat(cutDuringTheSync).as("cuts that struck before the sync returned").isPositive();
    }

    /** Appends every round's batch to every queue under ASYNC: none forced (no scheduled task runs). */
    private static void appendUnforced(Store store) {
        for (int round = 0; round < ROUNDS; round++) {
            for (int queue = 0; queue < QUEUES; queue++) {
                store.appendOpaque("b", queue, MemorySegment.ofArray(batch(queue, round)), 2);
            }
        }
    }
}
