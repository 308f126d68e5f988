package io.sluice.testsupport;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/**
 * One Kafka request and its answer over a plain socket, written and read with the generated protocol classes of the
 * pinned kafka-clients, for tests that look at a single answer at a chosen version.
 *
 * <p>Two ways in: {@link #exchange} on a connection the test holds (several requests on one connection, or a
 * connection the broker is expected to close), and {@link #call} on a connection of its own to a port on 127.0.0.1.
 * Each returns the answer's body, its header read and its correlation id checked, to be read by the response
 * class's constructor at the request's version.
 */
public final class KafkaWire {

    /** How long an answer is waited for unless the caller says otherwise. */
    public static final int DEFAULT_TIMEOUT_MILLIS = 10_000;

    private static final int CORRELATION_ID = 7;
    private static final String CLIENT_ID = "kafka-wire";

    private KafkaWire() {
    }

    /**
     * Sends one request on {@code socket} and reads its answer, waiting up to {@link #DEFAULT_TIMEOUT_MILLIS}.
     *
     * @return the answer's body
     * @throws IOException if the connection fails or the broker closes it before answering
     */
    public static ByteBufferAccessor exchange(Socket socket, ApiKeys key, short version, ApiMessage body)
            throws IOException {
        return exchange(socket, key, version, version, body);
    }

    /**
     * As {@link #exchange(Socket, ApiKeys, short, ApiMessage)}, with the header for {@code version} and the body
     * written in {@code bodyVersion}: a request whose body does not match its header's version.
     */
    public static ByteBufferAccessor exchange(Socket socket, ApiKeys key, short version, short bodyVersion,
                                              ApiMessage body) throws IOException {
        socket.setSoTimeout(DEFAULT_TIMEOUT_MILLIS);
        return send(socket, key, version, bodyVersion, body);
    }

    /**
     * Sends one request to the broker on {@code port} of 127.0.0.1, on a connection of its own, and reads its answer,
     * waiting up to {@link #DEFAULT_TIMEOUT_MILLIS}.
     *
     * @return the answer's body
     * @throws IOException if the broker cannot be reached or closes the connection before answering
     */
    public static ByteBufferAccessor call(int port, ApiKeys key, short version, ApiMessage request)
            throws IOException {
        return call(port, key, version, request, DEFAULT_TIMEOUT_MILLIS);
    }

    /** As {@link #call(int, ApiKeys, short, ApiMessage)}, waiting up to {@code timeoutMillis} for the answer. */
    public static ByteBufferAccessor call(int port, ApiKeys key, short version, ApiMessage request, int timeoutMillis)
            throws IOException {
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(timeoutMillis);
            return send(socket, key, version, version, request);
        }
    }

    private static ByteBufferAccessor send(Socket socket, ApiKeys key, short version, short bodyVersion,
                                           ApiMessage body) throws IOException {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(CORRELATION_ID).setClientId(CLIENT_ID);
        int size = header.size(cache, headerVersion) + body.size(cache, bodyVersion);
        ByteBuffer out = ByteBuffer.allocate(4 + size).putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        body.write(writer, cache, bodyVersion);
        socket.getOutputStream().write(out.array());
        DataInputStream input = new DataInputStream(socket.getInputStream());
        byte[] frame = new byte[input.readInt()];
        input.readFully(frame);
        ByteBufferAccessor reader = new ByteBufferAccessor(ByteBuffer.wrap(frame));
        int correlationId = new ResponseHeaderData(reader, key.responseHeaderVersion(version)).correlationId();
        if (correlationId != CORRELATION_ID) {
            throw new AssertionError(key + " v" + version + " answered with correlation id " + correlationId
                    + ", not the request's " + CORRELATION_ID);
        }
        return reader;
    }
}
