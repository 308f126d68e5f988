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
 * <p>An entry may instead move the partition's log start (Kafka's DeleteRecords, {@link #logStart(long, long)}): it
 * names no batch and has no state-machine data, so Ratis neither hands it to the state machine as it writes it nor asks
 * for its data to send it; every replica moves its log start as it applies it, at the same place of the log. It
 * carries where the log's batches end at it, as its base offset and its end, so that a walk back over the log for
 * where the batches end after an entry (a truncation, a store made to agree with its log, a log cut back) reads it as
 * it reads a batch entry.
 *
 * <p>Format (big-endian): version (1 byte, 2), base offset (8), batch count n (4), then per batch its offset count
 * (4) and its size in bytes (4). Version 1 (17 bytes: version, base offset, offset count, size) is one batch and is
 * still read. A log start entry is version 3 (17 bytes): version, the end of the batches before it (8), the new log
 * start (8).
 */
final class EntryHeader {

    static final byte VERSION = 2;
    private static final byte VERSION_ONE = 1;
    private static final int VERSION_ONE_BYTES = 17;
    private static final int FIXED_BYTES = 13;
    private static final int PER_BATCH_BYTES = 8;
    /** The version of a log start entry, and the first byte of the request for one. */
    private static final byte LOG_START = 3;
    private static final int LOG_START_BYTES = 17;
    /**
     * The size of a request for a log start entry (its version and the offset asked for): shorter than any record
     * batch (61 bytes of header at least), so no produced batch is taken for one.
     */
    private static final int LOG_START_REQUEST_BYTES = 9;

    private final long baseOffset;
    private final int[] counts;
    private final int[] sizes;
    private final int count;
    private final int size;
    /** The log start a log start entry moves the partition's to; -1 for an entry of batches. */
    private final long logStart;

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
        this.logStart = -1;
    }

    private EntryHeader(long batchesEnd, long logStart) {
        if (batchesEnd < 0 || logStart < 0 || logStart > batchesEnd) {
            throw new IllegalArgumentException("not a log start entry: log start " + logStart + " after batches"
                    + " that end at " + batchesEnd);
        }
        this.baseOffset = batchesEnd;
        this.counts = new int[0];
        this.sizes = new int[0];
        this.count = 0;
        this.size = 0;
        this.logStart = logStart;
    }

    /**
     * @param batchesEnd where the log's batches end at the entry (the leader's, as it starts the entry)
     * @param logStart the partition's new log start, at most {@code batchesEnd}
     * @return an entry that moves the partition's log start and names no batch
     */
    static EntryHeader logStart(long batchesEnd, long logStart) {
        return new EntryHeader(batchesEnd, logStart);
    }

    /** @return the message of a request to the partition's leader for a log start entry moving it to {@code offset} */
    static ByteString logStartRequest(long offset) {
        return ByteString.copyFrom(ByteBuffer.allocate(LOG_START_REQUEST_BYTES).put(LOG_START).putLong(offset)
                .array());
    }

    /**
     * @return the log start a request's message asks for ({@link #logStartRequest}), or -1 if it asks for none (it
     *     holds batches, or is not a request at all)
     */
    static long requestedLogStart(ByteString message) {
        if (message.size() != LOG_START_REQUEST_BYTES || message.byteAt(0) != LOG_START) {
            return -1;
        }
        return Math.max(-1, message.asReadOnlyByteBuffer().getLong(1));
    }

    /** @return the log start this entry moves the partition's to, or -1 for an entry of batches */
    long logStart() {
        return logStart;
    }

    /** @return an entry of one batch */
    static EntryHeader single(long baseOffset, int count, int size) {
        return new EntryHeader(baseOffset, new int[] {count}, new int[] {size});
    }

    /** @return the first batch's first offset (for a log start entry, where the batches before it end) */
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

    /** @return how many batches the entry carries (none for a log start entry) */
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
        if (logStart >= 0) {
            return ByteString.copyFrom(ByteBuffer.allocate(LOG_START_BYTES).put(LOG_START).putLong(baseOffset)
                    .putLong(logStart).array());
        }
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
        if (data.size() == LOG_START_BYTES && data.byteAt(0) == LOG_START) {
            bytes.get();
            return logStart(bytes.getLong(), bytes.getLong());
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
                + " or " + VERSION + ", nor a log start entry");
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof EntryHeader header && header.baseOffset == baseOffset
                && Arrays.equals(header.counts, counts) && Arrays.equals(header.sizes, sizes)
                && header.logStart == logStart;
    }

    @Override
    public int hashCode() {
        return Long.hashCode(baseOffset) * 31 + Arrays.hashCode(counts) * 17 + Arrays.hashCode(sizes)
                + Long.hashCode(logStart);
    }

    @Override
    public String toString() {
        if (logStart >= 0) {
            return "log start entry moving the log start to " + logStart + " (batches end at " + baseOffset + ")";
        }
        return "entry of " + counts.length + " batches at offset " + baseOffset + " (" + count + " offsets, " + size
                + " bytes)";
    }
}
