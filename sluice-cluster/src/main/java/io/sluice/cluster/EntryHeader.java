package io.sluice.cluster;

import java.nio.ByteBuffer;
import org.apache.ratis.thirdparty.com.google.protobuf.ByteString;

/**
 * What a partition's Raft log keeps of one produced batch: where it goes in the partition and how large it is. The
 * batch itself is the entry's state-machine data, which Ratis hands to the state machine and leaves out of its log
 * (the partition's store holds it, once).
 *
 * <p>Format (17 bytes, big-endian): version (1 byte, 1), base offset (8), offset count (4), batch size (4).
 *
 * @param baseOffset the batch's first offset in the partition
 * @param count the offsets it covers
 * @param size its size in bytes
 */
record EntryHeader(long baseOffset, int count, int size) {

    static final byte VERSION = 1;
    static final int BYTES = 17;

    EntryHeader {
        if (baseOffset < 0 || count < 1 || size < 1) {
            throw new IllegalArgumentException("not a batch's entry: base offset " + baseOffset + ", " + count
                    + " offsets, " + size + " bytes");
        }
    }

    /** @return the offset after the batch's last */
    long end() {
        return baseOffset + count;
    }

    ByteString encode() {
        ByteBuffer bytes = ByteBuffer.allocate(BYTES);
        bytes.put(VERSION).putLong(baseOffset).putInt(count).putInt(size);
        return ByteString.copyFrom(bytes.array());
    }

    /**
     * @return the header in an entry's log data
     * @throws IllegalArgumentException if the data is not a header this version writes
     */
    static EntryHeader decode(ByteString data) {
        if (data.size() != BYTES || data.byteAt(0) != VERSION) {
            throw new IllegalArgumentException("a partition log entry of " + data.size() + " bytes, version "
                    + (data.isEmpty() ? "none" : data.byteAt(0)) + ": not a batch entry of version " + VERSION);
        }
        ByteBuffer bytes = data.asReadOnlyByteBuffer();
        bytes.get();
        return new EntryHeader(bytes.getLong(), bytes.getInt(), bytes.getInt());
    }
}
