package io.sluice.store;

import java.util.List;

/**
 * Messages found by {@link Store#lookupByKey}, newest first.
 *
 * <p>The bodies are views of store memory; closing the result releases what it pinned, after which the bodies
 * must not be read. Not thread-safe to close concurrently with reading its messages.
 */
public interface LookupResult extends AutoCloseable {

    /** @return the messages carrying the key, newest first; empty if none */
    List<StoredMessage> messages();

    /** Releases the memory the bodies point into. Idempotent. */
    @Override
    void close();
}
