package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * The store keeps at most {@code maxOpenLogs} logs of their own open ({@code StoreConfig.maxOpenLogs}): an idle log
 * closes (forced first) when another must open, and opens again on its next use, so the files and mappings a store
 * holds stay bounded however many partitions it has; a restart after a clean shutdown opens none until used, and one
 * after a crash recovers each with at most the budget open. Files and mappings are counted in {@code /proc/self}.
 */
@ExtendWith(NoLeaks.class)
class OpenLogsTest {

    private static final int BUDGET = 32;

    @TempDir
    Path dir;

    private static StoreConfig.Builder config(WritePath path, FlushMode mode, int budget) {
        return TestStores.small(path, mode).maxOpenLogs(budget).maxQueuesPerTopic(4096);
    }

    private static byte[] body(String topic, int queue, int i) {
        return (topic + "-" + queue + "-" + i + "-" + "x".repeat(queue % 97)).getBytes(StandardCharsets.UTF_8);
    }

    /** @return a Kafka record batch holding {@code body} */
    private static MemorySegment batch(byte[] body) {
        return MemorySegment.ofArray(KafkaBatch.of(1_700_000_000_000L, List.of(body)));
    }

    /** One message to each queue of a QUEUE topic (half of them keyed) and one batch to each of a BATCHES topic. */
    private static void writeOnce(Store store, int queues, Runnable sample) {
        store.createTopic("q", TopicLayout.QUEUE, queues);
        store.createTopic("b", TopicLayout.BATCHES, queues);
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        for (int queue = 0; queue < queues; queue++) {
            Message.Builder message = Message.builder().body(body("q", queue, 0));
            appends.add(store.append("q", queue, (queue % 2 == 0 ? message.keys("key-" + queue) : message).build()));
            appends.add(store.appendOpaque("b", queue, batch(body("b", queue, 0)), 1));
            if (queue % 64 == 0) {
                sample.run();
            }
        }
        appends.forEach(CompletableFuture::join);
    }

    /** Reads every queue back: exactly the message or batch written to it. */
    private static void readBack(Store store, int queues, Runnable sample) {
        for (int queue = 0; queue < queues; queue++) {
            byte[] expected = body("q", queue, 0);
            try (ReadResult read = store.read("q", queue, 0, 10, 1 << 20)) {
                assertThat(read.messages()).as("q-%d", queue).singleElement()
                        .satisfies(m -> assertThat(m.bodyBytes()).isEqualTo(expected));
            }
            try (ReadResult read = store.read("b", queue, 0, 10, 1 << 20)) {
                assertThat(read.messages()).as("b-%d", queue).hasSize(1);
                byte[] stored = read.messages().getFirst().bodyBytes();
                byte[] written = KafkaBatch.of(1_700_000_000_000L, List.of(body("b", queue, 0)));
                // The store sets the baseOffset (0 here, as written): the batch reads back byte for byte.
                assertThat(stored).as("b-%d", queue).isEqualTo(written);
            }
            if (queue % 64 == 0) {
                sample.run();
            }
        }
    }

