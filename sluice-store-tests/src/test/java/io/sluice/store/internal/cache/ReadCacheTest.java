package io.sluice.store.internal.cache;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/** The tail-aware read cache: adoption, loads, eviction order against LRU, prefetch, retention. */
class ReadCacheTest {

    private static final int PAGE = 64 * 1024;

    private final AtomicLong now = new AtomicLong(1_000_000);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());
    private final Arena arena = Arena.ofShared();

    /** A "file" whose byte at log position p is (p * 31) & 0xff, so every load can be checked. */
    private static final ReadCache.Loader FILE = (position, target) -> {
        for (long i = 0; i < target.byteSize(); i++) {
            target.set(ValueLayout.JAVA_BYTE, i, expected(position + i));
        }
    };

    private static byte expected(long position) {
        return (byte) (position * 31);
    }

    @AfterEach
    void free() {
        arena.close();
    }

    private MemorySegment writeBufferPage(long start) {
        MemorySegment memory = arena.allocate(PAGE, 4096);
        for (long i = 0; i < PAGE; i++) {
            memory.set(ValueLayout.JAVA_BYTE, i, expected(start + i));
        }
        return memory;
    }

    private static void assertBytes(ReadCache.Hit hit, long position) {
        assertThat(hit).isNotNull();
        for (long i = 0; i < hit.bytes().byteSize(); i++) {
            assertThat(hit.bytes().get(ValueLayout.JAVA_BYTE, i)).isEqualTo(expected(position + i));
        }
        hit.pin().release();
    }

    @Test
    void anAdoptedWriteBufferPageIsServedWithoutACopyAndItsMemoryIsExchanged() {
        try (ReadCache cache = new ReadCache(4L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null)) {
            MemorySegment page = writeBufferPage(PAGE);
            MemorySegment replacement = cache.adopt(PAGE, PAGE, 2L * PAGE, page);
            assertThat(replacement.address()).isNotEqualTo(page.address());
            ReadCache.Hit hit = cache.read(PAGE + 100, 500, null, Long.MAX_VALUE);
            assertThat(hit.bytes().address()).isEqualTo(page.address() + 100);
            assertBytes(hit, PAGE + 100);
            assertThat(cache.stats().adoptions()).isEqualTo(1);
            assertThat(cache.stats().hits()).isEqualTo(1);
            // A read past the page's end is a miss, not a wrong answer.
            assertThat(cache.read(2L * PAGE - 10, 20, null, Long.MAX_VALUE)).isNull();
        }
    }

    @Test
    void aCacheFullOfPinnedPagesKeepsItsPagesAndDeclinesTheAdoption() {
        try (ReadCache cache = new ReadCache(PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null)) {
            cache.adopt(0, 0, PAGE, writeBufferPage(0));
            ReadCache.Hit pinned = cache.read(0, 10, null, Long.MAX_VALUE);
            MemorySegment second = writeBufferPage(PAGE);
            assertThat(cache.adopt(PAGE, PAGE, 2L * PAGE, second)).isSameAs(second);
            assertBytes(pinned, 0);
            assertThat(cache.adopt(PAGE, PAGE, 2L * PAGE, second)).isNotSameAs(second);
            assertThat(cache.read(0, 10, null, Long.MAX_VALUE)).isNull();
        }
    }

    @Test
    void aMissLoadsAPageAroundTheReadButNeverOverlapsItsNeighbours() throws Exception {
        try (ReadCache cache = new ReadCache(8L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null)) {
            assertBytes(cache.load(10_000, 300, 1L << 30, FILE), 10_000);
            assertThat(cache.stats().loads()).isEqualTo(1);
            assertBytes(cache.read(8192, 100, null, Long.MAX_VALUE), 8192);
            // The next load starts where the loaded page ends, not on the block below.
            long firstEnd = 8192 + PAGE;
            assertBytes(cache.load(firstEnd + 10, 100, 1L << 30, FILE), firstEnd + 10);
            // A record straddling the boundary between the two pages cannot be cached: read it elsewhere.
            assertThat(cache.load(firstEnd - 50, 100, 1L << 30, FILE)).isNull();
            // The range end (segment end, committed data) bounds a load.
            assertThat(cache.load(10L * PAGE, 200, 10L * PAGE + 100, FILE)).isNull();
        }
    }

    @Test
    void aReplayingConsumerDoesNotPushTheTailOutButUnderLruItDoes() throws Exception {
        double tailAware = tailHitRate(ReadCache.Eviction.TAIL_AWARE);
        double lru = tailHitRate(ReadCache.Eviction.LRU);
        System.out.printf("tail hit rate with a replaying consumer: tail-aware %.2f%%, LRU %.2f%%%n", tailAware * 100,
                lru * 100);
        assertThat(tailAware).isGreaterThanOrEqualTo(0.95);
        assertThat(lru).isLessThan(0.5); // the replay evicts each tail page before its turn comes
    }

    /**
     * Eight pages of cache. The tail is four adopted pages far up the log, which a tail consumer reads in
     * turn; a replaying consumer meanwhile reads old data sequentially, loading four pages per tail read. On a tail
     * miss the page is loaded back, as the DIRECT path does.
     */
    private double tailHitRate(ReadCache.Eviction eviction) throws Exception {
        long tailBase = 1L << 30;
        int tailPages = 4;
        try (ReadCache cache = new ReadCache(8L * PAGE, PAGE, 10_000, clock, eviction, null)) {
            for (int i = 0; i < tailPages; i++) {
                cache.adopt(tailBase + (long) i * PAGE, tailBase + (long) i * PAGE, tailBase + (long) (i + 1) * PAGE,
                        writeBufferPage(tailBase + (long) i * PAGE));
            }
            long replay = 0;
            int tailReads = 0;
            int tailHits = 0;
            for (int step = 0; step < 400; step++) {
                // The replaying consumer catches up fast: four pages for each tail read.
                for (int i = 0; i < 4; i++) {
                    now.addAndGet(10);
                    ReadCache.Hit old = cache.read(replay, 1000, null, Long.MAX_VALUE);
                    if (old == null) {
                        old = cache.load(replay, 1000, 1L << 30, FILE);
                    }
                    assertBytes(old, replay);
                    replay += PAGE;
                }
                long tail = tailBase + (long) (step % tailPages) * PAGE + 4096;
                ReadCache.Hit hit = cache.read(tail, 1000, null, Long.MAX_VALUE);
                tailReads++;
                if (hit != null) {
                    tailHits++;
                } else {
                    hit = cache.load(tail, 1000, 2L << 30, FILE);
                }
                assertBytes(hit, tail);
            }
            return (double) tailHits / tailReads;
        }
    }

    @Test
    void coldPagesGoBeforeHotOnesWhateverTheirPosition() throws Exception {
        try (ReadCache cache = new ReadCache(2L * PAGE, PAGE, 1_000, clock, ReadCache.Eviction.TAIL_AWARE, null)) {
            assertBytes(cache.load(0, 10, 1L << 30, FILE), 0);          // farthest from the tail
            assertBytes(cache.load(4L * PAGE, 10, 1L << 30, FILE), 4L * PAGE);
            now.addAndGet(2_000);                                         // both cold now
            assertBytes(cache.read(0, 10, null, Long.MAX_VALUE), 0);      // the far one is hot again
            assertBytes(cache.load(8L * PAGE, 10, 1L << 30, FILE), 8L * PAGE);
            assertThat(cache.read(0, 10, null, Long.MAX_VALUE)).isNotNull().satisfies(h -> h.pin().release());
            assertThat(cache.read(4L * PAGE, 10, null, Long.MAX_VALUE)).isNull();
        }
    }

    @Test
    void readingToTheEndOfAHotPagePrefetchesTheNextOne() throws Exception {
        java.util.ArrayDeque<Runnable> prefetches = new java.util.ArrayDeque<>();
        try (ReadCache cache = new ReadCache(8L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE,
                prefetches::add)) {
            assertBytes(cache.load(0, 100, 1L << 30, FILE), 0);
            assertBytes(cache.read(PAGE - 100, 100, FILE, 1L << 30), PAGE - 100);
            assertThat(prefetches).hasSize(1);
            prefetches.poll().run();
            assertThat(cache.stats().prefetches()).isEqualTo(1);
            assertBytes(cache.read(PAGE, 1000, null, Long.MAX_VALUE), PAGE);
        }
    }

    @Test
    void retentionDropsPagesBelowTheLogStartAndAdoptionBelowItIsDeclined() throws Exception {
        try (ReadCache cache = new ReadCache(4L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null)) {
            assertBytes(cache.load(0, 100, 1L << 30, FILE), 0);
            cache.dropBelow(PAGE);
            assertThat(cache.read(0, 100, null, Long.MAX_VALUE)).isNull();
            assertThat(cache.stats().pages()).isZero();
            MemorySegment stale = writeBufferPage(0);
            assertThat(cache.adopt(0, 0, PAGE - 1, stale)).isSameAs(stale);
        }
    }

    @Test
    void aCacheSmallerThanOnePageIsRefused() {
        assertThatThrownBy(() -> new ReadCache(PAGE - 1, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at least one page");
    }

    /** Caches sharing a budget hold no more than it between them; a closed cache gives its memory back. */
    @Test
    void cachesSharingABudgetHoldNoMoreThanIt() throws Exception {
        MemoryBudget budget = new MemoryBudget(2L * PAGE);
        ReadCache first = new ReadCache(8L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null, budget);
        try (ReadCache second = new ReadCache(8L * PAGE, PAGE, 10_000, clock, ReadCache.Eviction.TAIL_AWARE, null,
                budget)) {
            assertBytes(first.load(0, 100, 8L * PAGE, FILE), 0);
            assertBytes(first.load(PAGE, 100, 8L * PAGE, FILE), PAGE);
            assertThat(budget.available()).isZero();

            assertThat(second.load(0, 100, 8L * PAGE, FILE)).as("nothing left in the budget").isNull();
            assertThat(second.stats().pages()).isZero();

            first.close();
            assertThat(budget.available()).isEqualTo(2L * PAGE);
            assertBytes(second.load(0, 100, 8L * PAGE, FILE), 0);
            assertThat(budget.available()).isEqualTo(PAGE);
        }
        assertThat(budget.available()).isEqualTo(2L * PAGE);
    }
}
