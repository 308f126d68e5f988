package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.testsupport.KafkaWire;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicCollection;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.CreateTopicsRequestData;
import org.apache.kafka.common.message.CreateTopicsResponseData;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsRequestData;
import org.apache.kafka.common.message.DescribeTopicPartitionsResponseData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.message.OffsetCommitRequestData;
import org.apache.kafka.common.message.OffsetCommitResponseData;
import org.apache.kafka.common.message.OffsetFetchRequestData;
import org.apache.kafka.common.message.OffsetFetchResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Topic ids (KIP-516) on a broker alone: each topic has a random id from its creation, kept in the store across
 * restarts, given once to a topic from before ids, and a new one for a topic deleted and created again. Kafka's Java
 * clients then fetch and produce naming topics by id (Fetch 18, Produce 13, what the broker's metrics count), and
 * every request naming an id no topic has is answered as Kafka 4.3.1 answers it (UNKNOWN_TOPIC_ID).
 */
class TopicIdsTest {

    @TempDir
    Path dir;

    private Store open() {
        return Store.open(dir, StoreConfig.builder().build());
    }

    private static Broker start(Store store) throws Exception {
        return Broker.start(store, BrokerConfig.defaults().withPort(0));
    }

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    /** @return the topic's id as Metadata v12 answers it (the zero id if unknown) */
    static Uuid metadataId(int port, String topic) throws Exception {
        MetadataRequestData request = new MetadataRequestData().setAllowAutoTopicCreation(false);
        request.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(topic));
        MetadataResponseData.MetadataResponseTopic answer = new MetadataResponseData(KafkaWire.call(port,
                ApiKeys.METADATA, (short) 12, request), (short) 12).topics().find(topic);
        return answer == null || answer.errorCode() != 0 ? Uuid.ZERO_UUID : answer.topicId();
    }

    private static Uuid kafka(UUID id) {
        return new Uuid(id.getMostSignificantBits(), id.getLeastSignificantBits());
    }

    @Test
    void javaClientsProduceFetchAndCommitNamingTopicsByTheirIds() throws Exception {
        try (Store store = open(); Broker broker = start(store); Admin admin = admin(broker)) {
            CreateTopicsResult created = admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1)));
            created.all().get(20, TimeUnit.SECONDS);
            Uuid id = created.topicId("orders").get();
            assertThat(id).isNotIn(Uuid.ZERO_UUID, Uuid.METADATA_TOPIC_ID);
            assertThat(id.toString()).doesNotStartWith("-");
            assertThat(kafka(store.topicId("orders"))).isEqualTo(id);
            assertThat(metadataId(broker.port(), "orders")).isEqualTo(id);
            // Admin asks Metadata for the topic by its id (v12).
            TopicDescription byId = admin.describeTopics(TopicCollection.ofTopicIds(List.of(id))).allTopicIds()
                    .get(20, TimeUnit.SECONDS).get(id);
            assertThat(byId.name()).isEqualTo("orders");
            assertThat(admin.describeTopics(List.of("orders")).allTopicNames().get(20, TimeUnit.SECONDS).get("orders")
                    .topicId()).isEqualTo(id);

            try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                    ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port()),
                    new StringSerializer(), new StringSerializer())) {
                for (int i = 0; i < 20; i++) {
                    producer.send(new ProducerRecord<>("orders", i % 2, null, "order-" + i)).get(20, TimeUnit.SECONDS);
                }
            }
            List<String> read = new ArrayList<>();
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                    ConsumerConfig.GROUP_ID_CONFIG, "readers", ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                    ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false),
                    new StringDeserializer(), new StringDeserializer())) {
                consumer.subscribe(List.of("orders"));
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (read.size() < 20 && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                        read.add(record.value());
                    }
                }
                consumer.commitSync();
                assertThat(consumer.committed(java.util.Set.of(new TopicPartition("orders", 0)))
                        .get(new TopicPartition("orders", 0))).isEqualTo(new OffsetAndMetadata(10));
            }
            assertThat(read).hasSize(20).containsAll(List.of("order-0", "order-19"));
            assertThat(broker.metrics().requests("Produce", 13)).as("produce requests naming topics by id")
                    .isPositive();
            assertThat(broker.metrics().requests("Fetch", ApiKeys.FETCH.latestVersion()))
                    .as("fetches naming topics by id").isPositive();
            for (int version = 4; version < 13; version++) {
                assertThat(broker.metrics().requests("Fetch", version)).as("fetches of v" + version).isZero();
                assertThat(broker.metrics().requests("Produce", version)).as("produce requests of v" + version)
                        .isZero();
            }
        }
    }

    @Test
    void idsOutliveTheBrokerAndATopicWithoutOneGetsOneOnceAtTheFirstStartOrWhenFirstAskedFor() throws Exception {
        Uuid created;
        try (Store store = open()) {
            // As a store written before ids holds them: declared, without an id.
            store.createTopic("old", TopicLayout.BATCHES, 2);
            assertThat(store.topicId("old")).isNull();
            try (Broker broker = start(store); Admin admin = admin(broker)) {
                assertThat(store.topicId("old")).as("given before the broker serves").isNotNull();
                created = admin.createTopics(List.of(new NewTopic("new", 1, (short) 1))).topicId("new")
                        .get(20, TimeUnit.SECONDS);
            }
        }
        UUID old;
        UUID later;
        try (Store store = open()) {
            old = store.topicId("old");
            try (Broker broker = start(store)) {
                assertThat(metadataId(broker.port(), "old")).isEqualTo(kafka(old));
                assertThat(metadataId(broker.port(), "new")).isEqualTo(created);
                // Declared through the store's API while the broker runs: given an id when first asked for.
                store.createTopic("later", TopicLayout.QUEUE, 1);
                assertThat(store.topicId("later")).isNull();
                Uuid answered = metadataId(broker.port(), "later");
                assertThat(answered).isNotEqualTo(Uuid.ZERO_UUID);
                later = store.topicId("later");
                assertThat(kafka(later)).isEqualTo(answered);
                assertThat(metadataId(broker.port(), "later")).isEqualTo(answered);
            }
            assertThat(store.topicId("old")).as("given once, not again at the next start").isEqualTo(old);
        }
        try (Store store = open(); Broker broker = start(store)) {
            assertThat(metadataId(broker.port(), "later")).isEqualTo(kafka(later));
        }
    }

    @Test
    void aTopicDeletedByItsIdComesBackWithAnotherAndTheOldIdIsUnknown() throws Exception {
        try (Store store = open(); Broker broker = start(store); Admin admin = admin(broker)) {
            Uuid first = admin.createTopics(List.of(new NewTopic("again", 1, (short) 1))).topicId("again")
                    .get(20, TimeUnit.SECONDS);
            DeleteTopicsResponseData deleted = deleteTopics(broker.port(),
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(first));
            assertThat(deleted.responses()).singleElement().satisfies(answer -> {
                assertThat(answer.errorCode()).isZero();
                assertThat(answer.name()).isEqualTo("again");
                assertThat(answer.topicId()).isEqualTo(first);
            });
            assertThat(store.queueCount("again")).isZero();
            Uuid second = admin.createTopics(List.of(new NewTopic("again", 1, (short) 1))).topicId("again")
                    .get(20, TimeUnit.SECONDS);
            assertThat(second).isNotEqualTo(first);
            assertThat(fetch(broker.port(), (short) 13, first).responses().getFirst().partitions().getFirst()
                    .errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
            // Deleted by name, it is answered with its id.
            assertThat(deleteTopics(broker.port(), new DeleteTopicsRequestData.DeleteTopicState().setName("again"))
                    .responses()).singleElement().satisfies(answer -> {
                        assertThat(answer.errorCode()).isZero();
                        assertThat(answer.topicId()).isEqualTo(second);
                    });
        }
    }

    private static DeleteTopicsResponseData deleteTopics(int port, DeleteTopicsRequestData.DeleteTopicState... topics)
            throws Exception {
        return new DeleteTopicsResponseData(KafkaWire.call(port, ApiKeys.DELETE_TOPICS, (short) 6,
                new DeleteTopicsRequestData().setTimeoutMs(10_000).setTopics(List.of(topics))), (short) 6);
    }

    private static FetchResponseData fetch(int port, short version, Uuid id) throws Exception {
        FetchRequestData request = new FetchRequestData().setReplicaId(-1).setMaxWaitMs(0).setMinBytes(0)
                .setMaxBytes(1 << 20).setSessionId(0).setSessionEpoch(-1);
        request.topics().add(new FetchRequestData.FetchTopic().setTopicId(id).setPartitions(List.of(
                new FetchRequestData.FetchPartition().setPartition(0).setFetchOffset(0).setPartitionMaxBytes(1 << 20),
                new FetchRequestData.FetchPartition().setPartition(7).setFetchOffset(0)
                        .setPartitionMaxBytes(1 << 20))));
        return new FetchResponseData(KafkaWire.call(port, ApiKeys.FETCH, version, request), version);
    }

    private static ProduceResponseData produce(int port, Uuid id) throws Exception {
        ProduceRequestData request = new ProduceRequestData().setAcks((short) -1).setTimeoutMs(5_000);
        request.topicData().add(new ProduceRequestData.TopicProduceData().setTopicId(id).setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(MemoryRecords.withRecords(
                        Compression.NONE, new SimpleRecord(new byte[5]))),
                new ProduceRequestData.PartitionProduceData().setIndex(7).setRecords(MemoryRecords.withRecords(
                        Compression.NONE, new SimpleRecord(new byte[5]))))));
        return new ProduceResponseData(KafkaWire.call(port, ApiKeys.PRODUCE, (short) 13, request), (short) 13);
    }

    /** The answers Kafka 4.3.1 gave to the same requests (a single-node KRaft broker, probed request by request). */
    @Test
    void requestsNamingTopicsByIdAreAnsweredAsKafkaAnswersThem() throws Exception {
        try (Store store = open(); Broker broker = start(store); Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 2, (short) 1), new NewTopic("u", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            int port = broker.port();
            Uuid known = metadataId(port, "t");
            Uuid unknown = Uuid.randomUuid();

            // Produce 13: the partition of a known id is stored, one it lacks UNKNOWN_TOPIC_OR_PARTITION; an unknown
            // id and the zero id UNKNOWN_TOPIC_ID. Each answer carries the id asked for.
            for (Uuid id : List.of(known, unknown, Uuid.ZERO_UUID)) {
                ProduceResponseData.TopicProduceResponse answer = produce(port, id).responses().iterator().next();
                assertThat(answer.topicId()).isEqualTo(id);
                for (ProduceResponseData.PartitionProduceResponse partition : answer.partitionResponses()) {
                    short expected = id != known ? Errors.UNKNOWN_TOPIC_ID.code()
                            : partition.index() == 0 ? 0 : Errors.UNKNOWN_TOPIC_OR_PARTITION.code();
                    assertThat(partition.errorCode()).as("produce to %s-%d", id, partition.index())
                            .isEqualTo(expected);
                }
            }
            // Fetch 13-18 likewise; the zero id fails the request as a whole (UNKNOWN_SERVER_ERROR), as in Kafka.
            for (short version = 13; version <= ApiKeys.FETCH.latestVersion(); version++) {
                FetchResponseData byKnown = fetch(port, version, known);
                assertThat(byKnown.responses()).singleElement().satisfies(topic -> {
                    assertThat(topic.topicId()).isEqualTo(known);
                    assertThat(topic.partitions().get(0).errorCode()).isZero();
                    assertThat(topic.partitions().get(0).records().sizeInBytes()).isPositive();
                    assertThat(topic.partitions().get(1).errorCode())
                            .isEqualTo(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
                });
                FetchResponseData byUnknown = fetch(port, version, unknown);
                assertThat(byUnknown.responses()).singleElement().satisfies(topic -> {
                    assertThat(topic.topicId()).isEqualTo(unknown);
                    assertThat(topic.partitions()).extracting(FetchResponseData.PartitionData::errorCode)
                            .containsExactly(Errors.UNKNOWN_TOPIC_ID.code(), Errors.UNKNOWN_TOPIC_ID.code());
                    assertThat(topic.partitions().get(0).highWatermark()).isEqualTo(-1);
                });
                FetchResponseData byZero = fetch(port, version, Uuid.ZERO_UUID);
                assertThat(byZero.errorCode()).isEqualTo(Errors.UNKNOWN_SERVER_ERROR.code());
                assertThat(byZero.responses()).isEmpty();
            }

            // Metadata 12 by id: a known id answers its topic (names also given are not looked at), an unknown one
            // UNKNOWN_TOPIC_ID without a name.
            MetadataRequestData byIds = new MetadataRequestData();
            byIds.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(null).setTopicId(known));
            byIds.topics().add(new MetadataRequestData.MetadataRequestTopic().setName(null).setTopicId(unknown));
            byIds.topics().add(new MetadataRequestData.MetadataRequestTopic().setName("u"));
            MetadataResponseData metadata = new MetadataResponseData(KafkaWire.call(port, ApiKeys.METADATA,
                    (short) 12, byIds), (short) 12);
            assertThat(metadata.topics()).hasSize(2);
            assertThat(metadata.topics().find("t").topicId()).isEqualTo(known);
            assertThat(metadata.topics().find("t").partitions()).hasSize(2);
            assertThat(metadata.topics()).anySatisfy(topic -> {
                assertThat(topic.name()).isNull();
                assertThat(topic.topicId()).isEqualTo(unknown);
                assertThat(topic.errorCode()).isEqualTo(Errors.UNKNOWN_TOPIC_ID.code());
            });
            // v10-11 cannot name a topic by id: the request is refused as a whole.
            MetadataRequestData idAtEleven = new MetadataRequestData();
            idAtEleven.topics().add(new MetadataRequestData.MetadataRequestTopic().setName("t").setTopicId(known));
            assertThat(new MetadataResponseData(KafkaWire.call(port, ApiKeys.METADATA, (short) 11, idAtEleven),
                    (short) 11).topics()).allSatisfy(topic -> assertThat(topic.errorCode())
                            .isEqualTo(Errors.INVALID_REQUEST.code()));

            // OffsetCommit and OffsetFetch 10.
            for (Uuid id : List.of(Uuid.ZERO_UUID, known, unknown)) {
                OffsetCommitRequestData commit = new OffsetCommitRequestData().setGroupId("g")
                        .setGenerationIdOrMemberEpoch(-1).setMemberId("");
                commit.topics().add(new OffsetCommitRequestData.OffsetCommitRequestTopic().setTopicId(id)
                        .setPartitions(List.of(new OffsetCommitRequestData.OffsetCommitRequestPartition()
                                .setPartitionIndex(0).setCommittedOffset(1).setCommittedLeaderEpoch(0))));
                OffsetCommitResponseData committed = new OffsetCommitResponseData(KafkaWire.call(port,
                        ApiKeys.OFFSET_COMMIT, (short) 10, commit), (short) 10);
                assertThat(committed.topics()).singleElement().satisfies(topic -> {
                    assertThat(topic.topicId()).isEqualTo(id);
                    assertThat(topic.partitions().getFirst().errorCode())
                            .isEqualTo(id == known ? 0 : Errors.UNKNOWN_TOPIC_ID.code());
                });
                OffsetFetchRequestData fetch = new OffsetFetchRequestData();
                fetch.groups().add(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId("g").setTopics(
                        List.of(new OffsetFetchRequestData.OffsetFetchRequestTopics().setTopicId(id)
                                .setPartitionIndexes(List.of(0)))));
                OffsetFetchResponseData fetched = new OffsetFetchResponseData(KafkaWire.call(port,
                        ApiKeys.OFFSET_FETCH, (short) 10, fetch), (short) 10);
                assertThat(fetched.groups().getFirst().topics()).singleElement().satisfies(topic -> {
                    assertThat(topic.topicId()).isEqualTo(id);
                    OffsetFetchResponseData.OffsetFetchResponsePartitions partition = topic.partitions().getFirst();
                    assertThat(partition.errorCode()).isEqualTo(id == known ? 0 : Errors.UNKNOWN_TOPIC_ID.code());
                    assertThat(partition.committedOffset()).isEqualTo(id == known ? 1 : -1);
                });
            }
            OffsetFetchRequestData all = new OffsetFetchRequestData();
            all.groups().add(new OffsetFetchRequestData.OffsetFetchRequestGroup().setGroupId("g").setTopics(null));
            assertThat(new OffsetFetchResponseData(KafkaWire.call(port, ApiKeys.OFFSET_FETCH, (short) 10, all),
                    (short) 10).groups().getFirst().topics()).singleElement().satisfies(topic -> {
                        assertThat(topic.topicId()).isEqualTo(known);
                        assertThat(topic.partitions().getFirst().committedOffset()).isEqualTo(1);
                    });

            // CreateTopics 7: the id of a topic created, the zero id for one that exists, and for a validation the
            // id Kafka's controller would have given (kept nowhere).
            CreateTopicsRequestData create = new CreateTopicsRequestData().setTimeoutMs(10_000);
            create.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("t").setNumPartitions(1)
                    .setReplicationFactor((short) 1));
            create.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("fresh").setNumPartitions(1)
                    .setReplicationFactor((short) 1));
            CreateTopicsResponseData createdTopics = new CreateTopicsResponseData(KafkaWire.call(port,
                    ApiKeys.CREATE_TOPICS, (short) 7, create), (short) 7);
            assertThat(createdTopics.topics().find("t").topicId()).isEqualTo(Uuid.ZERO_UUID);
            assertThat(createdTopics.topics().find("fresh").topicId()).isEqualTo(metadataId(port, "fresh"))
                    .isNotEqualTo(Uuid.ZERO_UUID);
            create.setValidateOnly(true).topics().clear();
            create.topics().add(new CreateTopicsRequestData.CreatableTopic().setName("validated").setNumPartitions(1)
                    .setReplicationFactor((short) 1));
            assertThat(new CreateTopicsResponseData(KafkaWire.call(port, ApiKeys.CREATE_TOPICS, (short) 7, create),
                    (short) 7).topics().find("validated").topicId()).isNotEqualTo(Uuid.ZERO_UUID);
            assertThat(store.queueCount("validated")).isZero();

            // DeleteTopics 6: an unknown id, a name with an id, neither, the same id twice, and a topic named by both
            // its name and its id (neither deleted).
            Uuid u = metadataId(port, "u");
            DeleteTopicsResponseData refused = deleteTopics(port,
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(unknown),
                    new DeleteTopicsRequestData.DeleteTopicState().setName("t").setTopicId(known),
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(Uuid.ZERO_UUID),
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(Uuid.METADATA_TOPIC_ID),
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(Uuid.METADATA_TOPIC_ID),
                    new DeleteTopicsRequestData.DeleteTopicState().setName(null).setTopicId(u),
                    new DeleteTopicsRequestData.DeleteTopicState().setName("u"));
            assertThat(refused.responses()).extracting(DeleteTopicsResponseData.DeletableTopicResult::errorCode,
                    DeleteTopicsResponseData.DeletableTopicResult::errorMessage).containsExactlyInAnyOrder(
                            org.assertj.core.groups.Tuple.tuple(Errors.UNKNOWN_TOPIC_ID.code(),
                                    Errors.UNKNOWN_TOPIC_ID.message()),
                            org.assertj.core.groups.Tuple.tuple(Errors.INVALID_REQUEST.code(),
                                    "You may not specify both topic name and topic id."),
                            org.assertj.core.groups.Tuple.tuple(Errors.INVALID_REQUEST.code(),
                                    "Neither topic name nor id were specified."),
                            org.assertj.core.groups.Tuple.tuple(Errors.INVALID_REQUEST.code(),
                                    "Duplicate topic id."),
                            org.assertj.core.groups.Tuple.tuple(Errors.INVALID_REQUEST.code(),
                                    "The provided topic name maps to an ID that was already supplied."));
            assertThat(store.queueCount("t")).isEqualTo(2);
            assertThat(store.queueCount("u")).isEqualTo(1);
        }
    }

    /** DescribeTopicPartitions, which Admin's describeTopics by name asks: Kafka 4.3.1's answers to the same requests. */
    @Test
    void describeTopicPartitionsPagesThroughTopicsByNameWithTheirIds() throws Exception {
        try (Store store = open(); Broker broker = start(store); Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic("t", 2, (short) 1), new NewTopic("v", 1, (short) 1)))
                    .all().get(20, TimeUnit.SECONDS);
            int port = broker.port();
            Uuid t = metadataId(port, "t");
            DescribeTopicPartitionsRequestData request = new DescribeTopicPartitionsRequestData()
                    .setResponsePartitionLimit(2000);
            for (String name : List.of("t", "nosuch", "bad name")) {
                request.topics().add(new DescribeTopicPartitionsRequestData.TopicRequest().setName(name));
            }
            DescribeTopicPartitionsResponseData byNames = describe(port, request);
            assertThat(byNames.topics()).extracting(DescribeTopicPartitionsResponseData
                    .DescribeTopicPartitionsResponseTopic::name).containsExactly("bad name", "nosuch", "t");
            assertThat(byNames.topics()).extracting(DescribeTopicPartitionsResponseData
                    .DescribeTopicPartitionsResponseTopic::errorCode).containsExactly(
                            Errors.INVALID_TOPIC_EXCEPTION.code(), Errors.UNKNOWN_TOPIC_OR_PARTITION.code(), (short) 0);
            var described = byNames.topics().find("t");
            assertThat(described.topicId()).isEqualTo(t);
            assertThat(described.topicAuthorizedOperations()).isEqualTo(3576);
            assertThat(described.partitions()).extracting(p -> p.partitionIndex() + ":" + p.leaderId() + ":"
                    + p.leaderEpoch() + ":" + p.replicaNodes() + ":" + p.isrNodes() + ":" + p.eligibleLeaderReplicas())
                    .containsExactly("0:0:0:[0]:[0]:[]", "1:0:0:[0]:[0]:[]");
            assertThat(byNames.nextCursor()).isNull();

            request.setResponsePartitionLimit(1);
            DescribeTopicPartitionsResponseData first = describe(port, request);
            assertThat(first.topics().find("t").partitions()).hasSize(1);
            assertThat(first.nextCursor().topicName()).isEqualTo("t");
            assertThat(first.nextCursor().partitionIndex()).isEqualTo(1);
            request.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("t").setPartitionIndex(1));
            DescribeTopicPartitionsResponseData second = describe(port, request);
            assertThat(second.topics()).singleElement().satisfies(topic ->
                    assertThat(topic.partitions()).singleElement().satisfies(partition ->
                            assertThat(partition.partitionIndex()).isEqualTo(1)));
            assertThat(second.nextCursor()).isNull();

            request.setCursor(new DescribeTopicPartitionsRequestData.Cursor().setTopicName("other")
                    .setPartitionIndex(0));
            assertThat(describe(port, request).topics()).allSatisfy(topic ->
                    assertThat(topic.errorCode()).isEqualTo(Errors.INVALID_REQUEST.code()));

            DescribeTopicPartitionsResponseData every = describe(port, new DescribeTopicPartitionsRequestData()
                    .setResponsePartitionLimit(2).setCursor(new DescribeTopicPartitionsRequestData.Cursor()
                            .setTopicName("t").setPartitionIndex(0)));
            assertThat(every.topics()).extracting(DescribeTopicPartitionsResponseData
                    .DescribeTopicPartitionsResponseTopic::name).containsExactly("t");
            assertThat(every.nextCursor().topicName()).isEqualTo("v");
            assertThat(every.nextCursor().partitionIndex()).isZero();

            TopicDescription description = admin.describeTopics(List.of("t", "v")).allTopicNames()
                    .get(20, TimeUnit.SECONDS).get("t");
            assertThat(description.topicId()).isEqualTo(t);
            assertThat(description.partitions()).hasSize(2);
            assertThat(broker.metrics().requests("DescribeTopicPartitions", 0)).isPositive();
        }
    }

    private static DescribeTopicPartitionsResponseData describe(int port, DescribeTopicPartitionsRequestData request)
            throws Exception {
        return new DescribeTopicPartitionsResponseData(KafkaWire.call(port, ApiKeys.DESCRIBE_TOPIC_PARTITIONS,
                (short) 0, request), (short) 0);
    }
}
