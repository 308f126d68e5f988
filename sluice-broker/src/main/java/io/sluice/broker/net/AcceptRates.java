package io.sluice.broker.net;

import java.net.InetAddress;

/**
 * How fast connections may be made: the broker's whole rate, at which the acceptor waits, and each address's, past
 * which a new connection is refused (as Kafka's {@code max.connection.creation.rate} and {@code
 * connection_creation_rate} quotas do).
 */
public interface AcceptRates {

    /** No limit. */
    AcceptRates NONE = new AcceptRates() {
        @Override
        public long waitMillis(long nowMillis) {
            return 0;
        }

        @Override
        public long refuseMillis(InetAddress address, long nowMillis) {
            return 0;
        }
    };

    /** Counts a connection accepted; @return how long the acceptor waits before it goes on, 0 for not at all */
    long waitMillis(long nowMillis);

    /**
     * Counts a connection of an address; @return 0 to serve it, else how long its socket is held, unread, before it
     * is closed (a client told to slow down rather than to retry at once)
     */
    long refuseMillis(InetAddress address, long nowMillis);
}
