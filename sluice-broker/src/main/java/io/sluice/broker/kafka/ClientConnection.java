package io.sluice.broker.kafka;

import io.sluice.broker.kafka.security.Authenticator;
import io.sluice.broker.kafka.security.SecuritySettings;
import io.sluice.broker.kafka.security.Session;
import io.sluice.broker.net.FrameHandler;
import io.sluice.broker.net.Outbound;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;

/**
 * One client connection as the Kafka layer keeps it: its listener, its authentication (SASL, or the TLS
 * certificate) and the principal its requests run as.
 */
final class ClientConnection implements FrameHandler {

    private final KafkaApis apis;
    final Authenticator authentication;

    ClientConnection(KafkaApis apis, SecuritySettings.Listener listener, Peer peer, Authenticator.Shared shared) {
        this.apis = apis;
        this.authentication = new Authenticator(listener, peer, shared);
    }

    @Override
    public CompletableFuture<Outbound> handle(ByteBuffer frame) throws ProtocolException {
        return apis.handle(frame, this);
    }

    @Override
    public int maxFrameBytes() {
        return authentication.maxFrameBytes();
    }

    /**
     * A produce request is mostly its records, kept as bytes; any other request is charged {@link #PARSED_FACTOR} times
     * its bytes: its lists become objects (a Metadata request naming topics of one letter takes about 30 times its
     * bytes once parsed, more with the response that answers each).
     */
    @Override
    public long memoryOf(ByteBuffer frame) {
        boolean produce = frame.remaining() >= 2 && frame.getShort(frame.position()) == 0;
        return produce ? frame.remaining() : (long) frame.remaining() * PARSED_FACTOR;
    }

    /** What a request other than a produce is taken to grow by once parsed and answered. */
    static final int PARSED_FACTOR = 64;

    Session session() {
        return authentication.session();
    }
}
