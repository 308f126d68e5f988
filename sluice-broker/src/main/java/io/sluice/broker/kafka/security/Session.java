package io.sluice.broker.kafka.security;

import java.net.InetAddress;
import org.apache.kafka.common.security.auth.KafkaPrincipal;

/**
 * Who sends a connection's requests: the principal it authenticated as (User:ANONYMOUS on a PLAINTEXT listener, the
 * certificate's distinguished name on SSL with a client certificate, the SASL user), from where, on which listener.
 *
 * @param principal the principal requests are authorized as
 * @param address the client's address (the host of ACLs)
 * @param listener the listener the connection came in on, or null for one made without a listener (tests)
 */
public record Session(KafkaPrincipal principal, InetAddress address, SecuritySettings.Listener listener) {

    /** A session of an unauthenticated client on loopback, for callers without connections. */
    public static final Session ANONYMOUS = new Session(KafkaPrincipal.ANONYMOUS, InetAddress.getLoopbackAddress(),
            null);
}
