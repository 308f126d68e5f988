package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.Pipe;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;
import java.util.function.BooleanSupplier;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * An interrupt affects only the interrupted call, never the store. {@link FileChannel} is interruptible: a thread
 * whose interrupt flag is set before (or that is interrupted during) a read, write, transferTo or force closes
 * the channel for every thread, so a store doing its I/O through a shared channel would turn read-only after a
 * producer or a consumer was interrupted. Here an interrupted producer (CHANNEL path) and an interrupted
 * consumer in {@code transferTo} (every path, both flush modes) must leave the store open, appending,
 * transferring and durable.
 */
@ExtendWith(NoLeaks.class)
class InterruptedCallerTest {

    private static final long SEED = 0x1A7E_2203L;
    private static final String TOPIC = "t";
    private static final Duration WAIT = Duration.ofSeconds(10);

    @TempDir
    Path dir;

    private final AtomicInteger sinks = new AtomicInteger();

    /** Where a transfer goes. */
    enum Target { PIPE, FILE }

    static List<Arguments> matrixAndTargets() {
        List<Arguments> all = new ArrayList<>();
        for (Arguments pathAndMode : TestStores.matrix()) {
            for (Target target : Target.values()) {
                all.add(Arguments.of(pathAndMode.get()[0], pathAndMode.get()[1], target));
            }
        }
        return all;
    }

    private Path storeDir() {
        return dir.resolve("store");
    }

