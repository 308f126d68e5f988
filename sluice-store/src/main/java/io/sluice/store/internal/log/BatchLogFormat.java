package io.sluice.store.internal.log;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.function.LongSupplier;

/**
 * The {@link LogFormat} of a BATCHES topic's log of one queue ({@link BatchFormat}): Kafka record batches back to
 * back, with no store header. A batch carries neither its topic and queue (they are this log's) nor its log position
 * nor a store time, so a walk checks each batch's place in the offset chain, and the store time indexed for a batch
 * is derived from its producer's timestamp. A batch log has no key index. Immutable; thread-safe.
 *
 * @param topic the topic whose queue the log holds
 * @param queueId the queue
 */
public record BatchLogFormat(String topic, int queueId) implements LogFormat {

    @Override
    public long frame(MemorySegment data, long offset, long position, long previousEnd) {
        long length = BatchFormat.validate(data, offset, previousEnd);
        if (length > 0) {
            return length;
        }
        return RecordFormat.isFillerAt(data, offset, position) ? SEGMENT_END : INVALID;
    }

    @Override
    public long find(MemorySegment data, long offset, long position, long leastFirst) {
        boolean fillerMagic = data.get(RecordFormat.INT, offset + RecordFormat.MAGIC_OFFSET) == RecordFormat.MAGIC;
        boolean batchMagic = offset + BatchFormat.HEADER_BYTES <= data.byteSize()
                && data.get(ValueLayout.JAVA_BYTE, offset + BatchFormat.MAGIC_OFFSET) == BatchFormat.MAGIC;
        if (batchMagic) {
            long length = BatchFormat.validate(data, offset, -1);
            if (length > 0 && BatchFormat.firstOffset(data.asSlice(offset, length)) >= leastFirst) {
                return length;
            }
        }
        return fillerMagic && RecordFormat.isFillerAt(data, offset, position)
                ? RecordFormat.validate(data, offset, position) : INVALID;
    }

    /** A batch has no topic, queue or store time of its own to compare: its size, first offset and count are. */
    @Override
    public boolean matchesEntry(MemorySegment data, long offset, long position, int size, String topic, int queueId,
                                long firstOffset, int count, long storeTimestamp) {
        return this.topic.equals(topic) && this.queueId == queueId
                && BatchFormat.validate(data, offset, firstOffset) == size
                && BatchFormat.offsetCount(data.asSlice(offset, size)) == count;
    }

    @Override
    public String topic(MemorySegment record) {
        return topic;
    }

    @Override
    public int queueId(MemorySegment record) {
        return queueId;
    }

    @Override
    public long firstOffset(MemorySegment record) {
        return BatchFormat.firstOffset(record);
    }

    @Override
    public int offsetCount(MemorySegment record) {
        return BatchFormat.offsetCount(record);
    }

    @Override
    public boolean recordsCarryStoreTime() {
        return false;
    }

    @Override
    public long indexTimestamp(MemorySegment record, LongSupplier previous, long nowMillis) {
        return Math.max(previous.getAsLong(), Math.min(BatchFormat.maxTimestamp(record), nowMillis));
    }

    /** A batch's keys are inside its records, which the store does not read: a batch log has no key index. */
    @Override
    public void forEachKeys(MemorySegment record, MessageKeys visitor) {
    }

    /**
     * A batch log takes one valid record batch per append, appended with {@code appendOpaque} or, checked already,
     * {@code appendKafkaBatch}.
     */
    @Override
    public long appendSize(String topic, byte[] topicBytes, PreparedMessage[] messages) {
        if (messages.length != 1 || !messages[0].opaque()) {
            throw new IllegalArgumentException("topic " + topic + " has layout BATCHES: it holds record batches"
                    + " appended with appendOpaque, not messages");
        }
        String problem = messages[0].gap()
                ? BatchFormat.isGap(messages[0].body()) && messages[0].body().byteSize() == BatchFormat.HEADER_BYTES
                        && BatchFormat.offsetCount(messages[0].body()) == messages[0].opaqueCount() ? null
                        : "a gap must be a batch header of no record covering its count"
                : BatchFormat.problem(messages[0].body(), messages[0].opaqueCount());
        if (problem != null) {
            throw new IllegalArgumentException("topic " + topic + " has layout BATCHES and takes Kafka record batches"
                    + " (v2) only: " + problem);
        }
        return messages[0].body().byteSize();
    }

    /** The batch goes in as sent but for its baseOffset; no store time is written (its index entries hold it). */
    @Override
    public long append(CommitLog log, int size, long storeTimestamp, long firstQueueOffset, int queueId, byte[] topic,
                       PreparedMessage[] messages) throws IOException {
        return log.appendBatch(firstQueueOffset, messages[0].body(), messages[0].checksumChecked());
    }

    @Override
    public int headerBytes(int topicLength) {
        return BatchFormat.CHECK_BYTES;
    }

    @Override
    public boolean matchesHeader(MemorySegment header, long size, long position, byte[] topic, int queueId,
                                 long firstOffset, int count) {
        return BatchFormat.matchesEntry(header, size, firstOffset, count);
    }

    /** A batch of no record, and only such a batch, is a header alone ({@link BatchFormat#isGap}). */
    @Override
    public boolean isGap(int recordSize) {
        return recordSize == BatchFormat.HEADER_BYTES;
    }

    /** A batch is all body: a fetch sends it whole. */
    @Override
    public long opaqueBodyOffset(MemorySegment header) {
        return 0;
    }

    @Override
    public long storeTimestamp(MemorySegment header) {
        return NO_STORE_TIME;
    }

    @Override
    public String recordName() {
        return "batch";
    }
}
