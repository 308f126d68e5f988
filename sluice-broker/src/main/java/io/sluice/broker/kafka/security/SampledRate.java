package io.sluice.broker.kafka.security;

/**
 * A rate over sampled windows, computed exactly as kafka-clients' {@code Rate} over a {@code WindowedSum} with a
 * {@code MetricConfig} of {@code samples} windows of {@code windowMillis} each (and no event window), and the throttle
 * time of Kafka's {@code QuotaUtils} when the rate is over a bound. Kafka's quota sensors are these; the same
 * arithmetic, in the same order, gives the same doubles and so the same milliseconds.
 *
 * <p>How Kafka measures, which this class keeps:
 * <ul>
 *   <li>A value goes into the current sample; a sample is complete once {@code windowMillis} have passed since it
 *       started, and the next value starts the next one. There are {@code samples + 1} slots, reused in turn (the
 *       extra one holds the sample that overlaps the oldest edge of the window).</li>
 *   <li>Before a measure, every sample whose last value is {@code samples * windowMillis} or more old is reset to
 *       start now.</li>
 *   <li>The rate is the sum of all samples divided by the elapsed time since the oldest sample started, in seconds,
 *       where fewer than {@code samples - 1} whole windows count as {@code samples - 1} (so that a first burst is
 *       spread over the whole window rather than measured over a few milliseconds), and never less than 1 ms.</li>
 *   <li>Over a bound B, with rate O over window W, the throttle time is {@code round((O - B) / B * W)} ms: how long no
 *       more traffic would take to bring the rate back to B.</li>
 * </ul>
 *
 * <p>The slots are allocated once, so recording allocates nothing. Not thread-safe: the owner locks.
 */
final class SampledRate {

    private final int samples;
    private final long windowMillis;
    private final long[] startMillis;
    private final long[] lastMillis;
    private final double[] values;
    private int used;
    private int current;
    private long lastRecordMillis;

    /**
     * @param samples the windows of the measure, at least 1 ({@code quota.window.num})
     * @param windowMillis each window's length, at least 1 ({@code quota.window.size.seconds} in ms)
     */
    SampledRate(int samples, long windowMillis) {
        if (samples < 1 || windowMillis < 1) {
            throw new IllegalArgumentException("samples and windowMillis must be at least 1: " + samples + ", "
                    + windowMillis);
        }
        this.samples = samples;
        this.windowMillis = windowMillis;
        this.startMillis = new long[samples + 1];
        this.lastMillis = new long[samples + 1];
        this.values = new double[samples + 1];
    }

    /** Adds {@code value} at {@code nowMillis} (Kafka's {@code SampledStat.record}). */
    void record(double value, long nowMillis) {
        lastRecordMillis = nowMillis;
        if (used == 0) {
            add(nowMillis);
        }
        if (nowMillis - startMillis[current] >= windowMillis) {
            current = (current + 1) % (samples + 1);
            if (current >= used) {
                add(nowMillis);
            } else {
                reset(current, nowMillis);
            }
        }
        values[current] += value;
        lastMillis[current] = nowMillis;
    }

    /** @return the rate per second at {@code nowMillis} (Kafka's {@code Rate.measure}) */
    double measure(long nowMillis) {
        purge(nowMillis);
        double total = 0.0;
        for (int i = 0; i < used; i++) {
            total += values[i];
        }
        return total / (windowSizeMillis(nowMillis) / 1000.0);
    }

    /** @return the time the rate is measured over at {@code nowMillis} (Kafka's {@code Rate.windowSize}) */
    long windowSizeMillis(long nowMillis) {
        purge(nowMillis);
        if (used == 0) {
            add(nowMillis);
        }
        long oldest = startMillis[0];
        for (int i = 1; i < used; i++) {
            oldest = Math.min(oldest, startMillis[i]);
        }
        long elapsedMillis = nowMillis - oldest;
        int fullWindows = (int) (elapsedMillis / windowMillis);
        int minFullWindows = samples - 1;
        if (fullWindows < minFullWindows) {
            elapsedMillis += (minFullWindows - fullWindows) * windowMillis;
        }
        return Math.max(elapsedMillis, 1);
    }

    /**
     * Records {@code value}, then measures: Kafka's {@code Sensor.record(value, now, true)} on a quota sensor, and
     * {@code QuotaUtils.throttleTime} when the quota is violated.
     *
     * @param bound the quota (upper bound on the rate)
     * @return 0 when the rate is within {@code bound} (NaN is never within, but throttles 0 ms as in Kafka), else the
     *     milliseconds to throttle, rounded as Kafka rounds them
     */
    long recordAndGetThrottleMillis(double value, long nowMillis, double bound) {
        record(value, nowMillis);
        double rate = measure(nowMillis);
        if (rate <= bound) {
            return 0;
        }
        return Math.round((rate - bound) / bound * windowSizeMillis(nowMillis));
    }

    /** @return when a value was last recorded (0 before any) */
    long lastRecordMillis() {
        return lastRecordMillis;
    }

    private void add(long nowMillis) {
        reset(used, nowMillis);
        used++;
    }

    private void reset(int slot, long nowMillis) {
        startMillis[slot] = nowMillis;
        lastMillis[slot] = nowMillis;
        values[slot] = 0.0;
    }

    private void purge(long nowMillis) {
        long expireAgeMillis = samples * windowMillis;
        for (int i = 0; i < used; i++) {
            if (nowMillis - lastMillis[i] >= expireAgeMillis) {
                reset(i, nowMillis);
            }
        }
    }
}
