package io.sluice.store;

import java.util.concurrent.TimeUnit;

/**
 * When the store deletes old data. Retention deletes whole commit-log segments, oldest first, with the
 * index files that only point into them; never the active segment. A segment goes when any of these holds:
 * its newest message is older than {@code retentionMillis}; the log is larger than {@code retentionBytes};
 * or the disk is fuller than {@code diskCleanRatio}. A segment that a registered consumer position still
 * needs ({@link Store#commitOffset}) is kept unless the disk is fuller than {@code diskEmergencyRatio},
 * which is logged. Above {@code diskHardRatio} appends are refused with {@link DiskFullException} and
 * resume once use falls below it.
 *
 * @param retentionMillis keep messages at least this long; {@link Long#MAX_VALUE} keeps them forever
 * @param retentionBytes keep the log at most this large; {@link Long#MAX_VALUE} for no limit
 * @param diskCleanRatio delete old segments while the disk is fuller than this (0 to 1)
 * @param diskEmergencyRatio above this, delete segments consumers still need (at or above diskCleanRatio)
 * @param diskHardRatio above this, refuse appends (at or above diskEmergencyRatio)
 * @param checkIntervalMillis how often retention and the disk check run
 */
public record RetentionPolicy(long retentionMillis, long retentionBytes, double diskCleanRatio,
                              double diskEmergencyRatio, double diskHardRatio, long checkIntervalMillis) {

    /** Validates each field and their order. */
    public RetentionPolicy {
        if (retentionMillis < 1) {
            throw new IllegalArgumentException("retentionMillis must be 1 or more, was " + retentionMillis);
        }
        if (retentionBytes < 1) {
            throw new IllegalArgumentException("retentionBytes must be 1 or more, was " + retentionBytes);
        }
        if (!(diskCleanRatio > 0 && diskCleanRatio <= diskEmergencyRatio && diskEmergencyRatio <= diskHardRatio
                && diskHardRatio <= 1)) {
            throw new IllegalArgumentException("disk ratios must satisfy 0 < diskCleanRatio <= diskEmergencyRatio"
                    + " <= diskHardRatio <= 1, were " + diskCleanRatio + ", " + diskEmergencyRatio + ", "
                    + diskHardRatio);
        }
        if (checkIntervalMillis < 1 || checkIntervalMillis > 3_600_000) {
            throw new IllegalArgumentException("checkIntervalMillis must be between 1 and 3600000, was "
                    + checkIntervalMillis);
        }
    }

    /**
     * @return RocketMQ's defaults: 72 hours, no size limit, clean above 75% disk use, delete consumers' data
     *     above 85%, refuse appends above 90%, checked every 10 seconds
     */
    public static RetentionPolicy defaults() {
        return new RetentionPolicy(TimeUnit.HOURS.toMillis(72), Long.MAX_VALUE, 0.75, 0.85, 0.90, 10_000);
    }

    /** @return this policy keeping messages {@code hours} hours */
    public RetentionPolicy withRetentionHours(long hours) {
        return withRetentionMillis(TimeUnit.HOURS.toMillis(hours));
    }

    /** @return this policy keeping messages {@code millis} ms */
    public RetentionPolicy withRetentionMillis(long millis) {
        return new RetentionPolicy(millis, retentionBytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                checkIntervalMillis);
    }

    /** @return this policy keeping at most {@code bytes} of log */
    public RetentionPolicy withRetentionBytes(long bytes) {
        return new RetentionPolicy(retentionMillis, bytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                checkIntervalMillis);
    }

    /** @return this policy with other disk ratios */
    public RetentionPolicy withDiskRatios(double clean, double emergency, double hard) {
        return new RetentionPolicy(retentionMillis, retentionBytes, clean, emergency, hard, checkIntervalMillis);
    }

    /** @return this policy checking every {@code millis} ms */
    public RetentionPolicy withCheckIntervalMillis(long millis) {
        return new RetentionPolicy(retentionMillis, retentionBytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                millis);
    }
}
