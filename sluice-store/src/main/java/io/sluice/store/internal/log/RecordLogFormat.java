package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.function.LongSupplier;

/**
 * The {@link LogFormat} of a log of store records ({@link RecordFormat}): the shared log's, and a TOPIC or QUEUE
 * topic's. A record says everything it indexes, and its own log position keeps stale bytes from validating, so a walk
 * needs no state between records. Stateless; thread-safe.
 */
public final class RecordLogFormat implements LogFormat {

    /** The one instance. */
    static final RecordLogFormat INSTANCE = new RecordLogFormat();

    private RecordLogFormat() {
    }

    @Override
    public long frame(MemorySegment data, long offset, long position, long previousEnd) {
        long length = RecordFormat.validate(data, offset, position);
        if (length < 0) {
            return INVALID;
        }
        return RecordFormat.isFiller(data.asSlice(offset, RecordFormat.FILLER_BYTES)) ? SEGMENT_END : length;
    }

    @Override
    public long find(MemorySegment data, long offset, long position, long leastFirst) {
        if (data.get(RecordFormat.INT, offset + RecordFormat.MAGIC_OFFSET) != RecordFormat.MAGIC) {
            return INVALID;
        }
        long length = RecordFormat.validate(data, offset, position);
        return length > 0 ? length : INVALID;
    }

    @Override
    public boolean matchesEntry(MemorySegment data, long offset, long position, int size, String topic, int queueId,
                                long firstOffset, int count, long storeTimestamp) {
        if (RecordFormat.validate(data, offset, position) != size) {
            return false;
        }
        MemorySegment record = data.asSlice(offset, size);
        return !RecordFormat.isFiller(record) && RecordFormat.queueId(record) == queueId
                && RecordFormat.firstQueueOffset(record) == firstOffset && RecordFormat.messageCount(record) == count
                && RecordFormat.storeTimestamp(record) == storeTimestamp && RecordFormat.topic(record).equals(topic);
    }

    @Override
    public String topic(MemorySegment record) {
        return RecordFormat.topic(record);
    }

    @Override
    public int queueId(MemorySegment record) {
        return RecordFormat.queueId(record);
    }

    @Override
    public long firstOffset(MemorySegment record) {
        return RecordFormat.firstQueueOffset(record);
    }

    @Override
    public int offsetCount(MemorySegment record) {
        return RecordFormat.messageCount(record);
    }

    @Override
    public boolean recordsCarryStoreTime() {
        return true;
    }

    @Override
    public long indexTimestamp(MemorySegment record, LongSupplier previous, long nowMillis) {
        return RecordFormat.storeTimestamp(record);
    }

    /** An opaque record carries no keys; every other message's are in its metadata. */
    @Override
    public void forEachKeys(MemorySegment record, MessageKeys visitor) throws IOException {
        if (RecordFormat.isOpaque(record)) {
            return;
        }
        long at = RecordFormat.firstMessageOffset(record);
        int count = RecordFormat.messageCount(record);
        for (int i = 0; i < count; i++, at = RecordFormat.nextMessageOffset(record, at)) {
            List<String> keys = RecordFormat.decodeMetadata(record, at).keys();
            if (!keys.isEmpty()) {
                visitor.accept(i, keys);
            }
        }
    }

    @Override
    public long appendSize(String topic, byte[] topicBytes, PreparedMessage[] messages) {
        return RecordFormat.recordSize(topicBytes.length, messages);
    }

    @Override
    public long append(CommitLog log, int size, long storeTimestamp, long firstQueueOffset, int queueId, byte[] topic,
                       PreparedMessage[] messages) throws IOException {
        return log.append(size, storeTimestamp, firstQueueOffset, queueId, topic, messages);
    }

    @Override
    public int headerBytes(int topicLength) {
        return RecordFormat.TOPIC_OFFSET + topicLength;
    }

    @Override
    public boolean matchesHeader(MemorySegment header, long size, long position, byte[] topic, int queueId,
                                 long firstOffset, int count) {
        return RecordFormat.matchesEntry(header, size, position, topic, queueId, firstOffset, count);
    }

    @Override
    public long opaqueBodyOffset(MemorySegment header) {
        return RecordFormat.isOpaque(header) ? RecordFormat.firstMessageOffset(header) : -1;
    }

    @Override
    public long storeTimestamp(MemorySegment header) {
        return RecordFormat.storeTimestamp(header);
    }

    @Override
    public String recordName() {
        return "record";
    }

    @Override
    public String toString() {
        return "store records";
    }
}
