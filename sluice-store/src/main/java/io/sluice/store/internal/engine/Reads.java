package io.sluice.store.internal.engine;

import io.sluice.store.LookupResult;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import io.sluice.store.TransferResult;
import io.sluice.store.TopicLayout;
import io.sluice.store.internal.read.DefaultReadResult;
import io.sluice.store.internal.read.LogOpaqueSlice;
import io.sluice.store.internal.read.LogReader;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.function.ToLongFunction;

/**
 * The read side of the store ({@code Store.read} and the like): checks the topic and queue, and asks the log that
 * holds the queue, opening it if it is closed. A queue whose log of its own does not exist yet is unknown to the shared
 * log too, which answers for it (NO_SUCH_QUEUE, offset 0). A key lookup on a topic with several logs asks each (a
 * closed one only if it has keys) and merges the answers, newest first.
 *
 * <p>A closed log cannot change: a read that finds nothing to read in one of its queues (a consumer polling an idle
 * partition), and its queues' offsets, are answered from what it held as it closed, without opening it.
 *
 * <p>A log is in use while a read runs, and while a read or lookup result that holds its memory is open: it is not
 * closed while idle under a reader ({@link Logs}). An opaque slice holds nothing: if its log closed while idle before
 * the slice is sent, it is sent from the log opened again, which holds the same bytes unless something rewrote them
 * ({@link LogStore#contents}).
 *
 * <p>Thread-safe; takes no lock to read an open log.
 */
public final class Reads {

    private final Logs logs;

    Reads(Logs logs) {
        this.logs = logs;
    }

