package io.sluice.store.io;

/**
 * How full the filesystem holding the store is.
 *
 * @param totalBytes the filesystem's size
 * @param freeBytes bytes not allocated to any file ({@code f_bfree}, including blocks reserved for root)
 * @param usableBytes bytes an unprivileged process may still write ({@code f_bavail})
 */
public record DiskSpace(long totalBytes, long freeBytes, long usableBytes) {

    /** @return bytes allocated to files */
    public long usedBytes() {
        return totalBytes - freeBytes;
    }

    /**
     * @return the share in use as {@code df} reports it, 0 to 1: used / (used + usable), so blocks reserved
     *     for root count neither as used nor as available
     */
    public double usedRatio() {
        long used = usedBytes();
        return used + usableBytes <= 0 ? 0 : (double) used / (used + usableBytes);
    }
}
