package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.RecoveryReport;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A power cut at every file system operation of a record deletion ({@code Store.deleteRecords}, which saves the
 * {@code log-starts} file), in a queue of its own, inside a batch of a BATCHES queue and in the shared log, under each
 * crash model: after it the store opens, the queue starts at its old first offset or its new one (the new for certain
 * if the call returned), every other queue keeps its start, and every record from each queue's start on is there
 * with its bytes. The store then deletes again over what the cut left (a leftover temporary file, say), and that
 * survives a second cut. Beside them, a case the simulation found: a start left above a queue's end by a cut.
 */
class LogStartsPowerCutTest {

    private static final Path ROOT = Path.of("/sim/starts");
    private static final int MESSAGES = 20;
    private static final int BATCHES = 10;
    private static final int BATCH_RECORDS = 3;

    enum Model {
        LOSE_ALL(CrashModel.LOSE_ALL), KEEP_ALL(CrashModel.KEEP_ALL), UNIFORM(CrashModel.UNIFORM),
        HOLE(CrashModel.HOLE), MOSTLY_KEPT(CrashModel.MOSTLY_KEPT);

        final CrashModel model;

        Model(CrashModel model) {
            this.model = model;
        }
    }

    /** The deletion under the cut: a queue, the start it had, and the one asked for. */
    enum Deletion {
        /** Queue 0 of "orders", a QUEUE topic: a log of its own. */
        OWN_LOG("orders", 0, 12),
        /** The BATCHES topic's queue, its new start inside a batch of three records. */
        INSIDE_A_BATCH("batches", 0, 7),
        /** Every record of a queue of the shared log, which another queue shares. */
        SHARED_LOG("shared", 0, MESSAGES);

        final String topic;
        final int queue;
        final long start;

        Deletion(String topic, int queue, long start) {
            this.topic = topic;
            this.queue = queue;
            this.start = start;
        }

        String queueName() {
            return topic + "-" + queue;
        }
    }