    /**
     * 2 x 1,024 partitions written once each (the store's budget: 32 logs; fewer under SYNC, where each append waits
     * for its force): the files and mappings the store holds stay at the budget's (one segment and one index file, and
     * a key file, per open log) while writing, reading every record back, and after a clean restart, which opens no
     * log of its own until it is read.
     */
    @ParameterizedTest
    @CsvSource({"MMAP, ASYNC, 1024", "WRITE_BUFFER, SYNC, 256"})
    void thousandsOfLogsWrittenOnceStayUnderTheBudgetAndReadBack(WritePath path, FlushMode mode, int queues)
            throws IOException {
        Peak peak = new Peak(dir);
        try (Store store = Store.open(dir, config(path, mode, BUDGET).build())) {
            writeOnce(store, queues, peak::sample);
            peak.sample();
            // A checkpoint forcing a log uses it meanwhile, and it stays open past the budget until the next open.
            assertThat(store.openLogCount()).isLessThanOrEqualTo(BUDGET + 1);
            assertThat(store.ownLogStatuses()).hasSize(2 * queues)
                    .allSatisfy((name, status) -> assertThat(status.state()).isEqualTo(StoreStatus.State.OPEN));
            assertThat(store.queues("q")).hasSize(queues);
            readBack(store, queues, peak::sample);
            assertThat(store.openLogCount()).isLessThanOrEqualTo(BUDGET + 1);
        }
        System.out.printf("%s %s: %d logs, at most %d files and %d mappings of the store open (budget %d logs)%n",
                path, mode, 2 * queues, peak.files, peak.mappings, BUDGET);
        // A log of its own holds one segment file open and maps it and one index file (a key file too if keyed); the
        // store's own (the shared log's segment, its lock) come on top.
        assertThat(peak.files).as("files open at once").isLessThanOrEqualTo(BUDGET + 8);
        assertThat(peak.mappings).as("mappings at once").isLessThanOrEqualTo(3 * BUDGET + 8);

        Peak afterRestart = new Peak(dir);
        try (Store store = Store.open(dir, config(path, mode, BUDGET).build())) {
            afterRestart.sample();
            int filesAtOpen = afterRestart.files;
            System.out.printf("%s %s: %d files of the store open after a clean restart%n", path, mode, filesAtOpen);
            assertThat(filesAtOpen).as("files open after a clean restart").isLessThanOrEqualTo(4);
            assertThat(store.openLogCount()).isZero();
            assertThat(store.openedClean()).isTrue();
            assertThat(store.recoveryReports()).hasSize(2 * queues + 1)
                    .allSatisfy((name, report) -> assertThat(report.mode()).isEqualTo(RecoveryReport.Mode.CLEAN));
            assertThat(store.ownLogStatuses()).hasSize(2 * queues);
            assertThat(store.topics()).contains("q", "b");
            assertThat(store.queues("b")).hasSize(queues);
            afterRestart.sample();
            assertThat(store.openLogCount()).as("listing topics, queues and statuses opens no log").isZero();
            readBack(store, queues, afterRestart::sample);
            try (LookupResult found = store.lookupByKey("q", "key-100", 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> assertThat(m.queueId()).isEqualTo(100));
            }
        }
        assertThat(afterRestart.files).isLessThanOrEqualTo(BUDGET + 8);
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * A crash (the files as a SIGKILL leaves them: copied while the store was open) with 512 logs: the next open
     * recovers each from its durable position, with at most the budget open at once, and every record is there.
     */
    @Test
    void aRestartAfterACrashRecoversEveryLogWithAtMostTheBudgetOpen() throws Exception {
        int queues = 256;
        Path crashed = Files.createTempDirectory(dir.getParent(), "junit-crash-");
        try {
            try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.ASYNC, BUDGET)
                    .flushIntervalMillis(3_600_000).checkpointIntervalMillis(3_600_000).build())) {
                writeOnce(store, queues, () -> { });
                copy(dir, crashed);
            }
            Peak peak = new Peak(crashed);
            Thread sampler = Thread.ofPlatform().daemon().start(() -> {
                while (!Thread.currentThread().isInterrupted()) {
                    peak.sample();
                }
            });
            try (Store store = Store.open(crashed, config(WritePath.MMAP, FlushMode.ASYNC, BUDGET).build())) {
                sampler.interrupt();
                sampler.join();
                assertThat(store.openedClean()).isFalse();
                assertThat(store.recoveryReports()).hasSize(2 * queues + 1);
                assertThat(store.recoveryReports().get("q/7").mode()).isEqualTo(RecoveryReport.Mode.CRASH);
                assertThat(store.openLogCount()).isLessThanOrEqualTo(BUDGET + 1);
                readBack(store, queues, () -> { });
            }
            System.out.printf("recovery of %d logs: at most %d files open (budget %d logs)%n", 2 * queues, peak.files,
                    BUDGET);
            assertThat(peak.files).as("files open at once during recovery").isLessThanOrEqualTo(BUDGET + 8);
            assertThat(StoreVerifier.verify(crashed).faults()).isEmpty();
        } finally {
            deleteTree(crashed);
        }
    }

    /**
     * A log whose read result is still open is in use: it does not close for another, however small the budget, and
     * its bodies stay readable; once the result closes, the next open closes it. A slice chosen before its log closed
     * is sent whole from the log opened again.
     */
    @Test
    void aResultInUseKeepsItsLogOpenAndASliceSurvivesItsLogClosing() throws IOException {
        // No checkpoint or retention pass meanwhile: each uses the log it visits, which then stays open.
        try (Store store = Store.open(dir, config(WritePath.WRITE_BUFFER, FlushMode.ASYNC, 1)
                .checkpointIntervalMillis(3_600_000)
                .retention(RetentionPolicy.defaults().withCheckIntervalMillis(3_600_000)).build())) {
            store.createTopic("q", TopicLayout.QUEUE, 4);
            store.createTopic("b", TopicLayout.BATCHES, 2);
            store.append("q", 0, Message.of(body("q", 0, 0))).join();
            store.append("q", 1, Message.of(body("q", 1, 0))).join();
            assertThat(store.openLogCount()).isEqualTo(1);
            ReadResult held = store.read("q", 0, 0, 10, 1 << 20); // opens q/0 again, closing q/1
            store.append("q", 2, Message.of(body("q", 2, 0))).join(); // q/0 is in use: both stay open
            assertThat(store.openLogCount()).isEqualTo(2);
            assertThat(held.messages().getFirst().bodyBytes()).isEqualTo(body("q", 0, 0));
            held.close();
            store.append("q", 3, Message.of(body("q", 3, 0))).join();
            assertThat(store.openLogCount()).isEqualTo(1);

            for (int i = 0; i < 20; i++) {
                store.appendOpaque("b", 0, batch(body("b", 0, i)), 1).join();
            }
            ByteArrayOutputStream expected = new ByteArrayOutputStream();
            store.sliceOpaque("b", 0, 0, 1 << 20).transferTo(Channels.newChannel(expected));
            OpaqueSlice slice = store.sliceOpaque("b", 0, 3, 1 << 20);
            store.appendOpaque("b", 1, batch(body("b", 1, 0)), 1).join(); // b/0 closes
            assertThat(openFilesUnder(dir.resolve("logs/b/0"))).as("b/0 closed").isZero();
            ByteArrayOutputStream sent = new ByteArrayOutputStream();
            slice.transferTo(Channels.newChannel(sent));
            assertThat(sent.size()).isEqualTo(slice.bytes());
            byte[] all = expected.toByteArray();
            assertThat(sent.toByteArray()).as("batches 3 to 19, as stored")
                    .isEqualTo(java.util.Arrays.copyOfRange(all, all.length - sent.size(), all.length));
        }
    }

    /**
     * A consumer polling idle partitions opens none of their logs: a closed log cannot change, so reads that find
     * nothing to read in it (at its end, past it, a queue it does not hold) and its offsets are answered from what it
     * held as it closed. A read that finds messages opens it.
     */
    @Test
    void pollingTheEndOfClosedLogsOpensNone() throws IOException {
        java.util.concurrent.atomic.AtomicInteger opens = new java.util.concurrent.atomic.AtomicInteger();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.OPEN && HookedFileIO.isSegment(path) && path.toString().contains("/logs/")) {
                opens.incrementAndGet();
            }
        });
        try (Store store = Store.open(dir, config(WritePath.MMAP, FlushMode.SYNC, 1).fileIO(io).build())) {
            store.createTopic("q", TopicLayout.TOPIC, 2);
            store.createTopic("b", TopicLayout.BATCHES, 2);
            store.append("q", 0, Message.of(body("q", 0, 0))).join();
            for (int i = 0; i < 3; i++) {
                store.appendOpaque("b", 0, batch(body("b", 0, i)), 1).join();
            }
            store.appendOpaque("b", 1, batch(body("b", 1, 0)), 1).join(); // the only log open now
            opens.set(0);
            for (int round = 0; round < 3; round++) {
                assertThat(store.maxOffset("b", 0)).isEqualTo(3);
                assertThat(store.nextOffset("b", 0)).isEqualTo(3);
                assertThat(store.minOffset("b", 0)).isZero();
                try (ReadResult read = store.read("b", 0, 3, 10, 1 << 20)) {
                    assertThat(read.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
                    assertThat(read.nextOffset()).isEqualTo(3);
                }
                try (ReadResult read = store.read("b", 0, 9, 10, 1 << 20)) {
                    assertThat(read.status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
                    assertThat(read.nextOffset()).isEqualTo(3);
                }
                OpaqueSlice slice = store.sliceOpaque("b", 0, 3, 1 << 20);
                assertThat(slice.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
                assertThat(slice.batches()).isZero();
                TransferResult sent = store.transferTo("b", 0, 3, 1 << 20, Channels.newChannel(
                        new ByteArrayOutputStream()));
                assertThat(sent.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
                try (ReadResult read = store.read("q", 1, 0, 10, 1 << 20)) { // a queue the closed TOPIC log lacks
                    assertThat(read.status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
                }
                assertThat(store.maxOffset("q", 0)).isEqualTo(1);
            }
            assertThat(opens.get()).as("logs opened by polling their ends").isZero();
            try (ReadResult read = store.read("b", 0, 1, 10, 1 << 20)) {
                assertThat(read.messages()).hasSize(2);
            }
            assertThat(opens.get()).as("a read that finds messages opens the log").isPositive();
        }
    }

    /**
     * What changes a log works on closed logs as on open ones (the log opens for it): a topic whose logs are closed is
     * deleted and created again empty, a closed BATCHES queue is truncated, a closed queue's records are deleted below
     * an offset; and so it stays after a restart.
     */
    @Test
    void closedLogsAreDeletedTruncatedAndTrimmedAsOpenOnesAre() throws IOException {
        StoreConfig config = config(WritePath.MMAP, FlushMode.SYNC, 1).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("d", TopicLayout.QUEUE, 3);
            store.createTopic("b", TopicLayout.BATCHES, 2);
            for (int queue = 0; queue < 3; queue++) {
                store.append("d", queue, Message.of(body("d", queue, 0))).join();
            }
            for (int i = 0; i < 5; i++) {
                store.appendOpaque("b", 0, batch(body("b", 0, i)), 1).join();
                store.append("d", 1, Message.of(body("d", 1, i + 1))).join();
            }
            store.appendOpaque("b", 1, batch(body("b", 1, 0)), 1).join(); // every other log is closed now
            assertThat(store.openLogCount()).isEqualTo(1);

            assertThat(store.deleteTopic("d")).isTrue();
            assertThat(dir.resolve("logs/d")).doesNotExist();
            store.createTopic("d", TopicLayout.QUEUE, 3);
            assertThat(store.maxOffset("d", 1)).isZero();
            assertThat(store.append("d", 1, Message.of(body("d", 1, 0))).join().firstQueueOffset()).isZero();

            store.appendOpaque("b", 1, batch(body("b", 1, 1)), 1).join(); // b/0 closed
            store.truncateQueue("b", 0, 2);
            assertThat(store.maxOffset("b", 0)).isEqualTo(2);
            store.appendOpaque("b", 1, batch(body("b", 1, 2)), 1).join(); // b/0 closed again
            assertThat(store.deleteRecords("b", 1, 2)).isEqualTo(2);
            store.append("d", 0, Message.of(body("d", 0, 0))).join(); // b/1 closed
            assertThat(store.minOffset("b", 1)).isEqualTo(2);
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("d", 1)).isEqualTo(1);
            assertThat(store.maxOffset("d", 2)).isZero();
            assertThat(store.maxOffset("b", 0)).isEqualTo(2);
            assertThat(store.minOffset("b", 1)).isEqualTo(2);
            assertThat(store.maxOffset("b", 1)).isEqualTo(3);
            try (ReadResult read = store.read("b", 0, 0, 10, 1 << 20)) {
                assertThat(read.messages()).hasSize(2);
            }
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /**
     * Retention passes open a closed log only if they could delete from it: six QUEUE logs, three of several expired
     * segments and three of one, closed; a pass opens the three (and deletes), never the others, and neither does a
     * pass after a clean restart, which knows a log it has not opened by listing its directory.
     */
    @Test
    void retentionOpensOnlyTheClosedLogsItCouldDeleteFrom() throws Exception {
        AtomicLong now = new AtomicLong(1_700_000_000_000L);
        InstantSource clock = () -> Instant.ofEpochMilli(now.get());
        Set<String> opened = ConcurrentHashMap.newKeySet();
        HookedFileIO io = new HookedFileIO().hook((op, path) -> {
            String name = path.toString();
            int at = name.indexOf("/logs/q/");
            if (op == HookedFileIO.Op.OPEN && at >= 0 && HookedFileIO.isSegment(path)) {
                opened.add(name.substring(at + 6, name.indexOf('/', at + 8)));
            }
        });
        StoreConfig config = config(WritePath.MMAP, FlushMode.ASYNC, 2).clock(clock).fileIO(io)
                .retention(RetentionPolicy.defaults().withRetentionHours(24).withCheckIntervalMillis(3_600_000))
                .build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("q", TopicLayout.QUEUE, 6);
            store.createTopic("other", TopicLayout.QUEUE, 2);
            for (int queue = 0; queue < 6; queue++) {
                for (int i = 0; i < (queue < 3 ? 600 : 1); i++) {
                    store.append("q", queue, Message.of(new byte[1000])).join();
                }
            }
            now.addAndGet(25 * 3_600_000L);
            closeQ(store);
            opened.clear();
            RetentionReport report = store.enforceRetention();
            assertThat(report.segmentsDeleted()).isPositive();
            assertThat(opened).as("logs opened by the pass").containsExactlyInAnyOrder("q/0", "q/1", "q/2");
            for (int queue = 0; queue < 3; queue++) {
                assertThat(store.minOffset("q", queue)).as("q/%d", queue).isPositive();
            }
            closeQ(store);
            opened.clear();
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
            assertThat(opened).as("a pass with nothing to delete opens nothing").isEmpty();
        }
        // After a clean restart no log is open: the pass lists the directories of those it has not opened.
        try (Store store = Store.open(dir, config)) {
            store.append("q", 4, Message.of(new byte[1000])).join();
            for (int i = 0; i < 600; i++) {
                store.append("q", 5, Message.of(new byte[1000])).join();
            }
        }
        now.addAndGet(25 * 3_600_000L);
        try (Store store = Store.open(dir, config)) {
            opened.clear();
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            assertThat(opened).as("logs opened by the pass after a restart").containsExactly("q/5");
            assertThat(store.minOffset("q", 5)).isPositive();
            assertThat(store.maxOffset("q", 4)).isEqualTo(2);
        }
    }

    /** Makes the q logs idle and closes them: the budget is 2, and the other topic's two logs open. */
    private static void closeQ(Store store) {
        store.append("other", 0, Message.of(new byte[1])).join();
        store.append("other", 1, Message.of(new byte[1])).join();
        store.append("other", 0, Message.of(new byte[1])).join();
        store.append("other", 1, Message.of(new byte[1])).join();
    }

    private static void copy(Path from, Path to) throws IOException {
        try (Stream<Path> walk = Files.walk(from)) {
            for (Path path : walk.toList()) {
                Path target = to.resolve(from.relativize(path).toString());
                if (Files.isDirectory(path)) {
                    Files.createDirectories(target);
                } else if (!path.getFileName().toString().equals("lock")) {
                    try {
                        Files.copy(path, target);
                    } catch (java.nio.file.NoSuchFileException e) {
                        // a temporary file renamed meanwhile: as a crash could find it
                    }
                }
            }
        }
    }

    private static void deleteTree(Path root) throws IOException {
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(path);
            }
        }
    }

    /** The most files and mappings under a directory seen open at once. */
    static final class Peak {
        private final Path root;
        volatile int files;
        volatile int mappings;

        Peak(Path root) {
            this.root = root;
        }

        synchronized void sample() {
            try {
                files = Math.max(files, openFilesUnder(root));
                mappings = Math.max(mappings, mappingsUnder(root));
            } catch (IOException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** @return the descriptors this process holds on files under {@code root} */
    static int openFilesUnder(Path root) throws IOException {
        String prefix = root.toString();
        AtomicInteger count = new AtomicInteger();
        try (Stream<Path> fds = Files.list(Path.of("/proc/self/fd"))) {
            fds.forEach(fd -> {
                try {
                    if (Files.readSymbolicLink(fd).toString().startsWith(prefix)) {
                        count.incrementAndGet();
                    }
                } catch (IOException e) {
                    // closed while listed
                }
            });
        }
        return count.get();
    }

    /** @return the mappings of files under {@code root} in this process */
    static int mappingsUnder(Path root) throws IOException {
        String prefix = root.toString();
        int count = 0;
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            int slash = line.indexOf('/');
            if (slash >= 0 && line.startsWith(prefix, slash)) {
                count++;
            }
        }
        return count;
    }
}
