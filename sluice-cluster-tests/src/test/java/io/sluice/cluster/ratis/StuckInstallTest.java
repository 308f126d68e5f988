package io.sluice.cluster.ratis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class StuckInstallTest {

    private static final long MS = 1_000_000;
    private static final long HEARTBEAT = 75 * MS;

    private final StuckInstall watch = new StuckInstall();

    /** Answers the same, every heartbeat, from {@code from} until {@code until}; @return the time of the last one */
    private long answerAlike(long nextIndex, long matchIndex, long from, long until) {
        long t = from;
        for (; t + HEARTBEAT <= until; t += HEARTBEAT) {
            watch.answered(nextIndex, matchIndex, t);
        }
        watch.answered(nextIndex, matchIndex, until);
        return until;
    }

    @Test
    void aReplicaAnsweringTheSameForTheWholeWaitIsStuckAndNotBefore() {
        assertThat(watch.stuck(5, 0)).as("before any answer").isFalse();
        answerAlike(41, 5, 0, 2_900 * MS);
        assertThat(watch.stuck(5, 2_900 * MS)).as("after 2.9 s").isFalse();
        answerAlike(41, 5, 2_975 * MS, 3_050 * MS);
        assertThat(watch.stuck(5, 3_050 * MS)).as("after 3.05 s").isTrue();
    }

    @Test
    void aReplicaThatStoppedAnsweringIsNotStuck() {
        long last = answerAlike(41, 5, 0, 4_000 * MS);
        assertThat(watch.stuck(5, last + 400 * MS)).as("400 ms after its last answer").isTrue();
        assertThat(watch.stuck(5, last + 600 * MS)).as("600 ms after its last answer").isFalse();
    }

    /** A replica down or cut off for a while, answering as before once back, has not answered so for the wait. */
    @Test
    void aPauseInTheAnswersStartsTheWaitAgain() {
        answerAlike(41, 5, 0, 1_000 * MS);
        answerAlike(41, 5, 4_500 * MS, 4_600 * MS);
        assertThat(watch.stuck(5, 4_600 * MS)).as("just back after 3.5 s without answers").isFalse();
        answerAlike(41, 5, 4_675 * MS, 7_700 * MS);
        assertThat(watch.stuck(5, 7_700 * MS)).as("3.1 s of answers since it came back").isTrue();
    }

    /** One whose log diverges answers a lower next index each time. */
    @Test
    void anotherNextIndexStartsTheWaitAgain() {
        long t = 0;
        for (long next = 400; next > 300; next--, t += HEARTBEAT) {
            watch.answered(next, 5, t);
        }
        assertThat(t).isGreaterThan(StuckInstall.STUCK_NANOS);
        assertThat(watch.stuck(5, t)).isFalse();
    }

    @Test
    void aMatchIndexThatMovedIsNotStuck() {
        answerAlike(41, 5, 0, 3_500 * MS);
        assertThat(watch.stuck(6, 3_500 * MS)).as("the match index moved since the answers").isFalse();
        answerAlike(41, 6, 3_575 * MS, 5_000 * MS);
        assertThat(watch.stuck(6, 5_000 * MS)).as("1.4 s of answers at the new match index").isFalse();
    }
}
