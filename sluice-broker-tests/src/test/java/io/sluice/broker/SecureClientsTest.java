package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.GoClients;
import io.sluice.testsupport.Kcat;
import io.sluice.testsupport.PythonClients;
import io.sluice.testsupport.TestCertificates;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Clients that are not Kafka's Java client against a broker's secured listeners: confluent-kafka (librdkafka 2.16,
 * through {@link PythonClients}), kafka-python, franz-go (through {@link GoClients}) and kcat (the system's librdkafka,
 * through {@link Kcat}), each over SSL, over mutual TLS, and over SASL_PLAINTEXT and SASL_SSL with PLAIN,
 * SCRAM-SHA-256 and SCRAM-SHA-512. Each creates a topic, produces and consumes in a group (kcat: produces and reads
 * back); each is refused, saying why, with a wrong password, with a CA that did not sign the broker's certificate,
 * and without a client certificate where one is required; the first three outlive sessions of a second by
 * re-authenticating (KIP-368). One broker serves every test; the scripts and programs
 * assert what their client gets, this test then checks the store. The franz-go and kcat tests are skipped, saying
 * so, on a machine without Go or kcat.
 */
class SecureClientsTest {

    private static final Duration CLIENT_TIMEOUT = Duration.ofMinutes(2);
    private static final String SCRIPT = "python/secure_clients.py";
    private static final int RECORDS = 100;
    private static final long REAUTH_MILLIS = 1_000;
    /** How long the long-lived clients produce: several sessions of {@link #REAUTH_MILLIS}. */
    private static final int PRODUCE_SECONDS = 4;
    /** The users: PLAIN's from the listeners' JAAS configuration, SCRAM's made with AlterUserScramCredentials. */
    private static final Map<String, String[]> USERS = Map.of("PLAIN", new String[] {"alice", "alice-secret"},
            "SCRAM-SHA-256", new String[] {"bob", "bob-secret"}, "SCRAM-SHA-512",
            new String[] {"carol", "carol-secret"});
    private static final String PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\" user_alice=\"alice-secret\";";

    @TempDir
    static Path dir;

    private static Store store;
    private static Broker broker;
    private static TestCertificates authority;
    private static TestCertificates stranger;
    /** The client's key store (PKCS12) and its key and chain as PEM, for mutual TLS. */
    private static Path clientKeys;
    private static Path clientKeyPem;
    private static Path clientChainPem;

