package io.sluice.cluster;

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

/** One Kafka request to one broker on 127.0.0.1, at a chosen version, for tests that look at a single answer. */
final class KafkaWire {

    private KafkaWire() {
    }

    /**
     * Sends {@code request} and reads the answer's header.
     *
     * @return the answer's body, to be read by the response class's constructor at the same version
     * @throws IOException if the broker cannot be reached or closes the connection
     */
    static ByteBufferAccessor call(int port, ApiKeys key, short version, ApiMessage request) throws IOException {
        return call(port, key, version, request, 10_000);
    }

    /** As {@link #call(int, ApiKeys, short, ApiMessage)}, waiting up to {@code timeoutMillis} for the answer. */
    static ByteBufferAccessor call(int port, ApiKeys key, short version, ApiMessage request, int timeoutMillis)
            throws IOException {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(1).setClientId("kafka-wire");
        int size = header.size(cache, headerVersion) + request.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(4 + size).putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        request.write(writer, cache, version);
        try (Socket socket = new Socket("127.0.0.1", port)) {
            socket.setSoTimeout(timeoutMillis);
            socket.getOutputStream().write(out.array());
            DataInputStream input = new DataInputStream(socket.getInputStream());
            byte[] frame = new byte[input.readInt()];
            input.readFully(frame);
            ByteBufferAccessor reader = new ByteBufferAccessor(ByteBuffer.wrap(frame));
            new ResponseHeaderData(reader, key.responseHeaderVersion(version));
            return reader;
        }
    }
}
