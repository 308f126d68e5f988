package io.sluice.store.internal.index;

import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * Byte layout of a queue-index entry. Entry {@code n} (queue offset n) sits at byte {@code (n - first) * 32}
 * of the file named by its first entry {@code first}, a 20-digit zero-padded number; every file of a queue
 * holds the same number of entries. Little-endian.
 *
 * <pre>
 * offset size field
 *   0     8   logPosition     position of the record holding the message
 *   8     8   storeTimestamp  the record's store time, epoch ms (time lookups binary-search on it)
 *  16     4   recordSize      bytes of that record; 0 marks an empty (never written) entry
 *  20     4   messageCount    messages in the record (1 unless it was appended as a batch)
 *  24     4   indexInRecord   this message's place in the record, 0-based
 *  28     4   tagHash         hash of the message's tag, 0 for none
 * </pre>
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
    public static final int TAG_HASH_OFFSET = 28;

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private QueueIndexFormat() {
    }
}
