package io.sluice.store;

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
public interface OpaqueSlice {

    /**
     * @return {@link ReadResult.Status#FOUND} if the queue has data at the offset asked for (even when the slice
     *     holds no batch because messages come first), else why not, as {@link Store#read} says it
     */
    ReadResult.Status status();

    /** @return the first offset of the first batch (at or below the offset asked for), or {@link #nextOffset} */
    long firstOffset();

    /** @return the offset after the last batch of the slice: where to continue */
    long nextOffset();

    /** @return true if the record at {@link #nextOffset} holds messages, not an opaque batch */
    boolean messagesNext();

    /** @return the number of batches in the slice */
    int batches();

    /** @return the bytes {@link #transferTo} sends */
    long bytes();

    /**
     * Sends every body of the slice, in order, to a blocking channel.
     *
     * @param target a socket, a pipe or a file; a {@link java.nio.channels.SocketChannel} gets {@code sendfile}
     * @throws IOException if writing to the channel failed
     * @throws StoreException if retention deleted the data since the slice was chosen, or reading the log failed
     */
    void transferTo(WritableByteChannel target) throws IOException;
}
