package io.sluice.store.internal.index;

/**
 * How a queue's index is cut into files: file {@code k} holds {@code min(maxEntries, initialEntries << k)}
 * entries, so a new queue costs one small file and a busy one settles at {@code maxEntries} per file. The
 * schedule is fixed at store creation ({@code sluice.meta}), so a file's first entry (its name) tells its
 * size, and a file whose size was lost in a power cut is restored to it.
 *
 * @param initialEntries entries of the first file
 * @param maxEntries entries of every file once grown
 */
public record IndexGeometry(int initialEntries, int maxEntries) {

    /** Validates the sizes. */
    public IndexGeometry {
        if (initialEntries < 1 || maxEntries < initialEntries) {
            throw new IllegalArgumentException("index geometry needs 1 <= initialEntries <= maxEntries, was "
                    + initialEntries + ", " + maxEntries);
        }
    }

    /** @return the geometry a store creates with {@code maxEntries}: growing from 256 entries (8 KiB) */
    public static IndexGeometry growingTo(int maxEntries) {
        return new IndexGeometry(Math.min(256, maxEntries), maxEntries);
    }

    /** @return entries of file {@code k} */
    public long entriesOfFile(int k) {
        if (k < 31 && ((long) initialEntries << k) < maxEntries) {
            return (long) initialEntries << k;
        }
        return maxEntries;
    }

    /** @return the first entry (queue offset) of file {@code k} */
    public long firstEntryOfFile(int k) {
        long first = 0;
        int grown = 0;
        while (grown < k && entriesOfFile(grown) < maxEntries) {
            first += entriesOfFile(grown);
            grown++;
        }
        return first + (long) (k - grown) * maxEntries;
    }

    /** @return the number of the file holding entry {@code offset} */
    public int fileFor(long offset) {
        long first = 0;
        int k = 0;
        while (entriesOfFile(k) < maxEntries) {
            if (offset < first + entriesOfFile(k)) {
                return k;
            }
            first += entriesOfFile(k);
            k++;
        }
        return Math.toIntExact(k + (offset - first) / maxEntries);
    }

    /** @return the number of the file whose first entry is {@code firstEntry}, or -1 if no file starts there */
    public int fileStartingAt(long firstEntry) {
        if (firstEntry < 0) {
            return -1;
        }
        int k = fileFor(firstEntry);
        return firstEntryOfFile(k) == firstEntry ? k : -1;
    }
}
