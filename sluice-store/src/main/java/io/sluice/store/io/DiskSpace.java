package io.sluice.store.io;

/**
 * How full the filesystem holding the store is.
 *
 * @param totalBytes the filesystem's size
 * @param usableBytes bytes this process may still write
 */
public record DiskSpace(long totalBytes, long usableBytes) {

    /** @return the share of the filesystem in use, 0 to 1, counting space reserved for root as used */
    public double usedRatio() {
        return totalBytes <= 0 ? 0 : 1.0 - (double) usableBytes / totalBytes;
    }
}
