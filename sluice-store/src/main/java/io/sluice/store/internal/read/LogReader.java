package io.sluice.store.internal.read;

import io.sluice.store.LookupResult;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.StoreException;
import io.sluice.store.TransferResult;
import io.sluice.store.internal.index.IndexEntry;
import io.sluice.store.internal.index.IndexFileRetiredException;
import io.sluice.store.internal.index.QueueIndex;
import io.sluice.store.internal.index.QueueIndexes;
import io.sluice.store.internal.log.BatchLogFormat;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.log.RecordFormat;
import io.sluice.store.internal.log.RecordView;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.log.SegmentRetiredException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.channels.WritableByteChannel;
import java.util.Arrays;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * A log's reads: queue reads, transfers, reads by position, key and time lookups. Lock-free: readers see a
 * queue's entries below its published end, and under SYNC only records below the flushed position, so a reader
 * never sees bytes a crash could take back. Every position and offset argument is checked without overflow,
 * and every pin a read takes is released if the read fails. Topic and queue names are the caller's to check.
 *
 * <p>Thread-safe.
 */
public final class LogReader {

    private final CommitLog log;
    private final QueueIndexes indexes;
    private final boolean durableOnly;
    private final BooleanSupplier open;
    private final LogFormat format;

    /**
     * @param log the log read
     * @param indexes its indexes
     * @param durableOnly show only records below the flushed position (SYNC)
     * @param open false once the log is closed
     * @param format what the log's records are
     */
    public LogReader(CommitLog log, QueueIndexes indexes, boolean durableOnly, BooleanSupplier open,
                     LogFormat format) {
        this.log = log;
        this.indexes = indexes;
        this.durableOnly = durableOnly;
        this.open = open;
        this.format = format;
    }

    private void checkOpen() {
        if (!open.getAsBoolean()) {
            throw new IllegalStateException("store " + log.directory().getParent() + " is closed");
        }
    }

    /**
     * @return why a queue whose readable offsets are [min, end) has nothing at {@code fromOffset}, or null if it has
     */
    private static ReadResult.Status outside(long fromOffset, long min, long end) {
        if (fromOffset < min) {
            return ReadResult.Status.OFFSET_TOO_SMALL;
        }
        if (fromOffset >= end) {
            return fromOffset == end ? ReadResult.Status.NO_NEW_MESSAGES : ReadResult.Status.OFFSET_OVERFLOW;
        }
        return null;
    }

    /** @return the offset to continue from when nothing was read for {@code status} */
    private static long continueAt(ReadResult.Status status, long min, long end) {
        return status == ReadResult.Status.OFFSET_TOO_SMALL ? min : end;
    }

