package io.sluice.store;

/**
 * How a new commit-log segment's disk blocks are reserved before anything is written into it. Either way a
 * full disk fails the append that needs the segment with a {@link StoreException}, never a SIGBUS through
 * a mapping.
 */
public enum SegmentAllocation {
    /**
     * {@code fallocate(2)} through FFM: reserves unwritten extents without writing. Falls back to
     * {@link #ZERO_FILL} (with one warning) where the filesystem does not support it.
     */
    FALLOCATE,
    /**
     * Writes zeros over the whole segment. Costs a full write of the file, but later fdatasyncs overwrite
     * already-written blocks, which needs no extent conversion.
     */
    ZERO_FILL
}
