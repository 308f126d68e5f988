package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.kafka.security.InterBrokerClient;
import java.io.EOFException;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
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
    /** How the other brokers' listener is reached: TLS, SASL. */
    private volatile InterBrokerClient security = InterBrokerClient.PLAINTEXT;

    BrokerRequests(ClusterView cluster) {
        this.cluster = cluster;
    }

    /** Connections opened from now on use {@code client}'s TLS and SASL. */
    void secure(InterBrokerClient client) {
        this.security = client;
    }

    private static final class Connection {
        java.net.Socket socket;
        java.io.DataInputStream in;
        java.io.OutputStream out;
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
                if (connection.socket == null) {
                    open(connection, node);
                }
                return exchange(connection, key, version, request, response);
            } catch (IOException | RuntimeException e) {
                closeQuietly(connection);
                throw e instanceof IOException io ? io : new IOException(e);
            }
        }
    }

    /** Connects, over TLS if the listener has it, and authenticates if it has SASL. */
    private void open(Connection connection, ClusterView.Node node) throws IOException {
        InterBrokerClient client = security;
        java.net.Socket plain = new java.net.Socket();
        try {
            plain.connect(new InetSocketAddress(node.host(), node.port()), TIMEOUT_MILLIS);
            plain.setSoTimeout(TIMEOUT_MILLIS);
            plain.setTcpNoDelay(true);
            connection.socket = client.secure(plain, node.host(), node.port());
        } catch (IOException | RuntimeException e) {
            plain.close();
            throw e;
        }
        connection.in = new java.io.DataInputStream(new java.io.BufferedInputStream(
                connection.socket.getInputStream()));
        connection.out = new java.io.BufferedOutputStream(connection.socket.getOutputStream());
        if (client.mechanism() != null) {
            authenticate(connection, client);
        }
    }

    private <T extends ApiMessage> T exchange(Connection connection, ApiKeys key, short version, ApiMessage request,
                                              T response) throws IOException {
        int correlationId = ++connection.correlationId;
        write(connection.out, key, version, correlationId, request);
        ByteBuffer body = read(connection.in);
        ByteBufferAccessor in = new ByteBufferAccessor(body);
        ResponseHeaderData header = new ResponseHeaderData(in, key.responseHeaderVersion(version));
        if (header.correlationId() != correlationId) {
            throw new IOException("a response to request " + header.correlationId() + " came for "
                    + correlationId);
        }
        response.read(in, version);
        return response;
    }

    /** SaslHandshake v1, then SaslAuthenticate v2 until the exchange is done, as Kafka's clients authenticate. */
    private void authenticate(Connection connection, InterBrokerClient client) throws IOException {
        var handshake = exchange(connection, ApiKeys.SASL_HANDSHAKE, (short) 1,
                new org.apache.kafka.common.message.SaslHandshakeRequestData().setMechanism(client.mechanism()),
                new org.apache.kafka.common.message.SaslHandshakeResponseData());
        if (handshake.errorCode() != 0) {
            throw new IOException("the broker does not take SASL mechanism " + client.mechanism() + ": "
                    + org.apache.kafka.common.protocol.Errors.forCode(handshake.errorCode()));
        }
        InterBrokerClient.Exchange sasl = client.exchange();
        byte[] challenge = new byte[0];
        byte[] token;
        while ((token = sasl.next(challenge)) != null) {
            var answer = exchange(connection, ApiKeys.SASL_AUTHENTICATE, (short) 2,
                    new org.apache.kafka.common.message.SaslAuthenticateRequestData().setAuthBytes(token),
                    new org.apache.kafka.common.message.SaslAuthenticateResponseData());
            if (answer.errorCode() != 0) {
                throw new IOException("authenticating to a broker failed: " + answer.errorMessage());
            }
            challenge = answer.authBytes();
        }
    }

    private static void write(java.io.OutputStream channel, ApiKeys key, short version, int correlationId,
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
        channel.write(out.array(), 0, out.position());
        channel.flush();
    }

    /** Reads one size-prefixed frame with the socket's timeout (a blocking channel's stream honours it). */
    private static ByteBuffer read(java.io.DataInputStream in) throws IOException {
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
        if (connection.socket != null) {
            try {
                connection.socket.close();
            } catch (IOException ignored) {
                // gone already
            }
            connection.socket = null;
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
