package io.sluice.store.internal.index;

/**
 * How the key index is cut into files: file {@code k} has {@code min(maxSlots, initialSlots << k)} hash slots and
 * {@code min(maxEntries, initialEntries << k)} entries, so a log that indexes a few keys costs a few dozen
 * KiB, and a busy one settles at full-size files. Fixed at store creation ({@code sluice.meta}); a file's
 * sequence number (its name) tells its geometry.
 *
 * @param initialSlots hash slots of the first file
 * @param maxSlots hash slots of every file once grown
 * @param initialEntries entries of the first file
 * @param maxEntries entries of every file once grown
 */
public record KeyGeometry(int initialSlots, int maxSlots, int initialEntries, int maxEntries) {

    /** Validates the sizes. */
    public KeyGeometry {
        if (initialSlots < 1 || maxSlots < initialSlots || initialEntries < 1 || maxEntries < initialEntries) {
            throw new IllegalArgumentException("key geometry needs 1 <= initial <= max for slots and entries, was "
                    + initialSlots + ", " + maxSlots + ", " + initialEntries + ", " + maxEntries);
        }
    }

    /**
     * @return the geometry a store creates with these maxima: growing from 256 slots and 1,024 entries (33 KiB,
     *     so a queue log with a few keys costs little), full size after a dozen files
     */
    public static KeyGeometry growingTo(int maxSlots, int maxEntries) {
        return new KeyGeometry(Math.min(256, maxSlots), maxSlots, Math.min(1024, maxEntries), maxEntries);
    }

    /** @return hash slots of file {@code sequence} */
    public int slotsOf(long sequence) {
        return (int) Math.min(maxSlots, sequence >= 31 ? maxSlots : (long) initialSlots << sequence);
    }

    /** @return entries of file {@code sequence} */
    public int entriesOf(long sequence) {
        return (int) Math.min(maxEntries, sequence >= 31 ? maxEntries : (long) initialEntries << sequence);
    }
}
