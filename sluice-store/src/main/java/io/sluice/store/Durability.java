package io.sluice.store;

/**
 * What an append promises once its future completes: the caller says what it will tell others of the append, and the
 * store alone decides, from its flush mode and write path, what must be forced before that.
 */
public enum Durability {

    /**
     * As the flush mode promises: under SYNC the append is forced, under ASYNC it is written (to the page cache, or
     * to the write buffer of a write path that buffers appends in the process).
     */
    FLUSH_MODE,

    /**
     * Someone is told the append is stored (a producer with acks=1, say): it must survive a crash of this process.
     * Under SYNC it is forced; under ASYNC it is in the page cache, so a write path that buffers appends in the
     * process ({@link WritePath#buffered()}) forces it first, in a group commit with every other append waiting.
     */
    ACKNOWLEDGED,

    /** Forced to the device whatever the flush mode: under ASYNC it shares one group commit with others waiting. */
    FORCED;

    /**
     * @param config the store's configuration
     * @return true if an append with this durability completes only once forced
     */
    public boolean forces(StoreConfig config) {
        return switch (this) {
            case FORCED -> true;
            case ACKNOWLEDGED -> config.flushMode() == FlushMode.SYNC || config.writePath().buffered();
            case FLUSH_MODE -> config.flushMode() == FlushMode.SYNC;
        };
    }
}
