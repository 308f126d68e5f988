package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;

/**
 * Power cuts around a record deletion ({@code Store.deleteRecords}, which saves the {@code log-starts} file): a start
 * left above a queue's end by a cut comes down to it.
 */
class LogStartsPowerCutTest {

    private static final Path ROOT = Path.of("/sim/starts");

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, FlushMode mode) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.MMAP)
                .flushMode(mode).maxMessageBytes(4096).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000).flushDirtyBytes(1 << 30)
                .checkpointIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler).clock(clock).build();
    }

    /**
     * ASYNC: records acknowledged but never forced are deleted, durably, and a cut takes the records: the queue ends
     * below its start. Its start comes down to its end, or the records appended there next would read as deleted at
     * the following open (they used to: a queue of 3 durable records opened as empty).
     */
    @Test
    void aStartAboveWhatACutLeftComesDownToTheQueuesEnd() throws IOException {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler, FlushMode.ASYNC));
        store.createTopic("orders", TopicLayout.QUEUE, 1, Map.of());
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        for (int i = 0; i < 10; i++) {
            appends.add(store.append("orders", 0, Message.of(("lost-" + i).getBytes(StandardCharsets.UTF_8))));
        }
        scheduler.runAll(new SplittableRandom(1)); // acknowledged; the flush interval is far off
        appends.forEach(append -> assertThat(append).isCompleted());
        assertThat(store.deleteRecords("orders", 0, 10)).isEqualTo(10);
        SimFileSystem cut = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
        scheduler.discardAll();
        closeQuietly(store);
        SimFileSystem closed = null;
        try {
            store = Store.open(ROOT, config(cut, new ManualScheduler(clock), FlushMode.ASYNC));
            long end = store.maxOffset("orders", 0);
            assertThat(end).as("the records were never forced").isLessThan(10);
            assertThat(store.minOffset("orders", 0)).isEqualTo(end);
            for (int i = 0; i < 3; i++) {
                store.append("orders", 0, Message.of(("kept-" + i).getBytes(StandardCharsets.UTF_8)));
            }
            store.close(); // forces them
            closed = cut.crash(new SplittableRandom(2), CrashModel.LOSE_ALL);
            store = Store.open(ROOT, config(closed, new ManualScheduler(clock), FlushMode.ASYNC));
            assertThat(store.minOffset("orders", 0)).as("the records appended after the cut").isEqualTo(end);
            assertThat(store.maxOffset("orders", 0)).isEqualTo(end + 3);
            try (ReadResult read = store.read("orders", 0, end, 10, 1 << 20)) {
                assertThat(read.messages()).extracting(m -> new String(m.bodyBytes(), StandardCharsets.UTF_8))
                        .containsExactly("kept-0", "kept-1", "kept-2");
            }
            store.close();
            assertThat(StoreVerifier.verify(ROOT, closed).faults()).isEmpty();
        } finally {
            closeQuietly(store);
            fs.release();
            cut.release();
            if (closed != null) {
                closed.release();
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
