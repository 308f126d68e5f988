package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import java.nio.file.Path;
import java.time.Duration;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.apache.kafka.clients.admin.DescribeConsumerGroupsOptions;
import org.apache.kafka.clients.admin.DescribeTopicsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.common.GroupType;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.errors.UnknownTopicIdException;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The authorized-operations answers of Admin's describeTopics (DescribeTopicPartitions by name, Metadata by id),
 * describeCluster and describeConsumerGroups (ConsumerGroupDescribe, and DescribeGroups for a classic group), through
 * Kafka 4.3.1's Java client, as Kafka's broker gives them: the operations the principal's ACLs allow (with the ones
 * they imply, less those a DENY takes), of the ones Kafka lists for the resource's type; all of them for a super user
 * and without an authorizer; none of the cluster's for a principal without Describe on it.
 */
class AuthorizedOperationsTest {

    @TempDir
    Path dir;

    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " user_admin=\"admin-secret\" user_alice=\"alice-secret\" user_bob=\"bob-secret\";";

    /** Kafka's AclEntry.supportedOperations of each resource type. */
    private static final Set<AclOperation> TOPIC = EnumSet.of(AclOperation.READ, AclOperation.WRITE,
            AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);
    private static final Set<AclOperation> CLUSTER = EnumSet.of(AclOperation.CREATE, AclOperation.ALTER,
            AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
            AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE);
    private static final Set<AclOperation> GROUP = EnumSet.of(AclOperation.READ, AclOperation.DELETE,
            AclOperation.DESCRIBE, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS);

    private static Map<String, String> secured() {
        return Map.of("listeners", "SASL_PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS,
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:admin");
    }

    private static AclBinding acl(String user, ResourceType type, String name, PatternType pattern,
                                  AclOperation operation, AclPermissionType permission) {
        return new AclBinding(new ResourcePattern(type, name, pattern), new AccessControlEntry("User:" + user, "*",
                operation, permission));
    }

    private static AclBinding allow(String user, ResourceType type, String name, AclOperation operation) {
        return acl(user, type, name, PatternType.LITERAL, operation, AclPermissionType.ALLOW);
    }

    private static final DescribeTopicsOptions TOPIC_OPERATIONS = new DescribeTopicsOptions()
            .includeAuthorizedOperations(true);

    /** @return each topic's authorized operations, by name (DescribeTopicPartitions) */
    private static Map<String, Set<AclOperation>> byName(Admin admin, String... topics) throws Exception {
        Map<String, Set<AclOperation>> operations = new HashMap<>();
        admin.describeTopics(List.of(topics), TOPIC_OPERATIONS).allTopicNames().get(20, TimeUnit.SECONDS)
                .forEach((name, description) -> operations.put(name, description.authorizedOperations()));
        return operations;
    }

    /** @return each topic's authorized operations, by name, as described by its id (Metadata) */
    private static Map<String, Set<AclOperation>> byId(Admin admin, Uuid... ids) throws Exception {
        Map<String, Set<AclOperation>> operations = new HashMap<>();
        for (TopicDescription description : admin.describeTopics(TopicCollection.ofTopicIds(List.of(ids)),
                TOPIC_OPERATIONS).allTopicIds().get(20, TimeUnit.SECONDS).values()) {
            operations.put(description.name(), description.authorizedOperations());
        }
        return operations;
    }

    private static Set<AclOperation> cluster(Admin admin) throws Exception {
        return admin.describeCluster(new DescribeClusterOptions().includeAuthorizedOperations(true))
                .authorizedOperations().get(20, TimeUnit.SECONDS);
    }

    /** @return each group's type and authorized operations, as "type operations" */
    private static Map<String, String> groups(Admin admin, String... groups) throws Exception {
        Map<String, String> described = new HashMap<>();
        admin.describeConsumerGroups(List.of(groups), new DescribeConsumerGroupsOptions()
                .includeAuthorizedOperations(true)).all().get(20, TimeUnit.SECONDS).forEach((id, group) ->
                        described.put(id, group.type() + " " + EnumSet.copyOf(group.authorizedOperations())));
        return described;
    }

    private static String of(GroupType type, Set<AclOperation> operations) {
        return type + " " + EnumSet.copyOf(operations);
    }

    @Test
    void eachPrincipalIsToldTheOperationsItsAclsAllow() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1), new NewTopic("payments", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            admin.createAcls(List.of(
                    // orders: Read (and so Describe), AlterConfigs (and so DescribeConfigs); Write by a prefix, but
                    // denied.
                    allow("alice", ResourceType.TOPIC, "orders", AclOperation.READ),
                    allow("alice", ResourceType.TOPIC, "orders", AclOperation.ALTER_CONFIGS),
                    acl("alice", ResourceType.TOPIC, "ord", PatternType.PREFIXED, AclOperation.WRITE,
                            AclPermissionType.ALLOW),
                    acl("alice", ResourceType.TOPIC, "orders", PatternType.LITERAL, AclOperation.WRITE,
                            AclPermissionType.DENY),
                    allow("alice", ResourceType.TOPIC, "payments", AclOperation.DELETE),
                    allow("alice", ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE),
                    allow("alice", ResourceType.CLUSTER, "kafka-cluster", AclOperation.IDEMPOTENT_WRITE),
                    acl("alice", ResourceType.GROUP, "team-", PatternType.PREFIXED, AclOperation.READ,
                            AclPermissionType.ALLOW),
                    allow("alice", ResourceType.GROUP, "team-new", AclOperation.DELETE),
                    // bob may create topics, but not describe the cluster: he is told nothing of it.
                    allow("bob", ResourceType.CLUSTER, "kafka-cluster", AclOperation.CREATE),
                    allow("bob", ResourceType.TOPIC, "orders", AclOperation.DESCRIBE)))
                    .all().get(20, TimeUnit.SECONDS);
            Map<String, TopicDescription> described = admin.describeTopics(List.of("orders", "payments"))
                    .allTopicNames().get(20, TimeUnit.SECONDS);
            Uuid orders = described.get("orders").topicId();
            Uuid payments = described.get("payments").topicId();
            // A classic group known by its committed offsets, and a KIP-848 group with a member in it.
            admin.alterConsumerGroupOffsets("team-classic", Map.of(new TopicPartition("orders", 0),
                    new OffsetAndMetadata(0))).all().get(20, TimeUnit.SECONDS);
            Map<String, Object> member = new HashMap<>(AclsTest.as(broker, "alice"));
            member.put(ConsumerConfig.GROUP_ID_CONFIG, "team-new");
            member.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(member, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.subscribe(List.of("orders"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (consumer.assignment().isEmpty() && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(100));
                }
                assertThat(consumer.assignment()).isNotEmpty();

                Set<AclOperation> ordersOfAlice = EnumSet.of(AclOperation.READ, AclOperation.DESCRIBE,
                        AclOperation.ALTER_CONFIGS, AclOperation.DESCRIBE_CONFIGS);
                Set<AclOperation> paymentsOfAlice = EnumSet.of(AclOperation.DELETE, AclOperation.DESCRIBE);
                try (Admin alice = Admin.create(AclsTest.as(broker, "alice"))) {
                    assertThat(byName(alice, "orders", "payments")).isEqualTo(Map.of("orders", ordersOfAlice,
                            "payments", paymentsOfAlice));
                    assertThat(byId(alice, orders, payments)).isEqualTo(Map.of("orders", ordersOfAlice,
                            "payments", paymentsOfAlice));
                    assertThat(cluster(alice)).containsExactlyInAnyOrder(AclOperation.DESCRIBE,
                            AclOperation.IDEMPOTENT_WRITE);
                    assertThat(groups(alice, "team-classic", "team-new")).isEqualTo(Map.of(
                            "team-classic", of(GroupType.CLASSIC, EnumSet.of(AclOperation.READ,
                                    AclOperation.DESCRIBE)),
                            "team-new", of(GroupType.CONSUMER, EnumSet.of(AclOperation.READ, AclOperation.DESCRIBE,
                                    AclOperation.DELETE))));
                }
                try (Admin bob = Admin.create(AclsTest.as(broker, "bob"))) {
                    assertThat(byName(bob, "orders")).isEqualTo(Map.of("orders", EnumSet.of(AclOperation.DESCRIBE)));
                    assertThat(byId(bob, orders)).isEqualTo(Map.of("orders", EnumSet.of(AclOperation.DESCRIBE)));
                    // Refused without its name, as Kafka refuses it: Admin then finds no topic of that id.
                    assertThatThrownBy(() -> byId(bob, payments)).cause()
                            .isInstanceOf(UnknownTopicIdException.class);
                    assertThat(cluster(bob)).isEmpty();
                }
                assertThat(byName(admin, "orders", "payments")).isEqualTo(Map.of("orders", TOPIC, "payments", TOPIC));
                assertThat(byId(admin, orders, payments)).isEqualTo(Map.of("orders", TOPIC, "payments", TOPIC));
                assertThat(cluster(admin)).isEqualTo(CLUSTER);
                assertThat(groups(admin, "team-classic", "team-new")).isEqualTo(Map.of(
                        "team-classic", of(GroupType.CLASSIC, GROUP), "team-new", of(GroupType.CONSUMER, GROUP)));
                // Not asked for, not told.
                assertThat(admin.describeCluster().authorizedOperations().get(20, TimeUnit.SECONDS)).isNull();
                assertThat(admin.describeTopics(List.of("orders")).allTopicNames().get(20, TimeUnit.SECONDS)
                        .get("orders").authorizedOperations()).isNull();
            }
        }
    }

