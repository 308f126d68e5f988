package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.stream.Stream;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An append whose record does not fit the current write-buffer page asks the pool for a fresh one; when
 * every page of the pool is pinned by open {@link ReadResult}s, that take fails (after the store's page wait),
 * and the page that was current must not be left behind unsealed. If it were, the flusher would stop
 * committing at it for good: later appends would be acknowledged but never reach the file, a clean close would
 * still write the clean-shutdown marker, and after reopening the acknowledged messages would read back empty
 * or garbled with status FOUND; under SYNC acknowledgements would stop, the flusher spin, and {@code close()}
 * never return.
 *
 * <p>What is asserted (the correct behaviour): the append that cannot get a page fails with a
 * {@link StoreException} and the store stays open; once the pins are released later appends succeed and are
 * acknowledged; {@code close()} returns; after reopening, every acknowledged message is there with its exact
 * bytes, and {@link StoreVerifier} finds no fault.
 *
 * <p>The refused append waits out the store's page wait ({@code writeBufferWaitMillis}, 200 ms here).
 */
@ExtendWith(NoLeaks.class)
class WriteBufferExhaustionTest {

    private static final long SEED = 0x0DEF_EC71L;
    private static final String TOPIC = "wbx";
    private static final int BODY_BYTES = 1000;
    /** Pages of {@link TestStores#small}'s pool (4 of 64 KiB): more appends than that many pages can hold. */
    private static final int MAX_PINNING_APPENDS = 2000;
    /** About one and a half pages: fewer than the pool's pages, so they need no page the old pins held. */
    private static final int LATER_APPENDS = 100;
    /** How long an acknowledgement may take before it counts as never coming. */
    private static final Duration ACK_TIMEOUT = Duration.ofSeconds(20);
    /** How long close() may take before it counts as hung. */
    private static final Duration CLOSE_TIMEOUT = Duration.ofSeconds(30);

    @TempDir
    Path dir;

    static Stream<Arguments> bufferedPaths() {
        return Stream.of(WritePath.WRITE_BUFFER, WritePath.DIRECT)
                .flatMap(path -> Stream.of(FlushMode.values()).map(mode -> Arguments.of(path, mode)));
    }

    /** One segment holds everything, so no segment roll seals a page on the store's behalf. */
    private static StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).segmentSizeBytes(1 << 20).writeBufferWaitMillis(200).build();
    }

    private static byte[] body(long offset) {
        return TestStores.body(SEED, 0, offset, BODY_BYTES);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("bufferedPaths")
    void anAppendThatFindsEveryWriteBufferPagePinnedFailsAndLosesNothing(WritePath path, FlushMode mode)
            throws Throwable {
        pinEveryPageThenAppendAgain(config(path, mode));
    }

    /**
     * The same with segments of one page each: the append refused is the one that rolled to a new segment (its
     * record could not get a page there), so the roll is done but the append is not, and the next append must
     * still land in the new segment.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("bufferedPaths")
    void anAppendRefusedJustAfterItRolledTheSegmentLosesNothing(WritePath path, FlushMode mode) throws Throwable {
        pinEveryPageThenAppendAgain(TestStores.small(path, mode).segmentSizeBytes(StoreConfig.MIN_SEGMENT_SIZE_BYTES)
                .writeBufferWaitMillis(200).build());
    }

    private void pinEveryPageThenAppendAgain(StoreConfig config) throws Throwable {
        List<byte[]> acknowledged = new ArrayList<>(); // index: queue offset
        Store store = Store.open(dir, config);
        closeAfter(store, () -> {
            // Read back every message while its page is the one being filled and keep the results open:
            // each pins its write-buffer page, until an append needs a page and the pool has none.
            List<ReadResult> pins = new ArrayList<>();
            Throwable refused = null;
            try {
                for (int i = 0; i < MAX_PINNING_APPENDS && refused == null; i++) {
                    byte[] body = body(acknowledged.size());
                    Outcome outcome = append(store, body);
                    if (outcome.failure() != null) {
                        refused = outcome.failure();
                        continue;
                    }
                    assertThat(outcome.result().firstQueueOffset()).isEqualTo(acknowledged.size());
                    acknowledged.add(body);
                    ReadResult pin = store.read(TOPIC, 0, outcome.result().firstQueueOffset(), 1, Long.MAX_VALUE);
                    pins.add(pin);
                    assertThat(pin.status()).isEqualTo(ReadResult.Status.FOUND);
                }
            } finally {
                pins.forEach(ReadResult::close);
            }
            assertThat(refused)
                    .as("an append once every write-buffer page was pinned by open read results (%d appends"
                            + " acknowledged)", acknowledged.size())
                    .isInstanceOf(StoreException.class);
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.OPEN);

            // The pins are gone: appends work again, and (SYNC) are acknowledged.
            for (int i = 0; i < LATER_APPENDS; i++) {
                byte[] body = body(acknowledged.size());
                Outcome outcome = append(store, body);
                assertThat(outcome.failure())
                        .as("append %d after the pins were released (offset %d)", i, acknowledged.size())
                        .isNull();
                assertThat(outcome.result().firstQueueOffset()).isEqualTo(acknowledged.size());
                acknowledged.add(body);
            }
        });

        SoftAssertions soft = new SoftAssertions();
        try (Store reopened = Store.open(dir, config)) {
            soft.assertThat(reopened.maxOffset(TOPIC, 0)).as("maxOffset after reopen")
                    .isEqualTo(acknowledged.size());
            List<String> wrong = new ArrayList<>();
            for (int offset = 0; offset < acknowledged.size(); offset++) {
                String problem;
                try (ReadResult result = reopened.read(TOPIC, 0, offset, 1, Long.MAX_VALUE)) {
                    problem = problem(result, offset, acknowledged.get(offset));
                } catch (RuntimeException e) {
                    problem = "offset " + offset + ": read threw " + e;
                }
                if (problem != null) {
                    wrong.add(problem);
                }
            }
            soft.assertThat(wrong.size())
                    .as("acknowledged messages (of %d) that did not read back intact after close and reopen;"
                            + " first: %s", acknowledged.size(), wrong.stream().limit(3).toList())
                    .isZero();
        }
        soft.assertThat(StoreVerifier.verify(dir).faults()).as("verifier faults after reopen").isEmpty();
        soft.assertAll();
    }

    /** @return what is wrong with the read of {@code offset}, or null if it returned exactly {@code expected} */
    private static String problem(ReadResult result, long offset, byte[] expected) {
        if (result.status() != ReadResult.Status.FOUND || result.messages().isEmpty()) {
            return "offset " + offset + ": status " + result.status() + " with " + result.messages().size()
                    + " messages";
        }
        StoredMessage message = result.messages().getFirst();
        byte[] actual = message.bodyBytes();
        if (message.queueOffset() != offset || !java.util.Arrays.equals(actual, expected)) {
            return "offset " + offset + ": status FOUND but got offset " + message.queueOffset() + " with a "
                    + actual.length + "-byte body (crc " + TestStores.crc(actual) + "), expected " + expected.length
                    + " bytes (crc " + TestStores.crc(expected) + ")";
        }
        return null;
    }

    /** An append's acknowledgement or failure. */
    private record Outcome(AppendResult result, Throwable failure) {
    }

    /**
     * Appends and waits for the acknowledgement; a failed append (thrown or through the future) is returned,
     * an acknowledgement that does not come within {@link #ACK_TIMEOUT} fails the test.
     */
    private static Outcome append(Store store, byte[] body) throws InterruptedException {
        CompletableFuture<AppendResult> future;
        try {
            future = store.append(TOPIC, 0, Message.of(body));
        } catch (StoreException e) {
            return new Outcome(null, e);
        }
        try {
            return new Outcome(future.get(ACK_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS), null);
        } catch (ExecutionException e) {
            return new Outcome(null, e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError("append not acknowledged within " + ACK_TIMEOUT + " (store status "
                    + store.status() + ")", e);
        }
    }

    /**
     * Runs {@code body}, then closes the store, failing if {@code close()} does not return within
     * {@link #CLOSE_TIMEOUT}; a close failure is added to the body's failure rather than hiding it.
     */
    private static void closeAfter(Store store, Executable body) throws Throwable {
        Throwable failure = null;
        try {
            body.execute();
        } catch (Throwable t) {
            failure = t;
        }
        try {
            assertTimeoutPreemptively(CLOSE_TIMEOUT, store::close, "close() did not return");
        } catch (Throwable t) {
            if (failure == null) {
                failure = t;
            } else {
                failure.addSuppressed(t);
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
