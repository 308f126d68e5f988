package io.sluice.store.internal.read;

import io.sluice.store.LookupResult;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import io.sluice.store.internal.index.KeyIndex;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.RecordView;
import io.sluice.store.internal.log.SegmentRetiredException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/** Runs a key lookup: walks the key index's candidates and keeps those whose record really carries the key. */
final class KeyLookup {

    private KeyLookup() {
    }

    static LookupResult run(KeyIndex keys, CommitLog log, String topic, String key, int maxResults, long fromMillis,
                            long toMillis, long limitPosition) {
        List<StoredMessage> found = new ArrayList<>();
        List<RecordView> views = new ArrayList<>();
        try {
            keys.lookup(KeyIndex.hash(topic, key), fromMillis, toMillis, log.minPosition(), limitPosition, maxResults,
                    (position, indexInRecord) -> {
                        StoredMessage message = match(log, position, indexInRecord, topic, key, limitPosition, views);
                        if (message == null) {
                            return false;
                        }
                        found.add(message);
                        return true;
                    });
        } catch (RuntimeException e) {
            views.forEach(RecordView::close);
            throw e;
        }
        return new DefaultReadResult(ReadResult.Status.FOUND, found, -1, views);
    }

    /** @return the message if the record at {@code position} is the topic's and its message carries the key */
    private static StoredMessage match(CommitLog log, long position, int indexInRecord, String topic, String key,
                                       long limitPosition, List<RecordView> views) {
        int length;
        RecordView view;
        try {
            try (RecordView header = log.read(position, RecordFormat.FILLER_BYTES)) {
                length = RecordFormat.length(header.bytes());
            }
            if (length < RecordFormat.TOPIC_OFFSET || position + length > limitPosition) {
                return null;
            }
            view = log.read(position, length);
        } catch (SegmentRetiredException e) {
            return null; // retention deleted it while the lookup ran
        }
        MemorySegment record = view.bytes();
        if (indexInRecord >= RecordFormat.messageCount(record) || RecordFormat.isOpaque(record)
                || !RecordFormat.topic(record).equals(topic)) {
            view.close();
            return null;
        }
        long at = RecordFormat.messageOffset(record, indexInRecord);
        StoredMessage message = QueueReader.decode(topic, RecordFormat.queueId(record),
                RecordFormat.firstQueueOffset(record) + indexInRecord, position, RecordFormat.storeTimestamp(record),
                record, at, RecordFormat.body(record, at));
        if (!message.keys().contains(key)) {
            view.close();
            return null;
        }
        views.add(view);
        return message;
    }
}
