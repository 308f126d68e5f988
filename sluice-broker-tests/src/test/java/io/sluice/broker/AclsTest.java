package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
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
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AccessControlEntryFilter;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.SecurityDisabledException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourcePatternFilter;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * ACLs as Kafka 4.3.1's StandardAuthorizer enforces them, through Kafka's Java client on a SASL listener: a principal
 * with no ACL sees no topic and may do nothing; ALLOW bindings (literal and prefixed) let it produce, consume in a
 * group and commit; a DENY beats an ALLOW; super users may do everything; the ACL APIs need the cluster's
 * permissions; the ACLs outlive a restart; without an authorizer the ACL APIs answer SECURITY_DISABLED.
 */
class AclsTest {

    @TempDir
    Path dir;

    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

    static Map<String, String> secured() {
        return Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS,
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:admin");
    }

    static Map<String, Object> as(Broker broker, String user) {
        return as(broker.port(), user);
    }

    /** @return client settings for {@code user} (password {@code <user>-secret}) over SASL/PLAIN on the port */
    static Map<String, Object> as(int port, String user) {
        Map<String, Object> config = new HashMap<>();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port);
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        config.put(SaslConfigs.SASL_MECHANISM, "PLAIN");
        config.put(SaslConfigs.SASL_JAAS_CONFIG, "org.apache.kafka.common.security.plain.PlainLoginModule required"
                + " username=\"" + user + "\" password=\"" + user + "-secret\";");
        config.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, 15_000);
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000);
        config.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 10_000);
        return config;
    }

    static AclBinding allow(String user, ResourceType type, String name, PatternType pattern,
                                    AclOperation operation) {
        return new AclBinding(new ResourcePattern(type, name, pattern), new AccessControlEntry("User:" + user, "*",
                operation, AclPermissionType.ALLOW));
    }

    private static void produce(Map<String, Object> config, String topic, int count) throws Exception {
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(topic, ("r" + i).getBytes(StandardCharsets.UTF_8)))
                        .get(20, TimeUnit.SECONDS);
            }
        }
    }

    private static List<String> consume(Map<String, Object> config, String topic, String group, int count) {
        Map<String, Object> consumerConfig = new HashMap<>(config);
        consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        consumerConfig.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        List<String> values = new ArrayList<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.subscribe(List.of(topic));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (values.size() < count && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
            consumer.commitSync();
        }
        return values;
    }

    @Test
    void aclsDecideWhatEachPrincipalMayDoAndOutliveARestart() throws Exception {
        Store store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(secured()))) {
            try (Admin admin = Admin.create(as(broker, "admin"))) {
                admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1), new NewTopic("payments", 1,
                        (short) 1))).all().get(20, TimeUnit.SECONDS);
            }
            Map<String, Object> alice = as(broker, "alice");
            try (Admin admin = Admin.create(alice)) {
                assertThat(admin.listTopics().names().get(20, TimeUnit.SECONDS)).as("no Describe, no topic")
                        .isEmpty();
                assertThatThrownBy(() -> admin.describeAcls(AclBindingFilter.ANY).values().get(20, TimeUnit.SECONDS))
                        .cause().isInstanceOf(ClusterAuthorizationException.class);
                assertThatThrownBy(() -> admin.createTopics(List.of(new NewTopic("mine", 1, (short) 1))).all()
                        .get(20, TimeUnit.SECONDS)).cause().isInstanceOf(TopicAuthorizationException.class);
            }
            assertThatThrownBy(() -> produce(alice, "orders", 1)).hasRootCauseInstanceOf(
                    TopicAuthorizationException.class);

            try (Admin admin = Admin.create(as(broker, "admin"))) {
                admin.createAcls(List.of(
                        allow("alice", ResourceType.TOPIC, "ord", PatternType.PREFIXED, AclOperation.WRITE),
                        allow("alice", ResourceType.TOPIC, "orders", PatternType.LITERAL, AclOperation.READ),
                        allow("alice", ResourceType.GROUP, "team-", PatternType.PREFIXED, AclOperation.READ)))
                        .all().get(20, TimeUnit.SECONDS);
            }
            produce(alice, "orders", 50);
            assertThat(consume(alice, "orders", "team-a", 50)).hasSize(50);
            try (Admin admin = Admin.create(alice)) {
                assertThat(admin.listTopics().names().get(20, TimeUnit.SECONDS)).containsExactly("orders");
            }
            // A group outside the prefix, and a topic with no ACL of hers.
            assertThatThrownBy(() -> consume(alice, "orders", "other", 1)).isInstanceOf(
                    GroupAuthorizationException.class);
            assertThatThrownBy(() -> produce(alice, "payments", 1)).hasRootCauseInstanceOf(
                    TopicAuthorizationException.class);
            // bob has nothing at all.
            assertThatThrownBy(() -> produce(as(broker, "bob"), "orders", 1)).hasRootCauseInstanceOf(
                    TopicAuthorizationException.class);

            // A DENY beats the ALLOW.
            try (Admin admin = Admin.create(as(broker, "admin"))) {
                admin.createAcls(List.of(new AclBinding(new ResourcePattern(ResourceType.TOPIC, "orders",
                        PatternType.LITERAL), new AccessControlEntry("User:alice", "*", AclOperation.READ,
                        AclPermissionType.DENY)))).all().get(20, TimeUnit.SECONDS);
                assertThat(admin.describeAcls(new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC,
                        "orders", PatternType.MATCH), AccessControlEntryFilter.ANY)).values().get(20, TimeUnit.SECONDS))
                        .hasSize(3);
            }
            assertThatThrownBy(() -> consume(alice, "orders", "team-b", 1)).isInstanceOf(
                    TopicAuthorizationException.class);
        }
        store.close();
        store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(secured()))) {
            try (Admin admin = Admin.create(as(broker, "admin"))) {
                assertThat(admin.describeAcls(AclBindingFilter.ANY).values().get(20, TimeUnit.SECONDS)).hasSize(4);
                admin.deleteAcls(List.of(new AclBindingFilter(new ResourcePatternFilter(ResourceType.TOPIC, "orders",
                        PatternType.LITERAL), new AccessControlEntryFilter("User:alice", null, AclOperation.READ,
                        AclPermissionType.DENY)))).all().get(20, TimeUnit.SECONDS);
            }
            assertThat(consume(as(broker, "alice"), "orders", "team-c", 50)).hasSize(50);
        } finally {
            store.close();
        }
    }

    @Test
    void withoutAnAuthorizerTheAclApisAnswerSecurityDisabled() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(Map.of(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG,
                     "127.0.0.1:" + broker.port()))) {
            assertThatThrownBy(() -> admin.describeAcls(AclBindingFilter.ANY).values().get(20, TimeUnit.SECONDS))
                    .cause().isInstanceOf(SecurityDisabledException.class);
            assertThatThrownBy(() -> admin.createAcls(List.of(allow("a", ResourceType.TOPIC, "t",
                    PatternType.LITERAL, AclOperation.READ))).all().get(20, TimeUnit.SECONDS)).cause()
                    .isInstanceOf(SecurityDisabledException.class);
        }
    }
}
