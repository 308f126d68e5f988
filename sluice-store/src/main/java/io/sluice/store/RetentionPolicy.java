package io.sluice.store;

import java.util.concurrent.TimeUnit;

/**
 * When the store deletes old data. Retention deletes whole commit-log segments, oldest first, with the
 * index files that only point into them; never the active segment. A segment goes when any of these holds:
 * its newest message is older than {@code retentionMillis}; the log is larger than {@code retentionBytes};
 * or the disk is fuller than {@code diskCleanRatio}. A segment that a registered consumer position still
 * needs ({@link Store#commitOffset}) is kept, if {@code consumersHoldRetention}, unless the disk is fuller than
 * {@code diskEmergencyRatio}, which is logged; a retention hold ({@link Store#holdRetention}) is kept the same way
 * whatever that flag says. Above {@code diskHardRatio} appends are refused with {@link DiskFullException} and
 * resume once use falls below it.
 *
 * <p>The defaults are RocketMQ's: the disk ratios delete, and consumers hold. A Kafka broker does neither: it never
 * deletes data because the disk fills (it refuses appends), and a committed offset never holds retention back; its
 * policy is {@link #withoutDiskRatioDeletion()} and {@link #withConsumersHoldingRetention withConsumersHoldingRetention(false)}.
 *
 * @param retentionMillis keep messages at least this long; {@link Long#MAX_VALUE} keeps them forever
 * @param retentionBytes keep the log at most this large; {@link Long#MAX_VALUE} for no limit
 * @param diskCleanRatio delete old segments while the disk is fuller than this (0 to 1; 1: never, disk use cannot
 *     pass it)
 * @param diskEmergencyRatio above this, delete segments consumers still need (diskCleanRatio to 1; 1: never)
 * @param diskHardRatio above this, refuse appends (0 to 1)
 * @param checkIntervalMillis how often retention and the disk check run
 * @param consumersHoldRetention whether registered consumer positions keep the segments they still need
 */
public record RetentionPolicy(long retentionMillis, long retentionBytes, double diskCleanRatio,
                              double diskEmergencyRatio, double diskHardRatio, long checkIntervalMillis,
                              boolean consumersHoldRetention) {

    /** Validates each field and their order. */
    public RetentionPolicy {
        if (retentionMillis < 1) {
            throw new IllegalArgumentException("retentionMillis must be 1 or more, was " + retentionMillis);
        }
        if (retentionBytes < 1) {
            throw new IllegalArgumentException("retentionBytes must be 1 or more, was " + retentionBytes);
        }
        if (!(diskCleanRatio > 0 && diskCleanRatio <= diskEmergencyRatio && diskEmergencyRatio <= 1
                && diskHardRatio > 0 && diskHardRatio <= 1)) {
            throw new IllegalArgumentException("disk ratios must satisfy 0 < diskCleanRatio <= diskEmergencyRatio"
                    + " <= 1 and 0 < diskHardRatio <= 1, were " + diskCleanRatio + ", " + diskEmergencyRatio + ", "
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
        return new RetentionPolicy(TimeUnit.HOURS.toMillis(72), Long.MAX_VALUE, 0.75, 0.85, 0.90, 10_000, true);
    }

    /** @return this policy keeping messages {@code hours} hours */
    public RetentionPolicy withRetentionHours(long hours) {
        return withRetentionMillis(TimeUnit.HOURS.toMillis(hours));
    }

    /** @return this policy keeping messages {@code millis} ms */
    public RetentionPolicy withRetentionMillis(long millis) {
        return new RetentionPolicy(millis, retentionBytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                checkIntervalMillis, consumersHoldRetention);
    }

    /** @return this policy keeping at most {@code bytes} of log */
    public RetentionPolicy withRetentionBytes(long bytes) {
        return new RetentionPolicy(retentionMillis, bytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                checkIntervalMillis, consumersHoldRetention);
    }

    /** @return this policy with other disk ratios */
    public RetentionPolicy withDiskRatios(double clean, double emergency, double hard) {
        return new RetentionPolicy(retentionMillis, retentionBytes, clean, emergency, hard, checkIntervalMillis,
                consumersHoldRetention);
    }

    /** @return this policy checking every {@code millis} ms */
    public RetentionPolicy withCheckIntervalMillis(long millis) {
        return new RetentionPolicy(retentionMillis, retentionBytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                millis, consumersHoldRetention);
    }

    /**
     * @return this policy deleting nothing because the disk fills (both ratios at 1, which disk use cannot pass):
     *     appends are still refused above {@code diskHardRatio}
     */
    public RetentionPolicy withoutDiskRatioDeletion() {
        return withDiskRatios(1, 1, diskHardRatio);
    }

    /** @return this policy with consumer positions keeping, or not, the segments they still need */
    public RetentionPolicy withConsumersHoldingRetention(boolean hold) {
        return new RetentionPolicy(retentionMillis, retentionBytes, diskCleanRatio, diskEmergencyRatio, diskHardRatio,
                checkIntervalMillis, hold);
    }
}
