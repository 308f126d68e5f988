package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Bounded mapped memory (old segments read positionally) and the calibrated mapped/positional choice. */
@ExtendWith(NoLeaks.class)
class MappingAndCalibrationTest {

    private static final long SEED = 0x3A9L;
    private static final long SEGMENT = 256 * 1024;

    @TempDir
    Path dir;

    private static void fill(Store store, int count) throws Exception {
        for (int i = 0; i < count; i++) {
            store.append("m", 0, Message.of(TestStores.body(SEED, 0, i, 900)));
        }
        store.append("m", 0, Message.of(TestStores.body(SEED, 0, count, 900))).get();
    }

    private static void readAll(Store store, int count) {
        long offset = 0;
        while (offset <= count) {
            try (ReadResult batch = store.read("m", 0, offset, 50, 1 << 20)) {
                assertThat(batch.status()).isEqualTo(ReadResult.Status.FOUND);
                for (StoredMessage m : batch.messages()) {
                    assertThat(m.bodyBytes()).isEqualTo(TestStores.body(SEED, 0, m.queueOffset(), 900));
                }
                offset = batch.nextOffset();
            }
        }
    }

    @ParameterizedTest
    @EnumSource(WritePath.class)
    void onlyTheNewestSegmentsStayMappedAndOlderOnesAreReadPositionally(WritePath path) throws Exception {
        StoreConfig config = TestStores.small(path, FlushMode.SYNC).maxMappedSegments(2).cacheBytes(0).build();
        try (Store store = Store.open(dir, config)) {
            fill(store, 1500);
            assertThat(store.status().segmentCount()).isGreaterThan(4);
            assertThat(store.status().mappedBytes()).isEqualTo(2 * SEGMENT);
            readAll(store, 1500);
            try (LookupResult none = store.lookupByKey("m", "absent", 1, 0, Long.MAX_VALUE)) {
                assertThat(none.messages()).isEmpty();
            }
        }
        try (Store reopened = Store.open(dir, config)) {
            assertThat(reopened.status().mappedBytes()).isLessThanOrEqualTo(2 * SEGMENT);
            readAll(reopened, 1500);
        }
        assertThat(StoreVerifier.verify(dir).faults()).isEmpty();
    }

    @Test
    void aViewHeldOnASegmentKeepsItsMappingUntilReleased() throws Exception {
        StoreConfig config = TestStores.small(WritePath.MMAP, FlushMode.SYNC).maxMappedSegments(1).build();
        try (Store store = Store.open(dir, config)) {
            store.append("m", 0, Message.of(TestStores.body(SEED, 0, 0, 900))).get();
            ReadResult held = store.read("m", 0, 0, 1, 1 << 20);
            fill(store, 600); // rolls past the first segment, which is then unmapped once released
            assertThat(held.messages().getFirst().bodyBytes()).isEqualTo(TestStores.body(SEED, 0, 0, 900));
            held.close();
            assertThat(store.status().mappedBytes()).isEqualTo(SEGMENT);
        }
    }

    @Test
    void aCalibratedCrossoverSendsLargerReadsPositionally() throws Exception {
        Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build()).close();
        new Calibration(512, Long.MAX_VALUE, 1).write(dir);
        assertThat(Calibration.read(dir).readCrossoverBytes()).isEqualTo(512);
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            fill(store, 300);
            try (ReadResult batch = store.read("m", 0, 0, 1, 1 << 20)) {
                // 900-byte bodies make records over 512 bytes: a positional copy, not a view of the mapping.
                assertThat(batch.messages().getFirst().body().isNative()).isTrue();
                assertThat(isInsideASegmentMapping(batch.messages().getFirst())).isFalse();
            }
            readAll(store, 300);
        }
    }

    /** True if the body's address lies inside a mapping of a segment file (from /proc/self/maps). */
    private static boolean isInsideASegmentMapping(StoredMessage message) throws Exception {
        long address = message.body().address();
        for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
            if (!line.contains("/log/0")) {
                continue;
            }
            String[] range = line.substring(0, line.indexOf(' ')).split("-");
            if (address >= Long.parseUnsignedLong(range[0], 16) && address < Long.parseUnsignedLong(range[1], 16)) {
                return true;
            }
        }
        return false;
    }

    @Test
    void aDamagedCalibrationFileIsIgnoredAndReported() throws Exception {
        Files.writeString(dir.resolve(Calibration.FILE_NAME), "format=1\nreadCrossoverBytes=lots\n");
        assertThat(Calibration.read(dir)).isEqualTo(Calibration.none());
        Files.writeString(dir.resolve(Calibration.FILE_NAME), "format=9\nreadCrossoverBytes=1\nwriteCrossoverBytes=1\n");
        assertThat(Calibration.read(dir)).isEqualTo(Calibration.none());
        Files.writeString(dir.resolve(Calibration.FILE_NAME), "format=1\nreadCrossoverBytes=never\nwriteCrossoverBytes=8192\n");
        assertThat(Calibration.read(dir).writeCrossoverBytes()).isEqualTo(8192);
    }
}
