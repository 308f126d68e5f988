package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.KafkaWire;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.NewPartitions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.admin.TransactionState;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.ClusterAuthorizationException;
import org.apache.kafka.common.errors.GroupAuthorizationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.TopicAuthorizationException;
import org.apache.kafka.common.errors.TransactionalIdAuthorizationException;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddOffsetsToTxnResponseData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.CreatePartitionsRequestData;
import org.apache.kafka.common.message.CreatePartitionsResponseData;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.ListTransactionsResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The APIs that change configs, records, partitions and transactions, and those that describe configs and
 * transactions, under ACLs as Kafka 4.3.1's broker checks them: a principal without the ACL an API needs is refused
 * with Kafka's error and nothing changes, and with the ACL the same call works. Kafka's Java clients on a SASL
 * listener as User:alice; over a PLAINTEXT listener as User:ANONYMOUS, single requests: AlterConfigs (Kafka 4's
 * Admin sends IncrementalAlterConfigs only), refusals whose every field is compared with Kafka 4.3.1's answer
 * (CreatePartitions, DescribeTransactions), and the transaction requests whose refusals a Java client's calls do not
 * tell apart.
 */
class AclDenialsTest {

    @TempDir
    Path dir;

    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " user_admin=\"admin-secret\" user_alice=\"alice-secret\";";
    private static final String ALICE = "User:alice";
    private static final String ANONYMOUS = "User:ANONYMOUS";

    private static Broker start(Store store) throws Exception {
        return Broker.start(store, BrokerConfig.defaults().withPort(0).withSecurity(Map.of(
                "listeners", "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
                "sasl.enabled.mechanisms", "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config", JAAS,
                "authorizer.class.name", "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users", "User:admin")));
    }

    private static Map<String, Object> as(Broker broker, String user) {
        return AclsTest.as(broker.ports().get("SASL_PLAINTEXT"), user);
    }

    /** The port of the PLAINTEXT listener, where a connection's principal is User:ANONYMOUS. */
    private static int anonymousPort(Broker broker) {
        return broker.ports().get("PLAINTEXT");
    }