    @BeforeAll
    static void start() throws Exception {
        authority = new TestCertificates(dir.resolve("ca"), "sluice-test-ca");
        Path brokerKeys = authority.sign("broker", "CN=broker,O=Sluice");
        clientKeys = authority.sign("client", "CN=alice,OU=tests,O=Sluice");
        clientKeyPem = authority.pemKeyAndChain("client");
        clientChainPem = clientKeyPem.resolveSibling("client-chain.pem");
        stranger = new TestCertificates(dir.resolve("other"), "other-ca");
        Map<String, String> settings = new HashMap<>();
        // PLAINTEXT first, as an operator's would be: every other listener is then told its own address apart.
        settings.put("listeners", "PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
                + "SASL_SSL://127.0.0.1:0,MTLS://127.0.0.1:0,REAUTH://127.0.0.1:0");
        settings.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
                + "SASL_SSL:SASL_SSL,MTLS:SSL,REAUTH:SASL_SSL");
        // Sessions of a second on REAUTH: a client that lives longer re-authenticates (KIP-368).
        settings.put("listener.name.reauth.connections.max.reauth.ms", String.valueOf(REAUTH_MILLIS));
        settings.put("ssl.keystore.location", brokerKeys.toString());
        settings.put("ssl.keystore.password", TestCertificates.PASSWORD);
        settings.put("ssl.keystore.type", "PKCS12");
        settings.put("ssl.truststore.location", authority.trustStore().toString());
        settings.put("ssl.truststore.password", TestCertificates.PASSWORD);
        settings.put("ssl.truststore.type", "PKCS12");
        settings.put("listener.name.mtls.ssl.client.auth", "required");
        settings.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512");
        settings.put("listener.name.sasl_plaintext.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.put("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
        settings.put("listener.name.reauth.plain.sasl.jaas.config", PLAIN_JAAS);
        store = Store.open(dir.resolve("store"), StoreConfig.builder().build());
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(settings));
        try (Admin admin = Admin.create(Map.of(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG,
                "127.0.0.1:" + broker.ports().get("PLAINTEXT")))) {
            for (ScramMechanism mechanism : List.of(ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)) {
                String[] user = USERS.get(mechanism.mechanismName());
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(user[0],
                        new ScramCredentialInfo(mechanism, 4096), user[1]))).all().get(30, TimeUnit.SECONDS);
            }
        }
    }

    @AfterAll
    static void stop() throws Exception {
        if (broker != null) {
            broker.close();
        }
        if (store != null) {
            store.close();
        }
    }

    /** Every listener and mechanism a client authenticates with: SSL alone, and SASL's three over both SASL ones. */
    static Stream<Arguments> ways() {
        List<Arguments> ways = new ArrayList<>(List.of(Arguments.of("SSL", "none")));
        for (String listener : List.of("SASL_PLAINTEXT", "SASL_SSL")) {
            for (String mechanism : List.of("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")) {
                ways.add(Arguments.of(listener, mechanism));
            }
        }
        return ways.stream();
    }

    /** The SASL listeners and mechanisms, for the wrong passwords. */
    static Stream<Arguments> saslWays() {
        return ways().filter(way -> !way.get()[1].equals("none"));
    }

    // confluent-kafka (librdkafka 2.16)

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("ways")
    void confluentKafkaProducesAndConsumes(String listener, String mechanism) throws Exception {
        String topic = topic("confluent", listener, mechanism);
        assertSucceeds(python("confluent", "round-trip", listener, mechanism, "--topic", topic));
        assertThat(store.maxOffset(topic, 0)).isEqualTo(RECORDS);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("saslWays")
    void confluentKafkaIsToldAWrongPasswordFailedAuthentication(String listener, String mechanism)
            throws Exception {
        assertSucceeds(python("confluent", "refused", listener, mechanism, "--password", "wrong", "--expect",
                "authentication"));
    }

    @Test
    void confluentKafkaRefusesABrokerItsCaDidNotSign() throws Exception {
        assertSucceeds(python("confluent", "refused", "SSL", "none", "--ca", stranger.caPem().toString(),
                "--expect", "ssl"));
        assertSucceeds(python("confluent", "refused", "SASL_SSL", "PLAIN", "--ca", stranger.caPem().toString(),
                "--expect", "ssl"));
    }

    @Test
    void confluentKafkaAuthenticatesWithAClientKeyStoreWhereOneIsRequired() throws Exception {
        assertSucceeds(python("confluent", "round-trip", "MTLS", "none", "--topic", "confluent-mtls", "--keystore",
                clientKeys.toString(), "--keystore-password", TestCertificates.PASSWORD));
        assertThat(store.maxOffset("confluent-mtls", 0)).isEqualTo(RECORDS);
        assertSucceeds(python("confluent", "refused", "MTLS", "none", "--expect", "ssl"));
    }

    /** librdkafka re-authenticates before its session ends (KIP-368): nothing is lost, no connection closed. */
    @Test
    void confluentKafkaReauthenticatesBeforeItsSessionEnds() throws Exception {
        store.createTopic("confluent-reauth", BrokerConfig.defaults().topicLayout(), 1);
        long before = saslAuthenticates();
        assertSucceeds(python("confluent", "long-lived", "REAUTH", "SCRAM-SHA-256", "--topic", "confluent-reauth",
                "--produce-seconds", String.valueOf(PRODUCE_SECONDS)));
        assertThat(store.maxOffset("confluent-reauth", 0)).isGreaterThan(PRODUCE_SECONDS * 10L);
        // Two SCRAM exchanges per authentication: the first ones of two connections, then re-authentications.
        assertThat(saslAuthenticates() - before).isGreaterThanOrEqualTo(2 * (2 + PRODUCE_SECONDS - 1));
    }

    // kafka-python

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("ways")
    void kafkaPythonProducesAndConsumes(String listener, String mechanism) throws Exception {
        String topic = topic("kafka-python", listener, mechanism);
        assertSucceeds(python("kafka-python", "round-trip", listener, mechanism, "--topic", topic));
        assertThat(store.maxOffset(topic, 0)).isEqualTo(RECORDS);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("saslWays")
    void kafkaPythonIsToldAWrongPasswordFailedAuthentication(String listener, String mechanism) throws Exception {
        assertSucceeds(python("kafka-python", "refused", listener, mechanism, "--password", "wrong", "--expect",
                "authentication"));
    }

    @Test
    void kafkaPythonRefusesABrokerItsCaDidNotSign() throws Exception {
        assertSucceeds(python("kafka-python", "refused", "SASL_SSL", "SCRAM-SHA-512", "--ca",
                stranger.caPem().toString(), "--expect", "ssl"));
    }

    @Test
    void kafkaPythonAuthenticatesWithAClientCertificateWhereOneIsRequired() throws Exception {
        assertSucceeds(python("kafka-python", "round-trip", "MTLS", "none", "--topic", "kafka-python-mtls", "--cert",
                clientChainPem.toString(), "--key", clientKeyPem.toString()));
        assertThat(store.maxOffset("kafka-python-mtls", 0)).isEqualTo(RECORDS);
    }

    /** kafka-python re-authenticates too (KIP-368, since its 3.0): nothing is lost. */
    @Test
    void kafkaPythonReauthenticatesBeforeItsSessionEnds() throws Exception {
        store.createTopic("kafka-python-reauth", BrokerConfig.defaults().topicLayout(), 1);
        long before = saslAuthenticates();
        assertSucceeds(python("kafka-python", "long-lived", "REAUTH", "SCRAM-SHA-512", "--topic",
                "kafka-python-reauth", "--produce-seconds", String.valueOf(PRODUCE_SECONDS)));
        assertThat(store.maxOffset("kafka-python-reauth", 0)).isGreaterThan(PRODUCE_SECONDS * 5L);
        assertThat(saslAuthenticates() - before).isGreaterThanOrEqualTo(2 * (1 + PRODUCE_SECONDS - 1));
    }

    // franz-go

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("ways")
    void franzGoProducesAndConsumes(String listener, String mechanism) throws Exception {
        String topic = topic("franz-go", listener, mechanism);
        assertSucceeds(go(listener, mechanism, "--topic", topic));
        assertThat(store.maxOffset(topic, 0)).isEqualTo(RECORDS);
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("saslWays")
    void franzGoIsToldAWrongPasswordFailedAuthentication(String listener, String mechanism) throws Exception {
        assertSucceeds(go(listener, mechanism, "--password", "wrong", "--expect", "authentication"));
    }

    @Test
    void franzGoRefusesABrokerItsCaDidNotSignAndIsRefusedWithoutACertificateWhereOneIsRequired()
            throws Exception {
        assertSucceeds(go("SASL_SSL", "SCRAM-SHA-256", "--ca", stranger.caPem().toString(), "--expect", "tls"));
        assertSucceeds(go("MTLS", "none", "--expect", "tls"));
        assertSucceeds(go("MTLS", "none", "--topic", "franz-go-mtls", "--cert", clientChainPem.toString(), "--key",
                clientKeyPem.toString()));
        assertThat(store.maxOffset("franz-go-mtls", 0)).isEqualTo(RECORDS);
    }

    @Test
    void franzGoReauthenticatesBeforeItsSessionEnds() throws Exception {
        long before = saslAuthenticates();
        assertSucceeds(go("REAUTH", "PLAIN", "--topic", "franz-go-reauth", "--produce-for", PRODUCE_SECONDS + "s"));
        assertThat(store.maxOffset("franz-go-reauth", 0)).isGreaterThan(RECORDS + PRODUCE_SECONDS * 10L);
        assertThat(saslAuthenticates() - before).isGreaterThanOrEqualTo(2 + PRODUCE_SECONDS - 1);
    }

    // kcat (the system's librdkafka)

    /**
     * librdkafka before 2.6.1 sends its own nonce again before the server's in SCRAM's final message
     * (confluentinc/librdkafka#4895); Kafka 4 compares the nonce exactly, as RFC 5802 says, and so does this broker:
     * such a kcat's SCRAM is refused as Kafka 4 refuses it, and any other way in works.
     */
    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("ways")
    void kcatProducesAndReadsBack(String listener, String mechanism) throws Exception {
        assumeTrue(Kcat.available(), Kcat.NO_KCAT);
        String topic = topic("kcat", listener, mechanism);
        store.createTopic(topic, BrokerConfig.defaults().topicLayout(), 1);
        String lines = IntStream.range(0, RECORDS).mapToObj(i -> "line-" + i + "\n").collect(Collectors.joining());
        List<String> produce = kcat(listener, mechanism);
        produce.addAll(List.of("-P", "-t", topic));
        Kcat.Result produced = Kcat.run(CLIENT_TIMEOUT, lines, produce.toArray(String[]::new));
        if (mechanism.startsWith("SCRAM") && !atLeast(Kcat.librdkafka(), 2, 6, 1)) {
            assertThat(produced.exitCode()).as(produced.describe()).isNotZero();
            assertThat(produced.errors()).as(produced.describe())
                    .contains("Authentication failed during authentication due to invalid credentials with SASL"
                            + " mechanism " + mechanism);
            return;
        }
        assertThat(produced.exitCode()).as(produced.describe()).isZero();
        List<String> consume = kcat(listener, mechanism);
        consume.addAll(List.of("-C", "-t", topic, "-o", "beginning", "-e", "-q"));
        Kcat.Result consumed = Kcat.run(CLIENT_TIMEOUT, "", consume.toArray(String[]::new));
        assertThat(consumed.exitCode()).as(consumed.describe()).isZero();
        assertThat(consumed.output()).isEqualTo(lines);
        assertThat(store.maxOffset(topic, 0)).isEqualTo(RECORDS);
    }

    @Test
    void kcatIsToldAWrongPasswordFailedAuthenticationAndRefusesAnUntrustedBroker() throws Exception {
        assumeTrue(Kcat.available(), Kcat.NO_KCAT);
        List<String> wrong = kcat("SASL_SSL", "PLAIN");
        wrong.set(wrong.indexOf("sasl.password=alice-secret"), "sasl.password=wrong");
        wrong.addAll(List.of("-L", "-m", "5"));
        Kcat.Result refused = Kcat.run(CLIENT_TIMEOUT, "", wrong.toArray(String[]::new));
        assertThat(refused.exitCode()).as(refused.describe()).isNotZero();
        assertThat(refused.errors()).as(refused.describe()).contains("SASL authentication error: Authentication failed:"
                + " Invalid username or password");
        List<String> untrusting = kcat("SSL", "none");
        untrusting.set(untrusting.indexOf("ssl.ca.location=" + authority.caPem()),
                "ssl.ca.location=" + stranger.caPem());
        untrusting.addAll(List.of("-L", "-m", "5"));
        Kcat.Result untrusted = Kcat.run(CLIENT_TIMEOUT, "", untrusting.toArray(String[]::new));
        assertThat(untrusted.exitCode()).as(untrusted.describe()).isNotZero();
        assertThat(untrusted.errors()).as(untrusted.describe()).contains("SSL handshake failed")
                .contains("certificate verify failed");
    }

    @Test
    void kcatAuthenticatesWithAClientKeyStoreWhereOneIsRequired() throws Exception {
        assumeTrue(Kcat.available(), Kcat.NO_KCAT);
        List<String> metadata = kcat("MTLS", "none");
        metadata.addAll(List.of("-L", "-m", "10"));
        Kcat.Result refused = Kcat.run(CLIENT_TIMEOUT, "", metadata.toArray(String[]::new));
        assertThat(refused.exitCode()).as(refused.describe()).isNotZero();
        metadata.addAll(List.of("-X", "ssl.keystore.location=" + clientKeys, "-X",
                "ssl.keystore.password=" + TestCertificates.PASSWORD));
        Kcat.Result listed = Kcat.run(CLIENT_TIMEOUT, "", metadata.toArray(String[]::new));
        assertThat(listed.exitCode()).as(listed.describe()).isZero();
        assertThat(listed.output()).contains("broker 0 at 127.0.0.1:" + broker.ports().get("MTLS"));
    }

    // helpers

    /** @return the security protocol of a listener of this test's broker */
    private static String protocol(String listener) {
        return switch (listener) {
            case "MTLS" -> "SSL";
            case "REAUTH" -> "SASL_SSL";
            default -> listener;
        };
    }

    /** @return the SaslAuthenticate requests the broker has answered, of every version */
    private static long saslAuthenticates() {
        return IntStream.rangeClosed(0, 2).mapToLong(v -> broker.metrics().requests("SaslAuthenticate", v)).sum();
    }

    private static String topic(String client, String listener, String mechanism) {
        return (client + "-" + listener + "-" + mechanism).toLowerCase(Locale.ROOT).replace('_', '-');
    }

    /** The security options of the scripts and the Go program for a listener and mechanism ("none": SSL only). */
    private static List<String> security(String listener, String mechanism, String... more) {
        String protocol = protocol(listener);
        List<String> args = new ArrayList<>(List.of("--bootstrap", "127.0.0.1:" + broker.ports().get(listener),
                "--security-protocol", protocol));
        if (!mechanism.equals("none")) {
            String[] user = USERS.get(mechanism);
            args.addAll(List.of("--mechanism", mechanism, "--user", user[0], "--password", user[1]));
        }
        if (protocol.endsWith("SSL")) {
            args.addAll(List.of("--ca", authority.caPem().toString()));
        }
        // Later options win: a wrong --password, another --ca.
        args.addAll(List.of(more));
        return args;
    }

    private static PythonClients.Result python(String client, String check, String listener, String mechanism,
                                               String... more) throws Exception {
        List<String> args = new ArrayList<>(List.of(client, check));
        args.addAll(security(listener, mechanism, more));
        return PythonClients.run(SCRIPT, CLIENT_TIMEOUT.plusSeconds(30), args.toArray(String[]::new));
    }

    private static void assertSucceeds(PythonClients.Result result) {
        assertThat(result.exitCode()).as(result.describe()).isZero();
    }

    private static GoClients.Result go(String listener, String mechanism, String... more) throws Exception {
        assumeTrue(GoClients.available(), GoClients.NO_GO);
        List<String> args = new ArrayList<>(List.of("secure", "--records", String.valueOf(RECORDS), "--group",
                "franz-go-readers"));
        args.addAll(security(listener, mechanism, more));
        return GoClients.run(CLIENT_TIMEOUT, args.toArray(String[]::new));
    }

    private static void assertSucceeds(GoClients.Result result) {
        assertThat(result.exitCode()).as(result.describe()).isZero();
    }

    /** kcat's options for a listener and mechanism: the broker, the protocol, the user, the CA. */
    private static List<String> kcat(String listener, String mechanism) {
        String protocol = protocol(listener);
        List<String> args = new ArrayList<>(List.of("-b", "127.0.0.1:" + broker.ports().get(listener), "-X",
                "security.protocol=" + protocol));
        if (!mechanism.equals("none")) {
            String[] user = USERS.get(mechanism);
            args.addAll(List.of("-X", "sasl.mechanisms=" + mechanism, "-X", "sasl.username=" + user[0], "-X",
                    "sasl.password=" + user[1]));
        }
        if (protocol.endsWith("SSL")) {
            args.addAll(List.of("-X", "ssl.ca.location=" + authority.caPem()));
        }
        return args;
    }

    private static boolean atLeast(int[] version, int major, int minor, int patch) {
        return java.util.Arrays.compare(version, new int[] {major, minor, patch}) >= 0;
    }
}
