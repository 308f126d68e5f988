package io.sluice.store;

/**
 * When an append's future completes, and so what an acknowledgement promises.
 */
public enum FlushMode {
    /**
     * The future completes once the record is in the log and indexed (in the page cache, or in a write
     * buffer on {@link WritePath#WRITE_BUFFER}). A background flusher forces the log when
     * {@link StoreConfig#flushDirtyBytes()} are dirty or every {@link StoreConfig#flushIntervalMillis()}.
     * A process crash keeps what reached the page cache; a power cut can take back the unflushed tail.
     */
    ASYNC,
    /**
     * Group commit: the future completes only after a force (fdatasync) that covers the record's last
     * byte. Concurrent appenders share one force. Readers never see bytes that are not yet durable.
     */
    SYNC
}
