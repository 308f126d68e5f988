package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.internal.log.Segment;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Retention by age, size and disk use; consumer positions; the hard disk limit on appends. */
@ExtendWith(NoLeaks.class)
class RetentionTest {

    private static final long HOUR = TimeUnit.HOURS.toMillis(1);
    private static final int BODY = 1000;

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());
    private final FaultyFileIO io = new FaultyFileIO();

    private StoreConfig config(RetentionPolicy policy) {
        return config(WritePath.MMAP, policy);
    }

    private StoreConfig config(WritePath path, RetentionPolicy policy) {
        io.reportDiskUse(0.10);
        return TestStores.small(path, FlushMode.SYNC).clock(clock).fileIO(io)
                .retention(policy.withCheckIntervalMillis(3_600_000)).build();
    }

    private static void appendMessages(Store store, String topic, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            store.append(topic, 0, Message.builder().body(new byte[BODY]).keys("k" + i).build()).get();
        }
    }

    private List<Path> segmentFiles() throws IOException {
        try (Stream<Path> files = Files.list(dir.resolve("log"))) {
            return files.sorted().toList();
        }
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void deletesSegmentsOlderThanTheRetentionTimeAndTrimsTheIndexes(WritePath path) throws Exception {
        try (Store store = Store.open(dir, config(path, RetentionPolicy.defaults().withRetentionHours(24)))) {
            appendMessages(store, "old", 1000); // about four 256 KiB segments
            now.addAndGet(25 * HOUR);
            appendMessages(store, "new", 300);
            int segmentsBefore = store.status().segmentCount();
            List<Path> filesBefore = segmentFiles();

            RetentionReport report = store.enforceRetention();

            assertThat(report.reason()).isEqualTo("age");
            assertThat(report.segmentsDeleted()).isGreaterThanOrEqualTo(3);
            assertThat(store.status().segmentCount()).isEqualTo(segmentsBefore - report.segmentsDeleted());
            assertThat(filesBefore.subList(0, report.segmentsDeleted())).allMatch(Files::notExists);
            assertThat(filesBefore.subList(report.segmentsDeleted(), segmentsBefore)).allMatch(Files::exists);
            long min = store.minOffset("old", 0);
            assertThat(min).isGreaterThan(0);
            try (ReadResult gone = store.read("old", 0, 0, 10, 1 << 20)) {
                assertThat(gone.status()).isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
                assertThat(gone.nextOffset()).isEqualTo(min);
            }
            try (ReadResult kept = store.read("old", 0, min, 10, 1 << 20)) {
                assertThat(kept.status()).isEqualTo(ReadResult.Status.FOUND);
                assertThat(kept.messages().getFirst().queueOffset()).isEqualTo(min);
            }
            try (LookupResult expired = store.lookupByKey("old", "k0", 10, 0, Long.MAX_VALUE)) {
                assertThat(expired.messages()).isEmpty();
            }
            assertThat(store.maxOffset("new", 0)).isEqualTo(300);
            assertThat(store.minOffset("new", 0)).isZero();
            // The segment holding messages younger than the retention time stays: a second pass deletes nothing.
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
        try (Store reopened = Store.open(dir, config(path, RetentionPolicy.defaults()))) {
            long min = reopened.minOffset("old", 0);
            assertThat(min).isGreaterThan(0);
            try (ReadResult kept = reopened.read("old", 0, min, 1, 1 << 20)) {
                assertThat(kept.status()).isEqualTo(ReadResult.Status.FOUND);
            }
        }
    }

    @Test
    void neverDeletesTheActiveSegmentEvenWhenEverythingExpired() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults().withRetentionHours(1)))) {
            appendMessages(store, "t", 600);
            now.addAndGet(10 * HOUR);
            store.enforceRetention();
            assertThat(store.status().segmentCount()).isEqualTo(1);
            assertThat(store.maxOffset("t", 0)).isEqualTo(600);
            long min = store.minOffset("t", 0);
            try (ReadResult last = store.read("t", 0, 599, 1, 1 << 20)) {
                assertThat(last.status()).isEqualTo(ReadResult.Status.FOUND);
            }
            assertThat(min).isLessThan(600);
            store.append("t", 0, Message.of(new byte[10])).get();
            assertThat(store.maxOffset("t", 0)).isEqualTo(601);
        }
    }

    @Test
    void keepsTheLogUnderRetentionBytes() throws Exception {
        long segment = 256 * 1024;
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults().withRetentionBytes(3 * segment)))) {
            appendMessages(store, "t", 1500);
            RetentionReport report = store.enforceRetention();
            assertThat(report.reason()).isEqualTo("size");
            assertThat(report.logBytes()).isLessThanOrEqualTo(3 * segment);
            assertThat(store.status().segmentCount()).isLessThanOrEqualTo(3);
            assertThat(store.maxOffset("t", 0)).isEqualTo(1500);
        }
    }

    /** A retention hold keeps what it names, moves when set again, is no consumer position and is not saved. */
    @Test
    void aRetentionHoldKeepsItsOffsetsUntilItMovesAndIsNotSaved() throws Exception {
        StoreConfig config = config(RetentionPolicy.defaults().withRetentionHours(1));
        try (Store store = Store.open(dir, config)) {
            appendMessages(store, "t", 1200);
            store.holdRetention("raft-log", "t", 0, 10);
            now.addAndGet(2 * HOUR);
            appendMessages(store, "t", 300);
            RetentionReport held = store.enforceRetention();
            assertThat(held.segmentsDeleted()).isZero();
            assertThat(held.heldBy()).isEqualTo("raft-log");
            assertThat(store.consumerPositions()).isEmpty();
            assertThatThrownBy(() -> store.holdRetention("raft-log", "t", 0, -1))
                    .isInstanceOf(IllegalArgumentException.class);

            store.holdRetention("raft-log", "t", 0, 700);
            RetentionReport moved = store.enforceRetention();
            assertThat(moved.segmentsDeleted()).isPositive();
            assertThat(store.minOffset("t", 0)).isPositive().isLessThanOrEqualTo(700);
        }
        try (Store store = Store.open(dir, config)) {
            // Not saved: once opened again nothing holds the queue.
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            assertThat(store.minOffset("t", 0)).isGreaterThan(700);
        }
    }

    @Test
    void keepsWhatARegisteredConsumerHasNotReadUntilTheEmergencyRatio() throws Exception {
        StoreConfig config = config(RetentionPolicy.defaults().withRetentionHours(1)).toBuilder()
                .checkpointIntervalMillis(3_600_000).build();
        try (Store store = Store.open(dir, config)) {
            appendMessages(store, "t", 1200);
            store.commitOffset("billing", "t", 0, 10);
            now.addAndGet(2 * HOUR);
            appendMessages(store, "t", 300);

            RetentionReport held = store.enforceRetention();
            assertThat(held.segmentsDeleted()).isZero();
            assertThat(held.heldBy()).isEqualTo("billing");
            assertThat(store.minOffset("t", 0)).isZero();
        }
        try (Store store = Store.open(dir, config)) {
            // Saved at 10 by the close. Moved to 700 but not saved yet: a crash now would resume at 10, so 10
            // is what retention keeps.
            store.commitOffset("billing", "t", 0, 700);
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
        }
        try (Store store = Store.open(dir, config)) {
            assertThat(store.committedOffset("billing", "t", 0)).hasValue(700);
            RetentionReport moved = store.enforceRetention();
            assertThat(moved.segmentsDeleted()).isPositive();
            assertThat(moved.heldBy()).isEqualTo("billing");
            long min = store.minOffset("t", 0);
            assertThat(min).isPositive().isLessThanOrEqualTo(700);
            try (ReadResult next = store.read("t", 0, 700, 1, 1 << 20)) {
                assertThat(next.status()).isEqualTo(ReadResult.Status.FOUND);
            }

            io.reportDiskUse(0.90);
            RetentionReport emergency = store.enforceRetention();
            assertThat(emergency.reason()).isEqualTo("emergency");
            assertThat(store.minOffset("t", 0)).isGreaterThan(700);
            assertThat(store.removeConsumerGroup("billing")).isTrue();
            assertThat(store.committedOffset("billing", "t", 0)).isEmpty();
        }
    }

    /**
     * A Kafka broker's policy: the disk filling deletes nothing (appends are refused above the hard ratio instead),
     * and a consumer position holds nothing back, while a retention hold still does and retention.bytes still
     * deletes.
     */
    @Test
    void withoutDiskRatioDeletionAndConsumersHoldingOnlyTheRetentionLimitsDelete() throws Exception {
        RetentionPolicy kafka = RetentionPolicy.defaults().withoutDiskRatioDeletion()
                .withConsumersHoldingRetention(false);
        try (Store store = Store.open(dir, config(kafka))) {
            appendMessages(store, "t", 1200);
            store.commitOffset("slow", "t", 0, 0);
            io.reportDiskUse(0.87);
            RetentionReport full = store.enforceRetention();
            assertThat(full.segmentsDeleted()).as("nothing goes for disk use").isZero();
            assertThat(full.appendsRefused()).isFalse();
            io.reportDiskUse(0.95);
            assertThat(store.enforceRetention().appendsRefused()).as("above the hard ratio").isTrue();
            assertThat(store.minOffset("t", 0)).isZero();
        }
        io.reportDiskUse(0.10);
        try (Store store = Store.open(dir, config(kafka.withRetentionBytes(300_000)).toBuilder()
                .overrideStoreSettings(true).build())) {
            store.holdRetention("raft-log", "t", 0, 600);
            RetentionReport sized = store.enforceRetention();
            assertThat(sized.reason()).isEqualTo("size");
            assertThat(store.minOffset("t", 0)).as("the slow group's offset 0 holds nothing back").isPositive()
                    .isLessThanOrEqualTo(600);
            assertThat(sized.heldBy()).as("the hold still does").isEqualTo("raft-log");
            try (ReadResult held = store.read("t", 0, 600, 1, 1 << 20)) {
                assertThat(held.status()).isEqualTo(ReadResult.Status.FOUND);
            }
        }
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()).toBuilder().overrideStoreSettings(false)
                .build())) {
            assertThat(store.config().retention().consumersHoldRetention()).as("saved with the store").isFalse();
            assertThat(store.config().retention().diskCleanRatio()).isEqualTo(1.0);
        }
    }

    @Test
    void diskCleanRatioDeletesOldSegmentsWhateverTheirAge() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            appendMessages(store, "t", 1200);
            assertThat(store.enforceRetention().segmentsDeleted()).isZero();
            // 80% used with 1,000,000-byte disk: deleting one 256 KiB segment brings it under 75%.
            io.reportDiskUse(0.80);
            RetentionReport report = store.enforceRetention();
            assertThat(report.reason()).isEqualTo("disk");
            assertThat(report.segmentsDeleted()).isEqualTo(1);
            assertThat(report.diskUsedRatio()).isLessThan(0.75);
        }
    }

    @Test
    void refusesAppendsAboveTheHardRatioAndResumesBelowIt() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            appendMessages(store, "t", 5);
            io.reportDiskUse(0.99);
            RetentionReport full = store.enforceRetention();
            assertThat(full.appendsRefused()).isTrue();
            assertThat(store.status().appendsRefused()).isTrue();
            assertThatThrownBy(() -> store.append("t", 0, Message.of(new byte[10])).get())
                    .isInstanceOf(ExecutionException.class)
                    .cause().isInstanceOf(DiskFullException.class).hasMessageContaining("diskHardRatio");
            try (ReadResult stillThere = store.read("t", 0, 0, 10, 1 << 20)) {
                assertThat(stillThere.messages()).hasSize(5);
            }
            io.reportDiskUse(0.50);
            assertThat(store.enforceRetention().appendsRefused()).isFalse();
            assertThat(store.append("t", 0, Message.of(new byte[10])).get().firstQueueOffset()).isEqualTo(5);
        }
    }

    @Test
    void aReaderHoldingARetiredSegmentKeepsItMappedUntilItLetsGo() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults().withRetentionHours(1)))) {
            appendMessages(store, "t", 600);
            now.addAndGet(2 * HOUR);
            appendMessages(store, "t", 300);
            Path first = segmentFiles().getFirst();
            ReadResult held = store.read("t", 0, 0, 1, 1 << 20);
            byte[] expected = held.messages().getFirst().bodyBytes();

            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
            assertThat(store.status().minLogPosition()).isPositive();
            assertThat(first).exists();
            assertThat(held.messages().getFirst().bodyBytes()).isEqualTo(expected);

            held.close();
            assertThat(first).doesNotExist();
        }
    }

    @Test
    void consumerPositionsSurviveAReopenAndADamagedFileIsSetAside() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            appendMessages(store, "t", 3);
            store.commitOffset("g1", "t", 0, 2);
            store.commitOffset("g2", "t", 0, 1);
        }
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            assertThat(store.committedOffset("g1", "t", 0)).hasValue(2);
            assertThat(store.committedOffset("g2", "t", 0)).hasValue(1);
            assertThat(store.status().consumerPositions()).isEqualTo(2);
        }
        Path file = dir.resolve("consumers");
        byte[] bytes = Files.readAllBytes(file);
        bytes[14] ^= 0x55;
        Files.write(file, bytes);
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            assertThat(store.committedOffset("g1", "t", 0)).isEmpty();
            assertThat(store.read("t", 0, 0, 10, 1 << 20).messages()).hasSize(3);
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).anyMatch(n -> n.startsWith("consumers.corrupt-"));
        }
    }

    @Test
    void aStoreReopenedAfterItsFirstSegmentWentMissesNothingElse() throws Exception {
        // A crash between deleting a segment and trimming the indexes leaves entries pointing before the log.
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            appendMessages(store, "t", 1200);
        }
        Files.delete(segmentFiles().getFirst());
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            long min = store.minOffset("t", 0);
            assertThat(min).isPositive();
            try (ReadResult first = store.read("t", 0, min, 1, 1 << 20)) {
                assertThat(first.status()).isEqualTo(ReadResult.Status.FOUND);
                assertThat(first.messages().getFirst().queueOffset()).isEqualTo(min);
            }
            try (ReadResult gone = store.read("t", 0, 0, 1, 1 << 20)) {
                assertThat(gone.status()).isEqualTo(ReadResult.Status.OFFSET_TOO_SMALL);
            }
            assertThat(store.maxOffset("t", 0)).isEqualTo(1200);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void badPoliciesAndNamesAreRefusedWithTheRule() {
        assertThatThrownBy(() -> RetentionPolicy.defaults().withDiskRatios(0.9, 0.8, 0.95))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("diskCleanRatio <= diskEmergencyRatio");
        assertThatThrownBy(() -> RetentionPolicy.defaults().withRetentionMillis(0))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("retentionMillis");
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults()))) {
            assertThatThrownBy(() -> store.commitOffset("bad group", "t", 0, 1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("consumer group name");
            assertThatThrownBy(() -> store.commitOffset("g", "t", 0, -1))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("nextOffset");
        }
    }

    @Test
    void segmentRetainFailsOnceRetired() throws Exception {
        try (Store store = Store.open(dir, config(RetentionPolicy.defaults().withRetentionBytes(256 * 1024)))) {
            appendMessages(store, "t", 600);
            store.enforceRetention();
        }
        Path file = segmentFiles().getFirst();
        Segment segment = Segment.open(io, file, Long.parseLong(file.getFileName().toString()), false, false);
        assertThat(segment.tryRetain()).isTrue();
        segment.release();
        segment.retire(() -> { });
        assertThat(segment.tryRetain()).isFalse();
        assertThat(segment.isClosed()).isTrue();
    }
}
