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
     * Counts the messages stored, first waiting (up to 30 s) for {@code acknowledged} of them to become
     * readable where the store makes them readable later than it acknowledges them.
     *
     * @return messages stored
     */
    long count(long acknowledged) throws Exception;

    /** @return the body of the first message in {@code queue}, read back through the store's read path */
    byte[] first(int queue) throws Exception;

    /** Shuts the store down and releases its files. @throws java.io.IOException when it cannot */
    @Override
    void close() throws java.io.IOException;
}
