package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.broker.BrokerConfig;
import io.sluice.testsupport.TestCertificates;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.config.SslConfigs;
import org.apache.kafka.common.errors.SaslAuthenticationException;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A cluster of three whose brokers serve clients on SASL_SSL only, with ACLs: SCRAM credentials and ACLs created
 * through one broker are taken by every broker (they go through the metadata log) and outlive a restart of all three,
 * a wrong password is refused everywhere; Kafka's Java client produces with acks=all and consumes over it as a
 * principal its ACLs allow.
 */
class ClusterSecurityTest {

    @TempDir
    Path dir;

    private InProcessCluster cluster;

    @AfterEach
    void stop() throws Exception {
        if (cluster != null) {
            cluster.close();
        }
    }

    private static final String PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " username=\"admin\" password=\"admin-secret\" user_admin=\"admin-secret\";";

    @Test
    void scramUsersMadeThroughOneBrokerAuthenticateOnEvery() throws Exception {
        TestCertificates authority = new TestCertificates(dir.resolve("ca"), "cluster-ca");
        Path keys = authority.sign("brokers", "CN=broker");
        Map<String, String> security = new HashMap<>();
        security.put("listeners", "SASL_SSL://:0");
        security.put("ssl.keystore.type", "PKCS12");
        security.put("ssl.keystore.location", keys.toString());
        security.put("ssl.keystore.password", TestCertificates.PASSWORD);
        // The brokers' own trust: they reach each other's listener (a transaction's markers) over TLS too.
        security.put("ssl.truststore.type", "PKCS12");
        security.put("ssl.truststore.location", authority.trustStore().toString());
        security.put("ssl.truststore.password", TestCertificates.PASSWORD);
        security.put("sasl.enabled.mechanisms", "PLAIN,SCRAM-SHA-512");
        security.put("listener.name.sasl_ssl.plain.sasl.jaas.config", PLAIN_JAAS);
        security.put("authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer");
        security.put("super.users", "User:admin");
        cluster = new InProcessCluster(dir.resolve("cluster"), ClusterNode.Tuning.DEFAULT)
                .withBrokerConfig(BrokerConfig.defaults().withSecurity(security));
        cluster.startAll();
        List<String> bootstraps = List.of(cluster.bootstrap().split(","));
        try (Admin admin = Admin.create(client(authority, bootstraps.get(0), "PLAIN", "admin", "admin-secret"))) {
            admin.createTopics(List.of(new NewTopic("secured", 1, (short) 3), new NewTopic("ledger", 3, (short) 3)))
                    .all().get(60, TimeUnit.SECONDS);
            admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion("alice",
                    new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192), "alice-secret")))
                    .all().get(60, TimeUnit.SECONDS);
            // Made through broker 1, applied by every broker from the metadata log.
            admin.createAcls(List.of(allow("alice", AclOperation.WRITE), allow("alice", AclOperation.READ),
                    allow("alice", ResourceType.TOPIC, "ledger", AclOperation.WRITE),
                    allow("alice", ResourceType.TOPIC, "ledger", AclOperation.READ),
                    allow("alice", ResourceType.TRANSACTIONAL_ID, "alice-tx", AclOperation.WRITE)))
                    .all().get(60, TimeUnit.SECONDS);
        }
        // Each broker alone as the bootstrap: the client's first connection authenticates there, and its ACLs let
        // alice see the topic there (and bob, with none, not).
        for (String bootstrap : bootstraps) {
            Map<String, Object> alice = client(authority, bootstrap, "SCRAM-SHA-512", "alice", "alice-secret");
            awaitAuthenticates(alice);
            assertRefused(client(authority, bootstrap, "SCRAM-SHA-512", "alice", "wrong"));
            awaitTopics(alice, Set.of("secured", "ledger"));
            assertThat(topics(client(authority, bootstrap, "PLAIN", "admin", "admin-secret")))
                    .contains("secured");
        }
        Map<String, Object> alice = client(authority, cluster.bootstrap(), "SCRAM-SHA-512", "alice", "alice-secret");
        produce(alice, 300);
        transact(alice);
        for (int id = 1; id <= 3; id++) {
            cluster.stop(id);
        }
        cluster.startAll();
        for (String bootstrap : bootstraps) {
            awaitAuthenticates(client(authority, bootstrap, "SCRAM-SHA-512", "alice", "alice-secret"));
            awaitTopics(client(authority, bootstrap, "SCRAM-SHA-512", "alice", "alice-secret"), Set.of("secured", "ledger"));
        }
        assertThat(consume(alice, 300)).hasSize(300);
    }

    private static AclBinding allow(String user, AclOperation operation) {
        return allow(user, ResourceType.TOPIC, "secured", operation);
    }

    private static AclBinding allow(String user, ResourceType type, String name, AclOperation operation) {
        return new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
                new AccessControlEntry("User:" + user, "*", operation, AclPermissionType.ALLOW));
    }

    /**
     * Transactions over the three partitions of "ledger", led by three brokers: the coordinator writes its markers to
     * the partitions led elsewhere through their SASL_SSL listener, authenticated as the broker's own principal (a
     * super user); a read_committed consumer then sees every committed record and none of the aborted.
     */
    private static void transact(Map<String, Object> alice) throws Exception {
        Map<String, Object> config = new HashMap<>(alice);
        config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "alice-tx");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            producer.initTransactions();
            for (int t = 0; t < 6; t++) {
                producer.beginTransaction();
                for (int p = 0; p < 3; p++) {
                    producer.send(new ProducerRecord<>("ledger", p, null, ((t % 3 == 2 ? "aborted-" : "committed-")
                            + t + "-" + p).getBytes(StandardCharsets.UTF_8)));
                }
                if (t % 3 == 2) {
                    producer.abortTransaction();
                } else {
                    producer.commitTransaction();
                }
            }
        }
        Map<String, Object> consumerConfig = new HashMap<>(alice);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition("ledger", 0), new TopicPartition("ledger", 1),
                    new TopicPartition("ledger", 2)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (values.size() < 12 && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        assertThat(values).hasSize(12).allMatch(value -> value.startsWith("committed-"));
    }

    private static Set<String> topics(Map<String, Object> config) throws Exception {
        try (Admin admin = Admin.create(config)) {
            return admin.listTopics().names().get(30, TimeUnit.SECONDS);
        }
    }

    /** Waits for this broker to apply the ACLs that let the client see {@code expected}. */
    private static void awaitTopics(Map<String, Object> config, Set<String> expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!topics(config).equals(expected)) {
            assertThat(System.nanoTime()).as("the ACLs reached the broker").isLessThan(deadline);
            Thread.sleep(200);
        }
    }

    private static Map<String, Object> client(TestCertificates authority, String bootstrap, String mechanism,
                                              String user, String password) {
        Map<String, Object> config = new HashMap<>();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_SSL");
        config.put(SslConfigs.SSL_TRUSTSTORE_LOCATION_CONFIG, authority.trustStore().toString());
        config.put(SslConfigs.SSL_TRUSTSTORE_PASSWORD_CONFIG, TestCertificates.PASSWORD);
        config.put(SslConfigs.SSL_TRUSTSTORE_TYPE_CONFIG, "PKCS12");
        config.put(SaslConfigs.SASL_MECHANISM, mechanism);
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        config.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + user + "\" password=\""
                + password + "\";");
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000);
        return config;
    }

    /** Waits for the credential to reach the broker (it applies the metadata log on its own time). */
    private static void awaitAuthenticates(Map<String, Object> config) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Admin admin = Admin.create(config)) {
                admin.describeCluster().nodes().get(30, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException e) {
                if (!(e.getCause() instanceof SaslAuthenticationException) || System.nanoTime() > deadline) {
                    throw e;
                }
            }
            Thread.sleep(200);
        }
    }

    private static void assertRefused(Map<String, Object> config) {
        try (Admin admin = Admin.create(config)) {
            assertThatThrownBy(() -> admin.describeCluster().nodes().get(30, TimeUnit.SECONDS)).cause()
                    .isInstanceOf(SaslAuthenticationException.class)
                    .hasMessageContaining("invalid credentials with SASL mechanism SCRAM-SHA-512");
        }
    }

    private static void produce(Map<String, Object> config, int count) throws Exception {
        Map<String, Object> producerConfig = new HashMap<>(config);
        producerConfig.put(ProducerConfig.ACKS_CONFIG, "all");
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>("secured", ("r" + i).getBytes(StandardCharsets.UTF_8)))
                        .get(60, TimeUnit.SECONDS);
            }
        }
    }

    private static List<String> consume(Map<String, Object> config, int count) {
        Map<String, Object> consumerConfig = new HashMap<>(config);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition("secured", 0)));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (values.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return values;
    }
}
