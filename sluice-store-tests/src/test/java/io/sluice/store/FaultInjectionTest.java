package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletionException;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Failures injected through the file seam: EIO on a force or a write, ENOSPC when segments are allocated. */
@ExtendWith(NoLeaks.class)
class FaultInjectionTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void failedForceIsNeverAcknowledgedAndTurnsTheStoreReadOnly(WritePath path) {
        FaultyFileIO io = new FaultyFileIO();
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).fileIO(io)
                .checkpointIntervalMillis(3_600_000).build())) {
            AppendResult acked = store.append("t", 0, Message.of(new byte[] {1})).join();
            // The active segment's next force fails (not whatever file is forced next: the segment prepared ahead
            // of the log may be forced in between, which made this test depend on timing).
            io.failNextForceOf(dir.resolve("log").resolve(String.format("%020d", 0)));
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[] {2})).join())
                    .isInstanceOf(CompletionException.class).cause()
                    .isInstanceOf(StoreException.class).hasMessageContaining("read-only");
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.READ_ONLY);
            assertThat(store.status().reason()).contains("Input/output error (injected)");
            // The unacknowledged message is not readable; the acknowledged one is.
            assertThat(store.maxOffset("t", 0)).isEqualTo(1);
            try (ReadResult r = store.read("t", 0, 0, 10, 1000)) {
                assertThat(r.messages()).singleElement().satisfies(m -> {
                    assertThat(m.logPosition()).isEqualTo(acked.logPosition());
                    assertThat(m.bodyBytes()).containsExactly(1);
                });
            }
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[] {3})).join())
                    .cause().isInstanceOf(StoreException.class).hasMessageContaining("read-only");
        }
        // The next open recovers: the acknowledged message is there.
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).build())) {
            assertThat(store.openedClean()).isFalse();
            try (ReadResult r = store.read("t", 0, 0, 10, 1000)) {
                assertThat(r.messages().getFirst().bodyBytes()).containsExactly(1);
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"CHANNEL", "WRITE_BUFFER"})
    void failedWriteTurnsTheStoreReadOnlyWithoutAcknowledging(WritePath path) {
        FaultyFileIO io = new FaultyFileIO();
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).fileIO(io).build())) {
            store.append("t", 0, Message.of(new byte[] {1})).join();
            io.failWriteAfter(1);
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[] {2})).join())
                    .cause().isInstanceOf(StoreException.class);
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.READ_ONLY);
            assertThat(store.maxOffset("t", 0)).isEqualTo(1);
        }
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void diskFullFailsAppendsCleanlyAndTheyResumeOnceSpaceIsFreed(WritePath path) {
        FaultyFileIO io = new FaultyFileIO();
        List<byte[]> acknowledged = new ArrayList<>();
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).fileIO(io).build())) {
            io.diskFull.set(true);
            StoreException failure = null;
            for (int i = 0; i < 10_000 && failure == null; i++) {
                byte[] body = TestStores.body(1, 0, i, 1000);
                try {
                    store.append("t", 0, Message.of(body)).join();
                    acknowledged.add(body);
                } catch (CompletionException e) {
                    failure = (StoreException) e.getCause();
                }
            }
            assertThat(failure).isInstanceOf(DiskFullException.class).hasMessageContaining("disk full");
            assertThat(store.status().state()).isEqualTo(StoreStatus.State.OPEN);
            assertReadable(store, acknowledged);

            io.diskFull.set(false);
            byte[] after = TestStores.body(1, 1, 0, 1000);
            store.append("t", 0, Message.of(after)).join();
            acknowledged.add(after);
            assertReadable(store, acknowledged);
        }
        try (Store store = Store.open(dir, TestStores.small(path, FlushMode.SYNC).build())) {
            assertReadable(store, acknowledged);
        }
    }

    private static void assertReadable(Store store, List<byte[]> expected) {
        assertThat(store.maxOffset("t", 0)).isEqualTo(expected.size());
        for (int i = 0; i < expected.size(); i++) {
            try (ReadResult r = store.read("t", 0, i, 1, 1 << 20)) {
                assertThat(r.messages().getFirst().bodyBytes()).isEqualTo(expected.get(i));
            }
        }
    }
}
