package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Instant;
import java.time.InstantSource;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Segment size and retention belong to the store: saved at creation, used by every later open, replaced only by
 * an open that overrides them.
 */
@ExtendWith(NoLeaks.class)
class StoreSettingsTest {

    private static final long DAY = TimeUnit.DAYS.toMillis(1);
    private static final long SEGMENT = 256 * 1024;

    @TempDir
    Path dir;

    private final AtomicLong now = new AtomicLong(1_700_000_000_000L);
    private final InstantSource clock = () -> Instant.ofEpochMilli(now.get());

    private StoreConfig.Builder owners() {
        return TestStores.small(WritePath.MMAP, FlushMode.ASYNC).clock(clock)
                .retention(RetentionPolicy.defaults().withRetentionMillis(Long.MAX_VALUE));
    }

    /** A later opener's defaults (1 GiB segments, 72 hours) do not replace the owner's settings. */
    @Test
    void aLaterOpenKeepsTheStoresSegmentSizeAndRetention() throws Exception {
        try (Store store = Store.open(dir, owners().build())) {
            for (int i = 0; i < 600; i++) {
                store.append("t", 0, Message.of(new byte[1000])).get();
            }
        }
        now.addAndGet(365 * DAY);
        StoreConfig defaults = StoreConfig.builder().clock(clock).build();

        try (Store store = Store.open(dir, defaults)) {
            assertThat(store.config().segmentSizeBytes()).isEqualTo(SEGMENT);
            assertThat(store.config().retention().retentionMillis()).isEqualTo(Long.MAX_VALUE);
            assertThat(store.config().maxMessageBytes()).as("lowered to fit the store's segments")
                    .isLessThanOrEqualTo((int) (SEGMENT - StoreConfig.RECORD_OVERHEAD_BYTES));
            RetentionReport report = store.enforceRetention();
            assertThat(report.segmentsDeleted()).isZero();
            assertThat(store.minOffset("t", 0)).isZero();
            long segments = segmentCount();
            for (int i = 0; i < 600; i++) {
                store.append("t", 0, Message.of(new byte[1000])).get();
            }
            assertThat(segmentCount()).as("new segments are the store's size, not 1 GiB").isGreaterThan(segments);
        }
    }

    /** An overriding open replaces the settings, and later opens keep the new ones. */
    @Test
    void anOverridingOpenReplacesTheSettingsForGood() throws Exception {
        try (Store store = Store.open(dir, owners().build())) {
            for (int i = 0; i < 600; i++) {
                store.append("t", 0, Message.of(new byte[1000])).get();
            }
        }
        now.addAndGet(2 * DAY);
        StoreConfig oneDay = owners().retention(RetentionPolicy.defaults().withRetentionMillis(DAY))
                .overrideStoreSettings(true).build();
        try (Store store = Store.open(dir, oneDay)) {
            assertThat(store.enforceRetention().segmentsDeleted()).isPositive();
        }
        try (Store store = Store.open(dir, owners().build())) {
            assertThat(store.config().retention().retentionMillis()).isEqualTo(DAY);
        }
    }

    /** A read-only open writes no settings, even when asked to override them. */
    @Test
    void aReadOnlyOpenSavesNothing() throws IOException {
        try (Store store = Store.open(dir, owners().build())) {
            store.append("t", 0, Message.of(new byte[10])).join();
        }
        byte[] saved = Files.readAllBytes(dir.resolve("settings"));
        try (Store store = Store.openReadOnly(dir, owners().overrideStoreSettings(true)
                .retention(RetentionPolicy.defaults()).build())) {
            try (ReadResult read = store.read("t", 0, 0, 10, 1 << 20)) {
                assertThat(read.messages()).hasSize(1);
            }
        }
        assertThat(Files.readAllBytes(dir.resolve("settings"))).isEqualTo(saved);
    }

    /** Damaged settings refuse a plain open with a clear error; an overriding open writes them again. */
    @Test
    void damagedSettingsAreRefusedUntilOverridden() throws IOException {
        try (Store store = Store.open(dir, owners().build())) {
            store.append("t", 0, Message.of(new byte[10])).join();
        }
        byte[] bytes = Files.readAllBytes(dir.resolve("settings"));
        bytes[10] ^= 1;
        Files.write(dir.resolve("settings"), bytes);

        assertThatThrownBy(() -> Store.open(dir, owners().build())).isInstanceOf(StoreCorruptedException.class)
                .hasMessageContaining("settings").hasMessageContaining("damaged");
        try (Store store = Store.open(dir, owners().overrideStoreSettings(true).build())) {
            try (ReadResult read = store.read("t", 0, 0, 10, 1 << 20)) {
                assertThat(read.messages()).hasSize(1);
            }
        }
        try (Store store = Store.open(dir, owners().build())) {
            assertThat(store.config().retention().retentionMillis()).isEqualTo(Long.MAX_VALUE);
        }
    }

    private long segmentCount() throws IOException {
        try (var files = Files.list(dir.resolve("log"))) {
            return files.count();
        }
    }
}
