package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A topic's layout takes effect only once the registry that records it is durable. {@code createTopic} saves the
 * {@code topics} file (temp file {@code topics.tmp}, force, rename, directory sync) before anything is routed by
 * the new layout. If the save fails before the rename, the topic stays SHARED in memory and on disk, and every
 * acknowledged append of it is readable, before and after reopening. If it fails after the rename (the
 * directory sync), the file on disk may hold either registry: the store turns read-only rather than append
 * where a restart might not look, and nothing acknowledged is lost.
 */
@ExtendWith(NoLeaks.class)
class TopicRegistrySaveTest {

    private static final long SEED = 0x7091_C5L;
    private static final String TOPIC = "t";
    private static final String REGISTRY_TEMP = "topics.tmp";

    @TempDir
    Path dir;

    private final HookedFileIO io = new HookedFileIO();

    private static StoreConfig config(FileIO fileIO) {
        return TestStores.small(WritePath.MMAP, FlushMode.SYNC).fileIO(fileIO).build();
    }

    private static byte[] body(int queueId, long sequence) {
        return TestStores.body(SEED, queueId, sequence, 300);
    }

    /** The step of the registry save that fails. */
    enum FailingStep { WRITE, FORCE, DIRECTORY_SYNC }

    static List<Arguments> layoutsAndSteps() {
        List<Arguments> all = new ArrayList<>();
        for (TopicLayout layout : new TopicLayout[] {TopicLayout.TOPIC, TopicLayout.QUEUE}) {
            for (FailingStep step : new FailingStep[] {FailingStep.WRITE, FailingStep.FORCE}) {
                all.add(Arguments.of(layout, step));
            }
        }
        return all;
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TopicLayout.class, names = {"TOPIC", "QUEUE"})
    void aRegistrySaveThatFailsAfterItsRenameTurnsTheStoreReadOnlyAndLosesNothing(TopicLayout layout)
            throws Exception {
        Map<String, byte[]> acked = new TreeMap<>();
        try (Store store = Store.open(dir, config(io))) {
            for (int i = 0; i < 4; i++) {
                byte[] body = body(0, i);
                acked.put("0@" + store.append(TOPIC, 0, Message.of(body)).get(10, TimeUnit.SECONDS).firstQueueOffset(),
                        body);
            }
            failRegistrySave(FailingStep.DIRECTORY_SYNC);
            assertThatThrownBy(() -> store.createTopic("other", layout)).isInstanceOf(StoreException.class)
                    .hasMessageContaining("read-only");
            io.hook((op, path) -> { });
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.READ_ONLY);
            assertThat(store.append(TOPIC, 0, Message.of(body(0, 99)))).failsWithin(Duration.ofSeconds(10));
            assertReadable(store, acked, "after the failed save");
        }
        try (Store store = Store.open(dir, config(io))) {
            assertReadable(store, acked, "after reopening");
            assertThat(store.layout("other")).isIn(TopicLayout.SHARED, layout);
        }
    }

    /** Fails the chosen step of the next registry save (the directory sync is the one after topics.tmp's force). */
    private void failRegistrySave(FailingStep step) {
        AtomicBoolean tempForced = new AtomicBoolean();
        io.hook((op, path) -> {
            boolean registryTemp = path.getFileName().toString().equals(REGISTRY_TEMP);
            if (registryTemp && op == HookedFileIO.Op.WRITE && step == FailingStep.WRITE) {
                throw new IOException("Input/output error (injected) writing " + path);
            }
            if (registryTemp && op == HookedFileIO.Op.FORCE) {
                if (step == FailingStep.FORCE) {
                    throw new IOException("Input/output error (injected) forcing " + path);
                }
                tempForced.set(true);
            }
            if (op == HookedFileIO.Op.SYNC_DIRECTORY && path.equals(dir) && step == FailingStep.DIRECTORY_SYNC
                    && tempForced.compareAndSet(true, false)) {
                throw new IOException("Input/output error (injected) syncing directory " + path);
            }
        });
    }

    private static void assertReadable(Store store, Map<String, byte[]> acked, String when) {
        for (Map.Entry<String, byte[]> message : acked.entrySet()) {
            String[] queueAndOffset = message.getKey().split("@");
            int queueId = Integer.parseInt(queueAndOffset[0]);
            long offset = Long.parseLong(queueAndOffset[1]);
            try (ReadResult read = store.read(TOPIC, queueId, offset, 1, Long.MAX_VALUE)) {
                assertThat(read.status()).as("acknowledged %s-%d offset %d %s (layout %s)", TOPIC, queueId, offset,
                        when, store.layout(TOPIC)).isEqualTo(ReadResult.Status.FOUND);
                assertThat(read.messages().getFirst().bodyBytes()).isEqualTo(message.getValue());
            }
        }
    }

    @ParameterizedTest(name = "{0}, {1} fails")
    @MethodSource("layoutsAndSteps")
    void aFailedRegistrySaveLeavesTheTopicSharedAndItsAppendsReadable(TopicLayout layout, FailingStep step)
            throws Exception {
        Map<String, byte[]> acked = new TreeMap<>();
        try (Store store = Store.open(dir, config(io))) {
            failRegistrySave(step);
            assertThatThrownBy(() -> store.createTopic(TOPIC, layout)).isInstanceOf(StoreException.class);
            io.hook((op, path) -> { });
            assertThat(store.layout(TOPIC)).as("layout after the failed createTopic").isEqualTo(TopicLayout.SHARED);
            for (int i = 0; i < 6; i++) {
                int queueId = i % 2;
                byte[] body = body(queueId, i);
                AppendResult result = store.append(TOPIC, queueId, Message.of(body)).get(10, TimeUnit.SECONDS);
                acked.put(queueId + "@" + result.firstQueueOffset(), body);
            }
            assertReadable(store, acked, "before reopening");
        }
        try (Store store = Store.open(dir, config(io))) {
            assertReadable(store, acked, "after reopening");
            // The queues go on where they were: new appends follow the acknowledged ones, which stay readable.
            for (int queueId = 0; queueId < 2; queueId++) {
                byte[] body = body(queueId, 100);
                AppendResult result = store.append(TOPIC, queueId, Message.of(body)).get(10, TimeUnit.SECONDS);
                assertThat(result.firstQueueOffset()).as("offset of a new append to %s-%d after reopening (layout %s)",
                        TOPIC, queueId, store.layout(TOPIC)).isEqualTo(3);
                acked.put(queueId + "@" + result.firstQueueOffset(), body);
            }
            assertReadable(store, acked, "after reopening and appending again");
            assertThat(store.layout(TOPIC)).as("layout after reopening").isEqualTo(TopicLayout.SHARED);
        }
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(value = TopicLayout.class, names = {"TOPIC", "QUEUE"})
    void anAppendRacingAFailingRegistrySaveIsNotLeftInALogTheRegistryDoesNotKnow(TopicLayout layout)
            throws Exception {
        CountDownLatch saveInFlight = new CountDownLatch(1);
        CountDownLatch failSave = new CountDownLatch(1);
        Map<String, byte[]> acked = new TreeMap<>();
        try (Store store = Store.open(dir, config(io))) {
            store.append("warm", 0, Message.of(body(9, 0))).get(10, TimeUnit.SECONDS);
            io.hook((op, path) -> {
                if (op == HookedFileIO.Op.FORCE && path.getFileName().toString().equals(REGISTRY_TEMP)) {
                    saveInFlight.countDown();
                    HookedFileIO.awaitBounded(failSave);
                    throw new IOException("Input/output error (injected) forcing " + path);
                }
            });
            CompletableFuture<Void> created = new CompletableFuture<>();
            Thread.ofPlatform().name("create-topic").start(() -> {
                try {
                    store.createTopic(TOPIC, layout);
                    created.complete(null);
                } catch (Throwable e) {
                    created.completeExceptionally(e);
                }
            });
            assertThat(saveInFlight.await(10, TimeUnit.SECONDS)).as("the registry save started").isTrue();

            byte[] body = body(0, 0);
            CompletableFuture<AppendResult> appended = new CompletableFuture<>();
            Thread appender = Thread.ofPlatform().name("appender").start(() -> {
                try {
                    appended.complete(store.append(TOPIC, 0, Message.of(body)).join());
                } catch (Throwable e) {
                    appended.completeExceptionally(e);
                }
            });
            // Let the append go as far as it can while the save is in flight: done, or waiting for something.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
            while (!appended.isDone() && System.nanoTime() < deadline
                    && appender.getState() != Thread.State.BLOCKED && appender.getState() != Thread.State.WAITING
                    && appender.getState() != Thread.State.TIMED_WAITING) {
                LockSupport.parkNanos(1_000_000L);
            }
            boolean ackedDuringSave = appended.isDone() && !appended.isCompletedExceptionally();
            failSave.countDown();

            assertThat(created).as("createTopic whose registry save failed").failsWithin(Duration.ofSeconds(10));
            io.hook((op, path) -> { });
            appended.handle((result, failure) -> null).get(10, TimeUnit.SECONDS);
            if (!appended.isCompletedExceptionally()) {
                acked.put("0@" + appended.join().firstQueueOffset(), body);
            }
            assertThat(store.layout(TOPIC)).as("layout after the failed createTopic").isEqualTo(TopicLayout.SHARED);
            assertReadable(store, acked, "before reopening (acknowledged " + (ackedDuringSave ? "during" : "after")
                    + " the failing save; logs/" + TOPIC + " exists: "
                    + java.nio.file.Files.exists(dir.resolve("logs").resolve(TOPIC)) + ")");
        }
        try (Store store = Store.open(dir, config(io))) {
            assertReadable(store, acked, "after reopening");
            assertThat(store.layout(TOPIC)).as("layout after reopening").isEqualTo(TopicLayout.SHARED);
        }
    }
}
