package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.kafka.security.TestTokens;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import io.sluice.testsupport.TestCertificates;
import java.io.IOException;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import javax.security.auth.callback.Callback;
import javax.security.auth.callback.UnsupportedCallbackException;
import javax.security.auth.login.AppConfigurationEntry;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.message.SaslHandshakeResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.security.auth.AuthenticateCallbackHandler;
import org.apache.kafka.common.security.auth.SaslExtensionsCallback;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerToken;
import org.apache.kafka.common.security.oauthbearer.OAuthBearerTokenCallback;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * SASL/OAUTHBEARER with Kafka 4.3.1's Java client: unsecured tokens from its own OAuthBearerLoginModule over
 * SASL_PLAINTEXT and SASL_SSL, signed tokens (RSA and EC keys of a key set file) handed to it by a login callback
 * handler, what the broker refuses (expired, unsigned for a signed listener, wrong signature, audience, issuer, scope)
 * with the {@code {"status":...}} messages Kafka's broker gives, and sessions that end with their token.
 */
class OAuthBearerTest {

    private static final String MODULE = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule";
    private static final String ISSUER = "https://issuer.test";
    private static final String ALLOWED_URLS = "org.apache.kafka.sasl.oauthbearer.allowed.urls";

    @TempDir
    static Path files;
    @TempDir
    Path dir;

    private static TestCertificates authority;
    private static Path brokerKeys;
    private static String jwksUrl;
    private static TestTokens.SigningKey rsa;
    private static TestTokens.SigningKey ec;
    private static TestTokens.SigningKey stranger;

    @BeforeAll
    static void keys() throws Exception {
        authority = new TestCertificates(files.resolve("ca"), "sluice-test-ca");
        brokerKeys = authority.sign("broker", "CN=broker,O=Sluice");
        rsa = TestTokens.rsa("rsa1", 2048);
        ec = TestTokens.ec("ec1", "P-256");
        stranger = TestTokens.rsa("rsa1", 2048);
        Path jwks = files.resolve("jwks.json");
        Files.writeString(jwks, TestTokens.jwks(rsa, ec));
        jwksUrl = jwks.toUri().toString();
        // As Kafka 4.3.1's broker, this one reads only the key set URLs the JVM allows.
        System.setProperty(ALLOWED_URLS, jwksUrl);
    }

    @AfterAll
    static void forgetAllowedUrls() {
        System.clearProperty(ALLOWED_URLS);
    }