    private static void allow(Broker broker, String principal, ResourceType type, String name,
                              AclOperation... operations) throws Exception {
        List<AclBinding> bindings = new ArrayList<>();
        for (AclOperation operation : operations) {
            bindings.add(new AclBinding(new ResourcePattern(type, name, PatternType.LITERAL),
                    new AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW)));
        }
        try (Admin admin = Admin.create(as(broker, "admin"))) {
            admin.createAcls(bindings).all().get(20, TimeUnit.SECONDS);
        }
    }

    /** Asserts that {@code call} fails with {@code error} somewhere among its causes, as clients wrap it variously. */
    private static void assertRefused(ThrowingCallable call, Class<? extends Throwable> error) {
        assertThatThrownBy(call).satisfies(thrown -> {
            List<Throwable> chain = new ArrayList<>();
            for (Throwable t = thrown; t != null && !chain.contains(t); t = t.getCause()) {
                chain.add(t);
            }
            assertThat(chain).as("the failure and its causes").hasAtLeastOneElementOfType(error);
        });
    }

    private static String topicConfig(Admin admin, String topic, String name) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return admin.describeConfigs(List.of(resource)).all().get(20, TimeUnit.SECONDS).get(resource).get(name)
                .value();
    }

    private static Map<ConfigResource, Collection<AlterConfigOp>> set(ConfigResource resource, String name,
                                                                     String value) {
        return Map.of(resource, List.of(new AlterConfigOp(new ConfigEntry(name, value), AlterConfigOp.OpType.SET)));
    }

    private static AlterConfigsResponseData alterConfigs(Broker broker, byte type, String name, String config,
                                                         String value) throws Exception {
        AlterConfigsRequestData.AlterConfigsResourceCollection resources =
                new AlterConfigsRequestData.AlterConfigsResourceCollection();
        AlterConfigsRequestData.AlterableConfigCollection configs =
                new AlterConfigsRequestData.AlterableConfigCollection();
        configs.add(new AlterConfigsRequestData.AlterableConfig().setName(config).setValue(value));
        resources.add(new AlterConfigsRequestData.AlterConfigsResource().setResourceType(type).setResourceName(name)
                .setConfigs(configs));
        return new AlterConfigsResponseData(KafkaWire.call(anonymousPort(broker), ApiKeys.ALTER_CONFIGS, (short) 2,
                new AlterConfigsRequestData().setResources(resources)), (short) 2);
    }

    /**
     * DescribeConfigs needs DescribeConfigs, AlterConfigs and IncrementalAlterConfigs need AlterConfigs: on the topic
     * for a topic (TOPIC_AUTHORIZATION_FAILED), on the cluster for the broker (CLUSTER_AUTHORIZATION_FAILED), on the
     * group for a group (GROUP_AUTHORIZATION_FAILED).
     */
    @Test
    void configsNeedDescribeConfigsOrAlterConfigsOnTheTopicOrTheCluster() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin")); Admin alice = Admin.create(as(broker, "alice"))) {
            admin.createTopics(List.of(new NewTopic("orders", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            String retention = topicConfig(admin, "orders", "retention.ms");
            String node = String.valueOf(admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).iterator().next()
                    .id());
            ConfigResource topic = new ConfigResource(ConfigResource.Type.TOPIC, "orders");
            ConfigResource brokerResource = new ConfigResource(ConfigResource.Type.BROKER, node);
            // Describe on the topic (alice knows it is there) is not DescribeConfigs.
            allow(broker, ALICE, ResourceType.TOPIC, "orders", AclOperation.DESCRIBE);
            assertRefused(() -> alice.describeConfigs(List.of(topic)).all().get(20, TimeUnit.SECONDS),
                    TopicAuthorizationException.class);
            assertRefused(() -> alice.describeConfigs(List.of(brokerResource)).all().get(20, TimeUnit.SECONDS),
                    ClusterAuthorizationException.class);
            assertRefused(() -> alice.incrementalAlterConfigs(set(topic, "retention.ms", "1234")).all()
                    .get(20, TimeUnit.SECONDS), TopicAuthorizationException.class);
            assertRefused(() -> alice.incrementalAlterConfigs(set(brokerResource, "message.max.bytes", "2000000"))
                    .all().get(20, TimeUnit.SECONDS), ClusterAuthorizationException.class);
            AlterConfigsResponseData.AlterConfigsResourceResponse refused = alterConfigs(broker, (byte) 2, "orders",
                    "retention.ms", "5678").responses().getFirst();
            assertThat(Errors.forCode(refused.errorCode())).isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED);
            assertThat(refused.errorMessage()).isEqualTo(Errors.TOPIC_AUTHORIZATION_FAILED.message());
            assertThat(Errors.forCode(alterConfigs(broker, (byte) 4, node, "message.max.bytes", "2000000")
                    .responses().getFirst().errorCode())).isEqualTo(Errors.CLUSTER_AUTHORIZATION_FAILED);
            assertThat(topicConfig(admin, "orders", "retention.ms")).as("after the refusals").isEqualTo(retention);
            // A group's configs (KIP-848) need DescribeConfigs and AlterConfigs on the group.
            ConfigResource group = new ConfigResource(ConfigResource.Type.GROUP, "orders-group");
            assertRefused(() -> alice.describeConfigs(List.of(group)).all().get(20, TimeUnit.SECONDS),
                    GroupAuthorizationException.class);
            assertRefused(() -> alice.incrementalAlterConfigs(set(group, "consumer.session.timeout.ms", "50000"))
                    .all().get(20, TimeUnit.SECONDS), GroupAuthorizationException.class);

            // DescribeConfigs lets alice read the configs, not change them.
            allow(broker, ALICE, ResourceType.TOPIC, "orders", AclOperation.DESCRIBE_CONFIGS);
            allow(broker, ALICE, ResourceType.CLUSTER, "kafka-cluster", AclOperation.DESCRIBE_CONFIGS);
            Map<ConfigResource, Config> described = alice.describeConfigs(List.of(topic, brokerResource)).all()
                    .get(20, TimeUnit.SECONDS);
            assertThat(described.get(topic).get("retention.ms").value()).isEqualTo(retention);
            assertThat(described.get(brokerResource).get("broker.id").value()).isEqualTo(node);
            assertRefused(() -> alice.incrementalAlterConfigs(set(topic, "retention.ms", "1234")).all()
                    .get(20, TimeUnit.SECONDS), TopicAuthorizationException.class);

            // AlterConfigs on the topic changes it; on the cluster it passes to the broker, whose own settings are
            // fixed when it starts (INVALID_REQUEST).
            allow(broker, ALICE, ResourceType.TOPIC, "orders", AclOperation.ALTER_CONFIGS);
            allow(broker, ALICE, ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER_CONFIGS);
            alice.incrementalAlterConfigs(set(topic, "retention.ms", "1234")).all().get(20, TimeUnit.SECONDS);
            assertThat(topicConfig(admin, "orders", "retention.ms")).isEqualTo("1234");
            assertRefused(() -> alice.incrementalAlterConfigs(set(brokerResource, "message.max.bytes", "2000000"))
                    .all().get(20, TimeUnit.SECONDS), InvalidRequestException.class);

            // AlterConfigs, the request Kafka 4's Admin no longer sends, likewise.
            allow(broker, ANONYMOUS, ResourceType.TOPIC, "orders", AclOperation.ALTER_CONFIGS);
            allow(broker, ANONYMOUS, ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER_CONFIGS);
            assertThat(Errors.forCode(alterConfigs(broker, (byte) 2, "orders", "retention.ms", "5678").responses()
                    .getFirst().errorCode())).isEqualTo(Errors.NONE);
            assertThat(topicConfig(admin, "orders", "retention.ms")).isEqualTo("5678");
            assertThat(Errors.forCode(alterConfigs(broker, (byte) 4, node, "message.max.bytes", "2000000")
                    .responses().getFirst().errorCode())).isEqualTo(Errors.INVALID_REQUEST);
        }
    }

    /**
     * What Kafka's broker refuses in a config change before it looks at the ACLs is refused so for a principal with
     * no ACLs too (INVALID_REQUEST with Kafka's message), and the answers keep the request's order: a config named
     * twice, a null value, a resource named twice, a broker resource naming another broker or no number, the legacy
     * API's broker logger (an unknown type there); beside them a well-formed change of the same topic is refused by
     * the ACLs. Nothing changes.
     */
    @Test
    void configChangesAreCheckedAsKafkaChecksThemBeforeTheAcls() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("orders", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            String retention = topicConfig(admin, "orders", "retention.ms");
            String node = String.valueOf(admin.describeCluster().nodes().get(20, TimeUnit.SECONDS).iterator().next()
                    .id());
            IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection resources =
                    new IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection();
            resources.add(incremental((byte) 2, "orders", new String[] {"retention.ms", "1000"}));
            resources.add(incremental((byte) 2, "keys", new String[] {"retention.ms", "1000"},
                    new String[] {"retention.ms", "2000"}));
            resources.add(incremental((byte) 2, "twice", new String[] {"retention.ms", "1000"}));
            resources.add(incremental((byte) 2, "twice", new String[] {"retention.ms", "1000"}));
            resources.add(incremental((byte) 2, "nulls", new String[] {"retention.ms", null},
                    new String[] {"segment.ms", null}));
            resources.add(incremental((byte) 4, "99", new String[] {"message.max.bytes", "2000000"}));
            resources.add(incremental((byte) 4, "first", new String[] {"message.max.bytes", "2000000"}));
            resources.add(incremental((byte) 4, node, new String[] {"message.max.bytes", "2000000"}));
            IncrementalAlterConfigsResponseData answer = new IncrementalAlterConfigsResponseData(KafkaWire.call(
                    anonymousPort(broker), ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1,
                    new IncrementalAlterConfigsRequestData().setResources(resources)), (short) 1);
            List<String> answers = new ArrayList<>();
            answer.responses().forEach(r -> answers.add(r.resourceType() + " " + r.resourceName() + ": "
                    + Errors.forCode(r.errorCode()) + " " + r.errorMessage()));
            String topicDenied = Errors.TOPIC_AUTHORIZATION_FAILED + " " + Errors.TOPIC_AUTHORIZATION_FAILED.message();
            assertThat(answers).containsExactly(
                    "2 orders: " + topicDenied,
                    "2 keys: INVALID_REQUEST Error due to duplicate config keys",
                    "2 twice: INVALID_REQUEST Each resource must appear at most once.",
                    "2 twice: INVALID_REQUEST Each resource must appear at most once.",
                    "2 nulls: INVALID_REQUEST Null value not supported for : retention.ms, segment.ms",
                    "4 99: INVALID_REQUEST Unexpected broker id, expected " + node + ", but received 99",
                    "4 first: INVALID_REQUEST Node id must be an integer, but it is: first",
                    "4 " + node + ": " + Errors.CLUSTER_AUTHORIZATION_FAILED + " "
                            + Errors.CLUSTER_AUTHORIZATION_FAILED.message());

            AlterConfigsResponseData legacy = alterConfigs(broker, (byte) 8, node, "kafka", "DEBUG");
            assertThat(Errors.forCode(legacy.responses().getFirst().errorCode())).isEqualTo(Errors.INVALID_REQUEST);
            assertThat(legacy.responses().getFirst().errorMessage()).isEqualTo("Unknown resource type 8");
            assertThat(Errors.forCode(alterConfigs(broker, (byte) 2, "orders", "retention.ms", null).responses()
                    .getFirst().errorCode())).isEqualTo(Errors.INVALID_REQUEST);
            assertThat(topicConfig(admin, "orders", "retention.ms")).as("after the refusals").isEqualTo(retention);

            // Past the ACLs, this broker's own settings cannot change while it runs; a change of none is no change.
            allow(broker, ANONYMOUS, ResourceType.CLUSTER, "kafka-cluster", AclOperation.ALTER_CONFIGS);
            IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection own =
                    new IncrementalAlterConfigsRequestData.AlterConfigsResourceCollection();
            own.add(incremental((byte) 4, node, new String[] {"message.max.bytes", "2000000"}));
            own.add(incremental((byte) 4, ""));
            List<Errors> errors = new ArrayList<>();
            new IncrementalAlterConfigsResponseData(KafkaWire.call(anonymousPort(broker),
                    ApiKeys.INCREMENTAL_ALTER_CONFIGS, (short) 1, new IncrementalAlterConfigsRequestData()
                            .setResources(own)), (short) 1).responses()
                    .forEach(r -> errors.add(Errors.forCode(r.errorCode())));
            assertThat(errors).containsExactly(Errors.INVALID_REQUEST, Errors.NONE);
        }
    }

    /** @return a resource of an IncrementalAlterConfigs setting each {name, value} given, in order */
    private static IncrementalAlterConfigsRequestData.AlterConfigsResource incremental(byte type, String name,
                                                                                      String[]... settings) {
        IncrementalAlterConfigsRequestData.AlterableConfigCollection configs =
                new IncrementalAlterConfigsRequestData.AlterableConfigCollection();
        for (String[] setting : settings) {
            configs.add(new IncrementalAlterConfigsRequestData.AlterableConfig().setName(setting[0])
                    .setValue(setting[1]).setConfigOperation((byte) 0));
        }
        return new IncrementalAlterConfigsRequestData.AlterConfigsResource().setResourceType(type)
                .setResourceName(name).setConfigs(configs);
    }

    /** DeleteRecords needs Delete on the topic, CreatePartitions Alter on it; Describe alone does neither. */
    @Test
    void deleteRecordsNeedsDeleteAndCreatePartitionsNeedsAlterOnTheTopic() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin")); Admin alice = Admin.create(as(broker, "alice"))) {
            admin.createTopics(List.of(new NewTopic("events", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(as(broker, "admin"),
                    new ByteArraySerializer(), new ByteArraySerializer())) {
                for (int i = 0; i < 10; i++) {
                    producer.send(new ProducerRecord<>("events", ("e" + i).getBytes(StandardCharsets.UTF_8)))
                            .get(20, TimeUnit.SECONDS);
                }
            }
            TopicPartition events = new TopicPartition("events", 0);
            Map<TopicPartition, RecordsToDelete> beforeFive = Map.of(events, RecordsToDelete.beforeOffset(5));
            Map<String, NewPartitions> three = Map.of("events", NewPartitions.increaseTo(3));
            // Describe, so that Admin finds the partition's leader and sends DeleteRecords.
            allow(broker, ALICE, ResourceType.TOPIC, "events", AclOperation.DESCRIBE);
            assertRefused(() -> alice.deleteRecords(beforeFive).all().get(20, TimeUnit.SECONDS),
                    TopicAuthorizationException.class);
            assertRefused(() -> alice.createPartitions(three).all().get(20, TimeUnit.SECONDS),
                    TopicAuthorizationException.class);
            // As Kafka's controller answers it: the error, no message.
            CreatePartitionsRequestData.CreatePartitionsTopicCollection topics =
                    new CreatePartitionsRequestData.CreatePartitionsTopicCollection();
            topics.add(new CreatePartitionsRequestData.CreatePartitionsTopic().setName("events").setCount(3));
            assertThat(new CreatePartitionsResponseData(KafkaWire.call(anonymousPort(broker),
                    ApiKeys.CREATE_PARTITIONS, (short) 3, new CreatePartitionsRequestData().setTopics(topics)
                            .setTimeoutMs(20_000)), (short) 3).results()).containsExactly(
                    new CreatePartitionsResponseData.CreatePartitionsTopicResult().setName("events")
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code()));
            // And a CreateTopics, as Kafka's controller answers it: the error and its message, no config error.
            CreateTopicsRequestData create = new CreateTopicsRequestData().setTimeoutMs(20_000);
            create.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("mine").setNumPartitions(1)
                    .setReplicationFactor((short) 1));
            assertThat(new CreateTopicsResponseData(KafkaWire.call(anonymousPort(broker), ApiKeys.CREATE_TOPICS,
                    (short) 7, create), (short) 7).topics()).containsExactly(
                    new CreateTopicsResponseData.CreatableTopicResult().setName("mine")
                            .setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code())
                            .setErrorMessage("Authorization failed."));
            assertThat(earliest(admin, events)).as("the log start after the refusal").isZero();
            assertThat(partitions(admin, "events")).as("partitions after the refusals").isEqualTo(1);

            allow(broker, ALICE, ResourceType.TOPIC, "events", AclOperation.DELETE);
            assertThat(alice.deleteRecords(beforeFive).lowWatermarks().get(events).get(20, TimeUnit.SECONDS)
                    .lowWatermark()).isEqualTo(5);
            assertThat(earliest(admin, events)).isEqualTo(5);
            assertRefused(() -> alice.createPartitions(three).all().get(20, TimeUnit.SECONDS),
                    TopicAuthorizationException.class);
            assertThat(partitions(admin, "events")).isEqualTo(1);

            allow(broker, ALICE, ResourceType.TOPIC, "events", AclOperation.ALTER);
            alice.createPartitions(three).all().get(20, TimeUnit.SECONDS);
            assertThat(partitions(admin, "events")).isEqualTo(3);
        }
    }

    private static long earliest(Admin admin, TopicPartition partition) throws Exception {
        return admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).partitionResult(partition)
                .get(20, TimeUnit.SECONDS).offset();
    }

    private static int partitions(Admin admin, String topic) throws Exception {
        return admin.describeTopics(List.of(topic)).allTopicNames().get(20, TimeUnit.SECONDS).get(topic).partitions()
                .size();
    }

    private static KafkaProducer<byte[], byte[]> transactional(Map<String, Object> config, String id) {
        Map<String, Object> producerConfig = new HashMap<>(config);
        producerConfig.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, id);
        producerConfig.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
        return new KafkaProducer<>(producerConfig, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static ProducerRecord<byte[], byte[]> record(String topic, String value) {
        return new ProducerRecord<>(topic, 0, null, value.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * A transactional producer needs Write on its transactional id (else TransactionalIdAuthorizationException: from
     * FindCoordinator without Describe, from InitProducerId with Describe alone), Write on each topic it adds
     * (AddPartitionsToTxn answers TOPIC_AUTHORIZATION_FAILED) and Read on the group whose offsets it sends
     * (AddOffsetsToTxn answers GROUP_AUTHORIZATION_FAILED); nothing it was refused is written or committed.
     */
    @Test
    void aTransactionalProducerNeedsWriteOnItsIdAndItsTopicsAndReadOnItsGroup() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("payments", 1, (short) 1), new NewTopic("source", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            Map<String, Object> alice = as(broker, "alice");
            try (KafkaProducer<byte[], byte[]> producer = transactional(alice, "pay")) {
                assertRefused(producer::initTransactions, TransactionalIdAuthorizationException.class);
            }
            allow(broker, ALICE, ResourceType.TRANSACTIONAL_ID, "pay", AclOperation.DESCRIBE);
            try (KafkaProducer<byte[], byte[]> producer = transactional(alice, "pay")) {
                assertRefused(producer::initTransactions, TransactionalIdAuthorizationException.class);
            }

            allow(broker, ALICE, ResourceType.TRANSACTIONAL_ID, "pay", AclOperation.WRITE);
            allow(broker, ALICE, ResourceType.TOPIC, "payments", AclOperation.DESCRIBE);
            Map<TopicPartition, OffsetAndMetadata> offsets = Map.of(new TopicPartition("source", 0),
                    new OffsetAndMetadata(3));
            Map<String, Object> consumerConfig = new HashMap<>(alice);
            consumerConfig.put(ConsumerConfig.GROUP_ID_CONFIG, "pay-group");
            try (KafkaProducer<byte[], byte[]> producer = transactional(alice, "pay");
                 KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig,
                         new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
                // A consumer of the group that never joined it: generation -1, no member id.
                ConsumerGroupMetadata group = consumer.groupMetadata();
                producer.initTransactions();
                producer.beginTransaction();
                assertRefused(() -> producer.send(record("payments", "refused")).get(20, TimeUnit.SECONDS),
                        TopicAuthorizationException.class);
                producer.abortTransaction();
                assertThat(latest(admin, new TopicPartition("payments", 0))).as("nothing written").isZero();

                // Describe on the group finds its coordinator; Read is what adds its offsets.
                allow(broker, ALICE, ResourceType.TOPIC, "payments", AclOperation.WRITE);
                allow(broker, ALICE, ResourceType.GROUP, "pay-group", AclOperation.DESCRIBE);
                producer.beginTransaction();
                producer.send(record("payments", "aborted")).get(20, TimeUnit.SECONDS);
                assertRefused(() -> producer.sendOffsetsToTransaction(offsets, group),
                        GroupAuthorizationException.class);
                producer.abortTransaction();
                assertThat(admin.listConsumerGroupOffsets("pay-group").partitionsToOffsetAndMetadata()
                        .get(20, TimeUnit.SECONDS)).as("offsets committed").isEmpty();
                assertThat(readCommitted(as(broker, "admin"), "payments")).isEmpty();

                allow(broker, ALICE, ResourceType.GROUP, "pay-group", AclOperation.READ);
                allow(broker, ALICE, ResourceType.TOPIC, "source", AclOperation.READ);
                producer.beginTransaction();
                producer.send(record("payments", "committed")).get(20, TimeUnit.SECONDS);
                producer.sendOffsetsToTransaction(offsets, group);
                producer.commitTransaction();
            }
            assertThat(admin.listConsumerGroupOffsets("pay-group").partitionsToOffsetAndMetadata()
                    .get(20, TimeUnit.SECONDS)).isEqualTo(offsets);
            assertThat(readCommitted(as(broker, "admin"), "payments")).containsExactly("committed");
        }
    }

    private static long latest(Admin admin, TopicPartition partition) throws Exception {
        return admin.listOffsets(Map.of(partition, OffsetSpec.latest())).partitionResult(partition)
                .get(20, TimeUnit.SECONDS).offset();
    }

    /** @return the values of partition 0 of {@code topic} a read_committed consumer reads, to its stable end */
    private static List<String> readCommitted(Map<String, Object> config, String topic) {
        Map<String, Object> consumerConfig = new HashMap<>(config);
        consumerConfig.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        List<String> values = new ArrayList<>();
        TopicPartition partition = new TopicPartition(topic, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerConfig, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (consumer.position(partition) < end) {
                assertThat(System.nanoTime()).as("read to the stable end in time").isLessThan(deadline);
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                    values.add(new String(record.value(), StandardCharsets.UTF_8));
                }
            }
        }
        return values;
    }

    /**
     * The transaction requests one by one, where a Java producer's refusal could come from either of two:
     * AddOffsetsToTxn and TxnOffsetCommit without Write on the id (TRANSACTIONAL_ID_AUTHORIZATION_FAILED) or with
     * Describe but not Read on the group (GROUP_AUTHORIZATION_FAILED; TxnOffsetCommit's for each partition); in
     * TxnOffsetCommit a topic without Read (its partitions TOPIC_AUTHORIZATION_FAILED); AddPartitionsToTxn naming a
     * topic without Write (that topic TOPIC_AUTHORIZATION_FAILED, the others OPERATION_NOT_ATTEMPTED: none is added).
     */
    @Test
    void transactionRequestsAreRefusedAsKafkaRefusesThem() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("allowed", 1, (short) 1), new NewTopic("closed", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            int port = anonymousPort(broker);
            assertThat(txnOffsetCommit(port, "allowed")).containsExactly(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
            assertThat(addOffsets(port)).isEqualTo(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED);
            allow(broker, ANONYMOUS, ResourceType.TRANSACTIONAL_ID, "raw", AclOperation.WRITE);
            allow(broker, ANONYMOUS, ResourceType.GROUP, "raw-group", AclOperation.DESCRIBE);
            assertThat(txnOffsetCommit(port, "allowed")).containsExactly(Errors.GROUP_AUTHORIZATION_FAILED);
            assertThat(addOffsets(port)).isEqualTo(Errors.GROUP_AUTHORIZATION_FAILED);
            allow(broker, ANONYMOUS, ResourceType.GROUP, "raw-group", AclOperation.READ);
            assertThat(txnOffsetCommit(port, "closed")).containsExactly(Errors.TOPIC_AUTHORIZATION_FAILED);
            assertThat(admin.listConsumerGroupOffsets("raw-group").partitionsToOffsetAndMetadata()
                    .get(20, TimeUnit.SECONDS)).isEmpty();

            allow(broker, ANONYMOUS, ResourceType.TOPIC, "allowed", AclOperation.WRITE);
            AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                    new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
            for (String topic : List.of("allowed", "closed")) {
                topics.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName(topic)
                        .setPartitions(List.of(0)));
            }
            AddPartitionsToTxnResponseData added = new AddPartitionsToTxnResponseData(KafkaWire.call(port,
                    ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 3, new AddPartitionsToTxnRequestData()
                            .setV3AndBelowTransactionalId("raw").setV3AndBelowProducerId(1000)
                            .setV3AndBelowProducerEpoch((short) 0).setV3AndBelowTopics(topics)), (short) 3);
            Map<String, Errors> errors = new HashMap<>();
            added.resultsByTopicV3AndBelow().forEach(topic -> topic.resultsByPartition().forEach(partition ->
                    errors.put(topic.name(), Errors.forCode(partition.partitionErrorCode()))));
            assertThat(errors).isEqualTo(Map.of("allowed", Errors.OPERATION_NOT_ATTEMPTED,
                    "closed", Errors.TOPIC_AUTHORIZATION_FAILED));
        }
    }

    /** @return the error of an AddOffsetsToTxn of transactional id raw for raw-group */
    private static Errors addOffsets(int port) throws Exception {
        return Errors.forCode(new AddOffsetsToTxnResponseData(KafkaWire.call(port, ApiKeys.ADD_OFFSETS_TO_TXN,
                (short) 3, new AddOffsetsToTxnRequestData().setTransactionalId("raw").setProducerId(1000)
                        .setProducerEpoch((short) 0).setGroupId("raw-group")), (short) 3).errorCode());
    }

    /** @return each partition's error in the answer to a TxnOffsetCommit of transactional id raw for raw-group */
    private static List<Errors> txnOffsetCommit(int port, String topic) throws Exception {
        TxnOffsetCommitRequestData request = new TxnOffsetCommitRequestData().setTransactionalId("raw")
                .setGroupId("raw-group").setProducerId(1000).setProducerEpoch((short) 0).setGenerationId(-1)
                .setMemberId("").setTopics(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                        .setName(topic).setPartitions(List.of(new TxnOffsetCommitRequestData
                                .TxnOffsetCommitRequestPartition().setPartitionIndex(0).setCommittedOffset(1)))));
        TxnOffsetCommitResponseData response = new TxnOffsetCommitResponseData(KafkaWire.call(port,
                ApiKeys.TXN_OFFSET_COMMIT, (short) 3, request), (short) 3);
        List<Errors> errors = new ArrayList<>();
        response.topics().forEach(t -> t.partitions().forEach(p -> errors.add(Errors.forCode(p.errorCode()))));
        return errors;
    }

    /**
     * ListTransactions lists the transactional ids the principal may describe, DescribeTransactions refuses the others
     * (TRANSACTIONAL_ID_AUTHORIZATION_FAILED, with nothing else of the transaction) and leaves out the topics of a
     * described one it may not describe.
     */
    @Test
    void transactionsAreListedAndDescribedOnlyWithDescribeOnTheirTransactionalId() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build()); Broker broker = start(store);
             Admin admin = Admin.create(as(broker, "admin")); Admin alice = Admin.create(as(broker, "alice"));
             KafkaProducer<byte[], byte[]> visible = transactional(as(broker, "admin"), "visible");
             KafkaProducer<byte[], byte[]> hidden = transactional(as(broker, "admin"), "hidden")) {
            admin.createTopics(List.of(new NewTopic("a", 1, (short) 1), new NewTopic("b", 1, (short) 1))).all()
                    .get(20, TimeUnit.SECONDS);
            for (KafkaProducer<byte[], byte[]> producer : List.of(visible, hidden)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(record("a", "x")).get(20, TimeUnit.SECONDS);
                producer.send(record("b", "x")).get(20, TimeUnit.SECONDS);
            }
            assertThat(listed(admin)).containsExactlyInAnyOrder("visible", "hidden");
            assertThat(listed(alice)).as("nothing described").isEmpty();
            assertRefused(() -> alice.describeTransactions(List.of("visible")).all().get(20, TimeUnit.SECONDS),
                    TransactionalIdAuthorizationException.class);

            allow(broker, ALICE, ResourceType.TRANSACTIONAL_ID, "visible", AclOperation.DESCRIBE);
            allow(broker, ALICE, ResourceType.TOPIC, "a", AclOperation.DESCRIBE);
            assertThat(listed(alice)).containsExactly("visible");
            TransactionDescription described = alice.describeTransactions(List.of("visible")).description("visible")
                    .get(20, TimeUnit.SECONDS);
            assertThat(described.state()).isEqualTo(TransactionState.ONGOING);
            assertThat(described.topicPartitions()).as("b left out").containsExactly(new TopicPartition("a", 0));
            assertRefused(() -> alice.describeTransactions(List.of("hidden")).all().get(20, TimeUnit.SECONDS),
                    TransactionalIdAuthorizationException.class);

            // Over the wire, as User:ANONYMOUS: nothing listed, and a refused id answered with its error alone.
            ListTransactionsResponseData list = new ListTransactionsResponseData(KafkaWire.call(anonymousPort(broker),
                    ApiKeys.LIST_TRANSACTIONS, (short) 0, new ListTransactionsRequestData()), (short) 0);
            assertThat(list.transactionStates()).isEmpty();
            DescribeTransactionsResponseData refused = new DescribeTransactionsResponseData(KafkaWire.call(
                    anonymousPort(broker), ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0,
                    new DescribeTransactionsRequestData().setTransactionalIds(List.of("hidden"))), (short) 0);
            assertThat(refused.transactionStates()).containsExactly(new DescribeTransactionsResponseData
                    .TransactionState().setTransactionalId("hidden")
                    .setErrorCode(Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED.code()));
            visible.abortTransaction();
            hidden.abortTransaction();
        }
    }

    private static List<String> listed(Admin admin) throws Exception {
        return admin.listTransactions().all().get(20, TimeUnit.SECONDS).stream()
                .map(TransactionListing::transactionalId).toList();
    }
}
