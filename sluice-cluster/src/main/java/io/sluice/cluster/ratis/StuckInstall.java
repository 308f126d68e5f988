package io.sluice.cluster.ratis;

/**
 * A leader's watch over one replica's INCONSISTENCY answers, for the sign of an install stuck "in progress" (see
 * {@code RaftTransport}): the replica has answered with the same next index, its match index standing, without a
 * pause, for {@link #STUCK_NANOS}, and answered last within {@link #ANSWERING_NANOS}. A pause in the answers (the
 * replica down, cut off or restarting) starts the watch again, as does another next index or match index. Thread-safe:
 * the threads that take the replies note them, the appender's asks.
 */
public final class StuckInstall {

    /** How long a replica answers the same before it counts as stuck. */
    public static final long STUCK_NANOS = java.util.concurrent.TimeUnit.SECONDS.toNanos(3);
    /** Answers further apart than this are not one run (heartbeats go every 75 ms). */
    public static final long ANSWERING_NANOS = java.util.concurrent.TimeUnit.MILLISECONDS.toNanos(500);

    private long sameAnswer;
    private long sameAnswerMatch;
    private long sameAnswerSince;
    private long lastAnswerAt;
    private boolean answered;

    /** Notes an INCONSISTENCY answer with {@code nextIndex}, the replica's match index being {@code matchIndex}. */
    public synchronized void answered(long nextIndex, long matchIndex, long now) {
        if (!answered || nextIndex != sameAnswer || matchIndex != sameAnswerMatch
                || now - lastAnswerAt > ANSWERING_NANOS) {
            answered = true;
            sameAnswer = nextIndex;
            sameAnswerMatch = matchIndex;
            sameAnswerSince = now;
        }
        lastAnswerAt = now;
    }

    /** @return whether the replica, its match index now {@code matchIndex}, shows the sign at {@code now} */
    public synchronized boolean stuck(long matchIndex, long now) {
        return answered && matchIndex == sameAnswerMatch && now - lastAnswerAt <= ANSWERING_NANOS
                && now - sameAnswerSince >= STUCK_NANOS;
    }
}
