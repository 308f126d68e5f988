package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.assertj.core.api.SoftAssertions;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Position and offset arguments are checked without overflow, and a refused read leaves no pin behind. A check
 * like {@code logPosition + FILLER_BYTES > limit} wraps negative near {@link Long#MAX_VALUE} and lets an
 * unreadable position through to the log read; on the WRITE_BUFFER and DIRECT paths such a read pins a
 * write-buffer (or read-cache) page and then fails, and enough bad calls would starve the write-buffer pool.
 *
 * <p>What is asserted: every unreadable {@code readAt} position (near {@link Long#MAX_VALUE}, negative, just
 * past the end, inside a record) is refused with {@link IllegalArgumentException} on every write path and flush
 * mode, with or without a live write-buffer page; thousands of refused calls leak nothing (appends needing every
 * pool page still succeed and the store stays open); and every other offset, time and byte-count argument is
 * safe at its extremes: {@link IllegalArgumentException} for invalid values, {@code OFFSET_OVERFLOW} /
 * {@code NO_NEW_MESSAGES} for offsets past the end, sane answers otherwise.
 */
@ExtendWith(NoLeaks.class)
class PositionOverflowTest {

    private static final long SEED = 0x0F10_F10FL;
    private static final String TOPIC = "ovf";
    private static final int BODY_BYTES = 1000;
    /** {@link TestStores#small}'s write-buffer pool: 4 pages of 64 KiB. */
    private static final int POOL_PAGES = 4;
    private static final int MESSAGES_PER_PAGE = 60;
    private static final long ACK_TIMEOUT_SECONDS = 60;

    @TempDir
    Path dir;

    private static byte[] body(long offset) {
        return TestStores.body(SEED, 0, offset, BODY_BYTES);
    }

    private static AppendResult append(Store store, Message message) throws Exception {
        return store.append(TOPIC, 0, message).get(ACK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("io.sluice.store.TestStores#matrix")
    void readAtRefusesEveryUnreadablePositionWithIllegalArgumentException(WritePath path, FlushMode mode)
            throws Exception {
        StoreConfig config = TestStores.small(path, mode).build();
        SoftAssertions soft = new SoftAssertions();
        AppendResult last = null;
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 40; i++) {
                last = append(store, Message.of(body(i)));
            }
            probeReadAt(soft, store, last, "with a live write-buffer page");
        }
        // Reopened and nothing appended: no write-buffer page is live, reads go to the read cache or the file.
        try (Store store = Store.open(dir, config)) {
            try (ReadResult warm = store.read(TOPIC, 0, 0, 100, Long.MAX_VALUE)) {
                assertThat(warm.messages()).hasSize(40);
            }
            probeReadAt(soft, store, last, "after reopening");
        }
        soft.assertAll();
    }

    private static void probeReadAt(SoftAssertions soft, Store store, AppendResult last, String when) {
        long end = store.status().writePosition();
        assertThat(end).isEqualTo(last.logPosition() + last.recordBytes());
        long[] positions = {
            Long.MAX_VALUE, Long.MAX_VALUE - 1, Long.MAX_VALUE - 10, Long.MAX_VALUE - 23, Long.MAX_VALUE - 24,
            Long.MIN_VALUE, Long.MIN_VALUE + 1, -1, -24,
            end, end + 1, end + 4096, end - 1, last.logPosition() + 1,
        };
        for (long position : positions) {
            soft.assertThatThrownBy(() -> store.readAt(position).close())
                    .as("readAt(%d) %s (log end %d)", position, when, end)
                    .isInstanceOf(IllegalArgumentException.class);
        }
        soft.assertThat(store.status().state()).as("state after the bad readAt calls %s", when)
                .isEqualTo(StoreStatus.State.OPEN);
        soft.assertThatCode(() -> {
            try (ReadResult good = store.readAt(last.logPosition())) {
                assertThat(good.messages()).hasSize(1);
                assertThat(good.messages().getFirst().bodyBytes()).isEqualTo(body(last.firstQueueOffset()));
            }
        }).as("readAt of the last record %s", when).doesNotThrowAnyException();
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"WRITE_BUFFER", "DIRECT"})
    void thousandsOfRefusedReadAtCallsLeakNoWriteBufferPage(WritePath path) throws Exception {
        // One segment holds everything: the pool pages, not segment rolls, are what is under test.
        StoreConfig config = TestStores.small(path, FlushMode.ASYNC).segmentSizeBytes(4 << 20).build();
        long[] bad = {Long.MAX_VALUE, Long.MAX_VALUE - 10, Long.MIN_VALUE, -1};
        List<String> thrown = new ArrayList<>();
        try (Store store = Store.open(dir, config)) {
            long offset = 0;
            int badCalls = 0;
            // Quarter pages of appends, each followed by bad calls, over twice the pool's pages.
            for (int round = 0; round < 8 * POOL_PAGES; round++) {
                for (int i = 0; i < MESSAGES_PER_PAGE / 4; i++) {
                    offset = appendOrFail(store, offset, "round " + round + " after " + badCalls + " bad readAt calls");
                }
                long end = store.status().writePosition();
                for (int k = 0; k < 50; k++) {
                    for (long position : withEnd(bad, end)) {
                        badCalls++;
                        try {
                            store.readAt(position).close();
                            thrown.add("readAt(" + position + ") returned");
                        } catch (RuntimeException e) {
                            if (!(e instanceof IllegalArgumentException) && thrown.size() < 5) {
                                thrown.add("readAt(" + position + ") threw " + e);
                            }
                        }
                    }
                }
            }
            // Appends that need every page of the pool, twice over.
            for (int i = 0; i < 2 * POOL_PAGES * MESSAGES_PER_PAGE; i++) {
                offset = appendOrFail(store, offset, "after " + badCalls + " bad readAt calls");
            }
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.OPEN);
            try (ReadResult all = store.read(TOPIC, 0, 0, Integer.MAX_VALUE, Long.MAX_VALUE)) {
                assertThat(all.messages()).hasSize((int) offset);
            }
        }
        // Reported too, though the leak is what this test is about.
        assertThat(thrown).as("bad readAt calls that did not throw IllegalArgumentException").isEmpty();
    }

    private static long[] withEnd(long[] bad, long end) {
        long[] all = java.util.Arrays.copyOf(bad, bad.length + 2);
        all[bad.length] = end;
        all[bad.length + 1] = end + 1;
        return all;
    }

    private static long appendOrFail(Store store, long offset, String when) throws InterruptedException {
        CompletableFuture<AppendResult> future = store.append(TOPIC, 0, Message.of(body(offset)));
        try {
            AppendResult result = future.get(ACK_TIMEOUT_SECONDS, TimeUnit.SECONDS);
            assertThat(result.firstQueueOffset()).isEqualTo(offset);
            return offset + 1;
        } catch (ExecutionException e) {
            throw new AssertionError("append of offset " + offset + " failed " + when + ": " + e.getCause()
                    + " (store status " + store.status().state() + ")", e.getCause());
        } catch (TimeoutException e) {
            throw new AssertionError("append of offset " + offset + " not acknowledged within "
                    + ACK_TIMEOUT_SECONDS + " s " + when, e);
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("io.sluice.store.TestStores#matrix")
    void everyOtherOffsetTimeAndByteCountArgumentIsSafeAtItsExtremes(WritePath path, FlushMode mode)
            throws Exception {
        StoreConfig config = TestStores.small(path, mode).build();
        int count = 20;
        SoftAssertions soft = new SoftAssertions();
        try (Store store = Store.open(dir, config)) {
            long recordBytes = 0;
            int keyed = 0;
            for (int i = 0; i < count; i++) {
                Message.Builder message = Message.builder().body(body(i));
                if (i % 3 == 0) {
                    message.keys("k");
                    keyed++;
                }
                recordBytes += append(store, message.build()).recordBytes();
            }
            long totalRecordBytes = recordBytes;
            int keyedMessages = keyed;

            // read
            probe(soft, "read(fromOffset=MAX, maxBytes=MAX)", () -> {
                try (ReadResult r = store.read(TOPIC, 0, Long.MAX_VALUE, 10, Long.MAX_VALUE)) {
                    assertThat(r.status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
                    assertThat(r.messages()).isEmpty();
                    assertThat(r.nextOffset()).isEqualTo(count);
                }
            });
            probe(soft, "read(fromOffset=MAX-1, maxMessages=Integer.MAX, maxBytes=MAX)", () -> {
                try (ReadResult r = store.read(TOPIC, 0, Long.MAX_VALUE - 1, Integer.MAX_VALUE, Long.MAX_VALUE)) {
                    assertThat(r.status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
                    assertThat(r.nextOffset()).isEqualTo(count);
                }
            });
            probe(soft, "read(fromOffset=end, maxBytes=MAX)", () -> {
                try (ReadResult r = store.read(TOPIC, 0, count, 10, Long.MAX_VALUE)) {
                    assertThat(r.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
                    assertThat(r.nextOffset()).isEqualTo(count);
                }
            });
            probe(soft, "read(fromOffset=0, maxMessages=Integer.MAX, maxBytes=MAX)", () -> {
                try (ReadResult r = store.read(TOPIC, 0, 0, Integer.MAX_VALUE, Long.MAX_VALUE)) {
                    assertThat(r.status()).isEqualTo(ReadResult.Status.FOUND);
                    assertThat(r.messages()).hasSize(count);
                    assertThat(r.nextOffset()).isEqualTo(count);
                }
            });
            probe(soft, "read(unknown queue, fromOffset=MAX)", () -> {
                try (ReadResult r = store.read(TOPIC, 7, Long.MAX_VALUE, 10, Long.MAX_VALUE)) {
                    assertThat(r.status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
                }
            });
            refused(soft, "read(fromOffset=MIN)", () -> store.read(TOPIC, 0, Long.MIN_VALUE, 10, 1).close());
            refused(soft, "read(fromOffset=-1)", () -> store.read(TOPIC, 0, -1, 10, 1).close());
            refused(soft, "read(maxBytes=MIN)", () -> store.read(TOPIC, 0, 0, 10, Long.MIN_VALUE).close());

            // transferTo
            probe(soft, "transferTo(fromOffset=MAX, maxBytes=MAX)", () -> {
                ByteArrayOutputStream sink = new ByteArrayOutputStream();
                TransferResult r = store.transferTo(TOPIC, 0, Long.MAX_VALUE, Long.MAX_VALUE, Channels.newChannel(sink));
                assertThat(r.status()).isEqualTo(ReadResult.Status.OFFSET_OVERFLOW);
                assertThat(r.nextOffset()).isEqualTo(count);
                assertThat(r.bytes()).isZero();
                assertThat(sink.size()).isZero();
            });
            probe(soft, "transferTo(fromOffset=end, maxBytes=MAX)", () -> {
                TransferResult r = store.transferTo(TOPIC, 0, count, Long.MAX_VALUE, sinkChannel());
                assertThat(r.status()).isEqualTo(ReadResult.Status.NO_NEW_MESSAGES);
                assertThat(r.nextOffset()).isEqualTo(count);
            });
            probe(soft, "transferTo(fromOffset=0, maxBytes=MAX)", () -> {
                ByteArrayOutputStream sink = new ByteArrayOutputStream();
                TransferResult r = store.transferTo(TOPIC, 0, 0, Long.MAX_VALUE, Channels.newChannel(sink));
                assertThat(r.status()).isEqualTo(ReadResult.Status.FOUND);
                assertThat(r.records()).isEqualTo(count);
                assertThat(r.nextOffset()).isEqualTo(count);
                assertThat(r.bytes()).isEqualTo(totalRecordBytes);
                assertThat((long) sink.size()).isEqualTo(totalRecordBytes);
            });
            refused(soft, "transferTo(fromOffset=MIN)",
                    () -> store.transferTo(TOPIC, 0, Long.MIN_VALUE, Long.MAX_VALUE, sinkChannel()));
            refused(soft, "transferTo(maxBytes=MIN)",
                    () -> store.transferTo(TOPIC, 0, 0, Long.MIN_VALUE, sinkChannel()));

            // offsetForTimestamp
            probe(soft, "offsetForTimestamp(MAX)",
                    () -> assertThat(store.offsetForTimestamp(TOPIC, 0, Long.MAX_VALUE)).isEqualTo(count));
            probe(soft, "offsetForTimestamp(MIN)",
                    () -> assertThat(store.offsetForTimestamp(TOPIC, 0, Long.MIN_VALUE)).isZero());
            probe(soft, "offsetForTimestamp(unknown queue, MAX)",
                    () -> assertThat(store.offsetForTimestamp(TOPIC, 7, Long.MAX_VALUE)).isZero());

            // lookupByKey
            probe(soft, "lookupByKey(from=0, to=MAX)", () -> {
                try (LookupResult r = store.lookupByKey(TOPIC, "k", Integer.MAX_VALUE, 0, Long.MAX_VALUE)) {
                    assertThat(r.messages()).hasSize(keyedMessages);
                }
            });
            probe(soft, "lookupByKey(from=MAX, to=MAX)", () -> {
                try (LookupResult r = store.lookupByKey(TOPIC, "k", 10, Long.MAX_VALUE, Long.MAX_VALUE)) {
                    assertThat(r.messages()).isEmpty();
                }
            });
            refused(soft, "lookupByKey(from=MIN, to=MAX)",
                    () -> store.lookupByKey(TOPIC, "k", 10, Long.MIN_VALUE, Long.MAX_VALUE).close());
            refused(soft, "lookupByKey(from=0, to=MIN)",
                    () -> store.lookupByKey(TOPIC, "k", 10, 0, Long.MIN_VALUE).close());

            // commitOffset: any offset >= 0 is a position; it must survive retention and a restart.
            probe(soft, "commitOffset(MAX)", () -> {
                store.commitOffset("g", TOPIC, 0, Long.MAX_VALUE);
                assertThat(store.committedOffset("g", TOPIC, 0)).hasValue(Long.MAX_VALUE);
                store.enforceRetention();
            });
            refused(soft, "commitOffset(MIN)", () -> store.commitOffset("g2", TOPIC, 0, Long.MIN_VALUE));
            refused(soft, "commitOffset(-1)", () -> store.commitOffset("g2", TOPIC, 0, -1));

            soft.assertThat(store.status().state()).as("state after the probes").isEqualTo(StoreStatus.State.OPEN);
            // Nothing pinned for good: appends needing every write-buffer page still succeed.
            for (int i = count; i < count + 2 * POOL_PAGES * MESSAGES_PER_PAGE; i++) {
                appendOrFail(store, i, "after the probes");
            }
        }
        try (Store store = Store.open(dir, config)) {
            soft.assertThat(store.committedOffset("g", TOPIC, 0)).as("commitOffset(MAX) after reopen")
                    .hasValue(Long.MAX_VALUE);
            soft.assertThat(store.committedOffset("g2", TOPIC, 0)).as("refused commitOffset after reopen").isEmpty();
        }
        soft.assertAll();
    }

    private static WritableByteChannel sinkChannel() {
        return Channels.newChannel(new ByteArrayOutputStream());
    }

    private static void probe(SoftAssertions soft, String call, ThrowingCallable body) {
        soft.assertThatCode(body).as(call).doesNotThrowAnyException();
    }

    private static void refused(SoftAssertions soft, String call, ThrowingCallable body) {
        soft.assertThatThrownBy(body).as(call).isInstanceOf(IllegalArgumentException.class);
    }
}
