package io.sluice.store;

import java.lang.foreign.MemorySegment;

/**
 * Decides, batch by batch, what compaction keeps of a BATCHES queue ({@link Store#compact}). The store hands it
 * each stored batch of the segments it rewrites, in log order, and writes what it returns in the batch's place.
 */
@FunctionalInterface
public interface BatchCleaner {

    /**
     * @param batch one stored Kafka record batch (v2), its baseOffset set; read-only, and valid only during the call
     * @return {@code batch} itself to keep it as it is; a cleaned copy to keep in its place, which must keep its
     *     baseOffset and lastOffsetDelta and be a valid batch (CRC32C included) of at least one record; or null to
     *     drop it whole (its offsets then read as a gap that readers step over)
     */
    MemorySegment clean(MemorySegment batch);
}
