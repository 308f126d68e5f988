package io.sluice.cluster.ratis;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

/**
 * A leader's watch over its refusals of appends as "stepping down", for the sign of a hand-over stuck pending.
 *
 * <p>Ratis 3.3.0 refuses a leader's appends while it hands leadership over, and ends that when the transferee is
 * elected or the hand-over's time is up. But a hand-over whose first try fails at once (the transferee's
 * StartLeaderElection call already failed, its node just stopped, say) is answered as failed and left pending with no
 * time limit: the leader refuses every append until the group elects a leader, which it does not while the leader's
 * heartbeats go out. A stock producer once saw NOT_LEADER_OR_FOLLOWER for 120 s.
 *
 * <p>The sign: refusals, with no append taken between them, from a first to a last at least {@link #stuckNanos()}
 * later (longer than any hand-over the node asks for lasts), the last within {@link #GAP_NANOS}. Refusals
 * further apart than that are not one run (an earlier hand-over's refusal and a later one's, nothing sent between).
 * The node then asks Ratis, twice, a hand-over's time apart, whether the leader still refuses, and if so the leader
 * steps down and the group elects again. Thread-safe: the threads that take the answers note them, the node's watch
 * asks.
 */
public final class StuckHandOver {

    /**
     * Refusals further apart than this are not one run: well over a stock producer's longest wait between tries
     * (retry.backoff.max.ms, 1 s by default).
     */
    public static final long GAP_NANOS = TimeUnit.SECONDS.toNanos(10);

    /** How long a leader refuses appends as stepping down before it counts as stuck: the longest hand-over and 1 s. */
    private final long stuckNanos;
    private boolean refusing;
    private long since;
    private long last;

    /** @param longestHandOver the longest hand-over the node asks Ratis for */
    public StuckHandOver(Duration longestHandOver) {
        this.stuckNanos = longestHandOver.toNanos() + TimeUnit.SECONDS.toNanos(1);
    }

    /** @return how long a leader refuses appends as stepping down before it counts as stuck */
    public long stuckNanos() {
        return stuckNanos;
    }

    /** Notes an append refused as the leader stepping down. */
    public synchronized void refused(long now) {
        if (!refusing || now - last > GAP_NANOS) {
            refusing = true;
            since = now;
        }
        last = now;
    }

    /** Notes an append taken (or a run of refusals dealt with): the run ends. */
    public synchronized void ended() {
        refusing = false;
    }

    /** @return whether the leader shows the sign at {@code now} */
    public synchronized boolean stuck(long now) {
        return refusing && now - last <= GAP_NANOS && last - since >= stuckNanos;
    }
}
