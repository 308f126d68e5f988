package io.sluice.broker.net;

import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.StandardSocketOptions;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Size-prefixed frames over TCP: one virtual thread per connection, which reads a request, answers it and only then
 * reads the next, so responses leave in request order (as Kafka's socket server does by muting a connection).
 * A frame size outside 0..{@code maxFrameBytes}, or a handler that refuses a frame, closes that connection with one
 * log line; other connections are not affected. Connections beyond {@code maxConnections} are closed on accept.
 */
public final class FrameServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(FrameServer.class);

    private final ServerSocketChannel server;
    private final FrameHandler handler;
    private final int maxFrameBytes;
    private final Semaphore connectionSlots;
    private final Set<SocketChannel> connections = ConcurrentHashMap.newKeySet();
    private final Thread acceptor;
    private volatile boolean closed;

    /**
     * Binds and starts accepting.
     *
     * @param address where to listen (port 0: any free port, see {@link #port()})
     * @param handler answers each frame
     * @param maxFrameBytes the largest request accepted
     * @param maxConnections connections served at once
     * @throws IOException when the address cannot be bound
     */
    public FrameServer(InetSocketAddress address, FrameHandler handler, int maxFrameBytes, int maxConnections)
            throws IOException {
        this.handler = Objects.requireNonNull(handler, "handler");
        if (maxFrameBytes < 16 || maxConnections < 1) {
            throw new IllegalArgumentException("maxFrameBytes must be at least 16 and maxConnections at least 1, was "
                    + maxFrameBytes + " and " + maxConnections);
        }
        this.maxFrameBytes = maxFrameBytes;
        this.connectionSlots = new Semaphore(maxConnections);
        this.server = ServerSocketChannel.open();
        try {
            server.setOption(StandardSocketOptions.SO_REUSEADDR, true);
            server.bind(address);
        } catch (IOException e) {
            server.close();
            throw e;
        }
        this.acceptor = Thread.ofPlatform().name("sluice-broker-accept").daemon().start(this::accept);
    }

    /** @return the port bound */
    public int port() {
        try {
            return ((InetSocketAddress) server.getLocalAddress()).getPort();
        } catch (IOException e) {
            throw new IllegalStateException("the listener is closed", e);
        }
    }

    /** @return connections being served now */
    public int connections() {
        return connections.size();
    }

    private void accept() {
        while (!closed) {
            SocketChannel connection;
            try {
                connection = server.accept();
            } catch (ClosedChannelException e) {
                return;
            } catch (IOException e) {
                LOG.warn("accepting a connection failed: {}", e.toString());
                continue;
            }
            if (!connectionSlots.tryAcquire()) {
                LOG.warn("closing a connection from {}: the broker already serves its maximum of connections",
                        remote(connection));
                closeQuietly(connection);
                continue;
            }
            connections.add(connection);
            Thread.ofVirtual().name("sluice-broker-connection").start(() -> serve(connection));
        }
    }

    private void serve(SocketChannel connection) {
        try (connection) {
            connection.setOption(StandardSocketOptions.TCP_NODELAY, true);
            ByteBuffer size = ByteBuffer.allocate(4);
            while (!closed) {
                size.clear();
                if (!readFully(connection, size, true)) {
                    return; // the client closed between requests
                }
                int bytes = size.getInt(0);
                if (bytes < 0 || bytes > maxFrameBytes) {
                    LOG.warn("closing the connection from {}: a request of {} bytes (at most {} accepted)",
                            remote(connection), bytes, maxFrameBytes);
                    return;
                }
                ByteBuffer frame = ByteBuffer.allocate(bytes);
                readFully(connection, frame, false);
                ByteBuffer response;
                try {
                    response = handler.handle(frame.flip());
                } catch (Exception e) {
                    LOG.warn("closing the connection from {}: {}", remote(connection), e.getMessage());
                    return;
                }
                if (response != null) {
                    while (response.hasRemaining()) {
                        connection.write(response);
                    }
                }
            }
        } catch (EOFException | ClosedChannelException e) {
            // the client went away mid-request, or the broker is closing
        } catch (IOException e) {
            if (!closed) {
                LOG.debug("connection ended: {}", e.toString());
            }
        } finally {
            connections.remove(connection);
            connectionSlots.release();
        }
    }

    /** @return false at end of stream before the first byte when {@code endAllowed}, else true once full */
    private static boolean readFully(SocketChannel connection, ByteBuffer buffer, boolean endAllowed)
            throws IOException {
        boolean first = true;
        while (buffer.hasRemaining()) {
            if (connection.read(buffer) < 0) {
                if (first && endAllowed && buffer.position() == 0) {
                    return false;
                }
                throw new EOFException("the connection ended inside a request");
            }
            first = false;
        }
        return true;
    }

    private static String remote(SocketChannel connection) {
        try {
            return String.valueOf(connection.getRemoteAddress());
        } catch (IOException e) {
            return "a closed connection";
        }
    }

    private static void closeQuietly(SocketChannel connection) {
        try {
            connection.close();
        } catch (IOException e) {
            LOG.debug("closing a refused connection failed: {}", e.toString());
        }
    }

    /** Stops accepting and closes every connection. */
    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        for (SocketChannel connection : connections) {
            closeQuietly(connection);
        }
        try {
            acceptor.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
