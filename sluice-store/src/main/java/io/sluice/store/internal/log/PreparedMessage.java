package io.sluice.store.internal.log;

import io.sluice.store.Message;
import java.io.ByteArrayOutputStream;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;

/**
 * A message with its metadata (keys, tag, properties) already encoded, so the append lock only copies bytes.
 *
 * @param bornTimestamp the producer's timestamp
 * @param metadata encoded keys, tag and properties (see {@link RecordFormat})
 * @param tagHash hash of the tag, stored in the queue index for filtering
 * @param body the payload
 * @param keys the message's keys, for the key index
 * @param opaqueCount 0 for a message; for an opaque batch ({@link #opaque}), the queue offsets its body covers
 * @param checksumChecked an opaque batch checked with its CRC32C already ({@code KafkaBatch.check}): a batch log
 *     does not check it again
 * @param gap a batch log's gap ({@link #gap}): a batch of no record standing for offsets a compaction removed
 */
public record PreparedMessage(long bornTimestamp, byte[] metadata, int tagHash, MemorySegment body, List<String> keys,
                              int opaqueCount, boolean checksumChecked, boolean gap) {

    private static final byte[] EMPTY_METADATA = new byte[6];
    private static final int MAX_FIELD_BYTES = 0xFFFF;

    /** @return the bytes this message takes inside a record */
    public long encodedSize() {
        return opaqueCount > 0 ? body.byteSize() : RecordFormat.MESSAGE_FIXED_BYTES + metadata.length + body.byteSize();
    }

    /** @return true if this is an opaque batch: one body in its producer's framing covering several offsets */
    public boolean opaque() {
        return opaqueCount > 0;
    }

    /**
     * An opaque batch: a body the store keeps as it is, except its first 8 bytes, which it sets to the first
     * queue offset (big-endian) when it appends the record. It covers {@code count} consecutive offsets.
     *
     * @param body the body, at least {@link RecordFormat#OPAQUE_MIN_BYTES} bytes
     * @param count queue offsets covered, 1 or more and at most one per byte of the body
     * @param maxMessageBytes the configured limit
     * @return the prepared batch
     * @throws IllegalArgumentException if the body is too short or too long, or the count is not positive or
     *     exceeds the body's size
     */
    public static PreparedMessage opaque(MemorySegment body, int count, int maxMessageBytes) {
        return opaque(body, count, maxMessageBytes, false);
    }

    /**
     * {@link #opaque(MemorySegment, int, int)}, saying whether the batch's CRC32C was checked already.
     *
     * @param checksumChecked a Kafka record batch checked by {@code KafkaBatch.check}
     */
    public static PreparedMessage opaque(MemorySegment body, int count, int maxMessageBytes, boolean checksumChecked) {
        if (count < 1) {
            throw new IllegalArgumentException("an opaque batch covers 1 or more offsets, not " + count);
        }
        if (body.byteSize() < RecordFormat.OPAQUE_MIN_BYTES) {
            throw new IllegalArgumentException("an opaque batch body holds at least " + RecordFormat.OPAQUE_MIN_BYTES
                    + " bytes (its first offset), not " + body.byteSize());
        }
        if (body.byteSize() > maxMessageBytes) {
            throw new IllegalArgumentException("opaque batch of " + body.byteSize() + " bytes exceeds maxMessageBytes ("
                    + maxMessageBytes + ")");
        }
        if (count > body.byteSize()) {
            // Each offset costs an index entry: a small body must not claim millions of them.
            throw new IllegalArgumentException("an opaque batch of " + body.byteSize() + " bytes cannot cover " + count
                    + " offsets (at most one per byte)");
        }
        return new PreparedMessage(0, EMPTY_METADATA, 0, body, List.of(), count, checksumChecked, false);
    }

    /**
     * A gap for a batch log ({@code BatchFormat.encodeGap}): it covers {@code count} offsets, any number of them,
     * as the gap of the compacted log it copies does.
     */
    public static PreparedMessage gap(MemorySegment body, int count) {
        if (count < 1) {
            throw new IllegalArgumentException("a gap covers 1 or more offsets, not " + count);
        }
        return new PreparedMessage(0, EMPTY_METADATA, 0, body, List.of(), count, true, true);
    }

    /** @return the queue offsets {@code messages} cover: their number, or an opaque batch's count */
    public static int offsetsCovered(PreparedMessage[] messages) {
        return messages.length == 1 && messages[0].opaque() ? messages[0].opaqueCount : messages.length;
    }

    /**
     * @param message the message
     * @param maxMessageBytes the configured limit
     * @return the prepared message
     * @throws IllegalArgumentException if a field is too long or the message exceeds the limit
     */
    public static PreparedMessage prepare(Message message, int maxMessageBytes) {
        byte[] metadata = encodeMetadata(message.keys(), message.tag(), message.properties());
        long size = RecordFormat.MESSAGE_FIXED_BYTES + metadata.length + message.bodySize();
        if (size > maxMessageBytes) {
            throw new IllegalArgumentException("message of " + size + " encoded bytes exceeds maxMessageBytes ("
                    + maxMessageBytes + ")");
        }
        return new PreparedMessage(message.bornTimestamp(), metadata, tagHash(message.tag()), message.body(),
                message.keys(), 0, false, false);
    }

    /** @param tag a tag @return its hash as stored in the queue index; 0 for no tag */
    public static int tagHash(String tag) {
        return tag.isEmpty() ? 0 : tag.hashCode();
    }

    private static byte[] encodeMetadata(List<String> keys, String tag, Map<String, String> properties) {
        if (keys.isEmpty() && tag.isEmpty() && properties.isEmpty()) {
            return EMPTY_METADATA;
        }
        ByteArrayOutputStream out = new ByteArrayOutputStream(64);
        writeCount(out, keys.size(), "keys");
        for (String key : keys) {
            if (key.isEmpty()) {
                throw new IllegalArgumentException("a message key must not be empty");
            }
            writeString(out, key, "key");
        }
        writeString(out, tag, "tag");
        writeCount(out, properties.size(), "properties");
        for (Map.Entry<String, String> property : properties.entrySet()) {
            writeString(out, property.getKey(), "property name");
            writeString(out, property.getValue(), "property value");
        }
        return out.toByteArray();
    }

    private static void writeCount(ByteArrayOutputStream out, int count, String what) {
        if (count > MAX_FIELD_BYTES) {
            throw new IllegalArgumentException("a message may carry at most " + MAX_FIELD_BYTES + " " + what);
        }
        writeShort(out, count);
    }

    private static void writeString(ByteArrayOutputStream out, String value, String what) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        if (bytes.length > MAX_FIELD_BYTES) {
            throw new IllegalArgumentException("a " + what + " may be at most " + MAX_FIELD_BYTES
                    + " bytes in UTF-8, was " + bytes.length);
        }
        writeShort(out, bytes.length);
        out.writeBytes(bytes);
    }

    private static void writeShort(ByteArrayOutputStream out, int value) {
        // Little-endian, like every field of the record.
        out.write(value & 0xFF);
        out.write((value >>> 8) & 0xFF);
    }
}
