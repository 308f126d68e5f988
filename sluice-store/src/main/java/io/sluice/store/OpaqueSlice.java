package io.sluice.store;

import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.SegmentRetiredException;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;

/**
 * The bodies of consecutive opaque batches of one queue ({@link Store#appendOpaque}), chosen by
 * {@link Store#sliceOpaque} and sent with {@link #transferTo}: their size is known before a byte is sent, so a
 * caller can write a response's length fields first and then the bodies, each with one {@code sendfile} from
 * the page cache (or one write from a write buffer that holds it). The store record framing between bodies is
 * not sent; a batch log's batches, which have none, go in one {@code sendfile} per run of them in one segment.
 *
 * <p>A slice stops before the first record that holds messages rather than an opaque batch
 * ({@link #messagesNext()}): the caller reads those with {@link Store#read}. Not thread-safe; cheap to drop.
 */
public final class OpaqueSlice {

    private static final long[] NONE = new long[0];

    private final ReadResult.Status status;
    private final long nextOffset;
    private final long firstOffset;
    private final boolean messagesNext;
    private final CommitLog log;
    private final long[] positions;
    private final long[] lengths;
    private final int batches;
    private final long bytes;

    OpaqueSlice(ReadResult.Status status, long firstOffset, long nextOffset, boolean messagesNext, CommitLog log,
                long[] positions, long[] lengths, int batches) {
        this.status = status;
        this.firstOffset = firstOffset;
        this.nextOffset = nextOffset;
        this.messagesNext = messagesNext;
        this.log = log;
        this.positions = positions;
        this.lengths = lengths;
        this.batches = batches;
        long sum = 0;
        for (int i = 0; i < batches; i++) {
            sum += lengths[i];
        }
        this.bytes = sum;
    }

    static OpaqueSlice empty(ReadResult.Status status, long nextOffset) {
        return new OpaqueSlice(status, nextOffset, nextOffset, false, null, NONE, NONE, 0);
    }

    /**
     * @return {@link ReadResult.Status#FOUND} if the queue has data at the offset asked for (even when the slice
     *     holds no batch because messages come first), else why not, as {@link Store#read} says it
     */
    public ReadResult.Status status() {
        return status;
    }

    /** @return the first offset of the first batch (at or below the offset asked for), or {@link #nextOffset} */
    public long firstOffset() {
        return firstOffset;
    }

    /** @return the offset after the last batch of the slice: where to continue */
    public long nextOffset() {
        return nextOffset;
    }

    /** @return true if the record at {@link #nextOffset} holds messages, not an opaque batch */
    public boolean messagesNext() {
        return messagesNext;
    }

    /** @return the number of batches in the slice */
    public int batches() {
        return batches;
    }

    /** @return the bytes {@link #transferTo} sends */
    public long bytes() {
        return bytes;
    }

    /**
     * Sends every body of the slice, in order, to a blocking channel.
     *
     * @param target a socket, a pipe or a file; a {@link java.nio.channels.SocketChannel} gets {@code sendfile}
     * @throws IOException if writing to the channel failed
     * @throws StoreException if retention deleted the data since the slice was chosen, or reading the log failed
     */
    public void transferTo(WritableByteChannel target) throws IOException {
        int i = 0;
        while (i < batches) {
            long start = positions[i];
            long length = lengths[i];
            int next = i + 1;
            // Bodies that lie back to back (a batch log's) in one segment file go in one transfer.
            long runEnd = -1;
            while (next < batches && positions[next] == start + length) {
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
                log.transfer(start, length, target);
            } catch (SegmentRetiredException e) {
                throw new StoreException("retention deleted the data at log position " + start
                        + " while a transfer was on its way", e);
            }
            i = next;
        }
    }
}
