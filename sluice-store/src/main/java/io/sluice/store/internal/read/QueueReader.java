package io.sluice.store.internal.read;

import io.sluice.store.ReadResult;
import io.sluice.store.StoreCorruptedException;
import io.sluice.store.StoredMessage;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.RecordView;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Turns queue-index entries into {@link StoredMessage}s whose bodies are views of the records. Every record is
 * checked against its entry before anything of it is served ({@link LogFormat#matchesHeader}).
 */
final class QueueReader {

    private final String topic;
    private final byte[] topicBytes;
    private final int queueId;
    private final CommitLog log;
    /** What the queue's log's records are. */
    private final LogFormat format;

    QueueReader(String topic, int queueId, CommitLog log, LogFormat format) {
        this.topic = topic;
        this.topicBytes = topic.getBytes(StandardCharsets.US_ASCII);
        this.queueId = queueId;
        this.log = log;
        this.format = format;
    }

    /** Reads offsets [from, end) up to the limits; the first message is returned even if over maxBytes. */
    ReadResult read(QueueIndex.Cursor cursor, long from, long end, int maxMessages, long maxBytes) {
        List<StoredMessage> messages = new ArrayList<>(Math.min(maxMessages, 1024));
        List<RecordView> views = new ArrayList<>();
        long offset = from;
        long bytes = 0;
        try {
            outer:
            while (offset < end && messages.size() < maxMessages) {
                IndexEntry entry = cursor.entry(offset);
                RecordView view = log.read(entry.logPosition(), entry.recordSize());
                views.add(view);
                MemorySegment record = view.bytes();
                long first = offset - entry.indexInRecord();
                checkRecord(record, entry, first, offset);
                if (format.isGap(entry.recordSize())) {
                    offset = first + entry.messageCount();
                    continue;
                }
                long bodyAt = format.opaqueBodyOffset(record);
                if (bodyAt >= 0) {
                    MemorySegment body = record.asSlice(bodyAt).asReadOnly();
                    if (!messages.isEmpty() && bytes + body.byteSize() > maxBytes) {
                        break;
                    }
                    messages.add(opaque(topic, queueId, first, entry.logPosition(), entry.storeTimestamp(), body,
                            entry.messageCount()));
                    bytes += body.byteSize();
                    offset = first + entry.messageCount();
                    continue;
                }
                long at = RecordFormat.firstMessageOffset(record);
                for (int i = 0; i < entry.messageCount(); i++, at = RecordFormat.nextMessageOffset(record, at)) {
                    long messageOffset = first + i;
                    if (messageOffset < offset) {
                        continue;
                    }
                    if (messageOffset >= end || messages.size() >= maxMessages) {
                        break outer;
                    }
                    MemorySegment body = RecordFormat.body(record, at);
                    if (!messages.isEmpty() && bytes + body.byteSize() > maxBytes) {
                        break outer;
                    }
                    messages.add(decode(topic, queueId, messageOffset, entry.logPosition(), entry.storeTimestamp(),
                            record, at, body));
                    bytes += body.byteSize();
                    offset = messageOffset + 1;
                }
            }
        } catch (RuntimeException e) {
            views.forEach(RecordView::close);
            throw e;
        }
        return new DefaultReadResult(ReadResult.Status.FOUND, messages, offset, views);
    }

    /**
     * @param record the record the entry points at, or its first bytes ({@link LogFormat#headerBytes})
     * @throws StoreCorruptedException if the record is not the one the index entry names
     */
    void checkRecord(MemorySegment record, IndexEntry entry, long first, long offset) {
        if (!format.matchesHeader(record, entry.recordSize(), entry.logPosition(), topicBytes, queueId, first,
                entry.messageCount())) {
            throw new StoreCorruptedException("the index entry for " + topic + "-" + queueId + " offset " + offset
                    + " points at log position " + entry.logPosition() + ", where no matching record of "
                    + entry.recordSize() + " bytes is: the store is damaged; sluice verify tells more", null,
                    entry.logPosition());
        }
    }

    /** @return every message of the record in {@code view} */
    static ReadResult wholeRecord(RecordView view) {
        MemorySegment record = view.bytes();
        String topic = RecordFormat.topic(record);
        int queueId = RecordFormat.queueId(record);
        long first = RecordFormat.firstQueueOffset(record);
        int count = RecordFormat.messageCount(record);
        long position = RecordFormat.logPosition(record);
        long storeTimestamp = RecordFormat.storeTimestamp(record);
        if (RecordFormat.isOpaque(record)) {
            return new DefaultReadResult(ReadResult.Status.FOUND, List.of(opaque(topic, queueId, first, position,
                    storeTimestamp, RecordFormat.opaqueBody(record), count)), first + count, List.of(view));
        }
        List<StoredMessage> messages = new ArrayList<>(count);
        long at = RecordFormat.firstMessageOffset(record);
        for (int i = 0; i < count; i++, at = RecordFormat.nextMessageOffset(record, at)) {
            messages.add(decode(topic, queueId, first + i, position, storeTimestamp, record, at,
                    RecordFormat.body(record, at)));
        }
        return new DefaultReadResult(ReadResult.Status.FOUND, messages, first + count, List.of(view));
    }

    private static StoredMessage opaque(String topic, int queueId, long first, long position, long storeTimestamp,
                                        MemorySegment body, int count) {
        return new StoredMessage(topic, queueId, first, position, storeTimestamp, storeTimestamp, List.of(), "",
                Map.of(), body, count);
    }

    static StoredMessage decode(String topic, int queueId, long offset, long position, long storeTimestamp,
                                MemorySegment record, long at, MemorySegment body) {
        RecordFormat.Metadata metadata = RecordFormat.decodeMetadata(record, at);
        return new StoredMessage(topic, queueId, offset, position, storeTimestamp,
                RecordFormat.bornTimestamp(record, at), metadata.keys(), metadata.tag(), metadata.properties(), body, 0);
    }
}