    /**
     * Reads messages from a queue ({@code Store.read}).
     *
     * @throws IllegalArgumentException if an offset or a limit is out of range
     */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        long stamp = log.lockLayoutForReading();
        try {
            return readLocked(topic, queueId, fromOffset, maxMessages, maxBytes);
        } finally {
            log.unlockLayout(stamp);
        }
    }

    private ReadResult readLocked(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        if (fromOffset < 0 || maxMessages < 1 || maxBytes < 1) {
            throw new IllegalArgumentException("fromOffset must be >= 0 and maxMessages, maxBytes >= 1; were "
                    + fromOffset + ", " + maxMessages + ", " + maxBytes);
        }
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return DefaultReadResult.empty(ReadResult.Status.NO_SUCH_QUEUE, 0);
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            long min = index.minOffset();
            long end = visibleEnd(index, cursor);
            ReadResult.Status nothing = outside(fromOffset, min, end);
            if (nothing != null) {
                return DefaultReadResult.empty(nothing, continueAt(nothing, min, end));
            }
            return new QueueReader(topic, queueId, log, format).read(cursor, fromOffset, end, maxMessages, maxBytes);
        } catch (SegmentRetiredException | IndexFileRetiredException e) {
            // Retention deleted the data after the offset was checked against the queue's first offset.
            return DefaultReadResult.empty(ReadResult.Status.OFFSET_TOO_SMALL, Math.max(index.minOffset(), fromOffset + 1));
        }
    }

    /**
     * Sends a queue's records, as stored, to a channel ({@code Store.transferTo}).
     *
     * @throws StoreException if writing to the channel or reading the log failed
     */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        Objects.requireNonNull(target, "target");
        if (fromOffset < 0 || maxBytes < 1) {
            throw new IllegalArgumentException("fromOffset must be >= 0 and maxBytes >= 1; were " + fromOffset + ", "
                    + maxBytes);
        }
        checkOpen();
        if (format instanceof BatchLogFormat) {
            // A batch log's batches go as a slice's do: gaps stepped over, positions taken under the layout lock, and
            // each batch sent from the segment it was chosen in, whatever compaction did since.
            OpaqueSlice slice = sliceOpaque(topic, queueId, fromOffset, maxBytes, Long.MAX_VALUE);
            try {
                slice.transferTo(target);
            } catch (IOException e) {
                throw new StoreException("transfer of " + topic + "-" + queueId + " from offset " + fromOffset
                        + " failed: " + e.getMessage(), e);
            }
            return new TransferResult(slice.status(), slice.nextOffset(), slice.bytes(), slice.batches());
        }
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return new TransferResult(ReadResult.Status.NO_SUCH_QUEUE, 0, 0, 0);
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            long min = index.minOffset();
            long end = visibleEnd(index, cursor);
            ReadResult.Status nothing = outside(fromOffset, min, end);
            if (nothing != null) {
                return new TransferResult(nothing, continueAt(nothing, min, end), 0, 0);
            }
            return RecordTransfer.run(cursor, log, fromOffset, end, maxBytes, target);
        } catch (SegmentRetiredException | IndexFileRetiredException e) {
            return new TransferResult(ReadResult.Status.OFFSET_TOO_SMALL, Math.max(index.minOffset(), fromOffset + 1),
                    0, 0);
        } catch (IOException e) {
            throw new StoreException("transfer of " + topic + "-" + queueId + " from offset " + fromOffset
                    + " failed: " + e.getMessage(), e);
        }
    }

    /** Chooses the opaque batches to send from a queue ({@code Store.sliceOpaque}). */
    public OpaqueSlice sliceOpaque(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        long stamp = log.lockLayoutForReading();
        try {
            return sliceLocked(topic, queueId, fromOffset, maxBytes, untilOffset);
        } finally {
            log.unlockLayout(stamp);
        }
    }

    private OpaqueSlice sliceLocked(String topic, int queueId, long fromOffset, long maxBytes, long untilOffset) {
        if (fromOffset < 0 || maxBytes < 1) {
            throw new IllegalArgumentException("fromOffset must be >= 0 and maxBytes >= 1; were " + fromOffset + ", "
                    + maxBytes);
        }
        checkOpen();
        QueueIndex index = indexes.get(topic, queueId);
        if (index == null) {
            return LogOpaqueSlice.empty(ReadResult.Status.NO_SUCH_QUEUE, 0);
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            long min = index.minOffset();
            long end = visibleEnd(index, cursor);
            ReadResult.Status nothing = outside(fromOffset, min, end);
            if (nothing != null) {
                return LogOpaqueSlice.empty(nothing, continueAt(nothing, min, end));
            }
            return slice(new QueueReader(topic, queueId, log, format), cursor, fromOffset, Math.min(end, untilOffset),
                    maxBytes, format.headerBytes(topic.length()));
        } catch (SegmentRetiredException | IndexFileRetiredException e) {
            return LogOpaqueSlice.empty(ReadResult.Status.OFFSET_TOO_SMALL, Math.max(index.minOffset(), fromOffset + 1));
        }
    }

    /** Chooses the opaque batches of {@link #sliceOpaque} from offset {@code from} up to {@code until}. */
    private LogOpaqueSlice slice(QueueReader reader, QueueIndex.Cursor cursor, long from, long until, long maxBytes,
                                 int headerBytes) {
        long[] positions = new long[8];
        long[] lengths = new long[8];
        Segment[] segments = new Segment[8];
        int batchCount = 0;
        long bytes = 0;
        long offset = from;
        long firstOffset = -1;
        boolean messagesNext = false;
        while (offset < until) {
            IndexEntry entry = cursor.entry(offset);
            long first = offset - entry.indexInRecord();
            long bodyAt;
            try (RecordView header = log.read(entry.logPosition(), Math.min(entry.recordSize(), headerBytes))) {
                reader.checkRecord(header.bytes(), entry, first, offset);
                bodyAt = format.opaqueBodyOffset(header.bytes());
            }
            if (format.isGap(entry.recordSize())) {
                offset = first + entry.messageCount();
                continue;
            }
            if (firstOffset < 0) {
                firstOffset = first;
            }
            if (bodyAt < 0) {
                messagesNext = true;
                break;
            }
            long length = entry.recordSize() - bodyAt;
            if (batchCount > 0 && bytes + length > maxBytes) {
                break;
            }
            if (batchCount == positions.length) {
                positions = Arrays.copyOf(positions, batchCount * 2);
                lengths = Arrays.copyOf(lengths, batchCount * 2);
                segments = Arrays.copyOf(segments, batchCount * 2);
            }
            positions[batchCount] = entry.logPosition() + bodyAt;
            lengths[batchCount] = length;
            Segment previous = batchCount == 0 ? null : segments[batchCount - 1];
            segments[batchCount] = previous != null && positions[batchCount] >= previous.base()
                    && positions[batchCount] < previous.end() ? previous : log.segmentFor(positions[batchCount]);
            batchCount++;
            bytes += length;
            offset = first + entry.messageCount();
        }
        return new LogOpaqueSlice(ReadResult.Status.FOUND, batchCount == 0 ? offset : firstOffset, offset, messagesNext,
                log, positions, lengths, segments, batchCount);
    }

    /**
     * Reads the record stored at a log position.
     *
     * @throws IllegalArgumentException if the position is not readable or no record starts there
     */
    public ReadResult readAt(long logPosition) {
        checkOpen();
        long limit = readLimit();
        long min = log.minPosition();
        // limit - FILLER_BYTES, not logPosition + FILLER_BYTES: the sum overflows near Long.MAX_VALUE.
        if (logPosition < min || logPosition > limit - RecordFormat.FILLER_BYTES) {
            throw new IllegalArgumentException("log position " + logPosition + " is not readable (readable range ["
                    + min + ", " + limit + "))");
        }
        int length;
        try (RecordView header = log.read(logPosition, RecordFormat.FILLER_BYTES)) {
            length = RecordFormat.length(header.bytes());
        } catch (SegmentRetiredException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        if (length < RecordFormat.TOPIC_OFFSET || length > limit - logPosition) {
            throw new IllegalArgumentException("no record starts at log position " + logPosition);
        }
        RecordView view;
        try {
            view = log.read(logPosition, length);
        } catch (SegmentRetiredException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
        try {
            MemorySegment record = view.bytes();
            if (RecordFormat.validate(record, 0, logPosition) < 0 || RecordFormat.isFiller(record)) {
                throw new IllegalArgumentException("no record starts at log position " + logPosition);
            }
            return QueueReader.wholeRecord(view);
        } catch (RuntimeException e) {
            view.close();
            throw e;
        }
    }

    /** Finds the messages of a topic that carry a key ({@code Store.lookupByKey}). */
    public LookupResult lookupByKey(String topic, String key, int maxResults, long fromMillis, long toMillis) {
        checkLookup(key, maxResults, fromMillis, toMillis);
        checkOpen();
        return KeyLookup.run(indexes.keys(), log, topic, key, maxResults, fromMillis, toMillis, readLimit());
    }

    /** @throws IllegalArgumentException naming the rule a key lookup's arguments break */
    public static void checkLookup(String key, int maxResults, long fromMillis, long toMillis) {
        Objects.requireNonNull(key, "key");
        if (key.isEmpty()) {
            throw new IllegalArgumentException("key must not be empty");
        }
        if (maxResults < 1) {
            throw new IllegalArgumentException("maxResults must be 1 or more, was " + maxResults);
        }
        if (fromMillis < 0 || toMillis < fromMillis) {
            throw new IllegalArgumentException("the time range must satisfy 0 <= fromMillis <= toMillis, was ["
                    + fromMillis + ", " + toMillis + "]");
        }
    }

    /** @return the queue's index, or null if the queue is unknown; checks that the log is open */
    private QueueIndex index(String topic, int queueId) {
        checkOpen();
        return indexes.get(topic, queueId);
    }

    /** @return the queue's first stored offset; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        QueueIndex index = index(topic, queueId);
        return index == null ? 0 : index.minOffset();
    }

    /** @return the offset after the queue's last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        QueueIndex index = index(topic, queueId);
        if (index == null) {
            return 0;
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            return visibleEnd(index, cursor);
        } catch (IndexFileRetiredException e) {
            return index.minOffset();
        }
    }

    /** @return the first readable offset stored at or after a time ({@code Store.offsetForTimestamp}) */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        QueueIndex index = index(topic, queueId);
        if (index == null) {
            return 0;
        }
        try (QueueIndex.Cursor cursor = index.cursor()) {
            long low = index.minOffset();
            long high = visibleEnd(index, cursor);
            while (low < high) {
                long mid = (low + high) >>> 1;
                if (cursor.storeTimestamp(mid) < epochMillis) {
                    low = mid + 1;
                } else {
                    high = mid;
                }
            }
            return low;
        } catch (IndexFileRetiredException e) {
            return index.minOffset();
        }
    }

    /**
     * @return the bytes of the log from the record holding the queue's offset {@code fromOffset} (or its first, if
     *     that is later) to the log's end ({@code Store.bytesFrom}); 0 for an unknown queue or one that ends there
     */
    public long bytesFrom(String topic, int queueId, long fromOffset) {
        QueueIndex index = index(topic, queueId);
        if (index == null) {
            return 0;
        }
        long stamp = log.lockLayoutForReading();
        try (QueueIndex.Cursor cursor = index.cursor()) {
            long offset = Math.max(fromOffset, index.minOffset());
            if (offset >= index.publishedEnd()) {
                return 0;
            }
            return Math.max(0, log.writePosition() - cursor.logPosition(offset));
        } catch (IndexFileRetiredException e) {
            return 0;
        } finally {
            log.unlockLayout(stamp);
        }
    }

    /** Offsets below the returned one are readable: indexed, and durable under SYNC. */
    private long visibleEnd(QueueIndex index, QueueIndex.Cursor cursor) {
        long end = index.publishedEnd();
        if (!durableOnly) {
            return end;
        }
        long flushed = log.flushedPosition();
        long low = index.minOffset();
        if (end <= low || cursor.recordEnd(end - 1) <= flushed) {
            return end;
        }
        long high = end - 1;
        while (low < high) {
            long mid = (low + high) >>> 1;
            if (cursor.recordEnd(mid) > flushed) {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        return low;
    }

    private long readLimit() {
        return durableOnly ? log.flushedPosition() : log.writePosition();
    }
}
