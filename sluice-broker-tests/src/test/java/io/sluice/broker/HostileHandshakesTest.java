package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.TestCertificates;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.net.Socket;
import java.net.SocketException;
import java.net.SocketTimeoutException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.security.KeyStore;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLEngineResult;
import javax.net.ssl.SSLSocket;
import javax.net.ssl.TrustManagerFactory;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.message.SaslHandshakeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Hostile clients at the doors of a broker's secured listeners, on raw sockets: garbage and truncated SASL tokens,
 * SaslHandshake v0 then garbage, requests before authentication, frames over the 512 KiB taken before
 * authentication, requests pipelined behind a refused authentication; garbage instead of a TLS ClientHello, a
 * truncated one, plaintext Kafka on a TLS port, a TLS 1.2 renegotiation and a TLS 1.3 key update. After each the
 * broker closes that connection only (its count of connections comes back), stays up, and an honest client on the
 * same listener authenticates and is answered. Random inputs come from a seed printed at the start.
 */
class HostileHandshakesTest {

    private static final long SEED = Long.getLong("sluice.hostile.seed", 20261207L);
    private static final int TIMEOUT_MILLIS = 10_000;
    private static final int MAX_UNAUTHENTICATED = 512 * 1024;
    /** The SMALL listener's sasl.server.max.receive.size. */
    private static final int SMALL_LIMIT = 1024;
    private static final String PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " user_alice=\"alice-secret\";";

    @TempDir
    static Path dir;

    private static Store store;
    private static Broker broker;
    private static TestCertificates authority;
    private static int sasl;
    private static int tls;
    private static int tls12;
    private static int saslTls;
    private static int small;

    private int correlation;

    @BeforeAll
    static void start() throws Exception {
        System.out.println("HostileHandshakesTest seed " + SEED + " (-Dsluice.hostile.seed=N to replay another)");
        authority = new TestCertificates(dir.resolve("ca"), "sluice-test-ca");
        Path brokerKeys = authority.sign("broker", "CN=broker");
        Map<String, String> settings = new HashMap<>();
        settings.put("listeners", "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,TLS12://127.0.0.1:0,"
                + "SASL_SSL://127.0.0.1:0,SMALL://127.0.0.1:0");
        settings.put("listener.security.protocol.map", "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,TLS12:SSL,"
                + "SASL_SSL:SASL_SSL,SMALL:SASL_PLAINTEXT");
        settings.put("listener.name.small.sasl.server.max.receive.size", String.valueOf(SMALL_LIMIT));
        settings.put("listener.name.small.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.put("ssl.keystore.location", brokerKeys.toString());
        settings.put("ssl.keystore.password", TestCertificates.PASSWORD);
        settings.put("ssl.keystore.type", "PKCS12");
        settings.put("listener.name.tls12.ssl.enabled.protocols", "TLSv1.2");
        settings.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
        settings.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.put("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
        store = Store.open(dir.resolve("store"), StoreConfig.builder().build());
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(settings));
        sasl = broker.ports().get("SASL_PLAINTEXT");
        tls = broker.ports().get("SSL");
        tls12 = broker.ports().get("TLS12");
        saslTls = broker.ports().get("SASL_SSL");
        small = broker.ports().get("SMALL");
    }

    @AfterAll
    static void stop() throws Exception {
        broker.close();
        store.close();
    }

    /** After each test: no connection of its left open, and honest clients of both kinds still served. */
    @AfterEach
    void honestClientsAreStillServed() throws Exception {
        awaitConnections(0);
        try (Socket socket = new Socket("127.0.0.1", sasl)) {
            authenticate(socket, "alice", "alice-secret");
            assertMetadataAnswered(socket);
        }
        try (SSLSocket socket = tlsSocket(tls, "TLSv1.3")) {
            assertMetadataAnswered(socket);
        }
        awaitConnections(0);
    }

    // SASL

    @Test
    void garbageSaslTokensAreRefusedAndTheirConnectionsClosed() throws Exception {
        SplittableRandom random = new SplittableRandom(SEED);
        for (int round = 0; round < 60; round++) {
            String mechanism = List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512").get(random.nextInt(3));
            byte[] token = garbage(random, mechanism);
            short version = (short) random.nextInt(3);
            try (Socket socket = new Socket("127.0.0.1", sasl)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                SaslHandshakeResponseData handshake = new SaslHandshakeResponseData(exchange(socket,
                        ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData().setMechanism(mechanism)),
                        (short) 1);
                assertThat(handshake.errorCode()).isZero();
                SaslAuthenticateResponseData answer = new SaslAuthenticateResponseData(exchange(socket,
                        ApiKeys.SASL_AUTHENTICATE, version, new SaslAuthenticateRequestData().setAuthBytes(token)),
                        version);
                String what = "round " + round + ": " + mechanism + " token " + printable(token);
                if (answer.errorCode() == 0) {
                    // A SCRAM first message of a user the broker knows is not garbage to it: a challenge comes, and
                    // garbage goes after it.
                    assertThat(mechanism).as(what).startsWith("SCRAM");
                    answer = new SaslAuthenticateResponseData(exchange(socket, ApiKeys.SASL_AUTHENTICATE, version,
                            new SaslAuthenticateRequestData().setAuthBytes(garbage(random, "PLAIN"))), version);
                }
                assertThat(answer.errorCode()).as(what).isEqualTo(Errors.SASL_AUTHENTICATION_FAILED.code());
                assertClosed(socket, what);
            }
        }
    }

    @Test
    void aTruncatedSaslAuthenticateClosesItsConnection() throws Exception {
        byte[] whole = frame(ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequestData()
                .setAuthBytes("\u0000alice\u0000alice-secret".getBytes(StandardCharsets.UTF_8)));
        for (int cut : List.of(8, 16, whole.length - 5, whole.length - 1)) {
            try (Socket socket = new Socket("127.0.0.1", sasl)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                        .setMechanism("PLAIN"));
                // The frame's size says what it holds; its body ends early, as a request's schema sees it.
                ByteBuffer truncated = ByteBuffer.allocate(cut).putInt(cut - 4).put(whole, 4, cut - 4);
                socket.getOutputStream().write(truncated.array());
                assertClosed(socket, "a SaslAuthenticate cut to " + cut + " bytes");
            }
        }
    }

