package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** The read cache inside the store: adopted write buffers, loads on DIRECT, stats, configuration rules. */
@ExtendWith(NoLeaks.class)
class ReadCacheStoreTest {

    private static final long SEED = 0xCAC4EL;

    @TempDir
    Path dir;

    private static StoreConfig config(WritePath path, FlushMode mode) {
        return TestStores.small(path, mode).cacheBytes(8 * 64 * 1024).build();
    }

    @ParameterizedTest
    @EnumSource(FlushMode.class)
    void directReadsComeFromAdoptedPagesAtTheTailAndFromLoadedPagesBehindIt(FlushMode mode) throws Exception {
        try (Store store = Store.open(dir, config(WritePath.DIRECT, mode))) {
            for (int i = 0; i < 3000; i++) {
                store.append("c", 0, Message.of(TestStores.body(SEED, 0, i, 700)));
            }
            store.append("c", 0, Message.of(TestStores.body(SEED, 0, 3000, 700))).get();
            CacheStats afterWrites = store.status().cache();
            assertThat(afterWrites.adoptions()).isPositive();
            assertThat(afterWrites.capacityBytes()).isEqualTo(8 * 64 * 1024);

            // Replay everything: old data is loaded page by page, and every body is right.
            long offset = 0;
            while (offset < 3001) {
                try (ReadResult batch = store.read("c", 0, offset, 100, 1 << 20)) {
                    for (StoredMessage m : batch.messages()) {
                        assertThat(m.bodyBytes()).isEqualTo(TestStores.body(SEED, 0, m.queueOffset(), 700));
                    }
                    offset = batch.nextOffset();
                }
            }
            CacheStats afterReplay = store.status().cache();
            assertThat(afterReplay.loads()).isPositive();
            assertThat(afterReplay.cachedBytes()).isLessThanOrEqualTo(afterReplay.capacityBytes());

            // The tail is served from memory.
            long hits = afterReplay.hits();
            try (ReadResult tail = store.read("c", 0, 2990, 10, 1 << 20)) {
                assertThat(tail.messages()).hasSize(10);
            }
            assertThat(store.status().cache().hits()).isGreaterThanOrEqualTo(hits + 10);
        }
    }

    @Test
    void writeBufferPathAdoptsButDoesNotLoadAndMmapHasNoCache() throws Exception {
        try (Store store = Store.open(dir.resolve("wb"), config(WritePath.WRITE_BUFFER, FlushMode.ASYNC))) {
            for (int i = 0; i < 2000; i++) {
                store.append("c", 0, Message.of(new byte[700]));
            }
            try (ReadResult all = store.read("c", 0, 0, 3000, 1L << 30)) {
                assertThat(all.messages()).hasSize(2000);
            }
            assertThat(store.status().cache().loads()).isZero();
        }
        try (Store store = Store.open(dir.resolve("mmap"), config(WritePath.MMAP, FlushMode.ASYNC))) {
            assertThat(store.status().cache()).isNull();
        }
    }

    @Test
    void aCacheSmallerThanOnePageIsRefusedNamingTheRule() {
        assertThatThrownBy(() -> TestStores.small(WritePath.DIRECT, FlushMode.ASYNC).cacheBytes(4096).build())
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("cacheBytes (4096) must be 0 (no read cache) or at least one page");
    }
}
