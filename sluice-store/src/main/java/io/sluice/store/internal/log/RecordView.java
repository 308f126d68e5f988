package io.sluice.store.internal.log;

import io.sluice.store.internal.cache.Pin;
import java.lang.foreign.MemorySegment;

/**
 * A record's bytes in store memory, plus the pin that keeps them there: a write-buffer page's, or the
 * segment's, which retention cannot unmap while it is held.
 *
 * @param bytes the record
 * @param pin the pin to release, or null when nothing needs releasing
 */
public record RecordView(MemorySegment bytes, Pin pin) implements AutoCloseable {
    @Override
    public void close() {
        if (pin != null) {
            pin.release();
        }
    }
}
