package io.sluice.store;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.Map;

/**
 * A message read back from the store.
 *
 * <p>{@link #body()} is a read-only view of store memory (the segment's mapping or a write buffer), not a
 * copy. It stays valid until the {@link ReadResult} that returned it is closed; after that, copy what you
 * keep. Immutable; may be read from any thread while its result is open.
 *
 * @param topic the topic
 * @param queueId the queue
 * @param queueOffset the message's offset in its queue
 * @param logPosition the commit-log position of the record holding the message
 * @param storeTimestamp when the store appended it, epoch milliseconds
 * @param bornTimestamp when the producer created it, epoch milliseconds
 * @param keys the message's keys
 * @param tag the message's tag, or the empty string
 * @param properties the message's properties
 * @param body a read-only view of the payload in store memory
 * @param opaqueCount 0 for a message; for an opaque batch ({@link Store#appendOpaque}), the offsets it covers,
 *     from {@code queueOffset} (which may lie below the offset asked for), its body being the batch as appended
 *     with its first 8 bytes set to {@code queueOffset}; such a batch has no keys, tag or properties and its
 *     born timestamp is its store timestamp
 */
public record StoredMessage(String topic, int queueId, long queueOffset, long logPosition, long storeTimestamp,
                            long bornTimestamp, List<String> keys, String tag, Map<String, String> properties,
                            MemorySegment body, int opaqueCount) {

    /** @return true if this is an opaque batch covering {@link #opaqueCount} offsets */
    public boolean opaque() {
        return opaqueCount > 0;
    }

    /** @return the body as a read-only {@link ByteBuffer} over the same memory (no copy) */
    public ByteBuffer bodyBuffer() {
        return body.asByteBuffer().asReadOnlyBuffer();
    }

    /** @return a heap copy of the body */
    public byte[] bodyBytes() {
        return body.toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
    }
}
