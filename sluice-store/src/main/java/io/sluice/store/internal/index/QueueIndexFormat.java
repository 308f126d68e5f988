package io.sluice.store.internal.index;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Byte layout of a queue-index entry. Entry {@code n} (queue offset n) sits at byte {@code (n - first) * 32} of
 * the file named by its first entry {@code first}, a 20-digit zero-padded number; files grow per
 * {@link IndexGeometry}. Little-endian.
 *
 * <pre>
 * offset size field
 *   0     8   logPosition     position of the record holding the message (-1 in a gap marker)
 *   8     8   storeTimestamp  the record's store time, epoch ms (time lookups binary-search on it)
 *  16     4   recordSize      bytes of that record; 0 in a gap marker and in an entry never written
 *  20     4   messageCount    messages in the record (1 unless it was appended as a batch)
 *  24     4   indexInRecord   this message's place in the record, 0-based
 *  28     4   check           a hash of the queue offset and bytes [0, 28): see {@link #check}
 * </pre>
 *
 * An entry is valid only if its check word matches: an entry never written (zeros), lost or torn by a power
 * cut, or written for another queue offset is told apart from a real one without reading the log. A gap
 * marker (logPosition -1, recordSize 0, valid check) fills the entries of a queue's first file below its first
 * offset, when the queue's index starts past the file's start, so the valid entries of a queue always form one
 * run from its first file's start.
 *
 * The index holds no data of its own: every entry can be rebuilt from the log, and recovery does so.
 */
public final class QueueIndexFormat {

    /** Bytes per entry. */
    public static final int ENTRY_BYTES = 32;
    public static final int LOG_POSITION_OFFSET = 0;
    public static final int STORE_TIMESTAMP_OFFSET = 8;
    public static final int RECORD_SIZE_OFFSET = 16;
    public static final int MESSAGE_COUNT_OFFSET = 20;
    public static final int INDEX_IN_RECORD_OFFSET = 24;
    public static final int CHECK_OFFSET = 28;
    /** The log position a gap marker holds. */
    public static final long GAP = -1;

    /** A little-endian int field. */
    public static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    /** A little-endian long field. */
    public static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private QueueIndexFormat() {
    }

    /**
     * The check word of an entry: a 64-bit mix of the queue offset and every field, folded to 32 bits. Not a
     * cryptographic hash: it tells apart zeros, torn bytes and entries written for another offset, with a 2^-32
     * chance of missing one.
     */
    public static int check(long offset, long logPosition, long storeTimestamp, int recordSize, int messageCount,
                            int indexInRecord) {
        long h = mix(offset ^ 0x53_4C_49_58_5F_32L);
        h = mix(h ^ logPosition);
        h = mix(h ^ storeTimestamp);
        h = mix(h ^ ((long) recordSize << 32 | (messageCount & 0xFFFFFFFFL)));
        h = mix(h ^ indexInRecord);
        return (int) (h ^ (h >>> 32));
    }

    /** MurmurHash3's 64-bit finalizer. */
    private static long mix(long h) {
        h ^= h >>> 33;
        h *= 0xff51afd7ed558ccdL;
        h ^= h >>> 33;
        h *= 0xc4ceb9fe1a85ec53L;
        h ^= h >>> 33;
        return h;
    }

    /** Writes entry {@code offset} at byte {@code at} of {@code file}. */
    static void write(MemorySegment file, long at, long offset, long logPosition, long storeTimestamp, int recordSize,
                      int messageCount, int indexInRecord) {
        file.set(LONG, at + LOG_POSITION_OFFSET, logPosition);
        file.set(LONG, at + STORE_TIMESTAMP_OFFSET, storeTimestamp);
        file.set(INT, at + RECORD_SIZE_OFFSET, recordSize);
        file.set(INT, at + MESSAGE_COUNT_OFFSET, messageCount);
        file.set(INT, at + INDEX_IN_RECORD_OFFSET, indexInRecord);
        file.set(INT, at + CHECK_OFFSET, check(offset, logPosition, storeTimestamp, recordSize, messageCount,
                indexInRecord));
    }

    /** @return true if the entry at byte {@code at} is a real entry for {@code offset} (not a gap marker) */
    public static boolean isEntry(MemorySegment file, long at, long offset) {
        int recordSize = file.get(INT, at + RECORD_SIZE_OFFSET);
        return recordSize > 0 && checks(file, at, offset);
    }

    /** @return true if the entry at byte {@code at} is a gap marker for {@code offset} */
    public static boolean isGap(MemorySegment file, long at, long offset) {
        return file.get(LONG, at + LOG_POSITION_OFFSET) == GAP && file.get(INT, at + RECORD_SIZE_OFFSET) == 0
                && checks(file, at, offset);
    }

    private static boolean checks(MemorySegment file, long at, long offset) {
        return file.get(INT, at + CHECK_OFFSET) == check(offset, file.get(LONG, at + LOG_POSITION_OFFSET),
                file.get(LONG, at + STORE_TIMESTAMP_OFFSET), file.get(INT, at + RECORD_SIZE_OFFSET),
                file.get(INT, at + MESSAGE_COUNT_OFFSET), file.get(INT, at + INDEX_IN_RECORD_OFFSET));
    }
}
