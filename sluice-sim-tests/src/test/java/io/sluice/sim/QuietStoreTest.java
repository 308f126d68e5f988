package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.RecoveryReport;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * What the store does not do, counted on the simulated file system: an idle store writes, forces, syncs and
 * renames nothing however long it runs; recovery after a crash leaves the index files of queues that were idle
 * since the last checkpoint alone, and validates records only from the segment holding the durable position.
 */
class QuietStoreTest {

    private static final Path ROOT = Path.of("/sim/quiet");

    private final SimClock clock = new SimClock(1_700_000_000_000L);
    private final SplittableRandom random = new SplittableRandom(42);
    private final List<SimFileSystem> systems = new ArrayList<>();
    private ManualScheduler scheduler;
    private Store store;

    @AfterEach
    void release() {
        if (store != null) {
            store.close();
        }
        systems.forEach(SimFileSystem::release);
    }

    private Store open(SimFileSystem fs, WritePath path, FlushMode mode) {
        systems.add(fs);
        scheduler = new ManualScheduler(clock);
        store = Store.open(ROOT, StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES)
                .writePath(path).flushMode(mode).maxMessageBytes(4096).writeBufferBytes(16 * 1024)
                .cacheBytes(64 * 1024).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(50).commitIntervalMillis(10)
                .checkpointIntervalMillis(100).fileIO(fs).scheduler(scheduler).clock(clock).build());
        return store;
    }

    /** Runs every ready task and lets {@code millis} of timers fall due, in 10 ms steps. */
    private void run(long millis) {
        for (long t = 0; t < millis; t += 10) {
            scheduler.runAll(random);
            scheduler.advance(10);
        }
        scheduler.runAll(random);
    }

    private static void join(List<CompletableFuture<?>> appends) {
        appends.forEach(CompletableFuture::join);
    }

    private List<CompletableFuture<?>> append(String topic, int queue, int count) {
        List<CompletableFuture<?>> appends = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            appends.add(store.append(topic, queue, Message.builder().keys(topic + "-" + i)
                    .body(new byte[100 + i]).build()));
        }
        return appends;
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void anIdleStoreWritesNothing(WritePath path) {
        SimFileSystem fs = new SimFileSystem();
        open(fs, path, FlushMode.SYNC);
        store.createTopic("own", TopicLayout.TOPIC);
        store.createTopic("queues", TopicLayout.QUEUE);
        List<CompletableFuture<?>> appends = new ArrayList<>();
        for (String topic : List.of("shared", "own", "queues")) {
            for (int queue = 0; queue < 3; queue++) {
                appends.addAll(append(topic, queue, 20));
            }
        }
        run(2_000);
        join(appends);
        store.commitOffset("group", "shared", 0, 5);
        run(2_000);
        SimFileSystem.Counters settled = fs.counters();

        run(600_000); // ten minutes: thousands of flush, checkpoint and retention intervals

        SimFileSystem.Counters later = fs.counters();
        assertThat(later.forcedFiles).as("files forced while idle").isEqualTo(settled.forcedFiles);
        assertThat(later.directorySyncs).as("directory syncs while idle").isEqualTo(settled.directorySyncs);
        assertThat(later.bytesWritten).as("bytes written while idle").isEqualTo(settled.bytesWritten);
        assertThat(later.nameChanges).as("names changed while idle").isEqualTo(settled.nameChanges);
    }

    /**
     * Ten queues were written before the last checkpoint, one after it; the power is cut. Recovery erases and
     * forces the busy queue's index tail, and leaves the idle queues' index files alone (before: it erased
     * every queue's index tail and forced every index file, on every crash).
     */
    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER"})
    void crashRecoveryLeavesTheIndexesOfIdleQueuesAlone(WritePath path) {
        SimFileSystem fs = new SimFileSystem();
        open(fs, path, FlushMode.ASYNC);
        List<CompletableFuture<?>> appends = new ArrayList<>();
        for (int queue = 0; queue < 10; queue++) {
            appends.addAll(append("idle", queue, 30));
        }
        join(appends);
        run(1_000); // flushed and checkpointed
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < 80; i++) { // 80 records of ~250 bytes: the log rolls past a 64 KiB segment
                store.append("busy", 0, Message.of(new byte[200]));
            }
            run(150);
        }
        join(append("busy", 0, 20)); // not flushed, not checkpointed
        SimFileSystem afterCut = fs.crash(random, CrashModel.KEEP_ALL);
        store = null; // the process died with the power; its mappings belong to the old file system

        open(afterCut, path, FlushMode.ASYNC);
        SimFileSystem.Counters recovery = afterCut.counters();

        RecoveryReport report = store.recoveryReports().get("");
        assertThat(report.mode()).isEqualTo(RecoveryReport.Mode.CRASH);
        assertThat(report.scanFrom()).as("validation starts at the segment holding the durable position")
                .isGreaterThan(0).isLessThanOrEqualTo(report.durablePosition());
        assertThat(recovery.forcedFiles).as("index files of the idle queues")
                .noneMatch(file -> file.contains("/index/idle/"));
        assertThat(recovery.forcedFiles).as("the busy queue's index was written again")
                .anyMatch(file -> file.contains("/index/busy/0/"));
        for (int queue = 0; queue < 10; queue++) {
            assertThat(store.maxOffset("idle", queue)).isEqualTo(30);
        }
        // The last 20 were appended after the last flush: in the page cache on MMAP (a power cut that keeps every
        // page keeps them), still in a write buffer on WRITE_BUFFER.
        assertThat(store.maxOffset("busy", 0)).isEqualTo(path == WritePath.MMAP ? 340 : 320);
    }
}
