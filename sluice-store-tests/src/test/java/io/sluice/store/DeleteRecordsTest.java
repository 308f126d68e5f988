package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.recovery.StoreDirectory;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Records deleted on request (Kafka's DeleteRecords): a queue's first offset raised durably, reads below it finding
 * nothing, retention deleting the segments wholly below it, and a topic deleted and created again starting afresh.
 */
@ExtendWith(NoLeaks.class)
class DeleteRecordsTest {

    @TempDir
    Path dir;

    private StoreConfig config() {
        return builder().build();
    }

    private static StoreConfig.Builder builder() {
        FaultyFileIO io = new FaultyFileIO();
        io.reportDiskUse(0.10);
        return TestStores.small(WritePath.MMAP, FlushMode.SYNC).fileIO(io).maxQueuesPerTopic(8)
                .retention(RetentionPolicy.defaults().withCheckIntervalMillis(3_600_000));
    }

    private static void fill(Store store, TopicLayout layout, String topic, int count) {
        fill(store, layout, topic, count, 1000);
    }

    private static void fill(Store store, TopicLayout layout, String topic, int count, int bytes) {
        for (int i = 0; i < count; i++) {
            if (layout == TopicLayout.BATCHES) {
                store.appendOpaque(topic, 0, MemorySegment.ofArray(KafkaBatch.of(i, List.of(new byte[bytes]))), 1)
                        .join();
            } else {
                store.append(topic, 0, Message.of(new byte[bytes])).join();
            }
        }
    }

    private static ReadResult.Status statusAt(Store store, String topic, long offset) {
        try (ReadResult read = store.read(topic, 0, offset, 1, 1 << 20)) {
            return read.status();
        }
    }

    @ParameterizedTest
    @EnumSource(value = TopicLayout.class, names = {"BATCHES", "QUEUE"})
    void recordsBelowTheNewStartAreGoneForReadersRetentionAndARestart(TopicLayout layout) throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", layout, 1);
            fill(store, layout, "t", 1000); // about four 256 KiB segments
            int segments = store.ownLogStatuses().get("t/0").segmentCount();
            assertThat(store.deleteRecords("t", 0, 600)).isEqualTo(600);
            assertThat(store.minOffset("t", 0)).isEqualTo(600);
            try (ReadResult gone = store.read("t", 0, 10, 1, 1 << 20)) {
                assertThat(gone.status()).isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
                assertThat(gone.nextOffset()).isEqualTo(600);
            }
            assertThat(statusAt(store, "t", 600)).isEqualTo(ReadResult.Status.FOUND);
            assertThat(store.deleteRecords("t", 0, 100)).as("a start never goes down").isEqualTo(600);
            assertThatThrownBy(() -> store.deleteRecords("t", 0, 1001)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("up to 1000");

            RetentionReport report = store.enforceRetention();
            assertThat(report.reason()).isEqualTo("start");
            assertThat(report.segmentsDeleted()).isPositive();
            assertThat(store.ownLogStatuses().get("t/0").segmentCount()).isLessThan(segments);
            assertThat(statusAt(store, "t", 600)).isEqualTo(ReadResult.Status.FOUND);
            assertThat(store.minOffset("t", 0)).isEqualTo(600);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        try (Store store = Store.open(dir, config())) {
            assertThat(store.minOffset("t", 0)).as("kept across a restart").isEqualTo(600);
            assertThat(statusAt(store, "t", 599)).isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
            assertThat(store.deleteRecords("t", 0, 1000)).as("everything").isEqualTo(1000);
            fill(store, layout, "t", 1);
            assertThat(statusAt(store, "t", 1000)).isEqualTo(ReadResult.Status.FOUND);
            assertThat(store.minOffset("t", 0)).isEqualTo(1000);
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.minOffset("t", 0)).isEqualTo(1000);
            store.deleteTopic("t");
            store.createTopic("t", layout, 1);
            fill(store, layout, "t", 3);
            assertThat(store.minOffset("t", 0)).as("a topic created again starts afresh").isZero();
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.minOffset("t", 0)).isZero();
            assertThat(statusAt(store, "t", 0)).isEqualTo(ReadResult.Status.FOUND);
        }
    }

    /** In the shared log a start hides records of its queue only; segments stay while another queue needs them. */
    @Test
    void inTheSharedLogOtherQueuesKeepTheirRecords() throws Exception {
        try (Store store = Store.open(dir, config())) {
            for (int i = 0; i < 600; i++) {
                store.append("a", 0, Message.of(new byte[1000])).join();
                store.append("b", 0, Message.of(new byte[1000])).join();
            }
            assertThat(store.deleteRecords("a", 0, 600)).isEqualTo(600);
            assertThat(store.minOffset("a", 0)).isEqualTo(600);
            store.enforceRetention();
            assertThat(store.minOffset("b", 0)).isZero();
            assertThat(statusAt(store, "b", 0)).isEqualTo(ReadResult.Status.FOUND);
        }
    }

    /** Opens the store as after a crash: without its clean-shutdown marker, so recovery walks the log's tail. */
    private Store openAfterACrash() throws Exception {
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        return Store.open(dir, config());
    }

    /** Appends {@code batches} record batches of {@code records} records each to queue 0; @return the next offset */
    private static long appendBatches(Store store, String topic, int batches, int records) {
        long next = 0;
        for (int i = 0; i < batches; i++) {
            List<byte[]> values = java.util.Collections.nCopies(records, new byte[100]);
            next = store.appendOpaque(topic, 0, MemorySegment.ofArray(KafkaBatch.of(i, values)), records).join()
                    .firstQueueOffset() + records;
        }
        return next;
    }

    private static void assertRecovered(Store store, String log) {
        assertThat(store.recoveryReports().get(log).mode()).as("recovery of " + log)
                .isEqualTo(RecoveryReport.Mode.CRASH);
    }

    /**
     * A retention pass used to take the index files wholly below a raised start out, though their records were still
     * in the log (its segments go only once wholly below the start), and the next checkpoint deleted them: after a
     * crash, recovery met records without entries and rebuilt every index, or found the batch log corrupt.
     */
    @ParameterizedTest
    @EnumSource(value = TopicLayout.class, names = {"BATCHES", "QUEUE"})
    void recordsBelowTheStartKeepTheirIndexEntriesUntilTheirSegmentGoes(TopicLayout layout) throws Exception {
        StoreConfig config = builder().queueIndexEntriesPerFile(64).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("t", layout, 1);
            fill(store, layout, "t", 200, 100); // one segment, four index files
            assertThat(store.deleteRecords("t", 0, 190)).isEqualTo(190);
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
        } // the closing checkpoint deletes what the pass took out
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config)) {
            assertRecovered(store, "t/0");
            assertThat(store.minOffset("t", 0)).isEqualTo(190);
            assertThat(store.maxOffset("t", 0)).isEqualTo(200);
            assertThat(statusAt(store, "t", 190)).isEqualTo(ReadResult.Status.FOUND);
            assertThat(statusAt(store, "t", 189)).isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /** A start inside a batch used to make {@link Store#emptyQueueAt} refuse: it cut at the start, not a batch. */
    @Test
    void aQueueWhoseStartLiesInsideABatchCanBeEmptied() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            appendBatches(store, "t", 10, 3);
            assertThat(store.deleteRecords("t", 0, 4)).isEqualTo(4);
            store.emptyQueueAt("t", 0, 100);
            assertThat(store.minOffset("t", 0)).isEqualTo(100);
            assertThat(store.maxOffset("t", 0)).isEqualTo(100);
        }
        try (Store store = openAfterACrash()) {
            assertRecovered(store, "t/0");
            assertThat(store.minOffset("t", 0)).isEqualTo(100);
            assertThat(appendBatches(store, "t", 1, 3)).isEqualTo(103);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * A queue whose every record was deleted read as empty, so {@link Store#emptyQueueAt} used to cut nothing and
     * start its index again over batches still in the log: the next crash found the log corrupt and refused to open.
     */
    @Test
    void emptyingAQueueWhoseRecordsWereAllDeletedRemovesTheirBatches() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            appendBatches(store, "t", 10, 3);
            assertThat(store.deleteRecords("t", 0, 30)).isEqualTo(30);
            store.emptyQueueAt("t", 0, 50);
            assertThat(appendBatches(store, "t", 2, 3)).isEqualTo(56);
        }
        try (Store store = openAfterACrash()) {
            assertRecovered(store, "t/0");
            assertThat(store.minOffset("t", 0)).isEqualTo(50);
            assertThat(store.maxOffset("t", 0)).isEqualTo(56);
            store.truncateQueue("t", 0, 53);
            assertThat(store.maxOffset("t", 0)).isEqualTo(53);
        }
        try (Store store = openAfterACrash()) {
            assertRecovered(store, "t/0");
            assertThat(store.maxOffset("t", 0)).isEqualTo(53);
            assertThat(statusAt(store, "t", 50)).isEqualTo(ReadResult.Status.FOUND);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * Emptied below its start, a queue takes batches at offsets its log starts still said were deleted: they used to
     * vanish at the next open. The start comes down with the emptying.
     */
    @Test
    void aQueueEmptiedBelowItsStartKeepsWhatIsAppendedNext() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            appendBatches(store, "t", 30, 1);
            assertThat(store.deleteRecords("t", 0, 20)).isEqualTo(20);
            store.emptyQueueAt("t", 0, 5);
            assertThat(store.minOffset("t", 0)).isEqualTo(5);
            assertThat(appendBatches(store, "t", 3, 1)).isEqualTo(8);
        }
        for (boolean crash : new boolean[] {false, true}) {
            try (Store store = crash ? openAfterACrash() : Store.open(dir, config())) {
                assertThat(store.minOffset("t", 0)).as(crash ? "after a crash" : "after a restart").isEqualTo(5);
                assertThat(store.maxOffset("t", 0)).isEqualTo(8);
                assertThat(statusAt(store, "t", 5)).isEqualTo(ReadResult.Status.FOUND);
            }
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * Records deleted up to a segment's start, retention deletes the segments below, and the queue is cut at that
     * start: the log keeps no record, and once the store opens again it has no segment at all, only its position from
     * the checkpoint, as recovery opens it. The verifier used to take such a log for one at position 0 and fault the
     * entries the queue's last index file still holds for the deleted records.
     */
    @Test
    void aLogLeftWithoutAnySegmentVerifiesAndOpens() throws Exception {
        long last;
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            do {
                last = appendBatches(store, "t", 1, 1) - 1; // the batch that rolls the log is the new segment's first
            } while (store.ownLogStatuses().get("t/0").segmentCount() < 2);
            assertThat(store.deleteRecords("t", 0, last)).isEqualTo(last);
            assertThat(store.enforceRetention().reason()).isEqualTo("start");
            store.truncateQueue("t", 0, last);
        }
        try (Store store = Store.open(dir, config())) {
            assertThat(store.ownLogStatuses().get("t/0").segmentCount()).isZero();
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        try (Store store = openAfterACrash()) {
            assertThat(store.minOffset("t", 0)).isEqualTo(last);
            assertThat(store.maxOffset("t", 0)).isEqualTo(last);
            assertThat(appendBatches(store, "t", 1, 1)).isEqualTo(last + 1);
            assertThat(statusAt(store, "t", last)).isEqualTo(ReadResult.Status.FOUND);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /** A damaged log-starts file refuses the open: records it says were deleted must not come back. */
    @Test
    void aDamagedFileRefusesTheOpen() throws Exception {
        try (Store store = Store.open(dir, config())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            fill(store, TopicLayout.BATCHES, "t", 10);
            store.deleteRecords("t", 0, 5);
        }
        byte[] bytes = Files.readAllBytes(dir.resolve("log-starts"));
        bytes[bytes.length - 5] ^= 1;
        Files.write(dir.resolve("log-starts"), bytes);
        assertThatThrownBy(() -> Store.open(dir, config())).isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining("log starts");
    }
}
