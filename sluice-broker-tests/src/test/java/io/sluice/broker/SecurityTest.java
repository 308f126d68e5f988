package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.TestCertificates;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialDeletion;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.admin.UserScramCredentialsDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.ResourceNotFoundException;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.errors.SslAuthenticationException;
import org.apache.kafka.common.errors.UnacceptableCredentialException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka 4.3.1's Java client against a broker's secured listeners: TLS (with and without client certificates), SASL
 * PLAIN and SCRAM over plaintext and TLS, the SCRAM credentials kafka-configs manages, re-authentication; and what is
 * refused with Kafka's errors: untrusted certificates, wrong passwords, unknown users, unsupported mechanisms.
 */
class SecurityTest {

    @TempDir
    static Path certificates;
    @TempDir
    Path dir;

    private static TestCertificates authority;
    private static Path brokerKeys;
    private static Path clientKeys;
    private static TestCertificates stranger;
    private static Path strangerKeys;

    @BeforeAll
    static void makeCertificates() throws Exception {
        authority = new TestCertificates(certificates.resolve("ca"), "sluice-test-ca");
        brokerKeys = authority.sign("broker", "CN=broker,O=Sluice");
        clientKeys = authority.sign("client", "CN=alice,OU=tests,O=Sluice");
        stranger = new TestCertificates(certificates.resolve("other"), "other-ca");
        strangerKeys = stranger.sign("mallory", "CN=mallory");
    }

    private static final String PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

