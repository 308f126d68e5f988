package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.Channels;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * Logs closing while idle and opening again under concurrent appends, reads, held read results, slices sent after
 * their log closed, key lookups and status calls: a store that keeps two of nine logs open, four threads whose
 * operations are drawn from a seeded generator ({@code -Dsluice.openlogs.seed}, printed). Every read sees exactly what
 * was acknowledged at its offsets, held results stay readable, slices send what was stored, the store never keeps more
 * logs open than the budget and those in use, and afterwards, and after a restart, every acknowledged append is there.
 */
@ExtendWith(NoLeaks.class)
class OpenLogsConcurrencyTest {

    private static final int BUDGET = 2;
    private static final int THREADS = 4;
    private static final int OPERATIONS = 600;
    private static final int HELD = 2;
    private static final List<String> LOGS = List.of("q-0", "q-1", "q-2", "q-3", "q-4", "q-5", "b-0", "b-1", "b-2");

    @TempDir
    Path dir;

    /** What was acknowledged, by log and offset: a message's body, or a batch's bytes as appended. */
    private final Map<String, Map<Long, byte[]>> acknowledged = new ConcurrentHashMap<>();
    /** Keys of acknowledged keyed messages, and where they are. */
    private final Map<String, String> keyed = new ConcurrentHashMap<>();
    private final AtomicInteger mostOpen = new AtomicInteger();

    private static String topic(String log) {
        return log.substring(0, 1);
    }

    private static int queue(String log) {
        return log.charAt(2) - '0';
    }

