package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.io.FileIO;
import java.io.ByteArrayOutputStream;
import java.nio.channels.Channels;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/** Topics in each layout: where their logs live, and every store feature on each. */
@ExtendWith(NoLeaks.class)
class LayoutTest {

    private static final long SEED = 0x1A7L;

    @TempDir
    Path dir;

    static List<Arguments> layoutsAndPaths() {
        List<Arguments> all = new ArrayList<>();
        for (TopicLayout layout : TopicLayout.values()) {
            if (layout == TopicLayout.BATCHES) {
                continue; // holds record batches only, no messages or keys: BatchLogTest
            }
            for (WritePath path : WritePath.values()) {
                all.add(Arguments.of(layout, path));
            }
        }
        return all;
    }

    private static byte[] body(int queue, long offset) {
        return TestStores.body(SEED, queue, offset, 300 + (int) (offset % 5) * 200);
    }

    /**
     * Three queues of "l" and one shared topic, interleaved, with keys; ends when every append is durable
     * (in the TOPIC and QUEUE layouts the logs flush independently, so one future says nothing of the others).
     */
    private static void fill(Store store, int perQueue) throws Exception {
        List<java.util.concurrent.CompletableFuture<AppendResult>> pending = new ArrayList<>();
        for (int i = 0; i < perQueue; i++) {
            for (int q = 0; q < 3; q++) {
                pending.add(store.append("l", q, Message.builder().keys("k-" + q + "-" + i).body(body(q, i)).build()));
            }
            pending.add(store.append("other", 0, Message.of(new byte[50])));
        }
        pending.add(store.append("l", 0, Message.builder().keys("last").body(body(0, perQueue)).build()));
        for (var future : pending) {
            future.get();
        }
    }

    private static void checkAll(Store store, int perQueue) {
        for (int q = 0; q < 3; q++) {
            long end = q == 0 ? perQueue + 1 : perQueue;
            assertThat(store.maxOffset("l", q)).isEqualTo(end);
            long offset = 0;
            while (offset < end) {
                try (ReadResult batch = store.read("l", q, offset, 100, 1 << 20)) {
                    for (StoredMessage m : batch.messages()) {
                        assertThat(m.queueOffset()).isEqualTo(offset);
                        assertThat(m.bodyBytes()).isEqualTo(body(q, offset));
                        offset++;
                    }
                }
            }
        }
        for (int q = 0; q < 3; q++) {
            try (LookupResult found = store.lookupByKey("l", "k-" + q + "-7", 5, 0, Long.MAX_VALUE)) {
                int queue = q;
                assertThat(found.messages()).singleElement().satisfies(m -> {
                    assertThat(m.queueId()).isEqualTo(queue);
                    assertThat(m.queueOffset()).isEqualTo(7);
                });
            }
        }
        assertThat(store.maxOffset("other", 0)).isEqualTo(perQueue);
        assertThat(store.topics()).containsExactly("l", "other");
        assertThat(store.queues("l")).containsExactly(0, 1, 2);
    }