    /** PLAINTEXT for the administrator, SSL, SASL_PLAINTEXT and SASL_SSL, each on a free port. */
    private static Map<String, String> listeners(Map<String, String> more) {
        Map<String, String> settings = new HashMap<>();
        settings.put("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                + "SASL_SSL://127.0.0.1:0");
        settings.put("ssl.keystore.location", brokerKeys.toString());
        settings.put("ssl.keystore.password", TestCertificates.PASSWORD);
        settings.put("ssl.keystore.type", "PKCS12");
        settings.put("ssl.truststore.location", authority.trustStore().toString());
        settings.put("ssl.truststore.password", TestCertificates.PASSWORD);
        settings.put("ssl.truststore.type", "PKCS12");
        settings.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
        settings.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.put("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.putAll(more);
        return settings;
    }

    private Broker start(Store store, Map<String, String> more) throws Exception {
        return Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(listeners(more)));
    }

    private static Map<String, Object> client(Broker broker, String listener, Map<String, Object> more) {
        Map<String, Object> config = new HashMap<>();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.ports().get(listener));
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, listener);
        if (listener.endsWith("SSL")) {
            config.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, authority.trustStore().toString());
            config.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, TestCertificates.PASSWORD);
            config.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
        }
        config.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        config.putAll(more);
        return config;
    }

    private static Map<String, Object> sasl(String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        return Map.of(SaslConfigs.SASL_MECHANISM, mechanism, SaslConfigs.SASL_JAAS_CONFIG, module
                + " required username=\"" + user + "\" password=\"" + password + "\";");
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

    private static void createScramUser(Broker broker, ScramMechanism mechanism, String user, String password)
            throws Exception {
        try (Admin admin = Admin.create(client(broker, "PLAINTEXT", Map.of()))) {
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user,
                    new ScramCredentialInfo(mechanism, 4096), password))).all().get(30, TimeUnit.SECONDS);
        }
    }

    @Test
    void clientsProduceAndConsumeOverTlsAndEverySaslMechanism() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            assertThat(broker.ports()).containsOnlyKeys("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL");
            roundTrip(client(broker, "SSL", Map.of()), "over-tls", 500);
            createScramUser(broker, ScramMechanism.SCRAM_SHA_256, "bob", "bob-secret");
            createScramUser(broker, ScramMechanism.SCRAM_SHA_512, "carol", "carol-secret");
            for (String listener : List.of("SASL_PLAINTEXT", "SASL_SSL")) {
                roundTrip(client(broker, listener, sasl("PLAIN", "alice", "alice-secret")),
                        "plain-" + listener.toLowerCase(), 200);
                roundTrip(client(broker, listener, sasl("SCRAM-SHA-256", "bob", "bob-secret")),
                        "scram256-" + listener.toLowerCase(), 200);
                roundTrip(client(broker, listener, sasl("SCRAM-SHA-512", "carol", "carol-secret")),
                        "scram512-" + listener.toLowerCase(), 200);
            }
        }
    }

    /**
     * FindCoordinator v4 and later names the coordinator in its list of keys only: on a listener other than the first,
     * telling the client this listener's address must not touch the top-level fields of v0-v3, which v4+ cannot carry
     * (the answer was UNSUPPORTED_VERSION, and no consumer group worked there).
     */
    @Test
    void consumerGroupsAreCoordinatedOnEveryListener() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            for (String listener : List.of("PLAINTEXT", "SSL", "SASL_SSL")) {
                Map<String, Object> config = client(broker, listener, listener.startsWith("SASL")
                        ? sasl("PLAIN", "alice", "alice-secret") : Map.of());
                String topic = "grouped-" + listener.toLowerCase();
                roundTrip(config, topic, 10);
                Map<String, Object> consumerConfig = new HashMap<>(config);
                consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, topic + "-readers");
                consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
                consumerConfig.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
                try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig,
                        new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                    consumer.subscribe(List.of(topic));
                    int read = 0;
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (read < 10 && System.nanoTime() < deadline) {
                        read += consumer.poll(Duration.ofMillis(200)).count();
                    }
                    assertThat(read).as("records read by the group over %s", listener).isEqualTo(10);
                    consumer.commitSync(Duration.ofSeconds(20));
                    assertThat(consumer.committed(java.util.Set.of(new TopicPartition(topic, 0)),
                            Duration.ofSeconds(20)).get(new TopicPartition(topic, 0)).offset())
                            .as("the group's offset over %s", listener).isEqualTo(10);
                }
            }
        }
    }

    @Test
    void wrongCredentialsAreRefusedWithKafkasErrors() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store, Map.of())) {
            createScramUser(broker, ScramMechanism.SCRAM_SHA_256, "bob", "bob-secret");
            assertRefused(client(broker, "SASL_SSL", sasl("PLAIN", "alice", "wrong")),
                    SaslAuthenticationException.class, "Invalid username or password");
            assertRefused(client(broker, "SASL_PLAINTEXT", sasl("PLAIN", "nobody", "alice-secret")),
                    SaslAuthenticationException.class, "Invalid username or password");
            assertRefused(client(broker, "SASL_PLAINTEXT", sasl("SCRAM-SHA-256", "bob", "wrong")),
                    SaslAuthenticationException.class, "invalid credentials with SASL mechanism SCRAM-SHA-256");
            // A credential for the other mechanism only, and an unknown user.
            assertRefused(client(broker, "SASL_PLAINTEXT", sasl("SCRAM-SHA-512", "bob", "bob-secret")),
                    SaslAuthenticationException.class, "invalid credentials with SASL mechanism SCRAM-SHA-512");
            assertRefused(client(broker, "SASL_SSL", sasl("SCRAM-SHA-256", "nobody", "x")),
                    SaslAuthenticationException.class, "invalid credentials");
            // A certificate from an authority the client does not trust, and a client that does not trust the
            // broker's.
            Map<String, Object> untrusting = client(broker, "SSL", Map.of(
                    SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, stranger.trustStore().toString()));
            assertRefused(untrusting, SslAuthenticationException.class, "");
            // The broker still serves the right credentials after all that.
            roundTrip(client(broker, "SASL_SSL", sasl("SCRAM-SHA-256", "bob", "bob-secret")), "after", 10);
        }
    }

    @Test
    void mutualTlsRefusesClientsWithoutATrustedCertificate() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = start(store, Map.of("ssl.client.auth", "required"))) {
            assertRefused(client(broker, "SSL", Map.of()), SslAuthenticationException.class, "");
            assertRefused(client(broker, "SSL", keyStore(strangerKeys)), SslAuthenticationException.class, "");
            roundTrip(client(broker, "SSL", keyStore(clientKeys)), "mutual", 100);
            // ssl.client.auth without the listener's prefix does not apply to SASL_SSL, as in Kafka.
            roundTrip(client(broker, "SASL_SSL", sasl("PLAIN", "alice", "alice-secret")), "sasl-no-cert", 10);
        }
    }

    private static Map<String, Object> keyStore(Path store) {
        return Map.of(SslConfigs.SSL_KEYSTORE_LOCATION_CONFIG, store.toString(),
                SslConfigs.SSL_KEYSTORE_PASSWORD_CONFIG, TestCertificates.PASSWORD,
                SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PKCS12");
    }

    private static void assertRefused(Map<String, Object> config, Class<? extends Exception> error, String message) {
        try (Admin admin = Admin.create(config)) {
            assertThatThrownBy(() -> admin.listTopics().names().get(30, TimeUnit.SECONDS))
                    .isInstanceOf(ExecutionException.class).cause().isInstanceOf(error).hasMessageContaining(message);
        }
    }

    @Test
    void scramCredentialsAreManagedAsKafkaConfigsDoesAndSurviveARestart() throws Exception {
        Store store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = start(store, Map.of())) {
            createScramUser(broker, ScramMechanism.SCRAM_SHA_256, "bob", "bob-secret");
            createScramUser(broker, ScramMechanism.SCRAM_SHA_512, "bob", "bob-secret-512");
            try (Admin admin = Admin.create(client(broker, "PLAINTEXT", Map.of()))) {
                Map<String, UserScramCredentialsDescription> described = admin.describeUserScramCredentials()
                        .all().get(30, TimeUnit.SECONDS);
                assertThat(described).containsOnlyKeys("bob");
                assertThat(described.get("bob").credentialInfos()).extracting(ScramCredentialInfo::mechanism)
                        .containsExactlyInAnyOrder(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512);
                assertThatThrownBy(() -> admin.describeUserScramCredentials(List.of("nobody")).description("nobody")
                        .get(30, TimeUnit.SECONDS)).cause().isInstanceOf(ResourceNotFoundException.class)
                        .hasMessageContaining("Attempt to describe a user credential that does not exist: nobody");
                List<UserScramCredentialAlteration> tooFew = List.of(new UserScramCredentialUpsertion("dave",
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 1000), "x"));
                assertThatThrownBy(() -> admin.alterUserScramCredentials(tooFew).all().get(30, TimeUnit.SECONDS))
                        .cause().isInstanceOf(UnacceptableCredentialException.class)
                        .hasMessageContaining("Too few iterations");
                assertThatThrownBy(() -> admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion(
                        "dave", ScramMechanism.SCRAM_SHA_256))).all().get(30, TimeUnit.SECONDS)).cause()
                        .isInstanceOf(ResourceNotFoundException.class)
                        .hasMessageContaining("Attempt to delete a user credential that does not exist");
            }
        }
        store.close();
        // The file holds no password: only salts and derived keys.
        assertThat(java.nio.file.Files.readString(dir.resolve("security").resolve("scram")))
                .doesNotContain("bob-secret").contains("SCRAM-SHA-256").contains("SCRAM-SHA-512");
        store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = start(store, Map.of())) {
            roundTrip(client(broker, "SASL_SSL", sasl("SCRAM-SHA-512", "bob", "bob-secret-512")), "restarted", 10);
            try (Admin admin = Admin.create(client(broker, "PLAINTEXT", Map.of()))) {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialDeletion("bob",
                        ScramMechanism.SCRAM_SHA_512))).all().get(30, TimeUnit.SECONDS);
            }
            assertRefused(client(broker, "SASL_SSL", sasl("SCRAM-SHA-512", "bob", "bob-secret-512")),
                    SaslAuthenticationException.class, "invalid credentials");
            roundTrip(client(broker, "SASL_SSL", sasl("SCRAM-SHA-256", "bob", "bob-secret")), "still-256", 10);
        } finally {
            store.close();
        }
    }

    @Test
    void clientsReauthenticateBeforeTheirSessionEnds() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = start(store, Map.of("connections.max.reauth.ms", "1500"))) {
            createScramUser(broker, ScramMechanism.SCRAM_SHA_256, "bob", "bob-secret");
            Map<String, Object> config = client(broker, "SASL_SSL", sasl("SCRAM-SHA-256", "bob", "bob-secret"));
            try (Admin admin = Admin.create(config)) {
                admin.createTopics(List.of(new NewTopic("long-lived", 1, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            long before = broker.metrics().requests("SaslAuthenticate", 2);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                // Six seconds of sends on one connection whose session lasts 1.5 s.
                long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(6);
                int sent = 0;
                while (System.nanoTime() < end) {
                    producer.send(new ProducerRecord<>("long-lived", ("r" + sent).getBytes(StandardCharsets.UTF_8)))
                            .get(15, TimeUnit.SECONDS);
                    sent++;
                    Thread.sleep(20);
                }
                assertThat(readAll(config, "long-lived", sent)).hasSize(sent);
            }
            // Two exchanges of SCRAM per authentication: at least two re-authentications of the producer's
            // connection beside the first authentications.
            assertThat(broker.metrics().requests("SaslAuthenticate", 2) - before).isGreaterThanOrEqualTo(8);
        }
    }

    /** @return a PKCS12 store's key and chain as PEM: the PKCS#8 key, then the certificates */
    private static String[] pem(Path store) throws Exception {
        java.security.KeyStore keys = java.security.KeyStore.getInstance("PKCS12");
        try (var in = java.nio.file.Files.newInputStream(store)) {
            keys.load(in, TestCertificates.PASSWORD.toCharArray());
        }
        String alias = java.util.Collections.list(keys.aliases()).stream().filter(a -> {
            try {
                return keys.isKeyEntry(a);
            } catch (java.security.KeyStoreException e) {
                return false;
            }
        }).findFirst().orElseThrow();
        java.util.Base64.Encoder base64 = java.util.Base64.getMimeEncoder(64, "\n".getBytes());
        String key = "-----BEGIN PRIVATE KEY-----\n" + base64.encodeToString(keys.getKey(alias,
                TestCertificates.PASSWORD.toCharArray()).getEncoded()) + "\n-----END PRIVATE KEY-----\n";
        StringBuilder chain = new StringBuilder();
        for (java.security.cert.Certificate certificate : keys.getCertificateChain(alias)) {
            chain.append("-----BEGIN CERTIFICATE-----\n").append(base64.encodeToString(certificate.getEncoded()))
                    .append("\n-----END CERTIFICATE-----\n");
        }
        return new String[] {key, chain.toString()};
    }

    @Test
    void pemKeysAndCertificatesServeTlsInlineAndFromAFile() throws Exception {
        String[] broker = pem(brokerKeys);
        String trusted = java.nio.file.Files.readString(authority.caPem());
        Map<String, Object> client = new HashMap<>();
        client.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SSL");
        client.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PEM");
        client.put(SslConfigs.SSL_TRUSTSTORE_CERTIFICATES_CONFIG, trusted);
        client.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        Map<String, String> inline = Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.type", "PEM",
                "ssl.keystore.key", broker[0], "ssl.keystore.certificate.chain", broker[1]);
        try (Store store = Store.open(dir.resolve("inline"), StoreConfig.builder().build());
             Broker started = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(inline))) {
            Map<String, Object> config = new HashMap<>(client);
            config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + started.port());
            roundTrip(config, "pem-inline", 20);
        }
        Path file = dir.resolve("broker.pem");
        java.nio.file.Files.writeString(file, broker[0] + broker[1]);
        Path trust = dir.resolve("ca.pem");
        java.nio.file.Files.writeString(trust, trusted);
        Map<String, String> fromFile = Map.of("listeners", "SSL://127.0.0.1:0", "ssl.keystore.type", "PEM",
                "ssl.keystore.location", file.toString(), "ssl.truststore.type", "PEM", "ssl.truststore.location",
                trust.toString(), "ssl.client.auth", "required");
        try (Store store = Store.open(dir.resolve("file"), StoreConfig.builder().build());
             Broker started = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(fromFile))) {
            Map<String, Object> config = new HashMap<>(client);
            config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + started.port());
            String[] mine = pem(clientKeys);
            config.put(SslConfigs.SSL_KEYSTORE_TYPE_CONFIG, "PEM");
            config.put(SslConfigs.SSL_KEYSTORE_KEY_CONFIG, mine[0]);
            config.put(SslConfigs.SSL_KEYSTORE_CERTIFICATE_CHAIN_CONFIG, mine[1]);
            roundTrip(config, "pem-file", 20);
        }
        // A PEM key store named twice, or a key that is not PKCS#8, stops the start with the setting named.
        try (Store store = Store.open(dir.resolve("bad"), StoreConfig.builder().build())) {
            Map<String, String> both = new HashMap<>(inline);
            both.put("ssl.keystore.location", file.toString());
            assertThatThrownBy(() -> Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(both)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("not a mix");
            Map<String, String> rsa = new HashMap<>(inline);
            rsa.put("ssl.keystore.key", broker[0].replace("PRIVATE KEY", "EC PRIVATE KEY"));
            assertThatThrownBy(() -> Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(rsa)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("PKCS#8");
        }
    }
}
