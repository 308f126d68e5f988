package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * The DIRECT read cache adopts every committed write-buffer page. On the DIRECT path a write-buffer page starts
 * on the 4 KiB block boundary at or before its first record, so its first block overlaps the previous page's
 * last block; a cache that refused a page overlapping one it holds would drop about every other page, and
 * reads of those ranges would miss and load them from the file again.
 *
 * <p>What is asserted: after appending (under SYNC, so every sealed page is committed when the last append is
 * acknowledged) enough records to fill and commit {@code N} pages, where {@code N} is the committed bytes over
 * the page size (a lower bound on the pages filled whatever the layout), at least {@code N - 1} pages were
 * adopted, and reading back the most recent committed pages is served entirely from the cache: no miss.
 */
@ExtendWith(NoLeaks.class)
class DirectCacheAdoptionTest {

    private static final long SEED = 0xADA0_0711L;
    private static final String TOPIC = "adopt";
    private static final int PAGE_BYTES = 64 * 1024;
    private static final int BODY_BYTES = 1000;
    /** About 12 pages of records. */
    private static final int MESSAGES = 750;
    /** The tail read back: records in this many pages before the page still being filled. */
    private static final int TAIL_PAGES = 4;

    @TempDir
    Path dir;

    @Test
    void directReadCacheAdoptsEveryCommittedWriteBufferPage() throws Exception {
        StoreConfig config = TestStores.small(WritePath.DIRECT, FlushMode.SYNC)
                .writeBufferBytes(PAGE_BYTES)
                .segmentSizeBytes(4 << 20) // one segment: no roll seals a page early
                .cacheBytes(32L * PAGE_BYTES) // room for every page: nothing is evicted
                .build();
        try (Store store = Store.open(dir, config)) {
            List<CompletableFuture<AppendResult>> pending = new ArrayList<>();
            for (int i = 0; i < MESSAGES; i++) {
                pending.add(store.append(TOPIC, 0, Message.of(TestStores.body(SEED, 0, i, BODY_BYTES))));
            }
            List<AppendResult> results = new ArrayList<>();
            for (CompletableFuture<AppendResult> future : pending) {
                results.add(future.get(60, TimeUnit.SECONDS));
            }
            StoreStatus status = store.status();
            long end = status.writePosition();
            assertThat(status.committedPosition()).isEqualTo(end);
            long filledPages = end / PAGE_BYTES;
            CacheStats afterWrites = status.cache();
            assertThat(afterWrites.evictions()).isZero();
            SoftAssertions soft = new SoftAssertions();
            soft.assertThat(afterWrites.adoptions())
                    .as("pages adopted by the read cache after %d bytes were committed in pages of %d bytes (at least"
                            + " %d pages filled and committed); cache %s", end, PAGE_BYTES, filledPages, afterWrites)
                    .isGreaterThanOrEqualTo(filledPages - 1);

            // Read back, newest first, every record of the last TAIL_PAGES pages before the one being filled
            // (which starts at or after end - PAGE_BYTES). Newest first: a read reaching the end of a page would
            // prefetch the range after it, which could hide a miss of that range.
            long tailFrom = end - (TAIL_PAGES + 1L) * PAGE_BYTES;
            long tailTo = end - PAGE_BYTES;
            int reads = 0;
            for (int i = results.size() - 1; i >= 0; i--) {
                AppendResult result = results.get(i);
                if (result.logPosition() < tailFrom || result.logPosition() + result.recordBytes() > tailTo) {
                    continue;
                }
                try (ReadResult read = store.read(TOPIC, 0, result.firstQueueOffset(), 1, Long.MAX_VALUE)) {
                    assertThat(read.messages()).hasSize(1);
                    assertThat(read.messages().getFirst().bodyBytes())
                            .isEqualTo(TestStores.body(SEED, 0, result.firstQueueOffset(), BODY_BYTES));
                }
                reads++;
            }
            CacheStats afterReads = store.status().cache();
            assertThat(reads).isGreaterThan(3 * PAGE_BYTES / (BODY_BYTES + 100));
            soft.assertThat(afterReads.misses() - afterWrites.misses())
                    .as("misses reading the %d records of the last %d committed pages (log [%d, %d)); adoptions %d"
                            + " of at least %d pages; cache after the reads %s", reads, TAIL_PAGES, tailFrom, tailTo,
                            afterWrites.adoptions(), filledPages, afterReads)
                    .isZero();
            soft.assertAll();
        }
    }
}