    @Test
    void withoutAnAuthorizerEveryOperationIsAnswered() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(Map.of(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG,
                     "127.0.0.1:" + broker.port()))) {
            Uuid id = admin.createTopics(List.of(new NewTopic("orders", 1, (short) 1))).topicId("orders")
                    .get(20, TimeUnit.SECONDS);
            admin.alterConsumerGroupOffsets("g", Map.of(new TopicPartition("orders", 0), new OffsetAndMetadata(0)))
                    .all().get(20, TimeUnit.SECONDS);
            assertThat(byName(admin, "orders")).isEqualTo(Map.of("orders", TOPIC));
            assertThat(byId(admin, id)).isEqualTo(Map.of("orders", TOPIC));
            assertThat(cluster(admin)).isEqualTo(CLUSTER);
            assertThat(groups(admin, "g")).isEqualTo(Map.of("g", of(GroupType.CLASSIC, GROUP)));

            // Metadata v10, the last to carry the cluster's operations.
            MetadataRequestData request = new MetadataRequestData().setIncludeClusterAuthorizedOperations(true)
                    .setIncludeTopicAuthorizedOperations(true).setAllowAutoTopicCreation(false);
            request.topics().add(new MetadataRequestData.MetadataRequestTopic().setName("orders"));
            MetadataResponseData metadata = new MetadataResponseData(KafkaWire.call(broker.port(), ApiKeys.METADATA,
                    (short) 10, request), (short) 10);
            assertThat(metadata.clusterAuthorizedOperations()).isEqualTo(1 << 5 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10
                    | 1 << 11 | 1 << 12);
            assertThat(metadata.topics().find("orders").topicAuthorizedOperations()).isEqualTo(1 << 3 | 1 << 4
                    | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 10 | 1 << 11);
        }
    }
}
