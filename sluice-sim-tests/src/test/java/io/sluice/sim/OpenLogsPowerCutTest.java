package io.sluice.sim;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
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
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * A power cut at every file system operation of a run that closes an idle log and opens another at every step (a
 * store that keeps one log of its own open, five logs written in turn and read in between), under each crash model,
 * on a store that forces each append (SYNC) and on one that forces nothing by itself (ASYNC). After the cut the store
 * opens without rebuilding any index, the verifier finds nothing wrong, and every queue holds a prefix of what was
 * appended to it, message for message, that covers every acknowledged append and, whatever the flush mode, every
 * append made before its log closed while idle: a log is forced whole before it closes.
 */
class OpenLogsPowerCutTest {

    private static final Path ROOT = Path.of("/sim/open-logs");
    /** The logs of their own written in turn: a QUEUE topic's three queues and a BATCHES topic's two. */
    private static final List<String> LOGS = List.of("q/0", "q/1", "q/2", "k/0", "k/1");
    private static final int STEPS = 8;

    enum Model {
        LOSE_ALL(CrashModel.LOSE_ALL), KEEP_ALL(CrashModel.KEEP_ALL), UNIFORM(CrashModel.UNIFORM),
        HOLE(CrashModel.HOLE), MOSTLY_KEPT(CrashModel.MOSTLY_KEPT);

        final CrashModel model;

        Model(CrashModel model) {
            this.model = model;
        }
    }

    private final SimClock clock = new SimClock(1_700_000_000_000L);

