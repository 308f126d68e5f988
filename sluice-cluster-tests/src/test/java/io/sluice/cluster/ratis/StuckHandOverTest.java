package io.sluice.cluster.ratis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StuckHandOverTest {

    private static final long MS = 1_000_000;

    /** As long as the longest hand-over the nodes ask for (three election timeouts). */
    private static final java.time.Duration HAND_OVER = java.time.Duration.ofMillis(900);

    private final StuckHandOver watch = new StuckHandOver(HAND_OVER);

    /** Refusals every {@code every} ms from {@code from} to {@code until} (ms). */
    private void refuse(long from, long until, long every) {
        for (long t = from; t <= until; t += every) {
            watch.refused(t * MS);
        }
    }

    @Test
    void refusalsForLongerThanAnyHandOverAreTheSignAndNotBefore() {
        assertThat(watch.stuck(0)).as("before any refusal").isFalse();
        refuse(0, 1_800, 100);
        assertThat(watch.stuck(1_850 * MS)).as("after 1.85 s of refusals").isFalse();
        refuse(1_900, 1_900, 100);
        assertThat(watch.stuck(1_900 * MS)).as("after 1.9 s").isTrue();
        assertThat(watch.stuckNanos()).as("the wait").isGreaterThan(HAND_OVER.toNanos());
    }

    @Test
    void anAppendTakenEndsTheRun() {
        refuse(0, 1_500, 100);
        watch.ended();
        refuse(1_600, 3_000, 100);
        assertThat(watch.stuck(3_000 * MS)).as("1.4 s of refusals since the append taken").isFalse();
        refuse(3_100, 3_500, 100);
        assertThat(watch.stuck(3_500 * MS)).as("1.9 s since").isTrue();
    }

    @Test
    void refusalsFarApartAreNotOneRun() {
        refuse(0, 500, 100);
        refuse(11_000, 12_000, 100);
        assertThat(watch.stuck(12_000 * MS)).as("a refusal 10.5 s after the last, then 1 s of them").isFalse();
        refuse(12_100, 12_900, 100);
        assertThat(watch.stuck(12_900 * MS)).as("1.9 s of them").isTrue();
    }

    /** A hand-over in its time, then no appends: its refusals, however long ago they began, are no sign. */
    @Test
    void aShortRunOfRefusalsIsNoSignHoweverLongAgoItBegan() {
        refuse(0, 300, 100);
        assertThat(watch.stuck(2_000 * MS)).as("2 s after the first refusal").isFalse();
        assertThat(watch.stuck(9_000 * MS)).as("9 s after").isFalse();
    }

    @Test
    void aRunThatStoppedLongAgoIsNoSign() {
        refuse(0, 3_000, 100);
        assertThat(watch.stuck(3_000 * MS)).isTrue();
        assertThat(watch.stuck(14_000 * MS)).as("11 s after the last refusal").isFalse();
    }
}