    @ParameterizedTest
    @MethodSource("layoutsAndPaths")
    void everyFeatureWorksInEveryLayoutAndSurvivesACrash(TopicLayout layout, WritePath path) throws Exception {
        StoreConfig config = TestStores.small(path, FlushMode.SYNC).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("l", layout);
            fill(store, 400);
            checkAll(store, 400);
            assertThat(store.layout("l")).isEqualTo(layout);
            assertThat(store.offsetForTimestamp("l", 1, 0)).isZero();
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            TransferResult sent = store.transferTo("l", 1, 0, 1L << 30, Channels.newChannel(sink));
            assertThat(sent.nextOffset()).isEqualTo(400);
            assertThat(sent.bytes()).isEqualTo(sink.size());
            store.commitOffset("g", "l", 2, 10);
            assertThat(store.consumerPositions()).singleElement().satisfies(position -> assertThat(position)
                    .usingRecursiveComparison().ignoringFields("committedMillis")
                    .isEqualTo(new ConsumerPosition("g", "l", 2, 10, 0)));
        }
        assertThat(logDirectories()).isEqualTo(switch (layout) {
            case SHARED -> List.of();
            case TOPIC -> List.of("logs/l");
            case QUEUE, BATCHES -> List.of("logs/l/0", "logs/l/1", "logs/l/2");
        });
        // A crash: the store's clean-shutdown marker is gone, and every log recovers on open.
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        try (Store store = Store.open(dir, config)) {
            assertThat(store.openedClean()).isFalse();
            assertThat(store.layout("l")).isEqualTo(layout);
            checkAll(store, 400);
            assertThat(store.committedOffset("g", "l", 2)).hasValue(10);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    /** A torn tail, then mid-log corruption, in a log of its own: recovered, then refused naming the file. */
    @ParameterizedTest
    @org.junit.jupiter.params.provider.EnumSource(value = TopicLayout.class, names = {"TOPIC", "QUEUE"})
    void tornTailsAndCorruptionInALogOfItsOwnAreHandledAsInTheSharedLog(TopicLayout layout) throws Exception {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).build();
        AppendResult last;
        AppendResult victim;
        try (Store store = Store.open(dir, config)) {
            store.createTopic("l", layout);
            fill(store, 300);
            victim = store.append("l", 1, Message.of(body(1, 300))).get();
            for (int i = 301; i < 400; i++) {
                store.append("l", 1, Message.of(body(1, i))).get();
            }
            last = store.append("l", 1, Message.of(body(1, 400))).get();
        }
        Path log = dir.resolve("logs").resolve("l");
        String name = "l";
        if (layout == TopicLayout.QUEUE) {
            log = log.resolve("1");
            name = "l/1";
        }
        // A torn last record past the log's durable position: an interrupted write, cut.
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        setDurable(name, victim.logPosition());
        overwrite(log, last.logPosition() + last.recordBytes() / 2, new byte[last.recordBytes() / 2]);
        try (Store store = Store.open(dir, config)) {
            assertThat(store.maxOffset("l", 1)).isEqualTo(400); // the torn last record is gone, the rest intact
            try (ReadResult before = store.read("l", 1, 399, 1, 1 << 20)) {
                assertThat(before.messages().getFirst().bodyBytes()).isEqualTo(body(1, 399));
            }
        }
        // Damage below the durable position (in the segment recovery validates): corruption, refused naming the
        // log's file.
        Files.delete(dir.resolve(StoreDirectory.CLEAN_SHUTDOWN_FILE));
        setDurable(name, victim.logPosition() + victim.recordBytes());
        overwrite(log, victim.logPosition() + 60, new byte[] {1, 2, 3});
        Path damaged = log;
        assertThatThrownBy(() -> Store.open(dir, config)).isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining(damaged.toString()).hasMessageContaining("log position " + victim.logPosition());
        assertThat(StoreVerifier.verify(dir).faults()).anyMatch(fault -> fault.startsWith(dir.relativize(damaged) + ":"));
    }

    /** Makes the checkpoint claim less for {@code log}, as if written when the log ended at {@code position}. */
    private void setDurable(String log, long position) throws Exception {
        Checkpoint current = Checkpoint.read(FileIO.DEFAULT, dir);
        java.util.Map<String, Checkpoint.Log> logs = new java.util.TreeMap<>(current.logs());
        logs.put(log, new Checkpoint.Log(position, logs.get(log).start()));
        new Checkpoint(logs, current.writtenMillis()).write(FileIO.DEFAULT, dir);
    }

    /** Overwrites bytes of a log directory's segments at a log position. */
    private static void overwrite(Path log, long position, byte[] bytes) throws Exception {
        try (Stream<Path> segments = Files.list(log.resolve("log"))) {
            for (Path segment : segments.sorted().toList()) {
                long base = Long.parseLong(segment.getFileName().toString());
                if (position >= base && position < base + Files.size(segment)) {
                    try (var channel = java.nio.channels.FileChannel.open(segment, java.nio.file.StandardOpenOption.WRITE)) {
                        channel.write(java.nio.ByteBuffer.wrap(bytes), position - base);
                    }
                    return;
                }
            }
        }
        throw new AssertionError("no segment holds log position " + position);
    }

