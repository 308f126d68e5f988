package io.sluice.store.internal.log;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * Byte layout of a commit-log record. All integers are little-endian. A record never spans segments.
 *
 * <pre>
 * MESSAGES record (type 0): N &gt;= 1 messages of one topic and queue, queue offsets first .. first+N-1
 *  offset size field
 *   0     4   length          total record bytes, this field included
 *   4     4   magic           0x534C5243 ("SLRC")
 *   8     4   crc             CRC32C of bytes [12, length)
 *  12     1   version         1
 *  13     1   type            0 = messages, 1 = filler
 *  14     2   flags           bit 0: batch (appended as one call of N messages); bit 1: opaque
 *  16     8   logPosition     the record's own position in the log
 *  24     8   storeTimestamp  epoch milliseconds
 *  32     8   firstQueueOffset
 *  40     4   queueId
 *  44     4   messageCount    N
 *  48     2   topicLength     T
 *  50     T   topic           ASCII [a-zA-Z0-9._-]
 *  then N messages:
 *   +0    4   entryLength     bytes of this message after this field
 *   +4    8   bornTimestamp   epoch milliseconds
 *   +12   4   metadataLength  M
 *   +16   M   metadata        u16 keyCount, {u16 len, UTF-8}*, u16 tagLen, UTF-8 tag,
 *                             u16 propertyCount, {u16 len, name, u16 len, value}*
 *   +16+M 4   bodyLength      B
 *   +20+M B   body
 *  or, if opaque (bit 1), one body in its producer's framing to the record's end, covering all N offsets;
 *  its first 8 bytes hold firstQueueOffset, big-endian, set by the store at append
 *
 * FILLER record (type 1): pads the rest of a segment; length = bytes to the segment's end
 *   0 length | 4 magic | 8 crc of bytes [12, 24) | 12 version | 13 type | 14 flags | 16 logPosition
 * </pre>
 *
 * If fewer than {@link #FILLER_BYTES} remain in a segment, the remainder is left as it is and readers treat
 * it as the segment's end. Because every record carries its own log position inside its checksum, stale
 * bytes (a recycled or pre-filled file, an earlier history past a truncation) never validate.
 *
 * <p>Stateless; thread-safe.
 */
public final class RecordFormat {

    /** Record magic: "SLRC". */
    public static final int MAGIC = 0x534C5243;
    /** Record format version. */
    public static final byte VERSION = 1;
    /** Record type: messages. */
    public static final byte TYPE_MESSAGES = 0;
    /** Record type: end-of-segment filler. */
    public static final byte TYPE_FILLER = 1;
    /** Flag: the record was appended as a batch. */
    public static final short FLAG_BATCH = 1;
    /** Flag: the record holds one opaque body covering its N offsets instead of N message entries. */
    public static final short FLAG_OPAQUE = 2;
    /** Smallest opaque body: its first 8 bytes are the first queue offset. */
    public static final int OPAQUE_MIN_BYTES = 8;
    private static final ValueLayout.OfLong LONG_BIG_ENDIAN =
            ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    public static final int LENGTH_OFFSET = 0;
    public static final int MAGIC_OFFSET = 4;
    public static final int CRC_OFFSET = 8;
    public static final int VERSION_OFFSET = 12;
    public static final int TYPE_OFFSET = 13;
    public static final int FLAGS_OFFSET = 14;
    public static final int LOG_POSITION_OFFSET = 16;
    public static final int STORE_TIMESTAMP_OFFSET = 24;
    public static final int FIRST_QUEUE_OFFSET_OFFSET = 32;
    public static final int QUEUE_ID_OFFSET = 40;
    public static final int MESSAGE_COUNT_OFFSET = 44;
    public static final int TOPIC_LENGTH_OFFSET = 48;
    public static final int TOPIC_OFFSET = 50;
    /** Bytes of a filler record that are written and checked. */
    public static final int FILLER_BYTES = 24;
    /** Fixed bytes of one message inside a record, besides metadata and body. */
    public static final int MESSAGE_FIXED_BYTES = 20;
    /** Where checksumming starts. */
    public static final int CRC_START = 12;

    static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private RecordFormat() {
    }

    /**
     * @param topicBytes the topic's encoded length
     * @param messages the messages
     * @return the record's size in bytes
     */
    public static long recordSize(int topicBytes, PreparedMessage[] messages) {

        long size = TOPIC_OFFSET + topicBytes;
        for (PreparedMessage message : messages) {
            size += message.encodedSize();
        }
        return size;
    }

    /**
     * Encodes a messages record into {@code target} (exactly the record's size) and sets its checksum.
     */
    public static void encode(MemorySegment target, long logPosition, long storeTimestamp, long firstQueueOffset,
                              int queueId, byte[] topic, PreparedMessage[] messages) {
        int length = (int) target.byteSize();
        target.set(INT, LENGTH_OFFSET, length);
        target.set(INT, MAGIC_OFFSET, MAGIC);
        target.set(ValueLayout.JAVA_BYTE, VERSION_OFFSET, VERSION);
        target.set(ValueLayout.JAVA_BYTE, TYPE_OFFSET, TYPE_MESSAGES);
        boolean opaque = messages.length == 1 && messages[0].opaque();
        target.set(SHORT, FLAGS_OFFSET, opaque ? FLAG_OPAQUE : messages.length > 1 ? FLAG_BATCH : 0);
        target.set(LONG, LOG_POSITION_OFFSET, logPosition);
        target.set(LONG, STORE_TIMESTAMP_OFFSET, storeTimestamp);
        target.set(LONG, FIRST_QUEUE_OFFSET_OFFSET, firstQueueOffset);
        target.set(INT, QUEUE_ID_OFFSET, queueId);
        target.set(INT, MESSAGE_COUNT_OFFSET, PreparedMessage.offsetsCovered(messages));
        target.set(SHORT, TOPIC_LENGTH_OFFSET, (short) topic.length);
        MemorySegment.copy(topic, 0, target, ValueLayout.JAVA_BYTE, TOPIC_OFFSET, topic.length);
        long at = TOPIC_OFFSET + topic.length;
        if (opaque) {
            MemorySegment body = messages[0].body();
            MemorySegment.copy(body, 0, target, at, body.byteSize());
            target.set(LONG_BIG_ENDIAN, at, firstQueueOffset);
            target.set(INT, CRC_OFFSET, checksum(target, CRC_START, length - CRC_START));
            return;
        }
        for (PreparedMessage message : messages) {
            long bodySize = message.body().byteSize();
            int metadataLength = message.metadata().length;
            target.set(INT, at, (int) (message.encodedSize() - 4));
            target.set(LONG, at + 4, message.bornTimestamp());
            target.set(INT, at + 12, metadataLength);
            MemorySegment.copy(message.metadata(), 0, target, ValueLayout.JAVA_BYTE, at + 16, metadataLength);
            target.set(INT, at + 16 + metadataLength, (int) bodySize);
            MemorySegment.copy(message.body(), 0, target, at + 20 + metadataLength, bodySize);
            at += message.encodedSize();
        }
        target.set(INT, CRC_OFFSET, checksum(target, CRC_START, length - CRC_START));
    }

    /**
     * @return true if a valid filler record starts at {@code offset} of a segment's {@code data} (a batch log tells its
     *     fillers from its batches so: a batch carries no store magic or position)
     */
    public static boolean isFillerAt(MemorySegment data, long offset, long logPosition) {
        return validate(data, offset, logPosition) > 0 && isFiller(data.asSlice(offset, FILLER_BYTES));
    }

    /**
     * @param header the first {@link #FILLER_BYTES} bytes at {@code logPosition}
     * @return true if they are a valid filler's header claiming that position (its length is not checked against the
     *     segment, which the caller knows)
     */
    public static boolean isFillerHeader(MemorySegment header, long logPosition) {
        return header.byteSize() >= FILLER_BYTES && header.get(INT, MAGIC_OFFSET) == MAGIC
                && header.get(ValueLayout.JAVA_BYTE, VERSION_OFFSET) == VERSION
                && header.get(ValueLayout.JAVA_BYTE, TYPE_OFFSET) == TYPE_FILLER
                && header.get(LONG, LOG_POSITION_OFFSET) == logPosition
                && header.get(INT, LENGTH_OFFSET) >= FILLER_BYTES
                && checksum(header, CRC_START, FILLER_BYTES - CRC_START) == header.get(INT, CRC_OFFSET);
    }

    /** Writes a filler record covering {@code length} bytes; only its first {@link #FILLER_BYTES} are written. */
    public static void encodeFiller(MemorySegment target, long logPosition, int length) {
        target.set(INT, LENGTH_OFFSET, length);
        target.set(INT, MAGIC_OFFSET, MAGIC);
        target.set(ValueLayout.JAVA_BYTE, VERSION_OFFSET, VERSION);
        target.set(ValueLayout.JAVA_BYTE, TYPE_OFFSET, TYPE_FILLER);
        target.set(SHORT, FLAGS_OFFSET, (short) 0);
        target.set(LONG, LOG_POSITION_OFFSET, logPosition);
        target.set(INT, CRC_OFFSET, checksum(target, CRC_START, FILLER_BYTES - CRC_START));
    }

    /** @return CRC32C of {@code length} bytes of {@code segment} from {@code offset} */
    public static int checksum(MemorySegment segment, long offset, long length) {
        CRC32C crc = new CRC32C();
        crc.update(segment.asSlice(offset, length).asByteBuffer());
        return (int) crc.getValue();
    }

    /**
     * Checks the record at {@code offset} of {@code data}, which holds the bytes of one segment from the
     * segment's start ({@code data.byteSize()} = the readable end within the segment).
     *
     * @param data segment bytes
     * @param offset offset of the record in the segment
     * @param logPosition the log position the record must claim
     * @return the record's length if valid (for a filler: the bytes to the segment's end), or -1
     */
    public static long validate(MemorySegment data, long offset, long logPosition) {
        long remaining = data.byteSize() - offset;
        if (remaining < FILLER_BYTES) {
            return -1;
        }
        int length = data.get(INT, offset + LENGTH_OFFSET);
        if (data.get(INT, offset + MAGIC_OFFSET) != MAGIC
                || data.get(ValueLayout.JAVA_BYTE, offset + VERSION_OFFSET) != VERSION
                || data.get(LONG, offset + LOG_POSITION_OFFSET) != logPosition) {
            return -1;
        }
        byte type = data.get(ValueLayout.JAVA_BYTE, offset + TYPE_OFFSET);
        int crc = data.get(INT, offset + CRC_OFFSET);
        if (type == TYPE_FILLER) {
            if (length < FILLER_BYTES || length > remaining) {
                return -1;
            }
            return checksum(data, offset + CRC_START, FILLER_BYTES - CRC_START) == crc ? length : -1;
        }
        if (type != TYPE_MESSAGES || length < TOPIC_OFFSET || length > remaining) {
            return -1;
        }
        if (checksum(data, offset + CRC_START, length - CRC_START) != crc) {
            return -1;
        }
        return structureValid(data.asSlice(offset, length)) ? length : -1;
    }

    /** Checks that the message entries exactly fill a record whose checksum already matched. */
    private static boolean structureValid(MemorySegment record) {
        int count = record.get(INT, MESSAGE_COUNT_OFFSET);
        int topicLength = Short.toUnsignedInt(record.get(SHORT, TOPIC_LENGTH_OFFSET));
        long at = TOPIC_OFFSET + topicLength;
        if (isOpaque(record)) {
            return count > 0 && at + OPAQUE_MIN_BYTES <= record.byteSize()
                    && record.get(LONG_BIG_ENDIAN, at) == record.get(LONG, FIRST_QUEUE_OFFSET_OFFSET);
        }
        for (int i = 0; i < count; i++) {
            if (at + 4 > record.byteSize()) {
                return false;
            }
            at += 4 + Integer.toUnsignedLong(record.get(INT, at));
        }
        return count > 0 && at == record.byteSize();
    }

    /**
     * Checks, without a checksum, that {@code record} (the bytes an index entry points at) is the record the
     * entry claims: its length, magic, version, type, own position, topic, queue, first queue offset and message
     * count. A read checks this before it serves anything, so a damaged index never serves another record's
     * bytes or zeros.
     *
     * @return true if it matches
     */
    public static boolean matchesEntry(MemorySegment record, long logPosition, byte[] topic, int queueId,
                                       long firstQueueOffset, int messageCount) {
        return matchesEntry(record, record.byteSize(), logPosition, topic, queueId, firstQueueOffset, messageCount);
    }

    /**
     * {@link #matchesEntry} on the first bytes of a record ({@code record}: at least {@link #TOPIC_OFFSET} + the
     * topic's length of them), whose whole size is {@code size}.
     */
    public static boolean matchesEntry(MemorySegment record, long size, long logPosition, byte[] topic, int queueId,
                                       long firstQueueOffset, int messageCount) {
        if (record.byteSize() < TOPIC_OFFSET + topic.length || size < TOPIC_OFFSET + topic.length
                || record.get(INT, LENGTH_OFFSET) != size
                || record.get(INT, MAGIC_OFFSET) != MAGIC || record.get(ValueLayout.JAVA_BYTE, VERSION_OFFSET) != VERSION
                || record.get(ValueLayout.JAVA_BYTE, TYPE_OFFSET) != TYPE_MESSAGES
                || record.get(LONG, LOG_POSITION_OFFSET) != logPosition || record.get(INT, QUEUE_ID_OFFSET) != queueId
                || record.get(LONG, FIRST_QUEUE_OFFSET_OFFSET) != firstQueueOffset
                || record.get(INT, MESSAGE_COUNT_OFFSET) != messageCount
                || Short.toUnsignedInt(record.get(SHORT, TOPIC_LENGTH_OFFSET)) != topic.length) {
            return false;
        }
        return MemorySegment.mismatch(record, TOPIC_OFFSET, TOPIC_OFFSET + topic.length,
                MemorySegment.ofArray(topic), 0, topic.length) < 0;
    }

    /** @return true if the messages record at offset 0 of {@code record} holds one opaque body */
    public static boolean isOpaque(MemorySegment record) {
        return (record.get(SHORT, FLAGS_OFFSET) & FLAG_OPAQUE) != 0;
    }

    /** @return a view of an opaque record's body (no copy), from its first-offset field to the record's end */
    public static MemorySegment opaqueBody(MemorySegment record) {
        long at = firstMessageOffset(record);
        return record.asSlice(at, record.byteSize() - at).asReadOnly();
    }

    /** @return true if the record at offset 0 of {@code record} is a filler */
    public static boolean isFiller(MemorySegment record) {
        return record.get(ValueLayout.JAVA_BYTE, TYPE_OFFSET) == TYPE_FILLER;
    }

    public static int length(MemorySegment record) {
        return record.get(INT, LENGTH_OFFSET);
    }

    public static long logPosition(MemorySegment record) {
        return record.get(LONG, LOG_POSITION_OFFSET);
    }

    public static long storeTimestamp(MemorySegment record) {
        return record.get(LONG, STORE_TIMESTAMP_OFFSET);
    }

    public static long firstQueueOffset(MemorySegment record) {
        return record.get(LONG, FIRST_QUEUE_OFFSET_OFFSET);
    }

    public static int queueId(MemorySegment record) {
        return record.get(INT, QUEUE_ID_OFFSET);
    }

    public static int messageCount(MemorySegment record) {
        return record.get(INT, MESSAGE_COUNT_OFFSET);
    }

    public static String topic(MemorySegment record) {
        int topicLength = Short.toUnsignedInt(record.get(SHORT, TOPIC_LENGTH_OFFSET));
        byte[] bytes = record.asSlice(TOPIC_OFFSET, topicLength).toArray(ValueLayout.JAVA_BYTE);
        return new String(bytes, StandardCharsets.US_ASCII);
    }

    /** @return offset of the first message entry in the record */
    public static long firstMessageOffset(MemorySegment record) {
        return TOPIC_OFFSET + Short.toUnsignedInt(record.get(SHORT, TOPIC_LENGTH_OFFSET));
    }

    /** @return offset of the entry of message {@code index} (0-based) in the record */
    public static long messageOffset(MemorySegment record, int index) {
        long at = firstMessageOffset(record);
        for (int i = 0; i < index; i++) {
            at = nextMessageOffset(record, at);
        }
        return at;
    }

    /** @return offset of the message entry after the one at {@code messageOffset} */
    public static long nextMessageOffset(MemorySegment record, long messageOffset) {
        return messageOffset + 4 + Integer.toUnsignedLong(record.get(INT, messageOffset));
    }

    public static long bornTimestamp(MemorySegment record, long messageOffset) {
        return record.get(LONG, messageOffset + 4);
    }

    /** @return a view of the message's body (no copy) */
    public static MemorySegment body(MemorySegment record, long messageOffset) {
        int metadataLength = record.get(INT, messageOffset + 12);
        long bodyLengthAt = messageOffset + 16 + metadataLength;
        int bodyLength = record.get(INT, bodyLengthAt);
        return record.asSlice(bodyLengthAt + 4, bodyLength).asReadOnly();
    }

    /** @return the tag hash stored for the message, as {@link PreparedMessage#tagHash} computes it */
    public static int tagHash(MemorySegment record, long messageOffset) {
        return PreparedMessage.tagHash(decodeMetadata(record, messageOffset).tag());
    }

    /** Keys, tag and properties of one message. */
    public record Metadata(List<String> keys, String tag, Map<String, String> properties) {
    }

    private static final Metadata EMPTY = new Metadata(List.of(), "", Map.of());

    /** @return the message's decoded keys, tag and properties */
    public static Metadata decodeMetadata(MemorySegment record, long messageOffset) {
        int metadataLength = record.get(INT, messageOffset + 12);
        long at = messageOffset + 16;
        int keyCount = u16(record, at);
        at += 2;
        if (keyCount == 0 && metadataLength == 6 && u16(record, at) == 0 && u16(record, at + 2) == 0) {
            return EMPTY;
        }
        List<String> keys = new ArrayList<>(keyCount);
        for (int i = 0; i < keyCount; i++) {
            int length = u16(record, at);
            keys.add(utf8(record, at + 2, length));
            at += 2 + length;
        }
        int tagLength = u16(record, at);
        String tag = utf8(record, at + 2, tagLength);
        at += 2 + tagLength;
        int propertyCount = u16(record, at);
        at += 2;
        Map<String, String> properties = new LinkedHashMap<>();
        for (int i = 0; i < propertyCount; i++) {
            int nameLength = u16(record, at);
            String name = utf8(record, at + 2, nameLength);
            at += 2 + nameLength;
            int valueLength = u16(record, at);
            properties.put(name, utf8(record, at + 2, valueLength));
            at += 2 + valueLength;
        }
        return new Metadata(List.copyOf(keys), tag, java.util.Collections.unmodifiableMap(properties));
    }

    private static int u16(MemorySegment record, long at) {
        return Short.toUnsignedInt(record.get(SHORT, at));
    }

    private static String utf8(MemorySegment record, long at, int length) {
        return new String(record.asSlice(at, length).toArray(ValueLayout.JAVA_BYTE), StandardCharsets.UTF_8);
    }
}
