package io.sluice.store;

/**
 * How appended bytes travel into the commit log's segment files. Reads always go through a mapping of
 * the segment (or, for {@link #WRITE_BUFFER} and {@link #DIRECT}, through the buffer until it is committed).
 */
public enum WritePath {
    /** Records are encoded straight into the segment, mapped read-write with FFM. */
    MMAP,
    /**
     * Records are encoded into pooled off-heap buffers; a commit step writes them to the file with
     * positional {@code FileChannel.write} once {@link StoreConfig#commitMinBytes()} have gathered or every
     * {@link StoreConfig#commitIntervalMillis()}. Reads are served from the buffer until committed.
     */
    WRITE_BUFFER,
    /** Each append call is written with one positional {@code FileChannel.write} from a direct buffer. */
    CHANNEL,
    /**
     * Like {@link #WRITE_BUFFER}, but the commit step writes whole aligned blocks with {@code O_DIRECT}
     * ({@code ExtendedOpenOption.DIRECT}), bypassing the page cache: the partial block at the tail is rewritten
     * as it grows. Appends are then bounded by the device, not by the kernel's dirty-page limits. Where the
     * filesystem refuses {@code O_DIRECT} the commit falls back to buffered writes and logs it once.
     */
    DIRECT;

    /** @return true for the paths that encode into pooled buffers and commit them later */
    public boolean buffered() {
        return this == WRITE_BUFFER || this == DIRECT;
    }
}
