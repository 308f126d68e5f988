package io.sluice.broker.net;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;

/**
 * One response on its way to a client: its bytes in memory, or partly in files sent with {@code sendfile}.
 */
public interface Outbound {

    /** @return the bytes {@link #writeTo} writes, size prefix included */
    long size();

    /**
     * Writes the whole response to a blocking channel.
     *
     * @throws IOException if the connection failed
     */
    void writeTo(SocketChannel channel) throws IOException;

    /**
     * @param bytes a response with its size prefix
     * @return it as an outbound response
     */
    static Outbound of(ByteBuffer bytes) {
        return new Outbound() {
            @Override
            public long size() {
                return bytes.remaining();
            }

            @Override
            public void writeTo(SocketChannel channel) throws IOException {
                while (bytes.hasRemaining()) {
                    channel.write(bytes);
                }
            }
        };
    }
}
