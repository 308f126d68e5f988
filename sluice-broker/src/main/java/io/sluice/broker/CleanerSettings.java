package io.sluice.broker;

/**
 * The log cleaner's settings, under Kafka's broker config names: whether it runs ({@code log.cleaner.enable}), how
 * long it waits when it found nothing to clean ({@code log.cleaner.backoff.ms}), the memory of its map of latest
 * offsets by key ({@code log.cleaner.dedupe.buffer.size}, 24 bytes a key, taken only as keys come) and the bytes a
 * second it reads and writes at most ({@code log.cleaner.io.max.bytes.per.second}).
 *
 * @param enabled whether compacted topics are cleaned
 * @param backoffMillis the pause between two rounds that cleaned nothing
 * @param dedupeBufferBytes the most memory the map of latest offsets takes
 * @param ioMaxBytesPerSecond the most bytes it reads and writes a second
 */
public record CleanerSettings(boolean enabled, long backoffMillis, long dedupeBufferBytes,
                              double ioMaxBytesPerSecond) {

    /** Kafka 4.3.1's defaults: enabled, 15 s, 128 MiB, no limit. */
    public static final CleanerSettings DEFAULTS = new CleanerSettings(true, 15_000, 128L << 20, Double.MAX_VALUE);

    /** Checks the fields, naming Kafka's key for the one that is wrong. */
    public CleanerSettings {
        if (backoffMillis < 0) {
            throw new IllegalArgumentException("log.cleaner.backoff.ms must be at least 0, was " + backoffMillis);
        }
        if (dedupeBufferBytes < 1024 * 1024) {
            throw new IllegalArgumentException("log.cleaner.dedupe.buffer.size must be at least 1048576, was "
                    + dedupeBufferBytes);
        }
        if (!(ioMaxBytesPerSecond > 0)) {
            throw new IllegalArgumentException("log.cleaner.io.max.bytes.per.second must be more than 0, was "
                    + ioMaxBytesPerSecond);
        }
    }

    /** @return these settings with the pause between rounds set to {@code millis} */
    public CleanerSettings withBackoffMillis(long millis) {
        return new CleanerSettings(enabled, millis, dedupeBufferBytes, ioMaxBytesPerSecond);
    }
}
