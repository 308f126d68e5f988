package io.sluice.store;

/**
 * How a new commit-log segment's disk blocks are reserved before anything is written into it. Either way a
 * full disk fails the append that needs the segment with a {@link StoreException}, never a SIGBUS through
 * a mapping.
 */
public enum SegmentAllocation {
    /**
     * The default: {@link #ZERO_FILL} under {@link FlushMode#SYNC} except on {@link WritePath#MMAP}, else
     * {@link #FALLOCATE}. On ext4 an fdatasync that overwrites written blocks needs no extent conversion,
     * which made SYNC group commit faster on the paths that write with system calls, while under ASYNC the
     * extra full write of each segment only competes with appends for the disk. On MMAP under SYNC,
     * zero-filled segments were slower instead. The figures: docs/benchmarks.md.
     */
    AUTO,
    /**
     * {@code fallocate(2)} through FFM: reserves unwritten extents without writing. Falls back to
     * {@link #ZERO_FILL} (with one warning) where the filesystem does not support it.
     */
    FALLOCATE,
    /**
     * Writes zeros over the whole segment. Costs a full write of the file, but later fdatasyncs overwrite
     * already-written blocks, which needs no extent conversion.
     */
    ZERO_FILL;

    /**
     * @return the allocation used with {@code mode} and {@code path}: this one, or what {@link #AUTO} stands
     *         for
     */
    public SegmentAllocation resolve(FlushMode mode, WritePath path) {
        if (this != AUTO) {
            return this;
        }
        return mode == FlushMode.SYNC && path != WritePath.MMAP ? ZERO_FILL : FALLOCATE;
    }
}
