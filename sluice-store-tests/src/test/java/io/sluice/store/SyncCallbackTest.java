package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.function.ThrowingSupplier;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Under {@link FlushMode#SYNC}, callbacks attached to an append's future with a non-async stage
 * ({@code thenAccept}, {@code whenComplete}, ...) run where the future completes. If that were the flusher, a
 * callback that appends again and joins would deadlock the store (the flusher waiting for itself), and a slow
 * callback would hold back every other producer's acknowledgement. Acknowledgements complete on the
 * scheduler's acknowledgement thread instead.
 *
 * <p>The segment force is held until the callback is attached, so the future is surely still pending then
 * (a callback attached to a completed future runs on the attaching thread and proves nothing).
 */
@ExtendWith(NoLeaks.class)
class SyncCallbackTest {

    private static final long SEED = 0xCA11_BAC6L;
    private static final String TOPIC = "t";

    @TempDir
    Path dir;

    /** Closed: forces of segment files wait for it (bounded). */
    private volatile CountDownLatch forceGate = new CountDownLatch(0);

    private final HookedFileIO io = new HookedFileIO().hook((op, path) -> {
        if (op == HookedFileIO.Op.FORCE && HookedFileIO.isSegment(path)) {
            HookedFileIO.awaitBounded(forceGate);
        }
    });

    private Store open(WritePath path) {
        return Store.open(dir, TestStores.small(path, FlushMode.SYNC).fileIO(io).build());
    }

    private static Message message(long sequence) {
        return Message.of(TestStores.body(SEED, 0, sequence, 100));
    }

    /** Appends with the segment force held, so the returned future cannot complete before {@code gate} opens. */
    private CompletableFuture<AppendResult> appendHeld(Store store, long sequence, CountDownLatch gate) {
        forceGate = gate;
        return store.append(TOPIC, 0, message(sequence));
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(WritePath.class)
    void aCallbackThatAppendsAndJoinsCompletes(WritePath path) throws Exception {
        try (Store store = open(path)) {
            store.append(TOPIC, 0, message(0)).get(10, TimeUnit.SECONDS);
            AtomicReference<String> callbackThread = new AtomicReference<>();
            AtomicReference<CompletableFuture<AppendResult>> inner = new AtomicReference<>();
            CountDownLatch gate = new CountDownLatch(1);
            CompletableFuture<AppendResult> first = appendHeld(store, 1, gate);
            CompletableFuture<AppendResult> chained = first.thenApply(result -> {
                callbackThread.set(Thread.currentThread().getName());
                CompletableFuture<AppendResult> second = store.append(TOPIC, 0, message(2));
                inner.set(second);
                return second.join();
            });
            assertThat(first).as("setup: the append is pending while its force is held").isNotDone();
            gate.countDown();
            try {
                ThrowingSupplier<AppendResult> join = chained::join;
                AppendResult second = assertTimeoutPreemptively(Duration.ofSeconds(20), join,
                        () -> "a SYNC append's callback that appends again and joins did not complete in 20 s"
                                + " (deadlock); the callback runs on thread '" + callbackThread.get() + "'");
                assertThat(second.firstQueueOffset()).isEqualTo(2);
            } finally {
                // Unblocks a deadlocked flusher so the store can close.
                CompletableFuture<AppendResult> stuck = inner.get();
                if (stuck != null) {
                    stuck.completeExceptionally(new CancellationException("released by the test"));
                }
            }
            assertThat(store.append(TOPIC, 0, message(3))).succeedsWithin(Duration.ofSeconds(10));
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(WritePath.class)
    void aSlowCallbackDoesNotHoldBackOtherProducersAcknowledgements(WritePath path) throws Exception {
        try (Store store = open(path)) {
            store.append(TOPIC, 0, message(0)).get(10, TimeUnit.SECONDS);
            AtomicReference<String> callbackThread = new AtomicReference<>();
            CountDownLatch entered = new CountDownLatch(1);
            CountDownLatch release = new CountDownLatch(1);
            CountDownLatch gate = new CountDownLatch(1);
            CompletableFuture<AppendResult> first = appendHeld(store, 1, gate);
            CompletableFuture<Void> slow = first.thenAccept(result -> {
                callbackThread.set(Thread.currentThread().getName());
                entered.countDown();
                HookedFileIO.awaitBounded(release);
            });
            assertThat(first).as("setup: the append is pending while its force is held").isNotDone();
            gate.countDown();
            try {
                assertThat(entered.await(10, TimeUnit.SECONDS)).as("the first append's callback ran").isTrue();
                CompletableFuture<AppendResult> other = new CompletableFuture<>();
                Thread.ofPlatform().name("other-producer").start(() -> {
                    try {
                        other.complete(store.append("other", 1, message(2)).join());
                    } catch (Throwable e) {
                        other.completeExceptionally(e);
                    }
                });
                assertThat(other).as(() -> "another producer's SYNC append, while the first append's callback is"
                        + " blocked on thread '" + callbackThread.get() + "'").succeedsWithin(Duration.ofSeconds(10));
            } finally {
                release.countDown();
            }
            assertThat(slow).succeedsWithin(Duration.ofSeconds(10));
        }
    }
}
