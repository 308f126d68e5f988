package io.sluice.store.internal.io;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The store's syncs of its file system: a failure sticks (the kernel reports a write-back error once per descriptor,
 * so a later sync's success would not prove the pages the failed one lost), and a store's taken ledger items stay
 * unclean until their sync returned.
 */
class StoreSyncTest {

    @TempDir
    Path dir;

    /** A seam whose handle fails its first sync, as a write-back error reported once would, and succeeds after. */
    private static FileIO failingOnce(AtomicInteger syncs) {
        return new FileIO() {
            @Override
            public FileSystemSync openFileSystemSync(Path path) {
                return new FileSystemSync() {
                    @Override
                    public void sync() throws IOException {
                        if (syncs.incrementAndGet() == 1) {
                            throw new IOException("Input/output error (reported once)");
                        }
                    }

                    @Override
                    public void close() {
                    }
                };
            }

            @Override public io.sluice.store.io.StoreFile open(Path path, OpenMode mode) { throw new UnsupportedOperationException(); }
            @Override public void syncDirectory(Path directory) { throw new UnsupportedOperationException(); }
            @Override public io.sluice.store.io.DiskSpace diskSpace(Path path) { throw new UnsupportedOperationException(); }
            @Override public boolean exists(Path path) { throw new UnsupportedOperationException(); }
            @Override public boolean isDirectory(Path path) { throw new UnsupportedOperationException(); }
            @Override public List<Path> list(Path directory) { throw new UnsupportedOperationException(); }
            @Override public boolean createDirectory(Path directory) { throw new UnsupportedOperationException(); }
            @Override public boolean delete(Path path) { throw new UnsupportedOperationException(); }
            @Override public void rename(Path source, Path target) { throw new UnsupportedOperationException(); }
            @Override public java.io.Closeable tryLock(Path path) { throw new UnsupportedOperationException(); }
        };
    }

    @Test
    void aFailedSyncFailsEveryLaterOneThoughTheKernelWouldReportItOnce() throws IOException {
        AtomicInteger syncs = new AtomicInteger();
        try (StoreSync sync = StoreSync.open(failingOnce(syncs), dir)) {
            assertThatThrownBy(sync::sync).hasMessageContaining("reported once");
            assertThatThrownBy(sync::sync).isInstanceOf(IOException.class)
                    .hasMessageContaining("an earlier sync of the file system failed").hasMessageContaining("reported once");
            assertThat(syncs.get()).as("the later sync is not even made").isEqualTo(1);
            assertThat(sync.syncs()).isZero();
        }
    }

    @Test
    void withoutASeamThatSyncsAFileSystemNoSyncIsMade() throws IOException {
        try (StoreSync sync = StoreSync.none()) {
            assertThat(sync.sync()).isFalse();
        }
    }

    @Test
    void theDefaultSeamSyncsThroughOneDescriptor() throws IOException {
        try (StoreSync sync = StoreSync.open(FileIO.DEFAULT, dir)) {
            assertThat(sync.sync()).isTrue();
            assertThat(sync.sync()).isTrue();
            assertThat(sync.syncs()).isEqualTo(2);
        }
    }

    /** An item that counts its forces. */
    private static final class Counted implements DurabilityLedger.Durable {
        final List<String> events = new ArrayList<>();

        @Override
        public void force() {
            events.add("force");
        }

        @Override
        public void taken() {
            events.add("taken");
        }
    }

    @Test
    void whatASyncTookStaysUncleanUntilItReturnsAndAForceMeanwhileForcesIt() throws IOException {
        DurabilityLedger ledger = new DurabilityLedger(FileIO.DEFAULT);
        Counted index = new Counted();
        ledger.markDirty(index);
        DurabilityLedger.Taken taken = ledger.take();
        assertThat(index.events).containsExactly("taken");
        // A retention pass or a compaction's swap, between the take and the sync, must not find the ledger clean.
        assertThat(ledger.isClean()).isFalse();
        ledger.forceAll();
        assertThat(index.events).containsExactly("taken", "force");
        assertThat(ledger.isClean()).as("still pending its sync").isFalse();
        ledger.settled(taken);
        assertThat(ledger.isClean()).isTrue();

        ledger.markDirty(index);
        DurabilityLedger.Taken failed = ledger.take();
        ledger.putBack(failed);
        assertThat(ledger.isClean()).isFalse();
        ledger.forceAll();
        assertThat(ledger.isClean()).as("put back, then forced").isTrue();
    }
}