    @Test
    void aQueueLogSendsAQueueAsOneContiguousRangeOfRecords() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            store.createTopic("l", TopicLayout.QUEUE);
            fill(store, 200);
            ByteArrayOutputStream sink = new ByteArrayOutputStream();
            store.transferTo("l", 2, 0, 1L << 30, Channels.newChannel(sink));
            // The records arrive in log order, each starting where the previous ended, or at the start of the next
            // segment (the filler that ends a segment is not sent): nothing in between.
            Set<Long> segmentStarts = new HashSet<>();
            try (Stream<Path> files = Files.list(dir.resolve("logs/l/2/log"))) {
                files.forEach(file -> segmentStarts.add(Long.parseLong(file.getFileName().toString())));
            }
            assertThat(segmentStarts).as("the queue's log rolled").hasSizeGreaterThan(1);
            var data = java.lang.foreign.MemorySegment.ofArray(sink.toByteArray());
            long at = 0;
            long position = -1;
            while (at < data.byteSize()) {
                long recordPosition = RecordFormat.logPosition(data.asSlice(at));
                if (position >= 0 && recordPosition != position) {
                    assertThat(segmentStarts).contains(recordPosition);
                }
                long length = RecordFormat.validate(data, at, recordPosition);
                position = recordPosition + length;
                at += length;
            }
            assertThat(at).isPositive();
        }
    }

    @Test
    void retentionBytesAppliesToEachLog() throws Exception {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC)
                .retention(RetentionPolicy.defaults().withRetentionBytes(2 * 256 * 1024)).build();
        try (Store store = Store.open(dir, config)) {
            store.createTopic("l", TopicLayout.QUEUE);
            fill(store, 1200);
            RetentionReport report = store.enforceRetention();
            assertThat(report.segmentsDeleted()).isPositive();
            for (StoreStatus log : store.ownLogStatuses().values()) {
                assertThat(log.segmentCount()).isLessThanOrEqualTo(2);
            }
            for (int q = 0; q < 3; q++) {
                long min = store.minOffset("l", q);
                assertThat(min).isPositive();
                try (ReadResult first = store.read("l", q, min, 1, 1 << 20)) {
                    assertThat(first.messages().getFirst().bodyBytes()).isEqualTo(body(q, min));
                }
            }
        }
    }

    @Test
    void aTopicKeepsTheLayoutItWasCreatedWith() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            store.append("shared", 0, Message.of(new byte[1])).get();
            assertThatThrownBy(() -> store.createTopic("shared", TopicLayout.TOPIC))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already exists with layout SHARED");
            store.createTopic("mine", TopicLayout.TOPIC);
            store.createTopic("mine", TopicLayout.TOPIC);
            assertThatThrownBy(() -> store.createTopic("mine", TopicLayout.QUEUE))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("already exists with layout TOPIC");
            assertThatThrownBy(() -> store.createTopic("bad/name", TopicLayout.TOPIC))
                    .isInstanceOf(IllegalArgumentException.class);
            assertThat(store.read("mine", 0, 0, 1, 1).status()).isEqualTo(ReadResult.Status.NO_SUCH_QUEUE);
        }
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            assertThat(store.layout("mine")).isEqualTo(TopicLayout.TOPIC);
            assertThat(store.layout("shared")).isEqualTo(TopicLayout.SHARED);
        }
    }

    @Test
    void aDamagedTopicRegistryRefusesTheOpen() throws Exception {
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            store.createTopic("mine", TopicLayout.TOPIC);
        }
        Path registry = dir.resolve("topics");
        byte[] bytes = Files.readAllBytes(registry);
        bytes[13] ^= 0x20;
        Files.write(registry, bytes);
        assertThatThrownBy(() -> Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build()))
                .isInstanceOf(StoreCorruptedException.class).hasMessageContaining("topic registry");
    }

    private List<String> logDirectories() throws Exception {
        List<String> names = new ArrayList<>();
        for (Path log : allLogDirectories()) {
            if (!log.equals(dir)) {
                names.add(dir.relativize(log).toString());
            }
        }
        return names;
    }

    private List<Path> allLogDirectories() throws Exception {
        try (Stream<Path> walk = Files.walk(dir, 3)) {
            return walk.filter(p -> Files.isDirectory(p.resolve("log"))).sorted().toList();
        }
    }
}
