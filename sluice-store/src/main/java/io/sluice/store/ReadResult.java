package io.sluice.store;

import java.util.List;

/**
 * Messages read from one queue, plus where to continue.
 *
 * <p>The bodies are views of store memory; closing the result releases what it pinned (write-buffer pages
 * that the store may otherwise recycle), after which the bodies must not be read. Not thread-safe to close
 * concurrently with reading its messages.
 */
public interface ReadResult extends AutoCloseable {

    /** How the requested offset related to the queue. */
    enum Status {
        /** At least one message was returned. */
        FOUND,
        /** The offset is the queue's current end: nothing new yet. */
        NO_NEW_MESSAGES,
        /** The offset is below the queue's first retained offset; {@link #nextOffset()} is that offset. */
        OFFSET_TOO_SMALL,
        /** The offset is past the queue's end; {@link #nextOffset()} is the end. */
        OFFSET_OVERFLOW,
        /** The topic or queue does not exist (yet). */
        NO_SUCH_QUEUE
    }

    /** @return how the request went */
    Status status();

    /** @return the messages, in queue order */
    List<StoredMessage> messages();

    /** @return the offset to read from next */
    long nextOffset();

    /** Releases the memory the bodies point into. Idempotent. */
    @Override
    void close();
}