    /**
     * PLAINTEXT, unsecured OAUTHBEARER on SASL_PLAINTEXT, SASL_SSL and SCOPED (which requires the scope "produce
     * consume"), and SIGNED, which takes tokens signed by a key of the key set.
     */
    private Broker start(Store store, Map<String, String> more) throws Exception {
        String unsecured = MODULE + " required;";
        Map<String, String> settings = new HashMap<>();
        settings.put("listeners", "PLAINTEXT://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
                + "SCOPED://127.0.0.1:0,SIGNED://127.0.0.1:0");
        settings.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                + "SASL_SSL:SASL_SSL,SCOPED:SASL_PLAINTEXT,SIGNED:SASL_PLAINTEXT");
        settings.put("ssl.keystore.location", brokerKeys.toString());
        settings.put("ssl.keystore.password", TestCertificates.PASSWORD);
        settings.put("ssl.keystore.type", "PKCS12");
        settings.put("sasl.enabled.mechanisms", "OAUTHBEARER");
        settings.put("listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config", unsecured);
        settings.put("listener.name.sasl_ssl.oauthbearer.sasl.jaas.config", unsecured);
        settings.put("listener.name.scoped.oauthbearer.sasl.jaas.config", MODULE
                + " required unsecuredValidatorRequiredScope=\"produce consume\";");
        settings.put("listener.name.signed.oauthbearer.sasl.jaas.config", unsecured);
        settings.put("listener.name.signed.oauthbearer.sasl.server.callback.handler.class",
                "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler");
        settings.put("listener.name.signed.oauthbearer.sasl.oauthbearer.jwks.endpoint.url", jwksUrl);
        settings.put("sasl.oauthbearer.expected.audience", "sluice");
        settings.put("sasl.oauthbearer.expected.issuer", ISSUER);
        settings.putAll(more);
        return Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(settings));
    }

    private static Map<String, Object> client(Broker broker, String listener, String jaas) {
        Map<String, Object> config = new HashMap<>();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.ports().get(listener));
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, listener.equals("SASL_SSL") ? "SASL_SSL"
                : "SASL_PLAINTEXT");
        if (listener.equals("SASL_SSL")) {
            config.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, authority.trustStore().toString());
            config.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, TestCertificates.PASSWORD);
            config.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
        }
        config.put(SaslConfigs.SASL_MECHANISM, "OAUTHBEARER");
        config.put(SaslConfigs.SASL_JAAS_CONFIG, jaas);
        config.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        return config;
    }

    /** Kafka's own unsecured tokens, for {@code alice}, with the module's extra options. */
    private static String unsecured(String options) {
        return MODULE + " required unsecuredLoginStringClaim_sub=\"alice\" " + options + ";";
    }

    /** A client that presents {@code token}, through {@link TokenFromJaas}. */
    private static Map<String, Object> signedClient(Broker broker, String token, long expiresAtMillis) {
        Map<String, Object> config = client(broker, "SIGNED", MODULE + " required token=\"" + token + "\" expires=\""
                + expiresAtMillis + "\";");
        config.put(SaslConfigs.SASL_LOGIN_CALLBACK_HANDLER_CLASS, TokenFromJaas.class);
        return config;
    }

    private static Map<String, Object> claims(long validSeconds) {
        Map<String, Object> claims = TestTokens.claims("alice", System.currentTimeMillis() / 1000, validSeconds);
        claims.put("aud", "sluice");
        claims.put("iss", ISSUER);
        return claims;
    }

    /** Produces {@code count} records to a new topic and reads them back, both over the listener. */
    private static void roundTrip(Map<String, Object> config, String topic, int count) throws Exception {
        try (Admin admin = Admin.create(config)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Map<String, Object> producerConfig = new HashMap<>(config);
        producerConfig.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, ("record-" + i).getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
        }
        assertThat(readAll(config, topic, count)).hasSize(count).first().isEqualTo("record-0");
    }

    private static List<String> readAll(Map<String, Object> config, String topic, int count) {
        Map<String, Object> consumerConfig = new HashMap<>(config);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition(topic, 0)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (values.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return values;
    }

    private static void assertRefused(Map<String, Object> config, String message) {
        try (Admin admin = Admin.create(config)) {
            assertThatThrownBy(() -> admin.listTopics().names().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).cause().isInstanceOf(SaslAuthenticationException.class)
                    .hasMessage(message);
        }
    }

    @Test
    void unsecuredTokensOfKafkasLoginModuleProduceAndConsume() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            roundTrip(client(broker, "SASL_PLAINTEXT", unsecured("")), "over-plaintext", 200);
            roundTrip(client(broker, "SASL_SSL", unsecured("")), "over-tls", 200);
            roundTrip(client(broker, "SCOPED", unsecured("unsecuredLoginListClaim_scope=\",produce,consume\"")),
                    "scoped", 10);
        }
    }

    @Test
    void expiredOrUnscopedUnsecuredTokensAreRefusedAsKafkaRefusesThem() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            assertRefused(client(broker, "SASL_PLAINTEXT", unsecured("unsecuredLoginLifetimeSeconds=\"-100\"")),
                    "{\"status\":\"invalid_token\"}");
            assertRefused(client(broker, "SCOPED", unsecured("unsecuredLoginListClaim_scope=\",produce\"")),
                    "{\"status\":\"insufficient_scope\", \"scope\":\"[produce, consume]\"}");
            // An unsigned token on the listener that verifies signatures.
            assertRefused(client(broker, "SIGNED", unsecured("")), "{\"status\":\"invalid_token\"}");
            roundTrip(client(broker, "SASL_PLAINTEXT", unsecured("")), "after-refusals", 10);
        }
    }

    @Test
    void signedTokensOfRsaAndEcKeysProduceAndConsume() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            long expires = (System.currentTimeMillis() / 1000 + 3600) * 1000;
            Map<String, Object> claims = claims(3600);
            roundTrip(signedClient(broker, TestTokens.sign("RS256", rsa, claims), expires), "rsa-signed", 100);
            roundTrip(signedClient(broker, TestTokens.sign("ES256", ec, claims), expires), "ec-signed", 100);
        }
    }

    @Test
    void signedTokensThatDoNotVerifyAreRefused() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            long expires = System.currentTimeMillis() + 3_600_000;
            String invalid = "{\"status\":\"invalid_token\"}";
            assertRefused(signedClient(broker, TestTokens.sign("RS256", stranger, claims(3600)), expires), invalid);
            Map<String, Object> otherAudience = claims(3600);
            otherAudience.put("aud", "another-service");
            assertRefused(signedClient(broker, TestTokens.sign("RS256", rsa, otherAudience), expires), invalid);
            Map<String, Object> otherIssuer = claims(3600);
            otherIssuer.put("iss", "https://evil.test");
            assertRefused(signedClient(broker, TestTokens.sign("ES256", ec, otherIssuer), expires), invalid);
            // Expired beyond the 30 s of clock skew allowed.
            Map<String, Object> expired = claims(-3600);
            expired.put("iat", System.currentTimeMillis() / 1000 - 7200);
            assertRefused(signedClient(broker, TestTokens.sign("RS256", rsa, expired), expires - 7_200_000), invalid);
            roundTrip(signedClient(broker, TestTokens.sign("RS256", rsa, claims(3600)), expires), "after", 10);
        }
    }

    /**
     * The session told to the client lasts as long as its token, when that is sooner than connections.max.reauth.ms,
     * as Kafka's broker computes it; a session whose token expired (taken within the clock skew) ends at once.
     */
    @Test
    void theSessionLastsAsLongAsItsToken() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = start(store, Map.of("connections.max.reauth.ms", "60000"))) {
            int port = broker.ports().get("SIGNED");
            try (Socket socket = new Socket("127.0.0.1", port)) {
                SaslAuthenticateResponseData answer = authenticate(socket, TestTokens.sign("RS256", rsa, claims(20)));
                assertThat(answer.errorCode()).isEqualTo(Errors.NONE.code());
                assertThat(answer.sessionLifetimeMs()).isBetween(10_000L, 20_000L);
            }
            try (Socket socket = new Socket("127.0.0.1", port)) {
                SaslAuthenticateResponseData answer = authenticate(socket, TestTokens.sign("ES256", ec,
                        claims(3600)));
                assertThat(answer.sessionLifetimeMs()).isEqualTo(60_000);
            }
            try (Socket socket = new Socket("127.0.0.1", port)) {
                Map<String, Object> justExpired = claims(-5);
                justExpired.put("iat", System.currentTimeMillis() / 1000 - 60);
                SaslAuthenticateResponseData answer = authenticate(socket, TestTokens.sign("RS256", rsa, justExpired));
                assertThat(answer.errorCode()).isEqualTo(Errors.NONE.code());
                assertThat(answer.sessionLifetimeMs()).isZero();
                assertThatThrownBy(() -> KafkaWire.exchange(socket, ApiKeys.API_VERSIONS, (short) 3,
                        new ApiVersionsRequestData())).isInstanceOf(IOException.class);
            }
        }
    }

    private static SaslAuthenticateResponseData authenticate(Socket socket, String token) throws IOException {
        SaslHandshakeResponseData handshake = new SaslHandshakeResponseData(KafkaWire.exchange(socket,
                ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData().setMechanism("OAUTHBEARER")),
                (short) 1);
        assertThat(handshake.errorCode()).isEqualTo(Errors.NONE.code());
        byte[] message = ("n,,\u0001auth=Bearer " + token + "\u0001\u0001").getBytes(StandardCharsets.UTF_8);
        return new SaslAuthenticateResponseData(KafkaWire.exchange(socket, ApiKeys.SASL_AUTHENTICATE, (short) 2,
                new SaslAuthenticateRequestData().setAuthBytes(message)), (short) 2);
    }

    /**
     * Kafka's client re-authenticates before its short-lived token's session ends, with the new token its login
     * module made meanwhile, although connections.max.reauth.ms would allow a minute.
     */
    @Test
    void kafkasClientReauthenticatesBeforeItsTokenExpires() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = start(store, Map.of("connections.max.reauth.ms", "60000"))) {
            Map<String, Object> config = client(broker, "SASL_PLAINTEXT", unsecured(
                    "unsecuredLoginLifetimeSeconds=\"4\""));
            try (Admin admin = Admin.create(config)) {
                admin.createTopics(List.of(new NewTopic("short-lived", 1, (short) 1))).all()
                        .get(30, TimeUnit.SECONDS);
            }
            int sent = 0;
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                // Ten seconds of sends on one connection whose tokens last four.
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
                while (System.nanoTime() < end) {
                    producer.send(new ProducerRecord<>("short-lived", ("r" + sent).getBytes(StandardCharsets.UTF_8)))
                            .get(15, TimeUnit.SECONDS);
                    sent++;
                    Thread.sleep(20);
                }
                assertThat(metric(producer.metrics(), "successful-reauthentication-total")).isGreaterThanOrEqualTo(2);
                assertThat(metric(producer.metrics(), "failed-reauthentication-total")).isZero();
            }
            assertThat(readAll(config, "short-lived", sent)).hasSize(sent);
        }
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream().filter(e -> e.getKey().name().equals(name))
                .mapToDouble(e -> ((Number) e.getValue().metricValue()).doubleValue()).sum();
    }

    /**
     * A login callback handler that gives Kafka's client the token of its JAAS options ({@code token}, and
     * {@code expires} in milliseconds since the epoch): what an application with tokens from its OAuth provider does.
     */
    public static final class TokenFromJaas implements AuthenticateCallbackHandler {
        private String token;
        private long expires;

        @Override
        public void configure(Map<String, ?> configs, String saslMechanism,
                              List<AppConfigurationEntry> jaasConfigEntries) {
            Map<String, ?> options = jaasConfigEntries.getFirst().getOptions();
            token = (String) options.get("token");
            expires = Long.parseLong((String) options.get("expires"));
        }

        @Override
        public void handle(Callback[] callbacks) throws UnsupportedCallbackException {
            for (Callback callback : callbacks) {
                if (callback instanceof OAuthBearerTokenCallback tokenCallback) {
                    tokenCallback.token(new OAuthBearerToken() {
                        @Override
                        public String value() {
                            return token;
                        }

                        @Override
                        public Set<String> scope() {
                            return Set.of();
                        }

                        @Override
                        public long lifetimeMs() {
                            return expires;
                        }

                        @Override
                        public String principalName() {
                            return "alice";
                        }

                        @Override
                        public Long startTimeMs() {
                            return null;
                        }
                    });
                } else if (!(callback instanceof SaslExtensionsCallback)) {
                    throw new UnsupportedCallbackException(callback);
                }
            }
        }

        @Override
        public void close() {
        }
    }
}
