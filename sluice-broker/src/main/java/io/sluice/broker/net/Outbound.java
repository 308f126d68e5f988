package io.sluice.broker.net;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.GatheringByteChannel;

/**
 * One response on its way to a client: its bytes in memory, or partly in files sent with {@code sendfile}.
 */
public interface Outbound {

    /** @return the bytes {@link #writeTo} writes, size prefix included; the same before and after it writes */
    long size();

    /**
     * Writes the whole response to a blocking channel.
     *
     * @throws IOException if the connection failed
     */
    void writeTo(GatheringByteChannel channel) throws IOException;

    /**
     * @return true if the connection is to be closed once this response is written (an authentication refused, say);
     *     over TLS, such a response is followed by TLS's close ({@link TlsChannel#shutdownOutput})
     */
    default boolean closesConnection() {
        return false;
    }

    /**
     * @return how long the connection reads no request once this response is written (a client over its quota, as
     *     Kafka mutes its channel for the throttle time it answers); 0 for none
     */
    default long muteMillis() {
        return 0;
    }

    /** @return {@code response}, after which the connection reads nothing for {@code millis} */
    static Outbound muted(Outbound response, long millis) {
        return new Outbound() {
            @Override
            public long size() {
                return response.size();
            }

            @Override
            public void writeTo(GatheringByteChannel channel) throws IOException {
                response.writeTo(channel);
            }

            @Override
            public boolean closesConnection() {
                return response.closesConnection();
            }

            @Override
            public long muteMillis() {
                return millis;
            }
        };
    }

    /**
     * How long a response that closes its connection is left to its client before the close (TLS's close_notify,
     * then the socket's): a client that reads the response and the end of the stream in one go may take the end
     * first and drop the response (kafka-python 3.0 does, and so reports a refused authentication as a lost
     * connection). The client, told why, closes first; the rest wait this long.
     */
    long LINGER_BEFORE_CLOSE_MILLIS = 200;

    /** Waits {@link #LINGER_BEFORE_CLOSE_MILLIS} (on the connection's writer, which has nothing else to write). */
    private static void lingerBeforeClose() {
        try {
            Thread.sleep(LINGER_BEFORE_CLOSE_MILLIS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt(); // the connection is being closed anyway
        }
    }

    /**
     * @param bytes a response with its size prefix
     * @return it as an outbound response
     */
    static Outbound of(ByteBuffer bytes) {
        return of(bytes, false);
    }

    /**
     * @param bytes a response with its size prefix
     * @param thenClose whether the connection closes once it is written
     * @return it as an outbound response
     */
    static Outbound of(ByteBuffer bytes, boolean thenClose) {
        long size = bytes.remaining();
        return new Outbound() {
            @Override
            public long size() {
                return size; // fixed: writing consumes the buffer
            }

            @Override
            public boolean closesConnection() {
                return thenClose;
            }

            @Override
            public void writeTo(GatheringByteChannel channel) throws IOException {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
                if (thenClose) {
                    if (channel instanceof TlsChannel tls) {
                        tls.flush(); // sent before the linger, not after it
                    }
                    lingerBeforeClose();
                    if (channel instanceof TlsChannel tls) {
                        tls.shutdownOutput();
                    }
                }
            }
        };
    }
}