    @Test
    void garbageAfterASaslHandshakeV0ClosesItsConnection() throws Exception {
        SplittableRandom random = new SplittableRandom(SEED + 1);
        for (int round = 0; round < 20; round++) {
            String mechanism = List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512").get(random.nextInt(3));
            try (Socket socket = new Socket("127.0.0.1", sasl)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                assertThat(new SaslHandshakeResponseData(exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 0,
                        new SaslHandshakeRequestData().setMechanism(mechanism)), (short) 0).errorCode()).isZero();
                byte[] token = garbage(random, "PLAIN");
                socket.getOutputStream().write(ByteBuffer.allocate(4 + token.length).putInt(token.length).put(token)
                        .array());
                assertClosed(socket, "round " + round + ": a bare " + mechanism + " token " + printable(token));
            }
        }
    }

    @Test
    void requestsBeforeAuthenticationCloseTheirConnectionUnanswered() throws Exception {
        List<List<Object[]>> sequences = List.of(
                List.<Object[]>of(new Object[] {ApiKeys.METADATA, new MetadataRequestData()}),
                List.<Object[]>of(new Object[] {ApiKeys.API_VERSIONS, new ApiVersionsRequestData()},
                        new Object[] {ApiKeys.METADATA, new MetadataRequestData()}),
                List.<Object[]>of(new Object[] {ApiKeys.API_VERSIONS, new ApiVersionsRequestData()},
                        new Object[] {ApiKeys.API_VERSIONS, new ApiVersionsRequestData()}),
                List.<Object[]>of(new Object[] {ApiKeys.SASL_AUTHENTICATE, new SaslAuthenticateRequestData()
                        .setAuthBytes("\u0000alice\u0000alice-secret".getBytes(StandardCharsets.UTF_8))}),
                List.<Object[]>of(new Object[] {ApiKeys.SASL_HANDSHAKE, new SaslHandshakeRequestData()
                        .setMechanism("PLAIN")}, new Object[] {ApiKeys.CREATE_TOPICS, createTopic("before-auth")}));
        for (List<Object[]> sequence : sequences) {
            try (Socket socket = new Socket("127.0.0.1", sasl)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                for (int i = 0; i < sequence.size() - 1; i++) {
                    ApiKeys key = (ApiKeys) sequence.get(i)[0];
                    exchange(socket, key, latest(key), (ApiMessage) sequence.get(i)[1]);
                }
                ApiKeys last = (ApiKeys) sequence.getLast()[0];
                socket.getOutputStream().write(frame(last, latest(last), (ApiMessage) sequence.getLast()[1]));
                assertClosed(socket, last + " after " + sequence.size() + " requests");
            }
        }
        assertThat(store.queueCount("before-auth")).isZero();
    }

    @Test
    void framesOverTheUnauthenticatedLimitCloseTheirConnectionBeforeTheirBody() throws Exception {
        for (int size : List.of(MAX_UNAUTHENTICATED + 1, 1 << 30, Integer.MAX_VALUE, -1)) {
            try (Socket socket = new Socket("127.0.0.1", sasl)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                // Only the size: the broker must not wait for a body it will not take.
                socket.getOutputStream().write(ByteBuffer.allocate(4).putInt(size).array());
                assertClosed(socket, "a frame of " + size + " bytes announced");
            }
        }
        // After the handshake too, until the client has authenticated.
        try (Socket socket = new Socket("127.0.0.1", sasl)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData().setMechanism("PLAIN"));
            socket.getOutputStream().write(ByteBuffer.allocate(4).putInt(MAX_UNAUTHENTICATED + 1).array());
            assertClosed(socket, "a frame over the limit after the handshake");
        }
        // At the limit, garbage: read, then refused.
        try (Socket socket = new Socket("127.0.0.1", sasl)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            byte[] body = new byte[MAX_UNAUTHENTICATED];
            new SplittableRandom(SEED + 2).nextBytes(body);
            socket.getOutputStream().write(ByteBuffer.allocate(4 + body.length).putInt(body.length).put(body)
                    .array());
            assertClosed(socket, "a frame of garbage at the limit");
        }
    }

    /** sasl.server.max.receive.size, as a listener's own setting, is the limit before authentication there. */
    @Test
    void aListenersSaslServerMaxReceiveSizeIsItsLimitBeforeAuthentication() throws Exception {
        byte[] token = new byte[SMALL_LIMIT];
        java.util.Arrays.fill(token, (byte) 'x');
        byte[] over = frame(ApiKeys.SASL_AUTHENTICATE, (short) 2,
                new SaslAuthenticateRequestData().setAuthBytes(token));
        assertThat(over.length - 4).isGreaterThan(SMALL_LIMIT);
        try (Socket socket = new Socket("127.0.0.1", small)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData().setMechanism("PLAIN"));
            socket.getOutputStream().write(over);
            // Not read, so not answered: a token taken and refused would have its answer before the close.
            int first;
            try {
                first = socket.getInputStream().read();
            } catch (SocketException e) {
                first = -1;
            }
            assertThat(first).as("what the broker sent for a SaslAuthenticate over the listener's limit").isEqualTo(-1);
        }
        // The same token where the limit is Kafka's default: taken, and refused as a token.
        try (Socket socket = new Socket("127.0.0.1", sasl)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData().setMechanism("PLAIN"));
            assertThat(new SaslAuthenticateResponseData(exchange(socket, ApiKeys.SASL_AUTHENTICATE, (short) 2,
                    new SaslAuthenticateRequestData().setAuthBytes(token)), (short) 2).errorCode())
                    .isEqualTo(Errors.SASL_AUTHENTICATION_FAILED.code());
        }
        // Within the limit, on SMALL: an honest client authenticates.
        try (Socket socket = new Socket("127.0.0.1", small)) {
            authenticate(socket, "alice", "alice-secret");
            assertMetadataAnswered(socket);
        }
    }

    /**
     * A refused authentication ends its connection: requests the client sent behind it (pipelined, as a client
     * guessing passwords would send them) are not taken, not even a handshake and a right password, so that the
     * refusal's delay bounds the guesses.
     */
    @Test
    void nothingPipelinedBehindARefusedAuthenticationIsTaken() throws Exception {
        try (Socket socket = new Socket("127.0.0.1", sasl)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            ByteArrayOutputStream pipelined = new ByteArrayOutputStream();
            pipelined.write(frame(ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                    .setMechanism("PLAIN")));
            pipelined.write(frame(ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequestData()
                    .setAuthBytes("\u0000alice\u0000guess".getBytes(StandardCharsets.UTF_8))));
            pipelined.write(frame(ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                    .setMechanism("PLAIN")));
            pipelined.write(frame(ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequestData()
                    .setAuthBytes("\u0000alice\u0000alice-secret".getBytes(StandardCharsets.UTF_8))));
            pipelined.write(frame(ApiKeys.CREATE_TOPICS, latest(ApiKeys.CREATE_TOPICS), createTopic("guessed")));
            socket.getOutputStream().write(pipelined.toByteArray());
            DataInputStream in = new DataInputStream(socket.getInputStream());
            readFrame(in);
            ByteBufferAccessor refused = readFrame(in);
            new ResponseHeaderData(refused, ApiKeys.SASL_AUTHENTICATE.responseHeaderVersion((short) 2));
            assertThat(new SaslAuthenticateResponseData(refused, (short) 2).errorCode())
                    .isEqualTo(Errors.SASL_AUTHENTICATION_FAILED.code());
            assertClosed(socket, "the requests behind a refused authentication");
        }
        assertThat(store.queueCount("guessed")).as("partitions of the topic created behind a refusal").isZero();
    }

    // TLS

    @Test
    void garbageInsteadOfAClientHelloClosesItsConnection() throws Exception {
        SplittableRandom random = new SplittableRandom(SEED + 3);
        for (int round = 0; round < 30; round++) {
            byte[] garbage = new byte[1 + random.nextInt(4096)];
            random.nextBytes(garbage);
            if (round % 3 == 0) {
                // A handshake record's header, of any version and length, over garbage.
                garbage[0] = 0x16;
                garbage[1] = 0x03;
            }
            try (Socket socket = new Socket("127.0.0.1", tls)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                socket.getOutputStream().write(garbage);
                socket.shutdownOutput();
                assertClosed(socket, "round " + round + ": " + garbage.length + " bytes of garbage");
            }
        }
        // A Kafka request in the clear on the TLS port.
        try (Socket socket = new Socket("127.0.0.1", tls)) {
            socket.setSoTimeout(TIMEOUT_MILLIS);
            socket.getOutputStream().write(frame(ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData()
                    .setClientSoftwareName("plain").setClientSoftwareVersion("1")));
            assertClosed(socket, "an ApiVersions request in the clear");
        }
    }

    @Test
    void aTruncatedClientHelloClosesItsConnectionWhenTheClientGoes() throws Exception {
        byte[] hello = clientHello();
        for (int cut : List.of(1, 5, hello.length / 2, hello.length - 1)) {
            try (Socket socket = new Socket("127.0.0.1", tls)) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                socket.getOutputStream().write(hello, 0, cut);
                socket.shutdownOutput();
                assertClosed(socket, "a ClientHello cut to " + cut + " of " + hello.length + " bytes");
            }
        }
    }

    @Test
    void aTls12RenegotiationIsRefusedAndClosesOnlyItsConnection() throws Exception {
        try (SSLSocket socket = tlsSocket(tls12, "TLSv1.2")) {
            assertThat(socket.getSession().getProtocol()).isEqualTo("TLSv1.2");
            assertMetadataAnswered(socket);
            // Under way before the refusal: an honest connection on the same listener.
            try (SSLSocket bystander = tlsSocket(tls12, "TLSv1.2")) {
                socket.startHandshake();
                try {
                    // The renegotiation's ClientHello goes with the next write; the broker's refusal ends the
                    // connection.
                    exchange(socket, ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData());
                    assertClosed(socket, "a renegotiated connection");
                } catch (IOException expected) {
                    // closed during the renegotiation
                }
                assertMetadataAnswered(bystander);
            }
        }
    }

    @Test
    void aTls13KeyUpdateIsServed() throws Exception {
        try (SSLSocket socket = tlsSocket(tls, "TLSv1.3")) {
            assertMetadataAnswered(socket);
            // On TLS 1.3 the JDK sends a KeyUpdate for a second startHandshake: the connection goes on.
            socket.startHandshake();
            assertMetadataAnswered(socket);
            socket.startHandshake();
            assertMetadataAnswered(socket);
        }
    }

    /**
     * A refusal over TLS is followed by the TLS close (close_notify) before the connection ends, as Kafka's broker
     * closes it: a client on OpenSSL 3 (kafka-python) that reads the refusal and the end of the stream together
     * otherwise takes the end for an unexpected EOF and drops the refusal, reporting a lost connection instead of
     * the failed authentication.
     */
    @Test
    void aRefusedAuthenticationOverTlsEndsWithTheTlsClose() throws Exception {
        try (EngineClient client = new EngineClient(saslTls)) {
            client.write(frame(ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                    .setMechanism("PLAIN")));
            client.readFrame();
            client.write(frame(ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequestData()
                    .setAuthBytes("\u0000alice\u0000wrong".getBytes(StandardCharsets.UTF_8))));
            ByteBufferAccessor refused = client.readFrame();
            new ResponseHeaderData(refused, ApiKeys.SASL_AUTHENTICATE.responseHeaderVersion((short) 2));
            assertThat(new SaslAuthenticateResponseData(refused, (short) 2).errorCode())
                    .isEqualTo(Errors.SASL_AUTHENTICATION_FAILED.code());
            assertThat(client.closedWithCloseNotify()).as("a close_notify before the end of the stream").isTrue();
        }
    }

    /**
     * A refused client is given time to read why before the broker closes: kafka-python 3.0 reads the refusal and the
     * end of the stream in one go when they come together, takes the end first and drops the refusal, reporting a
     * lost connection instead of a failed authentication (against Kafka 4.3.1 itself, about one time in two). The
     * close comes {@link io.sluice.broker.net.Outbound#LINGER_BEFORE_CLOSE_MILLIS} after the refusal at the
     * earliest.
     */
    @Test
    void aRefusedClientHasTimeToReadWhyBeforeTheClose() throws Exception {
        for (int port : new int[] {sasl, saslTls}) {
            try (Socket socket = port == sasl ? new Socket("127.0.0.1", port) : tlsSocket(port, "TLSv1.3")) {
                socket.setSoTimeout(TIMEOUT_MILLIS);
                exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                        .setMechanism("PLAIN"));
                SaslAuthenticateResponseData refused = new SaslAuthenticateResponseData(exchange(socket,
                        ApiKeys.SASL_AUTHENTICATE, (short) 2, new SaslAuthenticateRequestData()
                                .setAuthBytes("\u0000alice\u0000wrong".getBytes(StandardCharsets.UTF_8))), (short) 2);
                long answered = System.nanoTime();
                assertThat(refused.errorCode()).isEqualTo(Errors.SASL_AUTHENTICATION_FAILED.code());
                assertClosed(socket, "a refused authentication");
                assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - answered))
                        .as("milliseconds from the refusal to the close on port %d", port)
                        .isGreaterThanOrEqualTo(io.sluice.broker.net.Outbound.LINGER_BEFORE_CLOSE_MILLIS / 2);
            }
        }
    }

    /**
     * A TLS client on the JDK's {@link SSLEngine} over a blocking socket, which sees what a TLS library sees: whether
     * the server's stream ends with its close_notify or just ends.
     */
    private static final class EngineClient implements AutoCloseable {
        private final java.nio.channels.SocketChannel socket;
        private final SSLEngine engine;
        private ByteBuffer netIn = ByteBuffer.allocate(1 << 17).flip();
        private ByteBuffer appIn = ByteBuffer.allocate(1 << 17).flip();

        EngineClient(int port) throws Exception {
            socket = java.nio.channels.SocketChannel.open(new java.net.InetSocketAddress("127.0.0.1", port));
            socket.socket().setSoTimeout(TIMEOUT_MILLIS);
            engine = clientContext().createSSLEngine("127.0.0.1", port);
            engine.setUseClientMode(true);
            engine.beginHandshake();
            SSLEngineResult.HandshakeStatus status = engine.getHandshakeStatus();
            while (status != SSLEngineResult.HandshakeStatus.FINISHED
                    && status != SSLEngineResult.HandshakeStatus.NOT_HANDSHAKING) {
                switch (status) {
                    case NEED_WRAP -> status = wrap(ByteBuffer.allocate(0)).getHandshakeStatus();
                    case NEED_UNWRAP, NEED_UNWRAP_AGAIN -> status = unwrap().getHandshakeStatus();
                    case NEED_TASK -> {
                        Runnable task;
                        while ((task = engine.getDelegatedTask()) != null) {
                            task.run();
                        }
                        status = engine.getHandshakeStatus();
                    }
                    default -> throw new IllegalStateException(status.toString());
                }
            }
        }

        void write(byte[] bytes) throws IOException {
            ByteBuffer source = ByteBuffer.wrap(bytes);
            while (source.hasRemaining()) {
                wrap(source);
            }
        }

        ByteBufferAccessor readFrame() throws IOException {
            while (appIn.remaining() < 4 || appIn.remaining() < 4 + appIn.getInt(appIn.position())) {
                if (unwrap().getStatus() == SSLEngineResult.Status.CLOSED) {
                    throw new EOFException("the server closed the TLS connection before a whole answer");
                }
            }
            byte[] frame = new byte[appIn.getInt()];
            appIn.get(frame);
            return new ByteBufferAccessor(ByteBuffer.wrap(frame));
        }

        /** @return true if the server's close_notify came, false if its stream ended without one */
        boolean closedWithCloseNotify() throws IOException {
            try {
                while (true) {
                    if (unwrap().getStatus() == SSLEngineResult.Status.CLOSED) {
                        return true;
                    }
                }
            } catch (EOFException e) {
                return false;
            }
        }

        private SSLEngineResult wrap(ByteBuffer source) throws IOException {
            ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
            SSLEngineResult result = engine.wrap(source, out);
            out.flip();
            while (out.hasRemaining()) {
                socket.write(out);
            }
            return result;
        }

        /** Unwraps one record (reading more from the socket as needed) into the application bytes. */
        private SSLEngineResult unwrap() throws IOException {
            while (true) {
                appIn.compact();
                SSLEngineResult result;
                try {
                    result = engine.unwrap(netIn, appIn);
                } finally {
                    appIn.flip();
                }
                if (result.getStatus() != SSLEngineResult.Status.BUFFER_UNDERFLOW) {
                    return result;
                }
                netIn.compact();
                int read;
                try {
                    read = socket.socket().getInputStream().read(netIn.array(), netIn.position(),
                            netIn.remaining());
                } finally {
                    netIn.flip();
                }
                if (read < 0) {
                    throw new EOFException("the stream ended");
                }
                netIn.limit(netIn.limit() + read);
            }
        }

        @Override
        public void close() throws IOException {
            socket.close();
        }
    }

    // helpers

    /** Random bytes, random printable text, or a mechanism's well-formed message with random parts. */
    private static byte[] garbage(SplittableRandom random, String mechanism) {
        int kind = random.nextInt(5);
        byte[] bytes = new byte[random.nextInt(kind == 0 ? 1 : 600)];
        random.nextBytes(bytes);
        String text = new String(bytes, StandardCharsets.ISO_8859_1);
        return switch (kind) {
            case 0, 1 -> bytes;
            case 2 -> mechanism.equals("PLAIN") ? ("\u0000" + text + "\u0000" + text).getBytes(StandardCharsets.UTF_8)
                    : ("n,,n=" + text + ",r=" + text).getBytes(StandardCharsets.UTF_8);
            case 3 -> mechanism.equals("PLAIN")
                    ? "alice\u0000alice\u0000alice-secret\u0000".getBytes(StandardCharsets.UTF_8)
                    : ("n,a=" + text + ",n=bob,r=abc").getBytes(StandardCharsets.UTF_8);
            default -> ("c=biws,r=" + text + ",p=" + java.util.Base64.getEncoder().encodeToString(bytes))
                    .getBytes(StandardCharsets.UTF_8);
        };
    }

    private static String printable(byte[] token) {
        String text = new String(token, 0, Math.min(token.length, 60), StandardCharsets.ISO_8859_1)
                .replaceAll("[^\\x20-\\x7e]", "?");
        return "'" + text + "'" + (token.length > 60 ? "... (" + token.length + " bytes)" : "");
    }

    private static short latest(ApiKeys key) {
        return switch (key) {
            case API_VERSIONS -> 3;
            case METADATA -> 12;
            case SASL_HANDSHAKE -> 1;
            case SASL_AUTHENTICATE -> 2;
            case CREATE_TOPICS -> 7;
            default -> throw new IllegalArgumentException(key.toString());
        };
    }

    private static CreateTopicsRequestData createTopic(String name) {
        CreateTopicsRequestData request = new CreateTopicsRequestData().setTimeoutMs(10_000);
        request.topics().add(new CreateTopicsRequestData.CreatableTopic().setName(name).setNumPartitions(1)
                .setReplicationFactor((short) 1));
        return request;
    }

    private byte[] frame(ApiKeys key, short version, ApiMessage body) {
        ObjectSerializationCache cache = new ObjectSerializationCache();
        short headerVersion = key.requestHeaderVersion(version);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(version)
                .setCorrelationId(++correlation).setClientId("hostile");
        int size = header.size(cache, headerVersion) + body.size(cache, version);
        ByteBuffer out = ByteBuffer.allocate(4 + size).putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        body.write(writer, cache, version);
        return out.array();
    }

    /** Sends a request and reads its answer, the header skipped. */
    private ByteBufferAccessor exchange(Socket socket, ApiKeys key, short version, ApiMessage body)
            throws IOException {
        socket.getOutputStream().write(frame(key, version, body));
        ByteBufferAccessor answer = readFrame(new DataInputStream(socket.getInputStream()));
        new ResponseHeaderData(answer, key.responseHeaderVersion(version));
        return answer;
    }

    private static ByteBufferAccessor readFrame(DataInputStream in) throws IOException {
        byte[] frame = new byte[in.readInt()];
        in.readFully(frame);
        return new ByteBufferAccessor(ByteBuffer.wrap(frame));
    }

    private void authenticate(Socket socket, String user, String password) throws IOException {
        socket.setSoTimeout(TIMEOUT_MILLIS);
        exchange(socket, ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData()
                .setClientSoftwareName("honest").setClientSoftwareVersion("1"));
        assertThat(new SaslHandshakeResponseData(exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1,
                new SaslHandshakeRequestData().setMechanism("PLAIN")), (short) 1).errorCode()).isZero();
        assertThat(new SaslAuthenticateResponseData(exchange(socket, ApiKeys.SASL_AUTHENTICATE, (short) 2,
                new SaslAuthenticateRequestData().setAuthBytes(("\u0000" + user + "\u0000" + password)
                        .getBytes(StandardCharsets.UTF_8))), (short) 2).errorCode()).isZero();
    }

    private void assertMetadataAnswered(Socket socket) throws IOException {
        socket.setSoTimeout(TIMEOUT_MILLIS);
        MetadataResponseData metadata = new MetadataResponseData(exchange(socket, ApiKeys.METADATA, (short) 12,
                new MetadataRequestData().setTopics(null)), (short) 12);
        assertThat(metadata.brokers()).hasSize(1);
    }

    /** The broker ends the connection: the client reads its end (or a reset) without waiting out the timeout. */
    private static void assertClosed(Socket socket, String what) throws IOException {
        InputStream in = socket.getInputStream();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(TIMEOUT_MILLIS);
        byte[] buffer = new byte[8192];
        try {
            while (System.nanoTime() < deadline) {
                // Anything still in flight (a TLS alert, an answer written before the close) is read past.
                if (in.read(buffer) < 0) {
                    return;
                }
            }
        } catch (SocketTimeoutException e) {
            throw new AssertionError("the broker kept the connection open after " + what, e);
        } catch (SocketException | EOFException | javax.net.ssl.SSLException e) {
            return; // reset, or the TLS layer saw the close
        }
        throw new AssertionError("the broker kept writing to the connection after " + what);
    }

    /** Waits (up to 10 s) for the broker to count {@code count} connections. */
    private static void awaitConnections(int count) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (broker.connections() != count && System.nanoTime() < deadline) {
            Thread.sleep(10);
        }
        assertThat(broker.connections()).as("connections the broker still serves").isEqualTo(count);
    }

    private static SSLContext clientContext() throws Exception {
        KeyStore trust = KeyStore.getInstance("PKCS12");
        try (InputStream in = java.nio.file.Files.newInputStream(authority.trustStore())) {
            trust.load(in, TestCertificates.PASSWORD.toCharArray());
        }
        TrustManagerFactory trusting = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        trusting.init(trust);
        SSLContext context = SSLContext.getInstance("TLS");
        context.init(null, trusting.getTrustManagers(), null);
        return context;
    }

    private static SSLSocket tlsSocket(int port, String protocol) throws Exception {
        SSLSocket socket = (SSLSocket) clientContext().getSocketFactory().createSocket("127.0.0.1", port);
        socket.setEnabledProtocols(new String[] {protocol});
        socket.setSoTimeout(TIMEOUT_MILLIS);
        socket.startHandshake();
        return socket;
    }

    /** A real ClientHello, as the JDK's client engine first writes it. */
    private static byte[] clientHello() throws Exception {
        SSLEngine engine = clientContext().createSSLEngine("127.0.0.1", tls);
        engine.setUseClientMode(true);
        ByteBuffer out = ByteBuffer.allocate(engine.getSession().getPacketBufferSize());
        SSLEngineResult result = engine.wrap(ByteBuffer.allocate(0), out);
        assertThat(result.bytesProduced()).isPositive();
        byte[] hello = new byte[out.flip().remaining()];
        out.get(hello);
        return hello;
    }
}
