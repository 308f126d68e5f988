package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.Socket;
import java.nio.ByteBuffer;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.ObjectSerializationCache;

/** One request and its response over a plain socket, written and read with the pinned generated classes. */
final class Wire {

    private Wire() {
    }

    static ByteBufferAccessor exchange(Socket socket, ApiKeys key, short version,
                                               org.apache.kafka.common.protocol.ApiMessage body) throws IOException {
        return exchange(socket, key, version, version, body);
    }

    /** Sends one request (header for {@code version}, body written in {@code bodyVersion}); returns the body. */
    static ByteBufferAccessor exchange(Socket socket, ApiKeys key, short version, short bodyVersion,
                                               org.apache.kafka.common.protocol.ApiMessage body) throws IOException {
        socket.setSoTimeout(10_000);
        ObjectSerializationCache cache = new ObjectSerializationCache();
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(7).setClientId("test");
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
        assertThat(new ResponseHeaderData(reader, key.responseHeaderVersion(version)).correlationId()).isEqualTo(7);
        return reader;
    }
}
