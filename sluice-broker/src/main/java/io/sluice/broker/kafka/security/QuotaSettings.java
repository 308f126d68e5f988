package io.sluice.broker.kafka.security;

import java.util.Map;
import java.util.Set;

/**
 * A broker's settings of client quota measurement, with Kafka's names, defaults and bounds:
 * {@code quota.window.num} (11: ten whole windows and the current one), {@code quota.window.size.seconds} (1), and
 * the broker-wide {@code max.connection.creation.rate} (connections a second, default no limit).
 *
 * <p>Immutable and thread-safe.
 *
 * @param windowCount the samples a rate is measured over, at least 1
 * @param windowSizeSeconds each sample's length, at least 1
 * @param maxConnectionCreationRate new connections a second the broker accepts, at least 0
 *     ({@link Integer#MAX_VALUE}: no limit)
 */
public record QuotaSettings(int windowCount, int windowSizeSeconds, int maxConnectionCreationRate) {

    /** The keys taken. */
    public static final Set<String> KEYS = Set.of("quota.window.num", "quota.window.size.seconds",
            "max.connection.creation.rate");
    /** Kafka's defaults. */
    public static final QuotaSettings DEFAULTS = new QuotaSettings(11, 1, Integer.MAX_VALUE);

    /** @throws IllegalArgumentException naming the setting out of Kafka's bounds */
    public QuotaSettings {
        if (windowCount < 1) {
            throw new IllegalArgumentException("quota.window.num must be at least 1, was " + windowCount);
        }
        if (windowSizeSeconds < 1) {
            throw new IllegalArgumentException("quota.window.size.seconds must be at least 1, was "
                    + windowSizeSeconds);
        }
        if (maxConnectionCreationRate < 0) {
            throw new IllegalArgumentException("max.connection.creation.rate must be at least 0, was "
                    + maxConnectionCreationRate);
        }
    }

    /**
     * @param settings the broker's settings; those absent take Kafka's defaults, other keys are ignored
     * @throws IllegalArgumentException naming a setting that is not an int or out of bounds
     */
    public static QuotaSettings of(Map<String, String> settings) {
        return new QuotaSettings(integer(settings, "quota.window.num", DEFAULTS.windowCount),
                integer(settings, "quota.window.size.seconds", DEFAULTS.windowSizeSeconds),
                integer(settings, "max.connection.creation.rate", DEFAULTS.maxConnectionCreationRate));
    }

    /** @return the length of one sample in milliseconds: also the longest request or connection throttle */
    public long windowSizeMillis() {
        return windowSizeSeconds * 1000L;
    }

    private static int integer(Map<String, String> settings, String key, int defaultValue) {
        String value = settings.get(key);
        if (value == null) {
            return defaultValue;
        }
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be an int, was '" + value + "'", e);
        }
    }
}
