package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * Requests one broker sends another on its Kafka listener, as Kafka's brokers do: a transaction coordinator's markers
 * (WriteTxnMarkers) to the partitions' leaders, a leader's check of a transaction's batch (AddPartitionsToTxn,
 * verify only) with the coordinator. One connection per broker, one request at a time on it; a connection that fails
 * is dropped and the next request opens another. Thread-safe.
 */
final class BrokerRequests implements AutoCloseable {

    /** How long a request may take, connecting included. */
    static final int TIMEOUT_MILLIS = 10_000;
    /** The largest response taken. */
    private static final int MAX_RESPONSE_BYTES = 16 << 20;

    private final ClusterView cluster;
    private final Map<Integer, Connection> connections = new ConcurrentHashMap<>();

    BrokerRequests(ClusterView cluster) {
        this.cluster = cluster;
    }

    private static final class Connection {
        SocketChannel channel;
        int correlationId;
    }

    /**
     * Sends a request to a broker and waits for its response.
     *
     * @param response an empty message of the response's type, read into
     * @throws IOException if the broker is unknown or cannot be reached, or the exchange failed
     */
    <T extends ApiMessage> T send(int nodeId, ApiKeys key, short version, ApiMessage request, T response)
            throws IOException {
        ClusterView.Node node = cluster.brokers().stream().filter(n -> n.id() == nodeId).findFirst()
                .orElseThrow(() -> new IOException("no broker " + nodeId + " in the cluster"));
        Connection connection = connections.computeIfAbsent(nodeId, id -> new Connection());
        synchronized (connection) {
            try {
                if (connection.channel == null) {
                    SocketChannel channel = SocketChannel.open();
                    channel.socket().connect(new InetSocketAddress(node.host(), node.port()), TIMEOUT_MILLIS);
                    channel.socket().setSoTimeout(TIMEOUT_MILLIS);
                    connection.channel = channel;
                }
                int correlationId = ++connection.correlationId;
                write(connection.channel, key, version, correlationId, request);
                ByteBuffer body = read(connection.channel);
                ByteBufferAccessor in = new ByteBufferAccessor(body);
                ResponseHeaderData header = new ResponseHeaderData(in, key.responseHeaderVersion(version));
                if (header.correlationId() != correlationId) {
                    throw new IOException("a response to request " + header.correlationId() + " came for "
                            + correlationId);
                }
                response.read(in, version);
                return response;
            } catch (IOException | RuntimeException e) {
                closeQuietly(connection);
                throw e instanceof IOException io ? io : new IOException(e);
            }
        }
    }

    private static void write(SocketChannel channel, ApiKeys key, short version, int correlationId,
                              ApiMessage request) throws IOException {
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(correlationId).setClientId("sluice-broker");
        ObjectSerializationCache cache = new ObjectSerializationCache();
        int size = header.size(cache, headerVersion) + request.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(4 + size);
        out.putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        request.write(writer, cache, version);
        out.flip();
        while (out.hasRemaining()) {
            channel.write(out);
        }
    }

    /** Reads one size-prefixed frame with the socket's timeout (a blocking channel's stream honours it). */
    private static ByteBuffer read(SocketChannel channel) throws IOException {
        java.io.DataInputStream in = new java.io.DataInputStream(channel.socket().getInputStream());
        int size = in.readInt();
        if (size < 0 || size > MAX_RESPONSE_BYTES) {
            throw new IOException("a response of " + size + " bytes");
        }
        byte[] bytes = new byte[size];
        try {
            in.readFully(bytes);
        } catch (EOFException e) {
            throw new IOException("the connection closed inside a response", e);
        }
        return ByteBuffer.wrap(bytes);
    }

    private static void closeQuietly(Connection connection) {
        if (connection.channel != null) {
            try {
                connection.channel.close();
            } catch (IOException ignored) {
                // gone already
            }
            connection.channel = null;
        }
    }

    @Override
    public void close() {
        connections.values().forEach(connection -> {
            synchronized (connection) {
                closeQuietly(connection);
            }
        });
    }
}
