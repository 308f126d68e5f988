package io.sluice.store;

/**
 * How appended bytes travel into the commit log's segment files. Reads always go through a mapping of
 * the segment (or, for {@link #WRITE_BUFFER}, through the buffer until it is committed).
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
    CHANNEL
}