    static Stream<Arguments> cases() {
        return Stream.of(Model.values()).flatMap(model -> Stream.of(Deletion.values())
                .map(deletion -> Arguments.of(model, deletion)));
    }

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, FlushMode mode) {
        return StoreConfig.builder().segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES).writePath(WritePath.MMAP)
                .flushMode(mode).maxMessageBytes(4096).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000).flushDirtyBytes(1 << 30)
                .checkpointIntervalMillis(1_000_000).fileIO(fs).scheduler(scheduler).clock(clock).build();
    }

    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler) {
        return config(fs, scheduler, FlushMode.SYNC);
    }

    private static void settle(ManualScheduler scheduler) {
        scheduler.settle(new SplittableRandom(1), 100);
    }

    /** @return the bytes the store holds for batch {@code i} of the BATCHES topic: its base offset set */
    private static byte[] storedBatch(int i) {
        List<byte[]> values = new ArrayList<>();
        for (int r = 0; r < BATCH_RECORDS; r++) {
            values.add(("batches-" + i + "-" + r).getBytes(StandardCharsets.UTF_8));
        }
        byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, values);
        ByteBuffer.wrap(batch).putLong(0, (long) i * BATCH_RECORDS);
        return batch;
    }

    /** @return what each queue holds from offset 0: one text per offset, a batch's text at each of its offsets */
    private static Map<String, List<String>> expected() {
        Map<String, List<String>> queues = new TreeMap<>();
        for (String queue : List.of("orders-0", "orders-1", "shared-0", "shared-1")) {
            List<String> bodies = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                bodies.add(queue + "-" + i);
            }
            queues.put(queue, bodies);
        }
        List<String> batches = new ArrayList<>();
        for (int i = 0; i < BATCHES * BATCH_RECORDS; i++) {
            batches.add(describe(storedBatch(i / BATCH_RECORDS)));
        }
        queues.put("batches-0", batches);
        return queues;
    }

    private static String describe(byte[] body) {
        return body.length > 40 ? "batch " + java.util.HexFormat.of().formatHex(body) : new String(body,
                StandardCharsets.UTF_8);
    }

    /**
     * "orders" (QUEUE, 2 queues), "shared" (the shared log, 2 queues) and "batches" (BATCHES, batches of three
     * records), every record durable; orders-1 starts at 5 (the file names a queue beside the one deleted from).
     */
    private SimFileSystem populated() {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        store.createTopic("orders", TopicLayout.QUEUE, 2, Map.of());
        store.createTopic("batches", TopicLayout.BATCHES, 1, Map.of());
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        for (int i = 0; i < MESSAGES; i++) {
            for (int queue = 0; queue < 2; queue++) {
                appends.add(store.append("orders", queue, Message.of(("orders-" + queue + "-" + i)
                        .getBytes(StandardCharsets.UTF_8))));
                appends.add(store.append("shared", queue, Message.of(("shared-" + queue + "-" + i)
                        .getBytes(StandardCharsets.UTF_8))));
            }
        }
        for (int i = 0; i < BATCHES; i++) {
            byte[] batch = storedBatch(i);
            appends.add(store.appendOpaque("batches", 0, MemorySegment.ofArray(batch), BATCH_RECORDS));
        }
        settle(scheduler);
        appends.forEach(append -> assertThat(append).isCompleted());
        assertThat(store.deleteRecords("orders", 1, 5)).isEqualTo(5);
        store.close();
        return fs;
    }

    /** @return the first offset each queue must start at, with {@code deleted} starting at {@code start} */
    private static Map<String, Long> starts(Deletion deleted, long start) {
        Map<String, Long> starts = new TreeMap<>(Map.of("orders-0", 0L, "orders-1", 5L, "shared-0", 0L,
                "shared-1", 0L, "batches-0", 0L));
        starts.put(deleted.queueName(), start);
        return starts;
    }

    /** Every queue starts where {@code starts} says and holds every record from there on, with its bytes. */
    private static void assertHolds(Store store, Map<String, Long> starts, String where) {
        Map<String, List<String>> expected = expected();
        starts.forEach((queue, start) -> {
            String topic = queue.substring(0, queue.lastIndexOf('-'));
            int queueId = Integer.parseInt(queue.substring(topic.length() + 1));
            List<String> all = expected.get(queue);
            assertThat(store.minOffset(topic, queueId)).as(where + ": first offset of " + queue).isEqualTo(start);
            assertThat(store.maxOffset(topic, queueId)).as(where + ": end of " + queue).isEqualTo(all.size());
            List<String> found = new ArrayList<>();
            long offset = start;
            while (offset < all.size()) {
                try (ReadResult read = store.read(topic, queueId, offset, 1000, 1 << 20)) {
                    assertThat(read.messages()).as(where + ": " + queue + " at " + offset).isNotEmpty();
                    for (StoredMessage message : read.messages()) {
                        int count = message.opaque() ? message.opaqueCount() : 1;
                        for (long at = Math.max(offset, message.queueOffset()); at < message.queueOffset() + count;
                             at++) {
                            found.add(describe(message.bodyBytes()));
                        }
                        offset = message.queueOffset() + count;
                    }
                }
            }
            assertThat(found).as(where + ": records of " + queue).isEqualTo(all.subList(start.intValue(), all.size()));
            if (start > 0) {
                try (ReadResult below = store.read(topic, queueId, start - 1, 10, 1 << 20)) {
                    assertThat(below.status()).as(where + ": " + queue + " below its start")
                            .isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
                }
            }
        });
    }

    @ParameterizedTest
    @MethodSource("cases")
    void aPowerCutAtEveryStepOfARecordDeletionLeavesTheOldStartOrTheNew(Model model, Deletion deletion) {
        int cuts = 0;
        for (int at = 1; ; at++) {
            SimFileSystem fs = populated();
            ManualScheduler scheduler = new ManualScheduler(clock);
            Store store = Store.open(ROOT, config(fs, scheduler));
            fs.armPowerCut(at, new SplittableRandom(at), model.model);
            boolean returned = false;
            try {
                assertThat(store.deleteRecords(deletion.topic, deletion.queue, deletion.start))
                        .isEqualTo(deletion.start);
                returned = true;
            } catch (RuntimeException e) {
                assertThat(fs.afterPowerCut()).as("a deletion fails only for the cut").isNotNull();
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
            checkAfterCut(survived, deletion, returned, "cut at operation " + at + ", " + model + ", " + deletion);
            fs.release();
            survived.release();
            if (!struck) {
                // A save: open, write, force, close, rename, directory sync.
                assertThat(cuts).as("operations a record deletion performs, each cut once").isGreaterThanOrEqualTo(5);
                return;
            }
        }
    }

    /**
     * Opens what the cut left and checks it; then deletes further over what the cut left and cuts once more, keeping
     * only what was forced: the second deletion is what opens.
     */
    private void checkAfterCut(SimFileSystem fs, Deletion deletion, boolean returned, String where) {
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        SimFileSystem second = null;
        try {
            long found = store.minOffset(deletion.topic, deletion.queue);
            if (returned) {
                assertThat(found).as(where + ": a deletion that returned is durable").isEqualTo(deletion.start);
            } else {
                assertThat(found).as(where + ": the old start or the new").isIn(0L, deletion.start);
            }
            assertHolds(store, starts(deletion, found), where);
            long further = Math.min(deletion.start + 2, expected().get(deletion.queueName()).size());
            assertThat(store.deleteRecords(deletion.topic, deletion.queue, further)).isEqualTo(further);
            second = fs.crash(new SplittableRandom(1), CrashModel.LOSE_ALL);
            scheduler.discardAll();
            closeQuietly(store);
            store = Store.open(ROOT, config(second, new ManualScheduler(clock)));
            assertHolds(store, starts(deletion, further), where + ", then a deletion and a second cut");
            store.close();
            assertThat(StoreVerifier.verify(ROOT, second).faults()).as(where).isEmpty();
        } catch (IOException e) {
            throw new AssertionError(where + ": the verifier could not read the store", e);
        } finally {
            closeQuietly(store);
            if (second != null) {
                second.release();
            }
        }
    }

    /**
     * ASYNC: records acknowledged but never forced are deleted, durably, and the power is cut with nothing forced
     * since. The deletion forced the records first, so the queue still ends at its start and the records appended
     * next are read there. (Before deleteRecords forced them, the cut took the records and left the start above the
     * queue's end; a queue of 3 durable records then opened as empty.)
     */
    @Test
    void recordsDeletedBeforeTheyWereForcedAreForcedFirstSoTheQueueNeverEndsBelowItsStart() throws IOException {
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
            assertThat(end).as("the records deleted were forced before their start was saved").isEqualTo(10);
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

    /**
     * Records deleted up to a new segment's first, retention deletes the segment below at once, before any checkpoint
     * forced the index entries of its last records; the power is cut, and the deletion's name change survives while
     * those entries do not (a file system that commits names before it writes pages back). The index then ended
     * below the log's first record: recovery rebuilt every index. A segment now goes only once the entries that
     * lead into it are durable.
     */
    @Test
    void retentionDeletesASegmentOnlyOnceTheIndexEntriesOfItsRecordsAreDurable() throws IOException {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler));
        SimFileSystem cut = null;
        try {
            store.createTopic("orders", TopicLayout.QUEUE, 1, Map.of());
            appendUntilRolled(store, scheduler, 10);
            store.close(); // a checkpoint claims the first ten
            store = Store.open(ROOT, config(fs, scheduler = new ManualScheduler(clock)));
            long first = appendUntilRolled(store, scheduler, Long.MAX_VALUE) - 1; // the new segment's first record
            assertThat(store.deleteRecords("orders", 0, first)).isEqualTo(first);
            assertThat(store.enforceRetention().reason()).isEqualTo("start");
            cut = fs.crash(new SplittableRandom(1), new CrashModel("names kept, pages lost", 0, 1, 0, true, false));
            scheduler.discardAll();
            closeQuietly(store);
            store = Store.open(ROOT, config(cut, new ManualScheduler(clock)));
            assertThat(store.recoveryReports().get("orders/0").mode()).isEqualTo(RecoveryReport.Mode.CRASH);
            assertThat(store.minOffset("orders", 0)).isEqualTo(first);
            assertThat(store.maxOffset("orders", 0)).isEqualTo(first + 1);
            store.close();
            assertThat(StoreVerifier.verify(ROOT, cut).faults()).isEmpty();
        } finally {
            closeQuietly(store);
            fs.release();
            if (cut != null) {
                cut.release();
            }
        }
    }

    /**
     * Appends 500-byte messages to orders-0, each acknowledged (forced) before the next, no checkpoint between, until
     * {@code count} were appended or the log rolled to a new segment (whose first message is then the last appended).
     *
     * @return the queue's next offset
     */
    private static long appendUntilRolled(Store store, ManualScheduler scheduler, long count) {
        long next = 0;
        for (long i = 0; i < count; i++) {
            CompletableFuture<AppendResult> append = store.append("orders", 0, Message.of(new byte[500]));
            scheduler.runAll(new SplittableRandom(i)); // forced and acknowledged; no timer (no checkpoint) runs
            assertThat(append).isCompleted();
            next = append.join().firstQueueOffset() + 1;
            if (store.ownLogStatuses().get("orders/0").segmentCount() > 1) {
                break;
            }
        }
        return next;
    }

    private static void closeQuietly(Store store) {
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system may be gone
        }
    }
}
