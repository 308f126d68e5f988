package io.sluice.store.internal.log;

import io.sluice.store.StoreConfig;

/**
 * How large a log's segments are. The shared log's are all {@code max} bytes. A log of its own (a topic's or a
 * queue's) starts with a {@code first}-byte segment and doubles with each roll up to {@code max}, so a new queue
 * costs 64 KiB of disk instead of a gigabyte, and a busy one settles at full-size segments within a few rolls.
 * Segment files are named by their base position and read at their own size, so sizes may differ freely.
 *
 * @param first the size of a log's first segment
 * @param max the size segments grow to (the store's segment size)
 */
public record SegmentSizes(long first, long max) {

    /** Validates the sizes. */
    public SegmentSizes {
        if (first < 1 || max < first) {
            throw new IllegalArgumentException("segment sizes need 1 <= first <= max, was " + first + ", " + max);
        }
    }

    /** @return every segment {@code size} bytes */
    public static SegmentSizes fixed(long size) {
        return new SegmentSizes(size, size);
    }

    /** @return segments growing from {@link StoreConfig#MIN_SEGMENT_SIZE_BYTES} (or {@code max}, if smaller) */
    public static SegmentSizes growingTo(long max) {
        return new SegmentSizes(Math.min(max, StoreConfig.MIN_SEGMENT_SIZE_BYTES), max);
    }

    /** @return true if segments start smaller than they end */
    public boolean grows() {
        return first < max;
    }

    /**
     * @param previous the size of the segment before, or 0 for a log's first
     * @param atLeast bytes the segment must hold (a record that did not fit the one before)
     * @return the size of the next segment: double the previous one (at most {@code max}), more if needed
     */
    public long next(long previous, long atLeast) {
        long size = previous <= 0 ? first : Math.min(max, Math.max(first, previous) * 2);
        while (size < atLeast && size < max) {
            size = Math.min(max, size * 2);
        }
        return size;
    }
}
