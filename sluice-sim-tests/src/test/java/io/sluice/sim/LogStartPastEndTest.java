package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Records deleted under ASYNC, then a power cut that takes every write not forced: the saved start must not lie past
 * what survives of the queue, or the records appended there after the restart would read as deleted at the next
 * open. Records are forced before a start above them is saved.
 */
class LogStartPastEndTest {

    private static final Path ROOT = Path.of("/sim/starts");

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.CHANNEL)
                .flushMode(FlushMode.ASYNC).maxMessageBytes(4096).queueIndexEntriesPerFile(64)
                .keyIndexSlotsPerFile(16).keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000)
                .checkpointIntervalMillis(1_000_000).commitIntervalMillis(1_000_000).fileIO(fs)
                .scheduler(new ManualScheduler(clock)).clock(clock).build();
    }

    private static int readable(Store store) {
        try (ReadResult read = store.read("t", 0, store.minOffset("t", 0), 1000, 1 << 20)) {
            return read.messages().size();
        }
    }

    @Test
    void aStartIsNeverKeptPastTheRecordsAPowerCutLeaves() throws Exception {
        SimFileSystem fs = new SimFileSystem();
        Store store = Store.open(ROOT, config(fs));
        store.createTopic("t", TopicLayout.QUEUE, 1);
        for (int i = 0; i < 10; i++) {
            store.append("t", 0, Message.of(("before-" + i).getBytes(StandardCharsets.UTF_8))).join();
        }
        assertThat(store.deleteRecords("t", 0, 8)).isEqualTo(8);
        SimFileSystem survived = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);

        long end;
        try (Store reopened = Store.open(ROOT, config(survived))) {
            end = reopened.nextOffset("t", 0);
            assertThat(reopened.minOffset("t", 0)).as("the start, at most the queue's end").isLessThanOrEqualTo(end);
            for (int i = 0; i < 10; i++) {
                reopened.append("t", 0, Message.of(("after-" + i).getBytes(StandardCharsets.UTF_8))).join();
            }
            reopened.sync();
        }
        try (Store again = Store.open(ROOT, config(survived))) {
            assertThat(again.minOffset("t", 0)).as("the records appended after the restart are not deleted")
                    .isLessThanOrEqualTo(end);
            assertThat(readable(again)).isGreaterThanOrEqualTo(10);
        }
    }
}
