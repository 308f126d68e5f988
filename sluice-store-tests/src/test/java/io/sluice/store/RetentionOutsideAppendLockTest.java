package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Retention deletes segment files and syncs directories without holding the append lock: appends go on, and
 * are acknowledged (SYNC: forced), while a deletion or a directory sync is stuck on a slow disk.
 */
@ExtendWith(NoLeaks.class)
class RetentionOutsideAppendLockTest {

    private static final long SEGMENT = 256 * 1024;

    /** The file operation the test holds up. */
    enum Stuck { SEGMENT_DELETION, LOG_DIRECTORY_SYNC }

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(Stuck.class)
    void appendsAreAcknowledgedWhileRetentionIsStuckOnTheDisk(Stuck stuck) throws Exception {
        HookedFileIO io = new HookedFileIO();
        CountDownLatch entered = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean armed = new AtomicBoolean();
        io.hook((op, path) -> {
            boolean hit = stuck == Stuck.SEGMENT_DELETION ? op == HookedFileIO.Op.DELETE && HookedFileIO.isSegment(path)
                    : op == HookedFileIO.Op.SYNC_DIRECTORY && path.equals(dir.resolve("log"));
            if (hit && armed.compareAndSet(true, false)) {
                entered.countDown();
                HookedFileIO.awaitBounded(release);
            }
        });
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).fileIO(io).checkpointIntervalMillis(20)
                .retention(RetentionPolicy.defaults().withRetentionBytes(2 * SEGMENT)
                        .withCheckIntervalMillis(3_600_000)).build();
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 1_200; i++) {
                store.append("t", 0, Message.of(new byte[1000])).get(10, TimeUnit.SECONDS);
            }
            armed.set(true);
            CompletableFuture<RetentionReport> pass = CompletableFuture.supplyAsync(store::enforceRetention);
            try {
                // The directory sync comes with the checkpoint after the deletion.
                assertThat(entered.await(10, TimeUnit.SECONDS)).as("retention reached the disk").isTrue();
                for (int i = 0; i < 20; i++) {
                    AppendResult result = store.append("t", 0, Message.of(new byte[1000])).get(10, TimeUnit.SECONDS);
                    assertThat(result.firstQueueOffset()).isEqualTo(1_200 + i);
                }
            } finally {
                release.countDown();
            }
            assertThat(pass.get(10, TimeUnit.SECONDS).segmentsDeleted()).isPositive();
        }
    }
}
