package io.sluice.broker.net;

import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/** Answers the request frames of connections. */
@FunctionalInterface
public interface FrameHandler {

    /**
     * Takes one request. Called on the connection's thread, in the order requests arrive; whatever the request does
     * to shared state (an append, say) it does before returning, so the next request of the connection sees it.
     * Only waiting (for a force, for new data) may be left to the returned future.
     *
     * @param frame the request, without its size prefix; valid during the call only
     * @return the response, completing with {@code null} when the request takes none, or exceptionally to close the
     *     connection after one log line
     * @throws Exception when the request cannot be answered: the connection is closed after one log line
     */
    CompletableFuture<Outbound> handle(ByteBuffer frame) throws Exception;

    /**
     * @return the largest request this connection takes now, within the server's own limit (a connection that has not
     *     authenticated takes small ones only)
     */
    default int maxFrameBytes() {
        return Integer.MAX_VALUE;
    }

    /**
     * @param frame a request about to be handled (not to be consumed)
     * @return about how many bytes of memory the request takes while it is handled: its own bytes, or more for one whose
     *     parsing makes many objects of few bytes
     */
    default long memoryOf(ByteBuffer frame) {
        return frame.remaining();
    }

    /**
     * A connection as the server accepted it.
     *
     * @param remote the client's address
     * @param tls the TLS session the handshake agreed, or null on a plaintext listener
     */
    record Peer(java.net.InetSocketAddress remote, javax.net.ssl.SSLSession tls) {
    }

    /** Makes the handler of each new connection. */
    @FunctionalInterface
    interface Factory {
        /**
         * @param peer the connection, its TLS handshake done
         * @return the handler of its requests
         */
        FrameHandler open(Peer peer);
    }
}
