package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * SYNC appends waiting on many logs at once are made durable by one sync of the file system
 * ({@link StoreConfig#forceTogether()}), not by a force per log; a failed sync acknowledges none of them.
 *
 * <p>Each case holds the force of queue 0's log while appends to the other queues arrive, so that the next round
 * certainly finds them all waiting.
 */
@ExtendWith(NoLeaks.class)
class ForceTogetherTest {

    private static final int QUEUES = 8;
    private static final String FIRST_SEGMENT = String.format("%020d", 0);

    @TempDir
    Path dir;

    /** What the file seam saw, and the hold on queue 0's next force. */
    private final Queue<Path> forcedSegments = new ConcurrentLinkedQueue<>();
    private final AtomicInteger fileSystemSyncs = new AtomicInteger();
    private final AtomicBoolean holdNextForce = new AtomicBoolean();
    private final CountDownLatch forcing = new CountDownLatch(1);
    private final CountDownLatch release = new CountDownLatch(1);
    private volatile IOException failSync;

    private HookedFileIO io() {
        return new HookedFileIO().hook((op, path) -> {
            if (op == HookedFileIO.Op.FORCE && HookedFileIO.isSegment(path)) {
                forcedSegments.add(path);
                if (queueOf(path) == 0 && path.getFileName().toString().equals(FIRST_SEGMENT)
                        && holdNextForce.compareAndSet(true, false)) {
                    forcing.countDown();
                    HookedFileIO.awaitBounded(release);
                }
            } else if (op == HookedFileIO.Op.SYNC_FILE_SYSTEM) {
                fileSystemSyncs.incrementAndGet();
                IOException failure = failSync;
                if (failure != null) {
                    throw failure;
                }
            }
        });
    }

    /** @return the queue whose log holds the segment at {@code path} */
    private static int queueOf(Path path) {
        return Integer.parseInt(path.getParent().getParent().getFileName().toString());
    }

    /** @return how many of queues 1 and up had their first segment forced by a force of its own */
    private int othersForcedAlone() {
        return (int) forcedSegments.stream()
                .filter(path -> path.getFileName().toString().equals(FIRST_SEGMENT) && queueOf(path) != 0)
                .map(ForceTogetherTest::queueOf).distinct().count();
    }

    private static StoreConfig.Builder config(WritePath path, HookedFileIO io) {
        return TestStores.small(path, FlushMode.SYNC).fileIO(io).checkpointIntervalMillis(3_600_000).forceTogether(true);
    }

    private static Message message(int queue) {
        return Message.of(new byte[] {(byte) queue, 7});
    }

    /**
     * Opens every queue's log with an append each, then holds queue 0's next force and appends to every other queue
     * meanwhile. @return queue 0's append (first), then the others'
     */
    private List<CompletableFuture<AppendResult>> appendWhileQueue0Forces(Store store, boolean together) {
        store.createTopic("t", TopicLayout.QUEUE, QUEUES);
        for (int queue = 0; queue < QUEUES; queue++) {
            store.append("t", queue, message(queue)).join();
        }
        forcedSegments.clear();
        fileSystemSyncs.set(0);
        holdNextForce.set(true);
        List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
        try {
            appends.add(store.append("t", 0, message(0)));
            HookedFileIO.awaitBounded(forcing);
            for (int queue = 1; queue < QUEUES; queue++) {
                appends.add(store.append("t", queue, message(queue)));
            }
            if (together) {
                // The others wait for the next round, which waits for this one.
                assertThat(appends).as("acknowledged while queue 0's force is held")
                        .noneMatch(CompletableFuture::isDone);
            }
        } finally {
            release.countDown();
        }
        return appends;
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void appendsWaitingOnManyLogsAreMadeDurableByOneSyncOfTheFileSystem(WritePath path) {
        try (Store store = Store.open(dir, config(path, io()).build())) {
            List<CompletableFuture<AppendResult>> appends = appendWhileQueue0Forces(store, true);
            appends.forEach(CompletableFuture::join);
            assertThat(fileSystemSyncs.get()).as("syncs of the file system").isEqualTo(1);
            assertThat(othersForcedAlone()).as("queues 1-7 forced by a force of their own").isZero();
            for (int queue = 0; queue < QUEUES; queue++) {
                assertThat(store.maxOffset("t", queue)).isEqualTo(2);
            }
        }
    }

    @Test
    void turnedOffEachLogIsForcedByItself() {
        try (Store store = Store.open(dir, config(WritePath.MMAP, io()).forceTogether(false).build())) {
            appendWhileQueue0Forces(store, false).forEach(CompletableFuture::join);
            assertThat(fileSystemSyncs.get()).isZero();
            assertThat(othersForcedAlone()).isEqualTo(QUEUES - 1);
        }
    }

    @Test
    void whereTheFileSystemCannotBeSyncedEachLogIsForced() {
        try (Store store = Store.open(dir, config(WritePath.CHANNEL, io().withoutFileSystemSyncs()).build())) {
            appendWhileQueue0Forces(store, true).forEach(CompletableFuture::join);
            assertThat(fileSystemSyncs.get()).as("syncs of the file system").isZero();
            assertThat(othersForcedAlone()).isEqualTo(QUEUES - 1);
        }
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "CHANNEL"})
    void aFailedSyncAcknowledgesNoneOfItsLogsAndTurnsTheStoreReadOnly(WritePath path) {
        failSync = new IOException("Input/output error (injected into syncfs)");
        try (Store store = Store.open(dir, config(path, io()).build())) {
            List<CompletableFuture<AppendResult>> appends = appendWhileQueue0Forces(store, true);
            appends.getFirst().join();
            for (CompletableFuture<AppendResult> other : appends.subList(1, appends.size())) {
                assertThatThrownBy(other::join).isInstanceOf(CompletionException.class).cause()
                        .isInstanceOf(StoreException.class).hasMessageContaining("read-only");
            }
            var statuses = store.ownLogStatuses();
            assertThat(statuses.get("t/0").state()).as("queue 0, forced alone").isEqualTo(StoreStatus.State.OPEN);
            for (int queue = 1; queue < QUEUES; queue++) {
                assertThat(statuses.get("t/" + queue).state()).as("queue %d", queue)
                        .isEqualTo(StoreStatus.State.READ_ONLY);
                assertThat(statuses.get("t/" + queue).reason()).contains("injected into syncfs");
            }
            assertThat(store.maxOffset("t", 1)).as("the unacknowledged append is not readable").isEqualTo(1);
        }
        failSync = null;
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).build())) {
            assertThat(store.openedClean()).isFalse();
            assertThat(store.maxOffset("t", 0)).as("queue 0's acknowledged appends").isEqualTo(2);
            for (int queue = 1; queue < QUEUES; queue++) {
                assertThat(store.maxOffset("t", queue)).as("queue %d", queue).isBetween(1L, 2L);
            }
        }
    }

    /**
     * Under ASYNC (nothing forced by the appends): opens every queue's log with an append each (creating a segment
     * forces it), then appends to every queue again and runs a checkpoint ({@link Store#sync}).
     */
    private void appendToEveryQueueThenSync(Store store) {
        store.createTopic("t", TopicLayout.QUEUE, QUEUES);
        for (int queue = 0; queue < QUEUES; queue++) {
            store.append("t", queue, message(queue)).join();
        }
        forcedSegments.clear();
        fileSystemSyncs.set(0);
        for (int queue = 0; queue < QUEUES; queue++) {
            store.append("t", queue, message(queue)).join();
        }
        store.sync();
    }

    private static StoreConfig.Builder asyncConfig(HookedFileIO io) {
        return TestStores.small(WritePath.MMAP, FlushMode.ASYNC).fileIO(io).checkpointIntervalMillis(3_600_000)
                .flushIntervalMillis(3_600_000).flushDirtyBytes(1L << 40).forceTogether(true);
    }

    @Test
    void aCheckpointForcesTheLogsItFindsChangedWithOneSync() {
        try (Store store = Store.open(dir, asyncConfig(io()).build())) {
            appendToEveryQueueThenSync(store);
            assertThat(fileSystemSyncs.get()).as("syncs of the file system").isEqualTo(1);
            assertThat(forcedSegments).as("segments forced one by one").isEmpty();
        }
        try (Store store = Store.open(dir, asyncConfig(io()).forceTogether(false).build())) {
            fileSystemSyncs.set(0);
            for (int queue = 0; queue < QUEUES; queue++) {
                store.append("t", queue, message(queue)).join();
            }
            store.sync();
            assertThat(fileSystemSyncs.get()).as("turned off").isZero();
            assertThat(forcedSegments.stream().map(ForceTogetherTest::queueOf).distinct()).hasSize(QUEUES);
        }
    }

    @Test
    void aCheckpointWhoseSyncFailsClaimsNothingOfItsLogsAndTurnsThemReadOnly() {
        failSync = new IOException("Input/output error (injected into syncfs)");
        try (Store store = Store.open(dir, asyncConfig(io()).build())) {
            assertThatThrownBy(() -> appendToEveryQueueThenSync(store)).isInstanceOf(StoreException.class)
                    .hasMessageContaining("injected into syncfs");
            var statuses = store.ownLogStatuses();
            for (int queue = 0; queue < QUEUES; queue++) {
                assertThat(statuses.get("t/" + queue).state()).as("queue %d", queue)
                        .isEqualTo(StoreStatus.State.READ_ONLY);
            }
            assertThatThrownBy(() -> store.append("t", 0, message(0)).join()).hasMessageContaining("read-only");
        }
        failSync = null;
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            assertThat(store.openedClean()).as("the checkpoint and the clean marker claimed nothing").isFalse();
        }
    }
}
