package io.sluice.cluster;

import java.nio.ByteBuffer;
import java.util.Arrays;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * What a partition's Raft log keeps of one entry: the produced batches it carries, where they go in the partition
 * and how large each is. The batches themselves, one after the other, are the entry's state-machine data, which
 * Ratis hands to the state machine and leaves out of its log (the partition's store holds them, once).
 *
 * <p>An entry carries one batch or several: batches of a partition that arrive while earlier entries are being
 * replicated go out together, so that the Raft work per entry (its log record, its replication round trip, its
 * commit) is shared by them.
 *
 * <p>Format (big-endian): version (1 byte, 2), base offset (8), batch count n (4), then per batch its offset count
 * (4) and its size in bytes (4). Version 1 (17 bytes: version, base offset, offset count, size) is one batch and is
 * still read.
 */
final class EntryHeader {

    static final byte VERSION = 2;
    private static final byte VERSION_ONE = 1;
    private static final int VERSION_ONE_BYTES = 17;
    private static final int FIXED_BYTES = 13;
    private static final int PER_BATCH_BYTES = 8;

    private final long baseOffset;
    private final int[] counts;
    private final int[] sizes;
    private final int count;
    private final int size;

    /**
     * @param baseOffset the first batch's first offset in the partition; the others follow it
     * @param counts the offsets each batch covers
     * @param sizes each batch's size in bytes
     */
    EntryHeader(long baseOffset, int[] counts, int[] sizes) {
        if (baseOffset < 0 || counts.length < 1 || counts.length != sizes.length) {
            throw new IllegalArgumentException("not an entry's batches: base offset " + baseOffset + ", "
                    + counts.length + " offset counts, " + sizes.length + " sizes");
        }
        long total = 0;
        long bytes = 0;
        for (int i = 0; i < counts.length; i++) {
            if (counts[i] < 1 || sizes[i] < 1) {
                throw new IllegalArgumentException("batch " + i + " of an entry at offset " + baseOffset + " covers "
                        + counts[i] + " offsets in " + sizes[i] + " bytes");
            }
            total += counts[i];
            bytes += sizes[i];
        }
        if (total > Integer.MAX_VALUE || bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("an entry of " + total + " offsets, " + bytes + " bytes is too large");
        }
        this.baseOffset = baseOffset;
        this.counts = counts.clone();
        this.sizes = sizes.clone();
        this.count = (int) total;
        this.size = (int) bytes;
    }

    /** @return an entry of one batch */
    static EntryHeader single(long baseOffset, int count, int size) {
        return new EntryHeader(baseOffset, new int[] {count}, new int[] {size});
    }

    /** @return the first batch's first offset */
    long baseOffset() {
        return baseOffset;
    }

    /** @return the offsets the entry's batches cover together */
    int count() {
        return count;
    }

    /** @return the size of the entry's batches together, in bytes */
    int size() {
        return size;
    }

    /** @return how many batches the entry carries */
    int batches() {
        return counts.length;
    }

    /** @return the offsets batch {@code i} covers */
    int count(int i) {
        return counts[i];
    }

    /** @return batch {@code i}'s size in bytes */
    int size(int i) {
        return sizes[i];
    }

    /** @return the offset after the last batch's last */
    long end() {
        return baseOffset + count;
    }

    ByteString encode() {
        ByteBuffer bytes = ByteBuffer.allocate(FIXED_BYTES + PER_BATCH_BYTES * counts.length);
        bytes.put(VERSION).putLong(baseOffset).putInt(counts.length);
        for (int i = 0; i < counts.length; i++) {
            bytes.putInt(counts[i]).putInt(sizes[i]);
        }
        return ByteString.copyFrom(bytes.array());
    }

    /**
     * @return the header in an entry's log data
     * @throws IllegalArgumentException if the data is not a header of a version this reads
     */
    static EntryHeader decode(ByteString data) {
        ByteBuffer bytes = data.asReadOnlyByteBuffer();
        if (data.size() == VERSION_ONE_BYTES && data.byteAt(0) == VERSION_ONE) {
            bytes.get();
            return single(bytes.getLong(), bytes.getInt(), bytes.getInt());
        }
        if (data.size() >= FIXED_BYTES + PER_BATCH_BYTES && data.byteAt(0) == VERSION) {
            bytes.get();
            long base = bytes.getLong();
            int n = bytes.getInt();
            if (n >= 1 && data.size() == FIXED_BYTES + (long) PER_BATCH_BYTES * n) {
                int[] counts = new int[n];
                int[] sizes = new int[n];
                for (int i = 0; i < n; i++) {
                    counts[i] = bytes.getInt();
                    sizes[i] = bytes.getInt();
                }
                return new EntryHeader(base, counts, sizes);
            }
        }
        throw new IllegalArgumentException("a partition log entry of " + data.size() + " bytes, version "
                + (data.isEmpty() ? "none" : data.byteAt(0)) + ": not a batch entry of version " + VERSION_ONE
                + " or " + VERSION);
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof EntryHeader header && header.baseOffset == baseOffset
                && Arrays.equals(header.counts, counts) && Arrays.equals(header.sizes, sizes);
    }

    @Override
    public int hashCode() {
        return Long.hashCode(baseOffset) * 31 + Arrays.hashCode(counts) * 17 + Arrays.hashCode(sizes);
    }

    @Override
    public String toString() {
        return "entry of " + counts.length + " batches at offset " + baseOffset + " (" + count + " offsets, " + size
                + " bytes)";
    }
}