    /** Reads messages from a queue ({@code Store.read}). */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, fromOffset, maxMessages >= 1 && maxBytes >= 1);
        ReadResult.Status nothing = closed == null ? null : closed.nothingAt(fromOffset);
        if (nothing != null) {
            return DefaultReadResult.empty(nothing, closed.continueAt(nothing));
        }
        LogStore log = forReading(topic, queueId);
        ReadResult result;
        try {
            result = log.read(reader -> reader.read(topic, queueId, fromOffset, maxMessages, maxBytes));
        } catch (RuntimeException e) {
            logs.release(log);
            throw e;
        }
        return releasingOnClose(result, log);
    }

    /** Sends a queue's records, as stored, to a channel ({@code Store.transferTo}). */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, fromOffset, maxBytes >= 1 && target != null);
        ReadResult.Status nothing = closed == null ? null : closed.nothingAt(fromOffset);
        if (nothing != null) {
            return new TransferResult(nothing, closed.continueAt(nothing), 0, 0);
        }
        return reading(topic, queueId, log -> log.read(reader -> reader.transferTo(topic, queueId, fromOffset,
                maxBytes, target)));
    }

    /** Chooses the opaque batches to send from a queue ({@code Store.sliceOpaque}). */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, fromOffset, maxBytes >= 1);
        ReadResult.Status nothing = closed == null ? null : closed.nothingAt(fromOffset);
        if (nothing != null) {
            return LogOpaqueSlice.empty(nothing, closed.continueAt(nothing));
        }
        return reading(topic, queueId, log -> {
            OpaqueSlice slice = log.read(reader -> reader.sliceOpaque(topic, queueId, fromOffset, maxBytes,
                    untilOffset));
            return log == logs.shared() || !(slice instanceof LogOpaqueSlice chosen) || chosen.batches() == 0 ? slice
                    : new Slice(chosen, log, topic, queueId);
        });
    }

    /** @return the bytes of the queue's log from an offset to its end ({@code Store.bytesFrom}) */
    public long bytesFrom(String topic, int queueId, long fromOffset) {
        return readingLong(topic, queueId, log -> log.readLong(reader -> reader.bytesFrom(topic, queueId,
                fromOffset)));
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
        if (logs.registry().layout(topic) == TopicLayout.SHARED) {
            return logs.shared().read(reader -> reader.lookupByKey(topic, key, maxResults, fromMillis, toMillis));
        }
        List<LookupResult> parts = new ArrayList<>();
        try {
            for (String name : logs.namesOf(topic)) {
                LogStore log = logs.use(name, ClosedLog::keyed);
                if (log == null) {
                    continue; // closed, and no key file to look in
                }
                LookupResult part;
                try {
                    part = log.read(reader -> reader.lookupByKey(topic, key, maxResults, fromMillis, toMillis));
                } catch (RuntimeException e) {
                    logs.release(log);
                    throw e;
                }
                parts.add(releasingOnClose(part, log));
            }
        } catch (RuntimeException e) {
            parts.forEach(LookupResult::close);
            throw e;
        }
        if (parts.size() == 1) {
            return parts.getFirst();
        }
        return DefaultReadResult.merged(parts, Comparator.comparingLong(StoredMessage::storeTimestamp).reversed(),
                maxResults);
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, 0, true);
        if (closed != null) {
            return closed.min();
        }
        return readingLong(topic, queueId, log -> log.readLong(reader -> reader.minOffset(topic, queueId)));
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, 0, true);
        if (closed != null) {
            return closed.end();
        }
        return readingLong(topic, queueId, log -> log.readLong(reader -> reader.maxOffset(topic, queueId)));
    }

    /** @return the offset the queue's next append gets ({@code Store.nextOffset}); 0 for an unknown queue */
    public long nextOffset(String topic, int queueId) {
        ClosedLog.Offsets closed = closedQueue(topic, queueId, 0, true);
        if (closed != null) {
            return closed.next();
        }
        return readingLong(topic, queueId, log -> log.nextOffset(topic, queueId));
    }

    /** @return the first readable offset stored at or after a time ({@code Store.offsetForTimestamp}) */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        return readingLong(topic, queueId, log -> log.readLong(reader -> reader.offsetForTimestamp(topic, queueId,
                epochMillis)));
    }

    /** @return the topics, sorted; no closed log opens for it */
    public Set<String> topics() {
        logs.checkOpen();
        Set<String> topics = new TreeSet<>();
        for (String name : logs.names()) {
            Set<String> held = logs.visit(name, LogStore::topics,
                    closed -> logs.listed(name, closed).queues().keySet());
            if (held != null) {
                topics.addAll(held);
            }
        }
        return topics;
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        return logs.queues(topic);
    }

    /**
     * @param valid the call's other arguments are valid (else the log's reader says why not)
     * @return the queue's offsets if its log is closed and knows them ({@link Logs#closedQueue}), else null
     */
    private ClosedLog.Offsets closedQueue(String topic, int queueId, long fromOffset, boolean valid) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logs.checkOpen();
        return valid && fromOffset >= 0 ? logs.closedQueue(topic, queueId) : null;
    }

    private <T> T reading(String topic, int queueId, Function<LogStore, T> read) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        return logs.reading(topic, queueId, read);
    }

    private long readingLong(String topic, int queueId, ToLongFunction<LogStore> read) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        return logs.readingLong(topic, queueId, read);
    }

    private LogStore forReading(String topic, int queueId) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        return logs.useForReading(topic, queueId);
    }

    /** @return {@code result}, which ends the use of {@code log} as it closes (at once if it holds nothing) */
    private <R extends AutoCloseable> R releasingOnClose(R result, LogStore log) {
        if (result instanceof DefaultReadResult held) {
            held.releasing(() -> logs.release(log));
        } else {
            logs.release(log); // holds nothing of the log
        }
        return result;
    }

    /**
     * A slice of a log of its own, sent from the log as it is when sent: the log it was chosen from while that is
     * open (in use meanwhile), else the same log opened again if it holds the same bytes. Otherwise (truncated,
     * compacted, deleted) the slice is sent from the log it was chosen from, which says why it cannot.
     */
    private final class Slice implements OpaqueSlice {

        private final LogOpaqueSlice chosen;
        private final LogStore from;
        private final Object contents;
        private final String topic;
        private final int queueId;

        Slice(LogOpaqueSlice chosen, LogStore from, String topic, int queueId) {
            this.chosen = chosen;
            this.from = from;
            this.contents = from.contents();
            this.topic = topic;
            this.queueId = queueId;
        }

        @Override
        public ReadResult.Status status() {
            return chosen.status();
        }

        @Override
        public long firstOffset() {
            return chosen.firstOffset();
        }

        @Override
        public long nextOffset() {
            return chosen.nextOffset();
        }

        @Override
        public boolean messagesNext() {
            return chosen.messagesNext();
        }

        @Override
        public int batches() {
            return chosen.batches();
        }

        @Override
        public long bytes() {
            return chosen.bytes();
        }

        @Override
        public void transferTo(WritableByteChannel target) throws IOException {
            LogStore now;
            try {
                now = logs.use(topic, queueId, false);
            } catch (RuntimeException e) {
                now = null; // the store closed, or the topic went: the log it was chosen from says so
            }
            try {
                if (now != null && now != from && now.contents() == contents) {
                    now.transferFromEarlierOpen(chosen, target);
                } else {
                    chosen.transferTo(target);
                }
            } finally {
                logs.release(now);
            }
        }
    }
}
