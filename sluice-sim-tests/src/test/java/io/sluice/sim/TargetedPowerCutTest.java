package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.WritePath;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * Power cuts placed by hand on the simulated file system, each at the state that breaks a durability claim if
 * the store gets it wrong. The random simulation reaches these states too, but rarely; here they are certain.
 */
class TargetedPowerCutTest {

    private static final Path ROOT = Path.of("/sim/targeted");
    private static final int BODY = 200;

    private final SimClock clock = new SimClock(1_700_000_000_000L);
    private final List<SimFileSystem> systems = new ArrayList<>();
    private SimFileSystem fs = track(new SimFileSystem());
    private ManualScheduler scheduler;
    private Store store;

    private SimFileSystem track(SimFileSystem system) {
        systems.add(system);
        return system;
    }

    @AfterEach
    void release() {
        if (store != null) {
            try {
                store.close();
            } catch (RuntimeException e) {
                // the file system may be gone
            }
        }
        systems.forEach(SimFileSystem::release);
    }

    private StoreConfig config(FlushMode mode, boolean truncateOnCorruption) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.MMAP)
                .flushMode(mode).maxMessageBytes(4096).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000).flushDirtyBytes(Long.MAX_VALUE / 2)
                .checkpointIntervalMillis(1_000_000).truncateOnCorruption(truncateOnCorruption).fileIO(fs)
                .scheduler(scheduler).clock(clock).build();
    }

    private Store open(FlushMode mode, boolean truncateOnCorruption) {
        scheduler = new ManualScheduler(clock);
        store = Store.open(ROOT, config(mode, truncateOnCorruption));
        return store;
    }

    private static byte[] body(int generation, long i) {
        byte[] body = new byte[BODY];
        new SplittableRandom(generation * 1_000_003L + i).nextBytes(body);
        return body;
    }

    /** Runs every ready task and every timer: flushes, checkpoints, acknowledgements. */
    private void settle() {
        scheduler.settle(new SplittableRandom(1), 100);
    }

    /** Cuts the power with {@code model} and moves to what survived; the old store is only closed to free memory. */
    private void cut(CrashModel model) {
        SimFileSystem after = track(fs.crash(new SplittableRandom(7), model));
        scheduler.discardAll();
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system is gone
        }
        store = null;
        fs = after;
    }

    private List<byte[]> readAll(Store opened, String topic) {
        List<byte[]> bodies = new ArrayList<>();
        long offset = opened.minOffset(topic, 0);
        while (offset < opened.maxOffset(topic, 0)) {
            try (ReadResult result = opened.read(topic, 0, offset, 100, 1 << 20)) {
                for (StoredMessage message : result.messages()) {
                    bodies.add(message.bodyBytes());
                }
                offset = result.nextOffset();
            }
        }
        return bodies;
    }

    /**
     * One batch whose index entries span four index files, then a clean close: the clean-shutdown marker must not
     * claim index files that were never forced. A power cut after the close keeps only what was forced.
     */
    @Test
    void aBatchWhoseIndexSpansManyFilesSurvivesAPowerCutAfterACleanClose() {
        Store opened = open(FlushMode.SYNC, false);
        List<Message> batch = new ArrayList<>();
        for (int i = 0; i < 200; i++) {
            batch.add(Message.of(body(0, i)));
        }
        CompletableFuture<AppendResult> appended = opened.appendBatch("t", 0, batch.subList(0, 10));
        settle();
        assertThat(appended).isDone();
        CompletableFuture<AppendResult> big = opened.appendBatch("t", 0, batch.subList(10, 200));
        settle();
        assertThat(big).isCompleted();
        opened.close();
        store = null;
        cut(CrashModel.LOSE_ALL);
        Store reopened = open(FlushMode.SYNC, false);
        List<byte[]> bodies = readAll(reopened, "t");
        assertThat(bodies).hasSize(200);
        for (int i = 0; i < 200; i++) {
            assertThat(bodies.get(i)).as("message " + i).isEqualTo(body(0, i));
        }
    }

    /**
     * Out-of-order writeback past the last checkpoint: a hole (the first unforced page lost) followed by records
     * that reached the disk. That is the tail of an interrupted write, not corruption: the store must open.
     */
    @Test
    void aHolePastTheLastCheckpointFollowedByValidRecordsIsCutNotRefused() {
        Store opened = open(FlushMode.ASYNC, false);
        for (int i = 0; i < 50; i++) {
            opened.append("t", 0, Message.of(body(0, i)));
        }
        opened.close(); // forces everything: 50 messages durable
        store = null;
        opened = open(FlushMode.ASYNC, false);
        for (int i = 50; i < 150; i++) {
            opened.append("t", 0, Message.of(body(0, i)));
        }
        cut(CrashModel.HOLE);
        Store reopened = open(FlushMode.ASYNC, false);
        List<byte[]> bodies = readAll(reopened, "t");
        assertThat(bodies.size()).isBetween(50, 149);
        for (int i = 0; i < bodies.size(); i++) {
            assertThat(bodies.get(i)).as("message " + i).isEqualTo(body(0, i));
        }
    }

    /**
     * After a cut, records of the old history remain past it in the segment with the right positions. New
     * appends of the same size land on the same boundaries; if a second power cut loses the newest of them, the
     * old records past them must not come back as messages of the queue.
     */
    @Test
    void recordsPastACutNeverComeBackAfterLaterAppendsAndASecondPowerCut() {
        Store opened = open(FlushMode.ASYNC, true);
        for (int i = 0; i < 50; i++) {
            opened.append("t", 0, Message.of(body(0, i)));
        }
        opened.close();
        store = null;
        opened = open(FlushMode.ASYNC, true);
        for (int i = 50; i < 150; i++) {
            opened.append("t", 0, Message.of(body(0, i)));
        }
        cut(CrashModel.HOLE);
        opened = open(FlushMode.ASYNC, true);
        long kept = opened.maxOffset("t", 0);
        assertThat(kept).isLessThan(150);
        // New history: the same sizes, so the same record boundaries. Ten are made durable by a clean close, the
        // next ones are lost to the second cut.
        for (long i = kept; i < kept + 10; i++) {
            opened.append("t", 0, Message.of(body(1, i)));
        }
        opened.close();
        store = null;
        opened = open(FlushMode.ASYNC, true);
        for (long i = kept + 10; i < kept + 20; i++) {
            opened.append("t", 0, Message.of(body(1, i)));
        }
        cut(CrashModel.LOSE_ALL);
        Store reopened = open(FlushMode.ASYNC, true);
        List<byte[]> bodies = readAll(reopened, "t");
        assertThat(bodies).hasSize((int) kept + 10);
        for (int i = 0; i < bodies.size(); i++) {
            assertThat(bodies.get(i)).as("message " + i).isEqualTo(i < kept ? body(0, i) : body(1, i));
        }
    }
}
