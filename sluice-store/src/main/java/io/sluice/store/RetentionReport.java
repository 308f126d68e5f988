package io.sluice.store;

/**
 * What one retention pass found and did.
 *
 * @param segmentsDeleted segments deleted in this pass
 * @param bytesDeleted their size
 * @param logBytes the size of the log's segments after the pass
 * @param diskUsedRatio the disk's used share after the pass (0 to 1), counting deleted segments as freed
 * @param appendsRefused true if disk use is above the hard ratio, so appends are refused
 * @param heldBy the consumer group whose position stopped the pass from deleting more, or null
 * @param reason why the pass deleted what it did ("age", "size", "disk", "emergency"), or null if nothing
 */
public record RetentionReport(int segmentsDeleted, long bytesDeleted, long logBytes, double diskUsedRatio,
                              boolean appendsRefused, String heldBy, String reason) {
}
