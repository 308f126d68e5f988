package io.sluice.store;

/**
 * What one {@link Store#compact} call did.
 *
 * @param segmentsRead sealed segments whose batches were handed to the cleaner
 * @param segmentsRewritten segments replaced by a rewritten copy (the others were left as they were)
 * @param bytesRead bytes of batches read
 * @param bytesBefore bytes of batches, gaps included, in the segments rewritten, before
 * @param bytesAfter bytes of batches, gaps included, in those segments after
 * @param batchesDropped batches dropped whole
 * @param batchesCleaned batches kept as a cleaned copy
 * @param endOffset the offset after the last segment read: everything below it is as the cleaner left it (-1 if
 *     no segment was read)
 */
public record CompactionReport(int segmentsRead, int segmentsRewritten, long bytesRead, long bytesBefore,
                               long bytesAfter, long batchesDropped, long batchesCleaned, long endOffset) {

    /** A call that found nothing to read. */
    public static final CompactionReport NONE = new CompactionReport(0, 0, 0, 0, 0, 0, 0, -1);

    /** @return the bytes of batches the segments read hold now */
    public long bytesKept() {
        return bytesRead - (bytesBefore - bytesAfter);
    }
}
