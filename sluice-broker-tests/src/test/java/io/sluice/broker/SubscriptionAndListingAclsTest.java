package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.errors.GroupIdNotFoundException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatRequestData;
import org.apache.kafka.common.message.ConsumerGroupHeartbeatResponseData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.SaslAuthenticateRequestData;
import org.apache.kafka.common.message.SaslAuthenticateResponseData;
import org.apache.kafka.common.message.SaslHandshakeRequestData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Where topic names meet ACLs beyond the plain per-topic checks, as Kafka 4.3.1 decides: a KIP-848 member
 * (group.protocol=consumer) needs, besides Read on its group, Describe on every topic it subscribes to by name, else
 * its heartbeat is answered TOPIC_AUTHORIZATION_FAILED and it does not join; a DescribeTopicPartitions of all topics
 * names only those the principal may describe, in its answer and in its cursor.
 */
class SubscriptionAndListingAclsTest {

    @TempDir
    Path dir;

    private static KafkaConsumer<byte[], byte[]> consumer(Broker broker, String user, String group) {
        Map<String, Object> config = new HashMap<>(AclsTest.as(broker, user));
        config.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        config.put(ConsumerConfig.GROUP_PROTOCOL_CONFIG, "consumer");
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * What Kafka's Java consumer meets: refused, it never joins, and with Describe it joins and is assigned. This holds
     * without the heartbeat's own check too (the consumer's Metadata is refused first);
     * {@link #aHeartbeatSubscribingToATopicItMayNotDescribeIsRefused} is the test of that check.
     */
    @Test
    void aMemberMayNotSubscribeToATopicItMayNotDescribe() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(
                     AclsTest.secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("hidden", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.GROUP, "readers", PatternType.LITERAL,
                    AclOperation.READ))).all().get(20, TimeUnit.SECONDS);
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker, "alice", "readers")) {
                consumer.subscribe(List.of("hidden"));
                assertThatThrownBy(() -> {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                    while (System.nanoTime() < deadline) {
                        consumer.poll(Duration.ofMillis(200));
                    }
                }).isInstanceOf(TopicAuthorizationException.class);
            }
            // The member never joined (its TopicAuthorizationException alone may come from Metadata as well).
            assertThatThrownBy(() -> admin.describeConsumerGroups(List.of("readers")).all().get(20, TimeUnit.SECONDS))
                    .cause().isInstanceOf(GroupIdNotFoundException.class);

            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.TOPIC, "hidden", PatternType.LITERAL,
                    AclOperation.READ))).all().get(20, TimeUnit.SECONDS); // Read implies Describe
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker, "alice", "readers")) {
                consumer.subscribe(List.of("hidden"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (consumer.assignment().isEmpty() && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200));
                }
                assertThat(consumer.assignment()).as("joined and assigned").hasSize(1);
            }
        }
    }

    /** @return a socket to the broker authenticated as alice with SASL/PLAIN */
    private static Socket asAlice(Broker broker) throws Exception {
        Socket socket = new Socket("127.0.0.1", broker.port());
        socket.setSoTimeout(KafkaWire.DEFAULT_TIMEOUT_MILLIS);
        KafkaWire.exchange(socket, ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData()
                .setClientSoftwareName("raw").setClientSoftwareVersion("1"));
        KafkaWire.exchange(socket, ApiKeys.SASL_HANDSHAKE, (short) 1, new SaslHandshakeRequestData()
                .setMechanism("PLAIN"));
        assertThat(new SaslAuthenticateResponseData(KafkaWire.exchange(socket, ApiKeys.SASL_AUTHENTICATE,
                (short) 2, new SaslAuthenticateRequestData().setAuthBytes("\u0000alice\u0000alice-secret"
                        .getBytes(StandardCharsets.UTF_8))), (short) 2).errorCode()).isZero();
        return socket;
    }

    /** One ConsumerGroupHeartbeat v0 joining {@code group} subscribed to {@code topic}, over a socket as alice. */
    private static short joinAs(Broker broker, String group, String topic) throws Exception {
        try (Socket socket = asAlice(broker)) {
            return new ConsumerGroupHeartbeatResponseData(KafkaWire.exchange(socket,
                    ApiKeys.CONSUMER_GROUP_HEARTBEAT, (short) 0, new ConsumerGroupHeartbeatRequestData()
                            .setGroupId(group).setMemberId(Uuid.randomUuid().toString()).setMemberEpoch(0)
                            .setRebalanceTimeoutMs(30_000).setSubscribedTopicNames(List.of(topic))
                            .setTopicPartitions(List.of())), (short) 0).errorCode();
        }
    }

    /** The heartbeat itself is refused, as Kafka's KafkaApis refuses it before its group coordinator sees it. */
    @Test
    void aHeartbeatSubscribingToATopicItMayNotDescribeIsRefused() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(
                     AclsTest.secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("hidden", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.GROUP, "readers", PatternType.LITERAL,
                    AclOperation.READ))).all().get(20, TimeUnit.SECONDS);
            assertThat(joinAs(broker, "readers", "hidden")).isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED.code());
            assertThat(joinAs(broker, "readers", "absent")).as("a topic that does not exist is no different")
                    .isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED.code());
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.TOPIC, "hidden", PatternType.LITERAL,
                    AclOperation.DESCRIBE))).all().get(20, TimeUnit.SECONDS);
            assertThat(joinAs(broker, "readers", "hidden")).isEqualTo(Errors.NONE.code());
        }
    }

    @Test
    void aListingOfAllTopicsNamesOnlyThoseThePrincipalMayDescribe() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(
                     AclsTest.secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("a-secret", 1, (short) 1), new NewTopic("seen", 2, (short) 1),
                    new NewTopic("z-secret", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.TOPIC, "seen", PatternType.LITERAL,
                    AclOperation.DESCRIBE))).all().get(20, TimeUnit.SECONDS);
            try (Socket socket = asAlice(broker)) {
                // A page of two partitions: "seen" fills it, and the next topic would be its cursor.
                DescribeTopicPartitionsResponseData answer = new DescribeTopicPartitionsResponseData(
                        KafkaWire.exchange(socket, ApiKeys.DESCRIBE_TOPIC_PARTITIONS, (short) 0,
                                new DescribeTopicPartitionsRequestData().setResponsePartitionLimit(2)), (short) 0);
                assertThat(answer.topics()).extracting(topic -> topic.name()).containsExactly("seen");
                assertThat(answer.nextCursor()).as("no cursor names a secret topic").isNull();
                // Named, a topic it may not describe is refused by name, as the client knows the name.
                DescribeTopicPartitionsRequestData named = new DescribeTopicPartitionsRequestData();
                named.topics().add(new DescribeTopicPartitionsRequestData.TopicRequest().setName("z-secret"));
                answer = new DescribeTopicPartitionsResponseData(KafkaWire.exchange(socket,
                        ApiKeys.DESCRIBE_TOPIC_PARTITIONS, (short) 0, named), (short) 0);
                assertThat(answer.topics()).singleElement().satisfies(topic -> assertThat(topic.errorCode())
                        .isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
            }
        }
    }

    /**
     * A consumer group whose members are assigned a topic the principal may not describe is not described to it
     * (TOPIC_AUTHORIZATION_FAILED, with Kafka 4.3.1's message), though it may describe the group.
     */
    @Test
    void aGroupAssignedATopicThePrincipalMayNotDescribeIsNotDescribedToIt() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(
                     AclsTest.secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"));
             Admin alice = Admin.create(AclsTest.as(broker, "alice"))) {
            admin.createTopics(List.of(new NewTopic("hidden", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.GROUP, "shared", PatternType.LITERAL,
                    AclOperation.DESCRIBE))).all().get(20, TimeUnit.SECONDS);
            try (KafkaConsumer<byte[], byte[]> member = consumer(broker, "admin", "shared")) {
                member.subscribe(List.of("hidden"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (member.assignment().isEmpty() && System.nanoTime() < deadline) {
                    member.poll(Duration.ofMillis(200));
                }
                assertThat(member.assignment()).hasSize(1);
                assertThatThrownBy(() -> alice.describeConsumerGroups(List.of("shared")).all()
                        .get(20, TimeUnit.SECONDS)).cause().isInstanceOf(TopicAuthorizationException.class)
                        .hasMessageContaining("not authorized to describe");
                admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.TOPIC, "hidden",
                        PatternType.LITERAL, AclOperation.DESCRIBE))).all().get(20, TimeUnit.SECONDS);
                assertThat(alice.describeConsumerGroups(List.of("shared")).all().get(20, TimeUnit.SECONDS)
                        .get("shared").members()).hasSize(1);
            }
        }
    }

    /**
     * Metadata's auto-creation under ACLs, as Kafka's: of two missing topics the principal may describe, the one it may
     * create is created and the other answered TOPIC_AUTHORIZATION_FAILED, not both left uncreated.
     */
    @Test
    void metadataCreatesTheTopicsThePrincipalMayCreateAndRefusesTheOthers() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(
                     AclsTest.secured()));
             Admin admin = Admin.create(AclsTest.as(broker, "admin"))) {
            admin.createAcls(List.of(AclsTest.allow("alice", ResourceType.TOPIC, "auto-", PatternType.PREFIXED,
                    AclOperation.DESCRIBE), AclsTest.allow("alice", ResourceType.TOPIC, "auto-ok",
                    PatternType.LITERAL, AclOperation.CREATE))).all().get(20, TimeUnit.SECONDS);
            try (Socket socket = asAlice(broker)) {
                MetadataRequestData request = new MetadataRequestData().setAllowAutoTopicCreation(true);
                request.topics().add(new MetadataRequestData.MetadataRequestTopic().setName("auto-ok"));
                request.topics().add(new MetadataRequestData.MetadataRequestTopic().setName("auto-no"));
                MetadataResponseData answer = new MetadataResponseData(KafkaWire.exchange(socket,
                        ApiKeys.METADATA, (short) 12, request), (short) 12);
                assertThat(answer.topics().find("auto-no").errorCode())
                        .isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                assertThat(answer.topics().find("auto-ok").errorCode()).isNotEqualTo(
                        Errors.TOPIC_AUTHORIZATION_FAILED.code());
            }
            assertThat(store.queueCount("auto-ok")).as("created").isPositive();
            assertThat(store.queueCount("auto-no")).as("not created").isZero();
        }
    }
}
