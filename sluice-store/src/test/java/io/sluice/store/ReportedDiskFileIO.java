package io.sluice.store;

import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.StoreFile;

/**
 * The default file calls, with a chosen share of a 1 TiB disk reported in use: for other modules' tests that make a
 * store see a full disk (its retention reads the reported space and refuses appends above its hard ratio).
 */
public final class ReportedDiskFileIO extends ForwardingFileIO {

    /** @param usedRatio the share of the disk reported in use at first */
    public ReportedDiskFileIO(double usedRatio) {
        reportDiskUse(usedRatio);
    }

    /** From now on reports {@code usedRatio} of the disk in use. */
    public void reportDiskUse(double usedRatio) {
        long total = 1L << 40;
        long free = Math.round(total * (1 - usedRatio));
        reportedSpace = new DiskSpace(total, free, free);
    }

    @Override
    StoreFile wrap(StoreFile opened) {
        return opened;
    }
}
