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

    Session session() {
        return authentication.session();
    }
}
