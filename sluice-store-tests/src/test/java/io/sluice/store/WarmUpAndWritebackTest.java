package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.concurrent.locks.LockSupport;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The store with every warm-up option, and writeback control started behind the writer. */
@ExtendWith(NoLeaks.class)
class WarmUpAndWritebackTest {

    @TempDir
    Path dir;

    @ParameterizedTest
    @EnumSource(WarmUp.PreTouch.class)
    void everyWarmUpKeepsAppendsReadsAndReopenIntact(WarmUp.PreTouch preTouch) throws Exception {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.ASYNC)
                .warmUp(new WarmUp(preTouch, true, true)).build();
        byte[] body = TestStores.body(7, 0, 0, 900);
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 1000; i++) {
                store.append("w", 0, Message.of(body)).get();
            }
            assertThat(store.status().segmentCount()).isGreaterThan(2);
        }
        try (Store store = Store.open(dir, config); ReadResult all = store.read("w", 0, 0, 2000, 1L << 30)) {
            assertThat(all.messages()).hasSize(1000).allSatisfy(m -> assertThat(m.bodyBytes()).isEqualTo(body));
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @ParameterizedTest
    @EnumSource(value = WritePath.class, names = {"MMAP", "WRITE_BUFFER", "CHANNEL"})
    void writebackIsStartedBehindTheCommittedPosition(WritePath path) throws Exception {
        FaultyFileIO io = new FaultyFileIO();
        long distance = 256 * 1024;
        StoreConfig config = TestStores.small(path, FlushMode.ASYNC).segmentSizeBytes(16 << 20).fileIO(io)
                .writebackDistanceBytes(distance).flushDirtyBytes(Long.MAX_VALUE).flushIntervalMillis(3_600_000)
                .build();
        byte[] body = new byte[4000];
        try (Store store = Store.open(dir, config)) {
            for (int i = 0; i < 2000; i++) {
                store.append("w", 0, Message.of(body));
            }
            long end = store.status().writePosition();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (io.writebackFurthest.get() < end - distance - 2 * (1 << 20) && System.nanoTime() < deadline) {
                LockSupport.parkNanos(1_000_000);
            }
            assertThat(io.writebackCalls.get()).isPositive();
            assertThat(io.writebackFurthest.get()).isGreaterThanOrEqualTo(end - distance - 2 * (1 << 20))
                    .isLessThanOrEqualTo(store.status().committedPosition() - distance);
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("w", 0)).isEqualTo(2000);
        }
    }

    @Test
    void noWritebackCallsWhenItIsOffOrOnTheDirectPath() throws Exception {
        for (WritePath path : new WritePath[] {WritePath.MMAP, WritePath.DIRECT}) {
            FaultyFileIO io = new FaultyFileIO();
            long distance = path == WritePath.DIRECT ? 64 * 1024 : 0;
            StoreConfig config = TestStores.small(path, FlushMode.ASYNC).fileIO(io).writebackDistanceBytes(distance)
                    .build();
            try (Store store = Store.open(dir.resolve(path.name()), config)) {
                for (int i = 0; i < 2000; i++) {
                    store.append("w", 0, Message.of(new byte[1000]));
                }
            }
            assertThat(io.writebackCalls.get()).as(path.name()).isZero();
        }
    }
}