    @ParameterizedTest
    @CsvSource({"MMAP, SYNC", "WRITE_BUFFER, ASYNC", "CHANNEL, SYNC"})
    void logsCloseAndOpenAgainUnderConcurrentAppendsAndReads(WritePath path, FlushMode mode) throws Exception {
        long seed = Long.getLong("sluice.openlogs.seed", System.nanoTime());
        System.out.println("OpenLogsConcurrencyTest seed " + seed + " (" + path + ", " + mode + ")");
        AtomicInteger segmentOpens = new AtomicInteger();
        HookedFileIO io = new HookedFileIO().hook((op, file) -> {
            if (op == HookedFileIO.Op.OPEN && HookedFileIO.isSegment(file) && file.toString().contains("/logs/")) {
                segmentOpens.incrementAndGet();
            }
        });
        StoreConfig config = TestStores.small(path, mode).maxOpenLogs(BUDGET).fileIO(io).build();
        LOGS.forEach(log -> acknowledged.put(log, new ConcurrentHashMap<>()));
        try (Store store = Store.open(dir, config)) {
            store.createTopic("q", TopicLayout.QUEUE, 6);
            store.createTopic("b", TopicLayout.BATCHES, 3);
            SplittableRandom seeds = new SplittableRandom(seed);
            AtomicReference<Throwable> failure = new AtomicReference<>();
            List<Thread> threads = new ArrayList<>();
            for (int t = 0; t < THREADS; t++) {
                SplittableRandom random = seeds.split();
                int thread = t;
                threads.add(Thread.ofPlatform().start(() -> {
                    try {
                        new Worker(store, random, thread).run();
                    } catch (Throwable e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread thread : threads) {
                thread.join();
            }
            if (failure.get() != null) {
                throw new AssertionError("seed " + seed, failure.get());
            }
            System.out.printf("at most %d logs open at once (budget %d, %d threads holding up to %d results)%n",
                    mostOpen.get(), BUDGET, THREADS, HELD);
            assertThat(mostOpen.get()).as("logs open at once: the budget, and those in use")
                    .isLessThanOrEqualTo(BUDGET + THREADS * (HELD + 1) + 1);
            // Each log's segment is opened as the log is created, and again each time it opens after closing.
            System.out.printf("segment files opened %d times for %d logs%n", segmentOpens.get(), LOGS.size());
            assertThat(segmentOpens.get()).as("logs opened again after closing").isGreaterThan(10 * LOGS.size());
            checkEverything(store, "seed " + seed);
        }
        try (Store store = Store.open(dir, config)) {
            checkEverything(store, "seed " + seed + ", after a restart");
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /** Every log holds exactly what was acknowledged, offsets dense. */
    private void checkEverything(Store store, String label) {
        for (String log : LOGS) {
            Map<Long, byte[]> expected = acknowledged.get(log);
            long max = store.maxOffset(topic(log), queue(log));
            assertThat(max).as(label + ": " + log).isEqualTo(expected.size());
            try (ReadResult read = store.read(topic(log), queue(log), 0, 10_000, 64 << 20)) {
                assertThat(read.messages()).as(label + ": " + log).hasSize(expected.size());
                for (StoredMessage message : read.messages()) {
                    assertThat(same(log, message.bodyBytes(), expected.get(message.queueOffset())))
                            .as(label + ": " + log + " offset " + message.queueOffset()).isTrue();
                }
            }
        }
    }

    /** A batch is compared past its baseOffset, which the store sets. */
    private static boolean same(String log, byte[] stored, byte[] appended) {
        if (appended == null) {
            return false;
        }
        if (topic(log).equals("q")) {
            return Arrays.equals(stored, appended);
        }
        return Arrays.equals(stored, 8, stored.length, appended, 8, appended.length);
    }

    /** One thread's run of operations, each drawn from its generator. */
    private final class Worker {
        private final Store store;
        private final SplittableRandom random;
        private final int thread;
        private final Deque<Held> held = new ArrayDeque<>();
        private int sequence;

        /** A read result kept open across later operations, and what it must still show. */
        private record Held(ReadResult result, String log) {
        }

        Worker(Store store, SplittableRandom random, int thread) {
            this.store = store;
            this.random = random;
            this.thread = thread;
        }

        void run() throws Exception {
            try {
                for (int i = 0; i < OPERATIONS; i++) {
                    int roll = random.nextInt(100);
                    String log = LOGS.get(random.nextInt(LOGS.size()));
                    if (roll < 40) {
                        append(log);
                    } else if (roll < 60) {
                        readAndCheck(log);
                    } else if (roll < 65) {
                        hold(log);
                    } else if (roll < 80) {
                        sliceAcrossOtherLogs();
                    } else if (roll < 85) {
                        lookUpAKey();
                    } else if (roll < 90) {
                        assertThat(store.ownLogStatuses()).hasSizeLessThanOrEqualTo(LOGS.size());
                        assertThat(store.queues("q")).isSubsetOf(0, 1, 2, 3, 4, 5);
                    } else {
                        long acked = acknowledged.get(log).size();
                        assertThat(store.maxOffset(topic(log), queue(log))).as(log).isGreaterThanOrEqualTo(acked);
                    }
                    mostOpen.accumulateAndGet(store.openLogCount(), Math::max);
                }
            } finally {
                while (!held.isEmpty()) {
                    release(held.poll());
                }
            }
        }

        private void append(String log) {
            int i = sequence++;
            byte[] body = ("thread " + thread + " message " + i + " " + "y".repeat(random.nextInt(300)))
                    .getBytes(StandardCharsets.UTF_8);
            if (topic(log).equals("b")) {
                byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, List.of(body));
                AppendResult result = store.appendOpaque("b", queue(log), MemorySegment.ofArray(batch), 1).join();
                acknowledged.get(log).put(result.firstQueueOffset(), batch);
                return;
            }
            String key = "k-" + thread + "-" + i;
            Message.Builder message = Message.builder().body(body);
            boolean withKey = random.nextInt(3) == 0;
            AppendResult result = store.append("q", queue(log), (withKey ? message.keys(key) : message).build()).join();
            acknowledged.get(log).put(result.firstQueueOffset(), body);
            if (withKey) {
                keyed.put(key, log + ":" + result.firstQueueOffset());
            }
        }

        private void readAndCheck(String log) {
            long max = store.maxOffset(topic(log), queue(log));
            long from = max == 0 ? 0 : random.nextLong(max);
            try (ReadResult read = store.read(topic(log), queue(log), from, 20, 1 << 20)) {
                check(read, log, from);
            }
        }

        private void check(ReadResult read, String log, long from) {
            long offset = from;
            for (StoredMessage message : read.messages()) {
                assertThat(message.queueOffset()).as(log + ": dense offsets").isEqualTo(offset++);
                byte[] expected = acknowledged.get(log).get(message.queueOffset());
                if (expected != null) { // else appended by a thread that has not seen its acknowledgement yet
                    assertThat(same(log, message.bodyBytes(), expected)).as(log + " offset " + message.queueOffset())
                            .isTrue();
                }
            }
        }

        private void hold(String log) {
            if (held.size() == HELD) {
                release(held.poll());
            }
            ReadResult result = store.read(topic(log), queue(log), 0, 20, 1 << 20);
            check(result, log, 0);
            held.add(new Held(result, log));
        }

        /** Checks a held result's bodies again (its log may have had to stay open for it), then closes it. */
        private void release(Held kept) {
            try {
                check(kept.result(), kept.log(), 0);
            } finally {
                kept.result().close();
            }
        }

        /** Chooses batches, then appends to other logs (closing the slice's log, perhaps), then sends them. */
        private void sliceAcrossOtherLogs() throws Exception {
            String log = "b-" + random.nextInt(3);
            long max = store.maxOffset("b", queue(log));
            long from = max == 0 ? 0 : random.nextLong(max);
            OpaqueSlice slice = store.sliceOpaque("b", queue(log), from, 1 << 16);
            for (int i = random.nextInt(3); i >= 0; i--) {
                append(LOGS.get(random.nextInt(LOGS.size())));
            }
            ByteArrayOutputStream sent = new ByteArrayOutputStream();
            slice.transferTo(Channels.newChannel(sent));
            assertThat((long) sent.size()).as(log + " slice from " + from).isEqualTo(slice.bytes());
            ByteBuffer batches = ByteBuffer.wrap(sent.toByteArray());
            int count = 0;
            while (batches.hasRemaining()) {
                long baseOffset = batches.getLong(batches.position());
                int length = 12 + batches.getInt(batches.position() + 8);
                byte[] batch = new byte[length];
                batches.get(batch);
                byte[] expected = acknowledged.get(log).get(baseOffset);
                if (expected != null) {
                    assertThat(same(log, batch, expected)).as(log + " batch " + baseOffset + " as sent").isTrue();
                }
                count++;
            }
            assertThat(count).as(log + " batches sent").isEqualTo(slice.batches());
        }

        private void lookUpAKey() {
            List<String> keys = new ArrayList<>(keyed.keySet());
            if (keys.isEmpty()) {
                return;
            }
            String key = keys.get(random.nextInt(keys.size()));
            String where = keyed.get(key);
            try (LookupResult found = store.lookupByKey("q", key, 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).as("key " + key).anySatisfy(m -> assertThat(
                        "q-" + m.queueId() + ":" + m.queueOffset()).isEqualTo(where));
            }
        }
    }
}
