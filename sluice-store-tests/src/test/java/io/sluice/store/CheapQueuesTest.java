package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Logs of their own are cheap: a queue log starts with one 64 KiB segment that grows as it fills, prepares the
 * next segment only when half full, allocates write-buffer pages only when it appends, and shares the store's
 * threads and cache memory; the number of queues per topic is bounded.
 */
@ExtendWith(NoLeaks.class)
class CheapQueuesTest {

    private static final long K = 1024;

    @TempDir
    Path dir;

    private static Message message(int i) {
        Message.Builder message = Message.builder().body(("message " + i).getBytes(StandardCharsets.UTF_8));
        return (i % 2 == 0 ? message.keys("key-" + i) : message).build();
    }

    /**
     * 10,000 queues in QUEUE layout (10 topics of 1,000), one small message each, half of them keyed: the store
     * runs on its own few threads, and its files take under 2 GB (before: two preallocated segments of the store's
     * size per queue, 2 GiB each by default, and a 264 MB key file on the first keyed message).
     */
    @Test
    void tenThousandQueueLogsCostFewThreadsAndLittleDisk() throws Exception {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        int threadsBefore = threads.getThreadCount();
        int topics = 10;
        int queues = 1_000;
        StoreConfig config = StoreConfig.builder().build(); // the defaults: 1 GiB segments, MMAP, ASYNC
        long started = System.nanoTime();
        int storeThreads;
        try (Store store = Store.open(dir, config)) {
            List<CompletableFuture<AppendResult>> appends = new ArrayList<>();
            for (int t = 0; t < topics; t++) {
                store.createTopic("topic-" + t, TopicLayout.QUEUE);
                for (int q = 0; q < queues; q++) {
                    appends.add(store.append("topic-" + t, q, message(t * queues + q)));
                }
            }
            appends.forEach(CompletableFuture::join);
            storeThreads = threads.getThreadCount() - threadsBefore;
            assertThat(storeThreads).as("threads the store runs with 10,000 queue logs").isLessThan(50);
            assertThat(store.ownLogStatuses()).hasSize(topics * queues);
        }
        long created = System.nanoTime();
        long allocated = allocatedAtMost(dir);
        assertThat(allocated).as("bytes the store's files and directories take").isLessThan(2_000_000_000L);

        long reopening = System.nanoTime();
        try (Store store = Store.open(dir, config)) {
            long reopened = System.nanoTime();
            // Reported, not asserted: speed belongs to benchmarks (docs/benchmarks.md quotes this line).
            System.out.printf("10,000 queue logs: %d store threads, %,d bytes on disk at most, created, appended and"
                    + " closed in %.1f s, reopened in %.1f s%n", storeThreads, allocated, (created - started) / 1e9,
                    (reopened - reopening) / 1e9);
            assertThat(threads.getThreadCount() - threadsBefore).as("threads after reopening").isLessThan(50);
            for (int t = 0; t < topics; t++) {
                for (int q = 0; q < queues; q++) {
                    byte[] expected = ("message " + (t * queues + q)).getBytes(StandardCharsets.UTF_8);
                    try (ReadResult read = store.read("topic-" + t, q, 0, 10, 1 << 20)) {
                        assertThat(read.messages()).singleElement()
                                .satisfies(m -> assertThat(m.bodyBytes()).isEqualTo(expected));
                    }
                }
            }
            try (LookupResult found = store.lookupByKey("topic-7", "key-7010", 10, 0, Long.MAX_VALUE)) {
                assertThat(found.messages()).singleElement().satisfies(m -> assertThat(m.queueId()).isEqualTo(10));
            }
        }
        assertThat(allocatedAtMost(dir)).as("reopening allocates nothing").isLessThanOrEqualTo(allocated);
    }

    /**
     * An upper bound of the disk space under {@code root}: every file's length (segments are allocated to their
     * length, never beyond) and a 4 KiB block per directory.
     */
    private static long allocatedAtMost(Path root) throws IOException {
        long total = 0;
        try (Stream<Path> walk = Files.walk(root)) {
            for (Path path : walk.toList()) {
                BasicFileAttributes attributes = Files.readAttributes(path, BasicFileAttributes.class);
                total += attributes.isDirectory() ? 4096 : attributes.size();
            }
        }
        return total;
    }

    @Test
    void aQueueLogStartsWithOneSmallSegmentAndGrowsAsItFills() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            store.createTopic("q", TopicLayout.QUEUE);
            store.append("q", 0, Message.of(new byte[100])).join();
            assertThat(segmentSizes("q/0")).as("one message: one 64 KiB segment, none prepared")
                    .containsExactly(64 * K);

