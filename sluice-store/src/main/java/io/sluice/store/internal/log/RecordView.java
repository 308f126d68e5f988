package io.sluice.store.internal.log;

import java.lang.foreign.MemorySegment;

/**
 * A record's bytes in store memory, plus the pin that keeps them there (write-buffer pages only).
 *
 * @param bytes the record
 * @param pin the pin to release, or null when the bytes are in a segment mapping
 */
public record RecordView(MemorySegment bytes, WriteBufferPool.Pinned pin) implements AutoCloseable {
    @Override
    public void close() {
        if (pin != null) {
            pin.close();
        }
    }
}
