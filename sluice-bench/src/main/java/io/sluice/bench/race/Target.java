package io.sluice.bench.race;

import java.util.List;

/**
 * A store under test, opened on a fresh directory for one measurement. {@link #send} may be called by many
 * producer threads at once; the other methods run alone, after the producers have stopped.
 */
public interface Target extends AutoCloseable {

    /** Topic every target writes. */
    String TOPIC = "bench";

    /** Queues the producers spread over (producer number modulo this), where the target has queues. */
    int QUEUES = 4;

    /**
     * Appends the messages as one batch (one message when the list has one) to {@code queue} and returns once
     * they are acknowledged with the target's durability.
     */
    void send(int queue, List<byte[]> bodies) throws Exception;

    /**
     * Waits until every acknowledged message is readable, then counts them.
     *
     * @return messages stored
     */
    long count() throws Exception;

    /** @return the body of the first message in {@code queue}, read back through the store's read path */
    byte[] first(int queue) throws Exception;

    /** Shuts the store down and releases its files. @throws java.io.IOException when it cannot */
    @Override
    void close() throws java.io.IOException;
}