            for (int i = 0; i < 400; i++) {
                store.append("q", 0, Message.of(new byte[1000])).join();
            }
            // 400 KB: 64 KiB, 128 KiB, then the store's 256 KiB, and the next one prepared once it was half full.
            assertThat(segmentSizes("q/0")).startsWith(64 * K, 128 * K, 256 * K).allMatch(size -> size <= 256 * K);
            assertThat(segmentSizes("")).as("the shared log's segments are the store's size")
                    .allMatch(size -> size == 256 * K);
        }
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.ASYNC).build())) {
            assertThat(store.maxOffset("q", 0)).isEqualTo(401);
            try (ReadResult read = store.read("q", 0, 0, 1000, 1 << 30)) {
                assertThat(read.messages()).hasSize(401);
            }
        }
    }

    /** A record larger than the segment prepared next gets a segment that holds it. */
    @Test
    void aRecordLargerThanThePreparedSegmentGetsOneThatHoldsIt() throws Exception {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).segmentSizeBytes(1024 * K)
                .maxMessageBytes(300 * 1024).build();
        byte[] large = new byte[200 * 1024];
        large[12_345] = 7;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("q", TopicLayout.QUEUE);
            for (int i = 0; i < 40; i++) { // past half of the first 64 KiB segment: a 128 KiB one is prepared
                store.append("q", 0, Message.of(new byte[1000])).join();
            }
            store.append("q", 0, Message.of(large)).join();
            assertThat(segmentSizes("q/0")).containsExactly(64 * K, 256 * K);
        }
        try (Store store = Store.open(dir, config); ReadResult read = store.read("q", 0, 40, 1, 1 << 20)) {
            assertThat(read.messages().getFirst().bodyBytes()).isEqualTo(large);
        }
        assertThat(StoreVerifier.verify(dir).ok()).isTrue();
    }

    /**
     * WRITE_BUFFER: a queue log allocates write-buffer pages only when it appends, each no larger than its
     * active segment (64 KiB for a new queue); pages grow with the segments, and every byte survives.
     */
    @Test
    void aQueueLogsWriteBufferPagesAreAllocatedWhenNeededAndGrowWithItsSegments() throws Exception {
        StoreConfig config = TestStores.small(WritePath.WRITE_BUFFER, FlushMode.ASYNC).segmentSizeBytes(512 * K)
                .writeBufferBytes(256 * 1024).writeBufferCount(4).cacheBytes(1024 * K).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("q", TopicLayout.QUEUE);
            for (int q = 0; q < 200; q++) {
                store.append("q", q, Message.of(new byte[100])).join();
            }
            long held = store.ownLogStatuses().values().stream().mapToLong(StoreStatus::writeBufferBytes).sum();
            assertThat(held).as("one 64 KiB page per queue, not four 256 KiB pages").isEqualTo(200 * 64 * K);

            for (int i = 0; i < 1_000; i++) {
                byte[] body = new byte[900];
                body[0] = (byte) i;
                body[899] = (byte) (i >> 8);
                store.append("q", 0, Message.of(body)).join();
            }
            assertThat(store.ownLogStatuses().get("q/0").writeBufferBytes()).as("pages grown to full size")
                    .isGreaterThanOrEqualTo(256 * K).isLessThanOrEqualTo(4 * 256 * K);
        }
        try (Store store = Store.open(dir, config); ReadResult read = store.read("q", 0, 1, 2000, 1 << 30)) {
            assertThat(read.messages()).hasSize(1_000);
            for (int i = 0; i < 1_000; i++) {
                byte[] body = read.messages().get(i).bodyBytes();
                assertThat(body[0]).isEqualTo((byte) i);
                assertThat(body[899]).isEqualTo((byte) (i >> 8));
            }
        }
        assertThat(StoreVerifier.verify(dir).ok()).isTrue();
    }

    @Test
    void queueIdsAreBoundedPerTopic() {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.ASYNC).maxQueuesPerTopic(8).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("q", TopicLayout.QUEUE);
            store.append("q", 7, Message.of(new byte[1])).join();
            assertThatThrownBy(() -> store.append("q", 8, Message.of(new byte[1])))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("queue id 8 is not below maxQueuesPerTopic (8)");
            assertThatThrownBy(() -> store.append("shared", 1_000, Message.of(new byte[1])))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("maxQueuesPerTopic");
            assertThat(store.queues("q")).containsExactly(7);
        }
        assertThat(dir.resolve("logs/q/8")).doesNotExist();
    }

    /** @return the sizes of a log's segment files, oldest first ("" for the shared log) */
    private List<Long> segmentSizes(String log) throws IOException {
        Path logDirectory = log.isEmpty() ? dir.resolve("log") : dir.resolve("logs").resolve(log).resolve("log");
        try (Stream<Path> files = Files.list(logDirectory)) {
            List<Long> sizes = new ArrayList<>();
            for (Path file : files.sorted().toList()) {
                sizes.add(Files.size(file));
            }
            return sizes;
        }
    }
}