    /** Logs of their own start with a 64 KiB segment and grow to 256 KiB: an idle one holds one segment file. */
    private StoreConfig config(SimFileSystem fs, ManualScheduler scheduler, FlushMode mode) {
        return StoreConfig.builder().segmentSizeBytes(4 * StoreConfig.MIN_SEGMENT_SIZE_BYTES)
                .writePath(mode == FlushMode.SYNC ? WritePath.MMAP : WritePath.WRITE_BUFFER).flushMode(mode)
                .maxMessageBytes(4096).writeBufferBytes(16 * 1024).queueIndexEntriesPerFile(64).keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64).flushIntervalMillis(1_000_000).commitIntervalMillis(1_000_000)
                .checkpointIntervalMillis(1_000_000).maxOpenLogs(1).fileIO(fs).scheduler(scheduler).clock(clock)
                .build();
    }

    private static String topic(String log) {
        return log.substring(0, 1);
    }

    private static int queue(String log) {
        return log.charAt(2) - '0';
    }

    /** @return the bytes appended as message {@code i} of a log: a message body, or a Kafka batch holding it */
    private static byte[] appended(String log, int i) {
        byte[] body = (log + " message " + i + " " + "x".repeat(i * 37 % 700)).getBytes(StandardCharsets.UTF_8);
        return topic(log).equals("k") ? KafkaBatch.of(1_700_000_000_000L + i, List.of(body)) : body;
    }

    /**
     * The topics, each log holding its first message, closed cleanly (so all of it is durable): the run under the cut
     * then closes and opens logs that exist, rather than create them.
     */
    private SimFileSystem created(FlushMode mode) {
        SimFileSystem fs = new SimFileSystem();
        ManualScheduler scheduler = new ManualScheduler(clock);
        Store store = Store.open(ROOT, config(fs, scheduler, mode));
        store.createTopic("q", TopicLayout.QUEUE, 3);
        store.createTopic("k", TopicLayout.BATCHES, 2);
        for (String log : LOGS) {
            append(store, log, 0);
            scheduler.settle(new SplittableRandom(1), 100);
        }
        store.close();
        return fs;
    }

    private static CompletableFuture<AppendResult> append(Store store, String log, int i) {
        return topic(log).equals("k")
                ? store.appendOpaque("k", queue(log), MemorySegment.ofArray(appended(log, i)), 1)
                : store.append("q", queue(log), io.sluice.store.Message.of(appended(log, i)));
    }

    /** What the run did to each log: appended (in order), and how many of those must survive any cut. */
    private static final class Expected {
        final Map<String, Integer> appended = new LinkedHashMap<>();
        final Map<String, Integer> mustSurvive = new LinkedHashMap<>();

        Expected() {
            for (String log : LOGS) {
                appended.put(log, 1);
                mustSurvive.put(log, 1);
            }
        }

        /** Every log but {@code open} is closed now, so forced whole: all of it must survive. */
        void closedAllBut(String open) {
            for (String log : LOGS) {
                if (!log.equals(open)) {
                    mustSurvive.put(log, appended.get(log));
                }
            }
        }
    }

    /**
     * Appends to each log in turn and reads the one before in between, each call opening the log it needs and closing
     * the one that was open; stops at the cut. Once a call that needed a log returns with one log open, every other
     * one was closed, so forced whole.
     */
    private static void run(Store store, ManualScheduler scheduler, SimFileSystem fs, FlushMode mode,
                            Expected expected) {
        SplittableRandom random = new SplittableRandom(7);
        for (int step = 0; step < STEPS && fs.afterPowerCut() == null; step++) {
            String log = LOGS.get(step % LOGS.size());
            int i = expected.appended.get(log);
            expected.appended.put(log, i + 1);
            CompletableFuture<AppendResult> append = append(store, log, i);
            if (store.openLogCount() == 1) {
                expected.closedAllBut(log);
            }
            scheduler.runAll(random); // a SYNC append's force and acknowledgement; no timer (retention's) runs
            if (mode == FlushMode.SYNC && append.isDone() && !append.isCompletedExceptionally()) {
                expected.mustSurvive.merge(log, i + 1, Math::max); // acknowledged: forced
            }
            // The log appended to before this one: it opens again as this one closes.
            String other = LOGS.get((step + LOGS.size() - 1) % LOGS.size());
            try (ReadResult read = store.read(topic(other), queue(other), 0, 1000, 1 << 20)) {
                assertThat(read.messages()).hasSize(expected.appended.get(other));
            }
            if (store.openLogCount() == 1) {
                expected.closedAllBut(other);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(Model.class)
    void aPowerCutAtEveryStepOfClosingAndOpeningLogsLosesNothingForced(Model model) throws IOException {
        for (FlushMode mode : FlushMode.values()) {
            int cuts = 0;
            for (int at = 1; ; at++) {
                SimFileSystem fs = created(mode);
                ManualScheduler scheduler = new ManualScheduler(clock);
                Store store = Store.open(ROOT, config(fs, scheduler, mode));
                Expected expected = new Expected();
                fs.armPowerCut(at, new SplittableRandom(at), model.model);
                try {
                    run(store, scheduler, fs, mode, expected);
                } catch (RuntimeException e) {
                    if (fs.afterPowerCut() == null) {
                        throw e;
                    }
                }
                SimFileSystem after = fs.afterPowerCut();
                boolean finished = after == null;
                if (finished) {
                    fs.disarmPowerCut();
                    after = fs.crash(new SplittableRandom(at), model.model);
                } else {
                    cuts++;
                }
                scheduler.discardAll();
                closeQuietly(store);
                check(after, mode, expected, mode + ", cut at operation " + at + ", " + model);
                fs.release();
                after.release();
                if (finished) {
                    break;
                }
            }
            System.out.printf("%s, %s: %d cuts%n", model, mode, cuts);
            assertThat(cuts).as("operations of a run of %d closes and opens, each cut once (%s)", 2 * STEPS, mode)
                    .isGreaterThan(4 * STEPS);
        }
    }

    private void check(SimFileSystem fs, FlushMode mode, Expected expected, String where) throws IOException {
        assertThat(StoreVerifier.verify(ROOT, fs).faults()).as(where + ": what the cut left verifies").isEmpty();
        Store store = Store.open(ROOT, config(fs, new ManualScheduler(clock), mode));
        try {
            assertThat(store.recoveryReports()).as(where).allSatisfy((log, report) ->
                    assertThat(report.mode()).as(where + ": " + log).isNotEqualTo(RecoveryReport.Mode.REBUILD));
            for (String log : LOGS) {
                List<byte[]> stored = new ArrayList<>();
                try (ReadResult read = store.read(topic(log), queue(log), 0, 1000, 1 << 20)) {
                    for (StoredMessage message : read.messages()) {
                        stored.add(message.bodyBytes());
                    }
                }
                String about = where + ": " + log + " holds " + stored.size() + " of " + expected.appended.get(log)
                        + " appended, " + expected.mustSurvive.get(log) + " of them acknowledged or forced as it closed";
                assertThat(stored.size()).as(about).isBetween(expected.mustSurvive.get(log),
                        expected.appended.get(log));
                for (int i = 0; i < stored.size(); i++) {
                    assertThat(sameRecord(log, stored.get(i), appended(log, i))).as(about + ", message " + i).isTrue();
                }
            }
        } finally {
            closeQuietly(store);
        }
    }

    /** A batch is compared past its baseOffset, which the store sets. */
    private static boolean sameRecord(String log, byte[] stored, byte[] appended) {
        if (!topic(log).equals("k")) {
            return Arrays.equals(stored, appended);
        }
        return stored.length == appended.length
                && Arrays.equals(stored, 8, stored.length, appended, 8, appended.length);
    }

    private static void closeQuietly(Store store) {
        try {
            store.close();
        } catch (RuntimeException e) {
            // the file system may be gone
        }
    }
}
