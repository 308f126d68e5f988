package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddOffsetsToTxnResponseData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.ApiVersionsRequestData;
import org.apache.kafka.common.message.ApiVersionsResponseData;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.message.FindCoordinatorRequestData;
import org.apache.kafka.common.message.FindCoordinatorResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The transaction APIs' answers on their edge paths, request by request, each the one Apache Kafka 4.3.1 gave the same
 * request (probed with transaction.version 1 finalized, as this broker finalizes it).
 */
class TransactionProtocolTest {

    @TempDir
    Path dir;

    private record Holder(long producerId, short epoch) {
    }

    private static Holder init(Socket socket, String transactionalId) throws IOException {
        InitProducerIdResponseData response = new InitProducerIdResponseData(KafkaWire.exchange(socket,
                ApiKeys.INIT_PRODUCER_ID, (short) 5, new InitProducerIdRequestData().setTransactionalId(transactionalId)
                        .setTransactionTimeoutMs(60_000).setProducerId(-1).setProducerEpoch((short) -1)), (short) 5);
        assertThat(Errors.forCode(response.errorCode())).isEqualTo(Errors.NONE);
        return new Holder(response.producerId(), response.producerEpoch());
    }

    private static Errors addPartition(Socket socket, short version, String id, Holder holder, short epoch)
            throws IOException {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
        topics.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName("t").setPartitions(List.of(0)));
        AddPartitionsToTxnResponseData response = new AddPartitionsToTxnResponseData(KafkaWire.exchange(socket,
                ApiKeys.ADD_PARTITIONS_TO_TXN, version, new AddPartitionsToTxnRequestData()
                        .setV3AndBelowTransactionalId(id).setV3AndBelowProducerId(holder.producerId())
                        .setV3AndBelowProducerEpoch(epoch).setV3AndBelowTopics(topics)), version);
        return Errors.forCode(response.resultsByTopicV3AndBelow().iterator().next().resultsByPartition().iterator()
                .next().partitionErrorCode());
    }

    private static Errors verifyOnly(Socket socket, String id, Holder holder, short epoch) throws IOException {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
        topics.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName("t").setPartitions(List.of(0)));
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection transactions =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection();
        transactions.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction().setTransactionalId(id)
                .setProducerId(holder.producerId()).setProducerEpoch(epoch).setVerifyOnly(true).setTopics(topics));
        AddPartitionsToTxnResponseData response = new AddPartitionsToTxnResponseData(KafkaWire.exchange(socket,
                ApiKeys.ADD_PARTITIONS_TO_TXN, (short) 5, new AddPartitionsToTxnRequestData()
                        .setTransactions(transactions)), (short) 5);
        return Errors.forCode(response.resultsByTransaction().iterator().next().topicResults().iterator().next()
                .resultsByPartition().iterator().next().partitionErrorCode());
    }

    private static Errors produce(Socket socket, short version, String id, Holder holder, int sequence)
            throws IOException {
        MemoryRecords records = MemoryRecords.withTransactionalRecords(Compression.NONE, holder.producerId(),
                holder.epoch(), sequence, new SimpleRecord("v".getBytes(StandardCharsets.UTF_8)));
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName("t").setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records))));
        ProduceResponseData response = new ProduceResponseData(KafkaWire.exchange(socket, ApiKeys.PRODUCE, version,
                new ProduceRequestData().setAcks((short) -1).setTimeoutMs(10_000).setTransactionalId(id)
                        .setTopicData(topics)), version);
        return Errors.forCode(response.responses().iterator().next().partitionResponses().getFirst().errorCode());
    }

    private static Errors txnOffsetCommit(Socket socket, short version, String id, Holder holder, short epoch,
                                          int generation, String member) throws IOException {
        TxnOffsetCommitRequestData request = new TxnOffsetCommitRequestData().setTransactionalId(id).setGroupId("g")
                .setProducerId(holder.producerId()).setProducerEpoch(epoch).setGenerationId(generation)
                .setMemberId(member).setTopics(List.of(new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic()
                        .setName("t").setPartitions(List.of(new TxnOffsetCommitRequestData
                                .TxnOffsetCommitRequestPartition().setPartitionIndex(0).setCommittedOffset(1)))));
        TxnOffsetCommitResponseData response = new TxnOffsetCommitResponseData(KafkaWire.exchange(socket,
                ApiKeys.TXN_OFFSET_COMMIT, version, request), version);
        return Errors.forCode(response.topics().getFirst().partitions().getFirst().errorCode());
    }

    private static Errors marker(Socket socket, Holder holder, short epoch, boolean commit, int coordinatorEpoch)
            throws IOException {
        org.apache.kafka.common.message.WriteTxnMarkersRequestData request =
                new org.apache.kafka.common.message.WriteTxnMarkersRequestData().setMarkers(List.of(
                        new org.apache.kafka.common.message.WriteTxnMarkersRequestData.WritableTxnMarker()
                                .setProducerId(holder.producerId()).setProducerEpoch(epoch)
                                .setTransactionResult(commit).setCoordinatorEpoch(coordinatorEpoch)
                                .setTopics(List.of(new org.apache.kafka.common.message.WriteTxnMarkersRequestData
                                        .WritableTxnMarkerTopic().setName("t").setPartitionIndexes(List.of(0))))));
        org.apache.kafka.common.message.WriteTxnMarkersResponseData response =
                new org.apache.kafka.common.message.WriteTxnMarkersResponseData(KafkaWire.exchange(socket,
                        ApiKeys.WRITE_TXN_MARKERS, (short) 1, request), (short) 1);
        return Errors.forCode(response.markers().getFirst().topics().getFirst().partitions().getFirst().errorCode());
    }

    /**
     * A marker from a coordinator that lost its place is refused: one of an older coordinator epoch than the last
     * taken for its producer, or of an older producer epoch than the producer's; else it could end the producer's
     * next transaction. And a bump's retry whose answer was lost gets the epoch it was given, not PRODUCER_FENCED.
     */
    @Test
    void aDeposedCoordinatorsMarkersAreRefusedAndARetriedBumpIsAnsweredAgain() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket(InetAddress.getLoopbackAddress(), broker.port())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            Holder holder = init(socket, "m");
            assertThat(marker(socket, holder, holder.epoch(), false, 5)).isEqualTo(Errors.NONE);
            assertThat(marker(socket, holder, holder.epoch(), false, 4))
                    .isEqualTo(Errors.TRANSACTION_COORDINATOR_FENCED);
            Holder next = new Holder(holder.producerId(), (short) (holder.epoch() + 1));
            assertThat(marker(socket, next, next.epoch(), false, 5)).isEqualTo(Errors.NONE);
            assertThat(marker(socket, holder, holder.epoch(), false, 5)).isEqualTo(Errors.INVALID_PRODUCER_EPOCH);

            Holder bumpee = init(socket, "n");
            InitProducerIdRequestData bump = new InitProducerIdRequestData().setTransactionalId("n")
                    .setTransactionTimeoutMs(60_000).setProducerId(bumpee.producerId())
                    .setProducerEpoch(bumpee.epoch());
            InitProducerIdResponseData first = new InitProducerIdResponseData(KafkaWire.exchange(socket,
                    ApiKeys.INIT_PRODUCER_ID, (short) 5, bump), (short) 5);
            InitProducerIdResponseData retried = new InitProducerIdResponseData(KafkaWire.exchange(socket,
                    ApiKeys.INIT_PRODUCER_ID, (short) 5, bump), (short) 5);
            assertThat(Errors.forCode(first.errorCode())).isEqualTo(Errors.NONE);
            assertThat(Errors.forCode(retried.errorCode())).isEqualTo(Errors.NONE);
            assertThat(retried.producerEpoch()).isEqualTo(first.producerEpoch());
        }
    }

    /**
     * After a restart, OffsetFetch asking for stable offsets is told UNSTABLE_OFFSET_COMMIT for an offset a transaction
     * left open is to commit, from the first request on (the coordinator's states are read before it answers).
     */
    @Test
    void anOffsetATransactionIsToCommitIsUnstableFromTheFirstFetchAfterARestart() throws Exception {
        Holder holder;
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket(InetAddress.getLoopbackAddress(), broker.port())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            holder = init(socket, "s");
            AddOffsetsToTxnResponseData added = new AddOffsetsToTxnResponseData(KafkaWire.exchange(socket,
                    ApiKeys.ADD_OFFSETS_TO_TXN, (short) 3, new AddOffsetsToTxnRequestData().setTransactionalId("s")
                            .setProducerId(holder.producerId()).setProducerEpoch(holder.epoch()).setGroupId("g")),
                    (short) 3);
            assertThat(Errors.forCode(added.errorCode())).isEqualTo(Errors.NONE);
            assertThat(txnOffsetCommit(socket, (short) 3, "s", holder, holder.epoch(), -1, "")).isEqualTo(Errors.NONE);
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket(InetAddress.getLoopbackAddress(), broker.port())) {
            org.apache.kafka.common.message.OffsetFetchResponseData fetched =
                    new org.apache.kafka.common.message.OffsetFetchResponseData(KafkaWire.exchange(socket,
                            ApiKeys.OFFSET_FETCH, (short) 7, new org.apache.kafka.common.message.OffsetFetchRequestData()
                                    .setGroupId("g").setRequireStable(true).setTopics(List.of(
                                            new org.apache.kafka.common.message.OffsetFetchRequestData
                                                    .OffsetFetchRequestTopic().setName("t")
                                                    .setPartitionIndexes(List.of(0))))), (short) 7);
            assertThat(Errors.forCode(fetched.topics().getFirst().partitions().getFirst().errorCode()))
                    .isEqualTo(Errors.UNSTABLE_OFFSET_COMMIT);
        }
    }

    @Test
    void edgePathsAreAnsweredAsKafkaAnswersThem() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket(InetAddress.getLoopbackAddress(), broker.port())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);

            // An idempotent producer naming another's producer id gets a new id, not that one's next epoch.
            Holder transactional = init(socket, "a");
            InitProducerIdResponseData idempotent = new InitProducerIdResponseData(KafkaWire.exchange(socket,
                    ApiKeys.INIT_PRODUCER_ID, (short) 5, new InitProducerIdRequestData().setTransactionalId(null)
                            .setTransactionTimeoutMs(60_000).setProducerId(transactional.producerId())
                            .setProducerEpoch(transactional.epoch())), (short) 5);
            assertThat(idempotent.producerId()).isNotEqualTo(transactional.producerId());
            assertThat(idempotent.producerEpoch()).isZero();

            // An empty transactional id is given the coordinator.
            FindCoordinatorResponseData found = new FindCoordinatorResponseData(KafkaWire.exchange(socket,
                    ApiKeys.FIND_COORDINATOR, (short) 4, new FindCoordinatorRequestData().setKeyType((byte) 1)
                            .setCoordinatorKeys(List.of(""))), (short) 4);
            assertThat(Errors.forCode(found.coordinators().getFirst().errorCode())).isEqualTo(Errors.NONE);

            // A stale epoch: INVALID_PRODUCER_EPOCH to AddPartitionsToTxn v1, PRODUCER_FENCED from v2.
            short stale = (short) (transactional.epoch() - 1);
            assertThat(addPartition(socket, (short) 1, "a", transactional, stale))
                    .isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
            assertThat(addPartition(socket, (short) 3, "a", transactional, stale)).isEqualTo(Errors.PRODUCER_FENCED);

            // A partition not in the transaction: a leader's check is TRANSACTION_ABORTABLE, Produce v11 too, v10
            // INVALID_TXN_STATE; a stale epoch's check PRODUCER_FENCED.
            assertThat(verifyOnly(socket, "a", transactional, transactional.epoch()))
                    .isEqualTo(Errors.TRANSACTION_ABORTABLE);
            assertThat(verifyOnly(socket, "a", transactional, stale)).isEqualTo(Errors.PRODUCER_FENCED);
            assertThat(produce(socket, (short) 11, "a", transactional, 0)).isEqualTo(Errors.TRANSACTION_ABORTABLE);
            assertThat(produce(socket, (short) 10, "a", transactional, 0)).isEqualTo(Errors.INVALID_TXN_STATE);

            // Produce v12 adds the partition to the transaction with its first batch.
            Holder implicit = init(socket, "b");
            assertThat(produce(socket, (short) 12, "b", implicit, 0)).isEqualTo(Errors.NONE);
            DescribeTransactionsResponseData described = new DescribeTransactionsResponseData(KafkaWire.exchange(
                    socket, ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, new DescribeTransactionsRequestData()
                            .setTransactionalIds(List.of("b", ""))), (short) 0);
            assertThat(described.transactionStates().get(0).transactionState()).isEqualTo("Ongoing");
            assertThat(described.transactionStates().get(0).topics().iterator().next().partitions())
                    .containsExactly(0);
            assertThat(Errors.forCode(described.transactionStates().get(1).errorCode()))
                    .isEqualTo(Errors.INVALID_REQUEST);

            // TxnOffsetCommit: a group not added to the transaction is INVALID_TXN_STATE to v3, TRANSACTION_ABORTABLE
            // from v4; a stale epoch INVALID_PRODUCER_EPOCH; a member named in a group with none UNKNOWN_MEMBER_ID.
            assertThat(txnOffsetCommit(socket, (short) 3, "a", transactional, transactional.epoch(), -1, ""))
                    .isEqualTo(Errors.INVALID_TXN_STATE);
            assertThat(txnOffsetCommit(socket, (short) 4, "a", transactional, transactional.epoch(), -1, ""))
                    .isEqualTo(Errors.TRANSACTION_ABORTABLE);
            AddOffsetsToTxnResponseData added = new AddOffsetsToTxnResponseData(KafkaWire.exchange(socket,
                    ApiKeys.ADD_OFFSETS_TO_TXN, (short) 3, new AddOffsetsToTxnRequestData().setTransactionalId("a")
                            .setProducerId(transactional.producerId()).setProducerEpoch(transactional.epoch())
                            .setGroupId("")), (short) 3);
            assertThat(Errors.forCode(added.errorCode())).as("an empty group id").isEqualTo(Errors.NONE);
            assertThat(txnOffsetCommit(socket, (short) 3, "a", transactional, stale, -1, ""))
                    .isEqualTo(Errors.INVALID_PRODUCER_EPOCH);
            assertThat(txnOffsetCommit(socket, (short) 3, "a", transactional, transactional.epoch(), 7, "m1"))
                    .isEqualTo(Errors.UNKNOWN_MEMBER_ID);

            // transaction.version 1, supported and finalized.
            ApiVersionsResponseData versions = new ApiVersionsResponseData(KafkaWire.exchange(socket,
                    ApiKeys.API_VERSIONS, (short) 3, new ApiVersionsRequestData().setClientSoftwareName("t")
                            .setClientSoftwareVersion("1")), (short) 3);
            assertThat(versions.finalizedFeatures().find("transaction.version").maxVersionLevel()).isEqualTo((short) 1);
            assertThat(versions.supportedFeatures().find("transaction.version").maxVersion()).isEqualTo((short) 1);
        }
    }
}