    private static StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).build();
    }

    private static byte[] body(long sequence) {
        return TestStores.body(SEED, 0, sequence, 200 + (int) (sequence % 5) * 40);
    }

    /** Appends {@code count} messages from this thread, asserting each is acknowledged; records them. */
    private static void appendAcked(SoftAssertions softly, Store store, long first, int count, Map<Long, byte[]> acked) {
        for (long i = first; i < first + count; i++) {
            byte[] body = body(i);
            CompletableFuture<AppendResult> future = store.append(TOPIC, 0, Message.of(body));
            softly.assertThat(future).as("append of message %d from an uninterrupted thread", i).succeedsWithin(WAIT);
            if (future.isDone() && !future.isCompletedExceptionally()) {
                acked.put(future.join().firstQueueOffset(), body);
            }
        }
    }

    /** Waits (bounded) for a condition; returns whether it held. */
    private static boolean awaitCondition(BooleanSupplier condition) {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                return false;
            }
            LockSupport.parkNanos(5_000_000L);
        }
        return true;
    }

    /** ASYNC: waits until the flusher forced everything written, or the store stopped being OPEN. */
    private static void awaitForcedOrBroken(Store store) {
        awaitCondition(() -> {
            StoreStatus status = store.status();
            return status.state() != StoreStatus.State.OPEN || status.flushedPosition() >= status.writePosition();
        });
    }

    private static void verifyAfterReopen(Path directory, WritePath path, FlushMode mode, Map<Long, byte[]> acked) {
        try (Store store = Store.open(directory, config(path, mode))) {
            for (Map.Entry<Long, byte[]> message : acked.entrySet()) {
                try (ReadResult read = store.read(TOPIC, 0, message.getKey(), 1, Long.MAX_VALUE)) {
                    assertThat(read.status()).as("acknowledged offset %d after reopen", message.getKey())
                            .isEqualTo(ReadResult.Status.FOUND);
                    assertThat(read.messages().getFirst().bodyBytes()).isEqualTo(message.getValue());
                }
            }
        }
    }

    @ParameterizedTest(name = "CHANNEL {0}")
    @EnumSource(FlushMode.class)
    void aProducerWithItsInterruptFlagSetDoesNotTurnTheStoreReadOnly(FlushMode mode) throws Exception {
        Map<Long, byte[]> acked = new TreeMap<>();
        SoftAssertions softly = new SoftAssertions();
        try (Store store = Store.open(storeDir(), config(WritePath.CHANNEL, mode))) {
            appendAcked(softly, store, 0, 10, acked);
            CompletableFuture<CompletableFuture<AppendResult>> returned = new CompletableFuture<>();
            byte[] interruptedBody = body(10);
            Thread producer = Thread.ofPlatform().name("interrupted-producer").start(() -> {
                Thread.currentThread().interrupt();
                try {
                    returned.complete(store.append(TOPIC, 0, Message.of(interruptedBody)));
                } catch (Throwable e) {
                    returned.completeExceptionally(e);
                }
            });
            producer.join();
            // The interrupted producer's own append may fail or succeed; if it succeeded it is acknowledged.
            CompletableFuture<AppendResult> own = returned.handle((future, failure) -> future).join();
            if (own != null) {
                own.handle((result, failure) -> result).get(WAIT.toSeconds(), java.util.concurrent.TimeUnit.SECONDS);
                if (!own.isCompletedExceptionally()) {
                    acked.put(own.join().firstQueueOffset(), interruptedBody);
                }
            }

            appendAcked(softly, store, 11, 20, acked);
            if (mode == FlushMode.ASYNC) {
                awaitForcedOrBroken(store);
            }
            StoreStatus status = store.status();
            softly.assertThat(status.state()).as("store state after a producer's interrupted append (reason: %s)",
                    status.reason()).isEqualTo(StoreStatus.State.OPEN);
        }
        softly.assertAll();
        verifyAfterReopen(storeDir(), WritePath.CHANNEL, mode, acked);
    }

    @ParameterizedTest(name = "{0} {1} into a {2}")
    @MethodSource("matrixAndTargets")
    void aConsumerInterruptedInTransferToDoesNotBreakTheStore(WritePath path, FlushMode mode, Target target)
            throws Exception {
        Map<Long, byte[]> acked = new TreeMap<>();
        SoftAssertions softly = new SoftAssertions();
        // No read cache, and a write-buffer page's worth of other messages after the queue's, so that the
        // queue's records are only in the segment file and every transfer of them goes by sendfile.
        try (Store store = Store.open(storeDir(), TestStores.small(path, mode).cacheBytes(0).build())) {
            appendAcked(softly, store, 0, 20, acked);
            for (int i = 0; i < 80; i++) {
                store.append("filler", 0, Message.of(TestStores.body(SEED, 1, i, 1000))).join();
            }
            softly.assertAll();
            assertThat(awaitCondition(() -> store.status().committedPosition() >= store.status().writePosition()))
                    .as("records committed to the segment file").isTrue();

            CompletableFuture<TransferResult> interrupted = new CompletableFuture<>();
            Thread consumer = Thread.ofPlatform().name("interrupted-consumer").start(() -> {
                try (Sink sink = openSink(target)) {
                    Thread.currentThread().interrupt();
                    interrupted.complete(store.transferTo(TOPIC, 0, 0, 16 * 1024, sink.channel()));
                } catch (Throwable e) {
                    interrupted.completeExceptionally(e);
                }
            });
            consumer.join();
            // The interrupted call itself may throw: that is allowed. Everything else must keep working.

            appendAcked(softly, store, 20, 20, acked);
            if (mode == FlushMode.ASYNC) {
                awaitForcedOrBroken(store);
            }
            StoreStatus status = store.status();
            softly.assertThat(status.state()).as("store state after a consumer's interrupted transferTo (reason: %s)",
                    status.reason()).isEqualTo(StoreStatus.State.OPEN);
            for (long from : new long[] {0, 20}) {
                try (Sink sink = openSink(target)) {
                    TransferResult result = store.transferTo(TOPIC, 0, from, 16 * 1024, sink.channel());
                    softly.assertThat(result.status()).as("transfer from %d", from).isEqualTo(ReadResult.Status.FOUND);
                    softly.assertThat(sink.received()).as("bytes received from the transfer from %d", from)
                            .isEqualTo(result.bytes()).isPositive();
                } catch (RuntimeException e) {
                    softly.fail("transfer from offset " + from + " by an uninterrupted thread failed after another"
                            + " thread's interrupted transfer (interrupted call's own outcome: "
                            + describe(interrupted) + ")", e);
                }
            }
        }
        softly.assertAll();
        verifyAfterReopen(storeDir(), path, mode, acked);
    }

    private static String describe(CompletableFuture<TransferResult> outcome) {
        return outcome.handle((result, failure) -> {
            if (failure == null) {
                return String.valueOf(result);
            }
            Throwable e = failure instanceof java.util.concurrent.CompletionException ? failure.getCause() : failure;
            return e + (e.getCause() != null ? " caused by " + e.getCause() : "");
        }).join();
    }

    /** A transfer target that counts what it received. */
    private interface Sink extends AutoCloseable {
        WritableByteChannel channel();

        long received() throws IOException;

        @Override
        void close() throws IOException;
    }

    private Sink openSink(Target target) throws IOException {
        return switch (target) {
            case PIPE -> {
                Pipe pipe = Pipe.open();
                pipe.source().configureBlocking(false);
                yield new Sink() {
                    @Override
                    public WritableByteChannel channel() {
                        return pipe.sink();
                    }

                    @Override
                    public long received() throws IOException {
                        ByteArrayOutputStream out = new ByteArrayOutputStream();
                        ByteBuffer buffer = ByteBuffer.allocate(8192);
                        while (pipe.source().read(buffer.clear()) > 0) {
                            out.write(buffer.array(), 0, buffer.position());
                        }
                        return out.size();
                    }

                    @Override
                    public void close() throws IOException {
                        try {
                            pipe.sink().close();
                        } finally {
                            pipe.source().close();
                        }
                    }
                };
            }
            case FILE -> {
                FileChannel file = FileChannel.open(dir.resolve("transfer-" + sinks.incrementAndGet()),
                        StandardOpenOption.CREATE_NEW, StandardOpenOption.READ, StandardOpenOption.WRITE);
                yield new Sink() {
                    @Override
                    public WritableByteChannel channel() {
                        return file;
                    }

                    @Override
                    public long received() throws IOException {
                        return file.size();
                    }

                    @Override
                    public void close() throws IOException {
                        file.close();
                    }
                };
            }
        };
    }
}
