package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * 8 producer threads append to 4 queues while one reader per queue follows the tail. Every message must
 * be read exactly once, in each producer's order within its queue, with its exact bytes.
 */
@ExtendWith(NoLeaks.class)
class ConcurrencyTest {

    private static final int PRODUCERS = 8;
    private static final int QUEUES = 4;
    private static final int PER_PRODUCER = 1_500;
    private static final long SEED = 20261121L;

    @TempDir
    Path dir;

    static List<org.junit.jupiter.params.provider.Arguments> matrix() {
        return TestStores.matrix();
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("matrix")
    void everyMessageReadExactlyOnceInOrderPerQueue(WritePath path, FlushMode mode) throws Exception {
        System.out.println("ConcurrencyTest seed " + SEED);
        ExecutorService pool = Executors.newFixedThreadPool(PRODUCERS + QUEUES);
        try (Store store = Store.open(dir, TestStores.small(path, mode).build())) {
            AtomicBoolean producing = new AtomicBoolean(true);
            List<Future<List<String>>> readers = new ArrayList<>();
            for (int q = 0; q < QUEUES; q++) {
                int queue = q;
                readers.add(pool.submit(() -> follow(store, queue, producing)));
            }
            List<Future<?>> producers = new ArrayList<>();
            for (int p = 0; p < PRODUCERS; p++) {
                int producer = p;
                producers.add(pool.submit(() -> produce(store, producer)));
            }
            for (Future<?> f : producers) {
                f.get(5, TimeUnit.MINUTES);
            }
            producing.set(false);
            long[] lastSeen = new long[PRODUCERS];
            int total = 0;
            for (int q = 0; q < QUEUES; q++) {
                java.util.Arrays.fill(lastSeen, -1);
                List<String> seen = readers.get(q).get(5, TimeUnit.MINUTES);
                for (String label : seen) {
                    String[] parts = label.split(":");
                    int producer = Integer.parseInt(parts[0]);
                    long sequence = Long.parseLong(parts[1]);
                    assertThat(sequence % QUEUES).isEqualTo(q);
                    assertThat(sequence).as("producer %d order in queue %d", producer, q).isGreaterThan(lastSeen[producer]);
                    lastSeen[producer] = sequence;
                }
                total += seen.size();
                assertThat(seen).doesNotHaveDuplicates();
                assertThat(store.maxOffset("t", q)).isEqualTo(seen.size());
            }
            assertThat(total).isEqualTo(PRODUCERS * PER_PRODUCER);
        } finally {
            pool.shutdownNow();
        }
    }

    private static void produce(Store store, int producer) {
        List<CompletableFuture<AppendResult>> pending = new ArrayList<>();
        for (long i = 0; i < PER_PRODUCER; i++) {
            byte[] body = TestStores.body(SEED, producer, i, 64 + (int) (i % 700));
            pending.add(store.append("t", (int) (i % QUEUES), Message.of(body)));
            if (pending.size() >= 32) {
                pending.forEach(CompletableFuture::join);
                pending.clear();
            }
        }
        pending.forEach(CompletableFuture::join);
    }

    /** Reads the queue until producers stop and the queue is drained; checks every body's bytes. */
    private static List<String> follow(Store store, int queue, AtomicBoolean producing) {
        List<String> seen = new ArrayList<>();
        long offset = 0;
        while (true) {
            boolean stillProducing = producing.get();
            try (ReadResult result = store.read("t", queue, offset, 100, 1 << 20)) {
                for (StoredMessage m : result.messages()) {
                    assertThat(m.queueOffset()).isEqualTo(offset);
                    String label = label(m.bodyBuffer());
                    String[] parts = label.split(":");
                    byte[] expected = TestStores.body(SEED, Integer.parseInt(parts[0]), Long.parseLong(parts[1]),
                            64 + (int) (Long.parseLong(parts[1]) % 700));
                    assertThat(m.bodyBytes()).isEqualTo(expected);
                    seen.add(label);
                    offset++;
                }
                if (result.messages().isEmpty()) {
                    if (!stillProducing) {
                        return seen;
                    }
                    Thread.onSpinWait();
                    Thread.yield();
                }
            }
        }
    }

    private static String label(ByteBuffer body) {
        StringBuilder label = new StringBuilder();
        int colons = 0;
        while (colons < 2) {
            char c = (char) body.get();
            if (c == ':') {
                colons++;
            }
            if (colons < 2) {
                label.append(c);
            }
        }
        return label.toString();
    }
}
