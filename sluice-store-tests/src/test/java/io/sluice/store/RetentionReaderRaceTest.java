package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Function;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A reader racing retention gets the messages or {@link ReadResult.Status#OFFSET_TOO_SMALL} (a key lookup: the
 * messages still stored), never an exception: index files retention takes out stay mapped while a reader holds
 * them.
 *
 * <p>Deterministic: only the newest segment stays mapped ({@code maxMappedSegments(1)}), so a read of the
 * first segment goes through {@link io.sluice.store.io.StoreFile#read}, where the test pauses the reader
 * while it runs retention passes: one pass (the file is gone from the index the reader walks) and two (the
 * retired file would be unmapped under a reader that still holds it if the store unmapped on a timer).
 */
@ExtendWith(NoLeaks.class)
class RetentionReaderRaceTest {

    private static final long SEED = 0x0DE7_E7E5L;
    private static final String TOPIC = "t";
    private static final String KEY = "k";
    private static final int MESSAGES = 400;
    private static final int BODY = 1000;
    private static final long SEGMENT = 64 * 1024;
    private static final String FIRST_SEGMENT = String.format("%020d", 0);

    @TempDir
    Path dir;

    private final AtomicBoolean armed = new AtomicBoolean();
    private final CountDownLatch paused = new CountDownLatch(1);
    private final CountDownLatch resume = new CountDownLatch(1);

    /** Pauses the first read of the first segment once armed. */
    private final HookedFileIO io = new HookedFileIO().reportDiskUse(0.10).hook((op, path) -> {
        if (op == HookedFileIO.Op.READ && HookedFileIO.isSegment(path)
                && path.getFileName().toString().equals(FIRST_SEGMENT) && armed.compareAndSet(true, false)) {
            paused.countDown();
            HookedFileIO.awaitBounded(resume);
        }
    });

    private StoreConfig config() {
        return TestStores.small(WritePath.CHANNEL, FlushMode.ASYNC)
                .segmentSizeBytes(SEGMENT)
                .queueIndexEntriesPerFile(64)
                .keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(16)
                .maxMappedSegments(1)
                .retention(RetentionPolicy.defaults().withRetentionBytes(3 * SEGMENT).withCheckIntervalMillis(3_600_000))
                .fileIO(io)
                .build();
    }

    private static byte[] body(long offset) {
        return TestStores.body(SEED, 0, offset, BODY);
    }

    /** Appends MESSAGES one-message records, each with the same key, and waits until they are forced. */
    private static void fill(Store store) throws Exception {
        for (int i = 0; i < MESSAGES; i++) {
            store.append(TOPIC, 0, Message.builder().body(body(i)).keys(KEY).build()).get(10, TimeUnit.SECONDS);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (store.status().flushedPosition() < store.status().writePosition() && System.nanoTime() < deadline) {
            LockSupport.parkNanos(5_000_000L);
        }
        assertThat(store.status().flushedPosition()).isEqualTo(store.status().writePosition());
        assertThat(store.status().segmentCount()).as("segments before retention").isGreaterThan(5);
    }

    /**
     * Runs {@code reader} on its own thread, pauses it in its read of the first segment, runs {@code passes}
     * retention passes, lets it go on, and returns what it returned or threw.
     */
    private <T> CompletableFuture<T> raceRetentionPasses(Store store, int passes, Function<Store, T> reader)
            throws Exception {
        CompletableFuture<T> outcome = new CompletableFuture<>();
        armed.set(true);
        Thread thread = Thread.ofPlatform().name("slow-reader").start(() -> {
            try {
                outcome.complete(reader.apply(store));
            } catch (Throwable e) {
                outcome.completeExceptionally(e);
            }
        });
        try {
            assertThat(paused.await(10, TimeUnit.SECONDS)).as("the reader paused in a read of the first segment")
                    .isTrue();
            RetentionReport first = store.enforceRetention();
            assertThat(first.segmentsDeleted()).as("segments the first pass deleted").isPositive();
            for (int pass = 1; pass < passes; pass++) {
                store.enforceRetention();
            }
            assertThat(store.minOffset(TOPIC, 0)).as("first offset still stored").isGreaterThan(64);
        } finally {
            resume.countDown();
        }
        thread.join(TimeUnit.SECONDS.toMillis(10));
        assertThat(outcome).as("reader finished").isDone();
        return outcome;
    }

    /** What a reader saw: the status and the (offset, body) of each message, copied before the result closed. */
    private record Seen(ReadResult.Status status, List<Long> offsets, List<byte[]> bodies) {
    }

    @ParameterizedTest(name = "{0} pass(es)")
    @ValueSource(ints = {1, 2})
    void aQueueReadRacingRetentionGetsMessagesOrOffsetTooSmall(int passes) throws Exception {
        try (Store store = Store.open(dir, config())) {
            fill(store);
            CompletableFuture<Seen> outcome = raceRetentionPasses(store, passes, s -> {
                try (ReadResult read = s.read(TOPIC, 0, 0, MESSAGES, Long.MAX_VALUE)) {
                    List<Long> offsets = new ArrayList<>();
                    List<byte[]> bodies = new ArrayList<>();
                    for (StoredMessage message : read.messages()) {
                        offsets.add(message.queueOffset());
                        bodies.add(message.bodyBytes());
                    }
                    return new Seen(read.status(), offsets, bodies);
                }
            });
            assertThat(outcome).as("a read of offset 0 racing %d retention pass(es)", passes).succeedsWithin(Duration.ZERO)
                    .satisfies(seen -> {
                        assertThat(seen.status()).isIn(ReadResult.Status.FOUND, ReadResult.Status.OFFSET_TOO_SMALL);
                        for (int i = 0; i < seen.offsets().size(); i++) {
                            assertThat(seen.bodies().get(i)).as("body of offset %d", seen.offsets().get(i))
                                    .isEqualTo(body(seen.offsets().get(i)));
                        }
                    });
        }
    }

    @ParameterizedTest(name = "{0} pass(es)")
    @ValueSource(ints = {1, 2})
    void aKeyLookupRacingRetentionNeverTouchesAnUnmappedIndexFile(int passes) throws Exception {
        try (Store store = Store.open(dir, config())) {
            fill(store);
            CompletableFuture<Seen> outcome = raceRetentionPasses(store, passes, s -> {
                try (LookupResult found = s.lookupByKey(TOPIC, KEY, MESSAGES, 0, Long.MAX_VALUE)) {
                    List<Long> offsets = new ArrayList<>();
                    List<byte[]> bodies = new ArrayList<>();
                    for (StoredMessage message : found.messages()) {
                        offsets.add(message.queueOffset());
                        bodies.add(message.bodyBytes());
                    }
                    return new Seen(ReadResult.Status.FOUND, offsets, bodies);
                }
            });
            assertThat(outcome).as("a key lookup racing %d retention pass(es)", passes).succeedsWithin(Duration.ZERO)
                    .satisfies(seen -> {
                        assertThat(seen.offsets()).as("messages found").isNotEmpty();
                        for (int i = 0; i < seen.offsets().size(); i++) {
                            assertThat(seen.bodies().get(i)).as("body of offset %d", seen.offsets().get(i))
                                    .isEqualTo(body(seen.offsets().get(i)));
                        }
                    });
        }
    }
}
