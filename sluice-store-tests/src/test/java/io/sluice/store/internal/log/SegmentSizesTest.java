package io.sluice.store.internal.log;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import org.junit.jupiter.api.Test;

/** The segment size schedule: fixed for the shared log, doubling from 64 KiB for a log of its own. */
class SegmentSizesTest {

    private static final long K = 1024;

    @Test
    void aGrowingLogDoublesFrom64KibToTheStoresSegmentSize() {
        SegmentSizes sizes = SegmentSizes.growingTo(1024 * K * K);
        assertThat(sizes.grows()).isTrue();
        assertThat(sizes.next(0, 0)).isEqualTo(64 * K);
        assertThat(sizes.next(64 * K, 0)).isEqualTo(128 * K);
        assertThat(sizes.next(512 * K * K, 0)).isEqualTo(1024 * K * K);
        assertThat(sizes.next(1024 * K * K, 0)).isEqualTo(1024 * K * K);
    }

    @Test
    void aRecordLargerThanTheScheduleGetsASegmentThatHoldsIt() {
        SegmentSizes sizes = SegmentSizes.growingTo(1024 * K);
        assertThat(sizes.next(0, 200 * K)).isEqualTo(256 * K);
        assertThat(sizes.next(64 * K, 129 * K)).isEqualTo(256 * K);
        assertThat(sizes.next(64 * K, 1024 * K)).isEqualTo(1024 * K);
    }

    @Test
    void segmentsLargerThanTheSettingAreFollowedByFullSizeOnes() {
        // The store's segment size was lowered since: the next segment is the new size.
        assertThat(SegmentSizes.growingTo(256 * K).next(1024 * K, 0)).isEqualTo(256 * K);
        assertThat(SegmentSizes.fixed(256 * K).next(1024 * K, 0)).isEqualTo(256 * K);
    }

    @Test
    void aFixedLogNeverGrows() {
        SegmentSizes sizes = SegmentSizes.fixed(256 * K);
        assertThat(sizes.grows()).isFalse();
        assertThat(sizes.next(0, 0)).isEqualTo(256 * K);
        assertThat(sizes.next(256 * K, 100)).isEqualTo(256 * K);
        assertThat(SegmentSizes.growingTo(32 * K).grows()).as("smaller than 64 KiB: nothing to grow from").isFalse();
    }

    @Test
    void invalidSizesAreRefused() {
        assertThatThrownBy(() -> new SegmentSizes(128 * K, 64 * K)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new SegmentSizes(0, 64 * K)).isInstanceOf(IllegalArgumentException.class);
    }
}
