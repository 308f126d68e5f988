package io.sluice.broker.net;

import java.nio.ByteBuffer;

/** Answers one request frame of a connection. */
@FunctionalInterface
public interface FrameHandler {

    /**
     * @param frame the request, without its size prefix
     * @return the response with its size prefix, or {@code null} when the request takes none
     * @throws Exception when the request cannot be answered: the connection is closed after one log line
     */
    ByteBuffer handle(ByteBuffer frame) throws Exception;
}
