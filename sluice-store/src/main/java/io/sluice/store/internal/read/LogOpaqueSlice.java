package io.sluice.store.internal.read;

import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.StoreException;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.Segment;
import io.sluice.store.internal.log.SegmentRetiredException;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;

/**
 * The store's {@link OpaqueSlice}: the log positions and lengths of the bodies chosen, sent from the log they lie in.
 * Not thread-safe.
 */
public final class LogOpaqueSlice implements OpaqueSlice {

    private static final long[] NONE = new long[0];
    private static final Segment[] NO_SEGMENTS = new Segment[0];

    private final ReadResult.Status status;
    private final long nextOffset;
    private final long firstOffset;
    private final boolean messagesNext;
    private final CommitLog log;
    private final long[] positions;
    private final long[] lengths;
    /** The segment each body lay in when chosen (or null): a transfer reads that file, even if compaction replaced it. */
    private final Segment[] segments;
    private final int batches;
    private final long bytes;

    LogOpaqueSlice(ReadResult.Status status, long firstOffset, long nextOffset, boolean messagesNext, CommitLog log,
                   long[] positions, long[] lengths, Segment[] segments, int batches) {
        this.status = status;
        this.firstOffset = firstOffset;
        this.nextOffset = nextOffset;
        this.messagesNext = messagesNext;
        this.log = log;
        this.positions = positions;
        this.lengths = lengths;
        this.segments = segments;
        this.batches = batches;
        long sum = 0;
        for (int i = 0; i < batches; i++) {
            sum += lengths[i];
        }
        this.bytes = sum;
    }

    /** @return a slice of no batch, for a read that found nothing at the offset for {@code status} */
    public static LogOpaqueSlice empty(ReadResult.Status status, long nextOffset) {
        return new LogOpaqueSlice(status, nextOffset, nextOffset, false, null, NONE, NONE, NO_SEGMENTS, 0);
    }

    /**
     * @return the same bodies, sent from {@code other}: the same log opened again after the store closed it while
     *     idle, which holds the same bytes (the caller checks), each from the segment that holds it there
     */
    public LogOpaqueSlice on(CommitLog other) {
        return new LogOpaqueSlice(status, firstOffset, nextOffset, messagesNext, other, positions, lengths,
                new Segment[segments.length], batches);
    }

    @Override
    public ReadResult.Status status() {
        return status;
    }

    @Override
    public long firstOffset() {
        return firstOffset;
    }

    @Override
    public long nextOffset() {
        return nextOffset;
    }

    @Override
    public boolean messagesNext() {
        return messagesNext;
    }

    @Override
    public int batches() {
        return batches;
    }

    @Override
    public long bytes() {
        return bytes;
    }

    @Override
    public void transferTo(WritableByteChannel target) throws IOException {
        int i = 0;
        while (i < batches) {
            long start = positions[i];
            long length = lengths[i];
            int next = i + 1;
            // Bodies that lie back to back (a batch log's) in one segment file go in one transfer.
            long runEnd = -1;
            while (next < batches && positions[next] == start + length && segments[next] == segments[i]) {
                if (runEnd < 0) {
                    runEnd = log.fileRunEnd(start);
                }
                if (start + length + lengths[next] > runEnd) {
                    break;
                }
                length += lengths[next];
                next++;
            }
            try {
                log.transfer(start, length, target, segments[i]);
            } catch (SegmentRetiredException e) {
                throw new StoreException("retention deleted the data at log position " + start
                        + " while a transfer was on its way", e);
            }
            i = next;
        }
    }
}
