package io.sluice.sim;

import java.time.Instant;
import java.time.InstantSource;

/** A clock that moves only when the simulation moves it. Not thread-safe (one simulation thread). */
public final class SimClock implements InstantSource {

    private long millis;

    /** @param startMillis the epoch millis it starts at */
    public SimClock(long startMillis) {
        this.millis = startMillis;
    }

    @Override
    public Instant instant() {
        return Instant.ofEpochMilli(millis);
    }

    @Override
    public long millis() {
        return millis;
    }

    /** @param delta milliseconds to move on, 0 or more */
    public void advance(long delta) {
        if (delta < 0) {
            throw new IllegalArgumentException("time does not go back: " + delta);
        }
        millis += delta;
    }
}
