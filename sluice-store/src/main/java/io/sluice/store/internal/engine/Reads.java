package io.sluice.store.internal.engine;

import io.sluice.store.LookupResult;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import io.sluice.store.TransferResult;
import io.sluice.store.internal.read.DefaultReadResult;
import io.sluice.store.internal.read.LogReader;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;

/**
 * The read side of the store ({@code Store.read} and the like): checks the topic and queue, and asks the log that
 * holds the queue. A queue whose log of its own does not exist yet is unknown to the shared log too, which answers
 * for it (NO_SUCH_QUEUE, offset 0). A key lookup on a topic with several logs asks each and merges the answers,
 * newest first.
 *
 * <p>Thread-safe; takes no lock.
 */
public final class Reads {

    private final Logs logs;

    Reads(Logs logs) {
        this.logs = logs;
    }

    /** Reads messages from a queue ({@code Store.read}). */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        return forReading(topic, queueId).read(reader -> reader.read(topic, queueId, fromOffset, maxMessages,
                maxBytes));
    }

    /** Sends a queue's records, as stored, to a channel ({@code Store.transferTo}). */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        return forReading(topic, queueId).read(reader -> reader.transferTo(topic, queueId, fromOffset, maxBytes,
                target));
    }

    /** Chooses the opaque batches to send from a queue ({@code Store.sliceOpaque}). */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        return forReading(topic, queueId).read(reader -> reader.sliceOpaque(topic, queueId, fromOffset, maxBytes,
                untilOffset));
    }

    /** @return the bytes of the queue's log from an offset to its end ({@code Store.bytesFrom}) */
    public long bytesFrom(String topic, int queueId, long fromOffset) {
        return forReading(topic, queueId).readLong(reader -> reader.bytesFrom(topic, queueId, fromOffset));
    }

    /** Reads the record at a position of the shared log ({@code Store.readAt}). */
    public ReadResult readAt(long logPosition) {
        return logs.shared().read(reader -> reader.readAt(logPosition));
    }

    /** Finds the messages of a topic that carry a key, newest first ({@code Store.lookupByKey}). */
    public LookupResult lookupByKey(String topic, String key, int maxResults, long fromMillis, long toMillis) {
        Names.checkTopic(topic);
        LogReader.checkLookup(key, maxResults, fromMillis, toMillis);
        logs.checkOpen();
        List<LogStore> holding = logs.of(topic);
        if (holding.size() == 1) {
            return holding.getFirst().read(reader -> reader.lookupByKey(topic, key, maxResults, fromMillis, toMillis));
        }
        List<LookupResult> parts = new ArrayList<>();
        try {
            for (LogStore log : holding) {
                parts.add(log.read(reader -> reader.lookupByKey(topic, key, maxResults, fromMillis, toMillis)));
            }
        } catch (RuntimeException e) {
            parts.forEach(LookupResult::close);
            throw e;
        }
        return DefaultReadResult.merged(parts, Comparator.comparingLong(StoredMessage::storeTimestamp).reversed(),
                maxResults);
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        return forReading(topic, queueId).readLong(reader -> reader.minOffset(topic, queueId));
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        return forReading(topic, queueId).readLong(reader -> reader.maxOffset(topic, queueId));
    }

    /** @return the offset the queue's next append gets ({@code Store.nextOffset}); 0 for an unknown queue */
    public long nextOffset(String topic, int queueId) {
        return forReading(topic, queueId).nextOffset(topic, queueId);
    }

    /** @return the first readable offset stored at or after a time ({@code Store.offsetForTimestamp}) */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        return forReading(topic, queueId).readLong(reader -> reader.offsetForTimestamp(topic, queueId, epochMillis));
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        logs.checkOpen();
        Set<String> topics = new TreeSet<>();
        for (LogStore log : logs.all()) {
            topics.addAll(log.topics());
        }
        return topics;
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        return logs.queues(topic);
    }

    private LogStore forReading(String topic, int queueId) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        return logs.forReading(topic, queueId);
    }
}
