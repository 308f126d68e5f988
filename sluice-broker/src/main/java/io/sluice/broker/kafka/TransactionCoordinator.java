package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.TopicDeletedException;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.message.AddOffsetsToTxnRequestData;
import org.apache.kafka.common.message.AddOffsetsToTxnResponseData;
import org.apache.kafka.common.message.AddPartitionsToTxnRequestData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData.AddPartitionsToTxnPartitionResult;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData.AddPartitionsToTxnPartitionResultCollection;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResult;
import org.apache.kafka.common.message.AddPartitionsToTxnResponseData.AddPartitionsToTxnTopicResultCollection;
import org.apache.kafka.common.message.DescribeTransactionsRequestData;
import org.apache.kafka.common.message.DescribeTransactionsResponseData;
import org.apache.kafka.common.message.EndTxnRequestData;
import org.apache.kafka.common.message.EndTxnResponseData;
import org.apache.kafka.common.message.InitProducerIdRequestData;
import org.apache.kafka.common.message.InitProducerIdResponseData;
import org.apache.kafka.common.message.ListTransactionsRequestData;
import org.apache.kafka.common.message.ListTransactionsResponseData;
import org.apache.kafka.common.message.TxnOffsetCommitRequestData;
import org.apache.kafka.common.message.TxnOffsetCommitResponseData;
import org.apache.kafka.common.message.WriteTxnMarkersRequestData;
import org.apache.kafka.common.message.WriteTxnMarkersResponseData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.ControlRecordType;
import org.apache.kafka.common.record.internal.EndTransactionMarker;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The transaction coordinator, as Kafka's (KIP-98, transaction version 1): gives each transactional id a producer id
 * and epoch, fencing the previous holder of the id; records the partitions and groups a transaction writes to; at
 * its end writes a COMMIT or ABORT marker to each of its partitions and commits its groups' offsets; aborts a
 * transaction left open past its timeout. Each transactional id's state is saved through the cluster
 * ({@link ClusterView#saveTransaction}) before any answer depends on it, so that a restart resumes it: a transaction
 * found prepared is completed again (its markers written again, which changes nothing in a partition that has them).
 *
 * <p>Transitions, as Kafka's: Empty or Complete → Ongoing (AddPartitionsToTxn, AddOffsetsToTxn) → PrepareCommit or
 * PrepareAbort (EndTxn, saved before any marker) → CompleteCommit or CompleteAbort (every marker written, the offsets
 * committed durably). EndTxn is answered once the transaction is complete, so that the producer's next transaction
 * does not meet it still prepared. Thread-safe: each transactional id is changed under its own lock.
 */
final class TransactionCoordinator implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(TransactionCoordinator.class);

    /** The longest transaction timeout a producer may ask for (Kafka's transaction.max.timeout.ms default). */
    static final int MAX_TIMEOUT_MS = 900_000;
    /** How often open transactions are checked against their timeout (Kafka's cleanup interval default). */
    static final long TIMEOUT_CHECK_MILLIS = 10_000;
    /** How long a save waits for the cluster. */
    private static final long SAVE_TIMEOUT_MILLIS = 15_000;

    private final ClusterView cluster;
    private final Partitions partitions;
    private final ProducerStates producerStates;
    private final ProducerIds producerIds;
    private final LongSupplier clock;
    private final BrokerRequests brokers;

    /** The coordinator's requests to other brokers use {@code client}'s TLS and SASL from now on. */
    void secureBrokerRequests(io.sluice.broker.kafka.security.InterBrokerClient client) {
        brokers.secure(client);
    }
    private volatile Map<String, Slot> slots = new ConcurrentHashMap<>();
    private volatile boolean loaded;
    /** The coordination epoch the states were loaded in (a cluster's metadata term; 0 for a broker alone). */
    private volatile long loadedEpoch = Long.MIN_VALUE;

    /** One transactional id: its state, changed under the slot's lock (and read without it: it is immutable). */
    private static final class Slot {
        volatile TransactionState state;
    }

    /**
     * @param clock the time in ms
     */
    TransactionCoordinator(ClusterView cluster, Partitions partitions, ProducerStates producerStates,
                           ProducerIds producerIds, LongSupplier clock) {
        this.brokers = new BrokerRequests(cluster);
        this.cluster = cluster;
        this.partitions = partitions;
        this.producerStates = producerStates;
        this.producerIds = producerIds;
        this.clock = clock;
    }

    /** Closes the connections to other brokers (the caller's timer runs the timeout checks). */
    @Override
    public void close() {
        brokers.close();
    }

    /** @return true if this broker coordinates transactions */
    boolean serves() {
        return cluster.coordinatesTransactions();
    }

    /**
     * Reads the saved states once per coordination epoch (a broker alone: once; a cluster's broker: each time it
     * becomes the coordinator, from what the cluster's metadata holds), completing the transactions left prepared.
     */
    private void ensureLoaded(long epoch) {
        if (loaded && loadedEpoch == epoch) {
            return;
        }
        Map<String, Slot> fresh = new ConcurrentHashMap<>();
        synchronized (this) {
            if (loaded && loadedEpoch == epoch) {
                return;
            }
            for (byte[] bytes : cluster.savedTransactions().values()) {
                TransactionState state = TransactionState.decode(bytes);
                Slot slot = new Slot();
                slot.state = state;
                fresh.put(state.transactionalId(), slot);
            }
            slots = fresh;
            loadedEpoch = epoch;
            loaded = true;
        }
        for (Slot slot : fresh.values()) {
            synchronized (slot) {
                TransactionState state = slot.state;
                if (state.status() == TransactionState.Status.PREPARE_COMMIT
                        || state.status() == TransactionState.Status.PREPARE_ABORT) {
                    try {
                        complete(slot);
                    } catch (RuntimeException e) {
                        LOG.warn("completing transaction {} after a restart failed (tried again later): {}",
                                state.transactionalId(), e.toString());
                    }
                }
            }
        }
    }

    /**
     * @return NONE if this broker coordinates transactions now (a cluster's controller, as for groups), its states
     *     loaded; else the error that sends the client to find the coordinator again
     */
    private Errors coordination() {
        if (!serves()) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        int controller = cluster.controller();
        if (controller < 0) {
            return Errors.COORDINATOR_NOT_AVAILABLE;
        }
        if (controller != cluster.self()) {
            return Errors.NOT_COORDINATOR;
        }
        if (!cluster.controllerReady()) {
            return Errors.COORDINATOR_LOAD_IN_PROGRESS;
        }
        long epoch = cluster.groupsCoordination().epoch();
        if (epoch < 0) {
            return Errors.NOT_COORDINATOR;
        }
        try {
            ensureLoaded(epoch);
        } catch (RuntimeException e) {
            LOG.warn("loading the transaction states failed: {}", e.toString());
            return Errors.COORDINATOR_LOAD_IN_PROGRESS;
        }
        return Errors.NONE;
    }

    // ---- InitProducerId ----

    InitProducerIdResponseData initProducerId(InitProducerIdRequestData request) {
        InitProducerIdResponseData response = new InitProducerIdResponseData().setProducerId(-1)
                .setProducerEpoch((short) -1);
        String id = request.transactionalId();
        if (id.isEmpty()) {
            return response.setErrorCode(Errors.INVALID_REQUEST.code());
        }
        int timeout = request.transactionTimeoutMs();
        if (timeout <= 0 || timeout > MAX_TIMEOUT_MS) {
            return response.setErrorCode(Errors.INVALID_TRANSACTION_TIMEOUT.code());
        }
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return response.setErrorCode(coordination.code());
        }
        Slot slot = slots.computeIfAbsent(id, ignored -> new Slot());
        synchronized (slot) {
            long now = clock.getAsLong();
            TransactionState state = slot.state;
            if (state == null) {
                TransactionState created = TransactionState.empty(id, producerIds.next(), (short) 0, timeout, now);
                Errors saved = save(slot, created);
                return saved != Errors.NONE ? response.setErrorCode(saved.code())
                        : response.setProducerId(created.producerId()).setProducerEpoch(created.epoch());
            }
            if (request.producerId() >= 0 && request.producerId() == state.producerId()
                    && request.producerEpoch() == state.epoch() - 1 && state.status() == TransactionState.Status.EMPTY
                    && state.timeoutMs() == timeout) {
                // The retry of a bump (KIP-360) whose answer was lost: the epoch it was given, again.
                return response.setProducerId(state.producerId()).setProducerEpoch(state.epoch());
            }
            if (request.producerId() >= 0 && (request.producerId() != state.producerId()
                    || request.producerEpoch() != state.epoch())) {
                // A producer bumping its epoch (KIP-360) must hold the id's current producer id and epoch.
                return response.setErrorCode(Errors.PRODUCER_FENCED.code());
            }
            switch (state.status()) {
                case PREPARE_COMMIT, PREPARE_ABORT -> {
                    completeQuietly(slot);
                    return response.setErrorCode(Errors.CONCURRENT_TRANSACTIONS.code());
                }
                case ONGOING -> {
                    // The previous holder left a transaction open: fenced (epoch bumped) and aborted; the caller
                    // retries and is then given the id.
                    Errors aborted = end(slot, fenced(state, now), false);
                    return response.setErrorCode(aborted == Errors.NONE ? Errors.CONCURRENT_TRANSACTIONS.code()
                            : aborted.code());
                }
                default -> {
                    TransactionState bumped = bumped(state, now);
                    TransactionState next = bumped.withProducer(bumped.producerId(), bumped.epoch(), timeout, now)
                            .to(TransactionState.Status.EMPTY, now);
                    Errors saved = save(slot, next);
                    return saved != Errors.NONE ? response.setErrorCode(saved.code())
                            : response.setProducerId(next.producerId()).setProducerEpoch(next.epoch());
                }
            }
        }
    }

    /** @return the state with the next epoch, or a new producer id at epoch 0 once the epochs are spent */
    private TransactionState bumped(TransactionState state, long now) {
        if (state.epoch() >= Short.MAX_VALUE - 1) {
            return state.withProducer(producerIds.next(), (short) 0, state.timeoutMs(), now);
        }
        return state.withProducer(state.producerId(), (short) (state.epoch() + 1), state.timeoutMs(), now);
    }

    /**
     * @return an open transaction's state with its producer fenced: the same producer id at the next epoch (up to
     *     32767, which a fence may take), the same transaction, so that its markers end what the partitions hold open
     *     under that id; a new id comes only at the producer's next InitProducerId
     */
    private static TransactionState fenced(TransactionState state, long now) {
        short next = state.epoch() < Short.MAX_VALUE ? (short) (state.epoch() + 1) : state.epoch();
        return state.withProducer(state.producerId(), next, state.timeoutMs(), now);
    }

    // ---- AddPartitionsToTxn, AddOffsetsToTxn ----

    AddPartitionsToTxnResponseData addPartitions(AddPartitionsToTxnRequestData request, short version) {
        if (version >= 4) {
            AddPartitionsToTxnResponseData.AddPartitionsToTxnResultCollection results =
                    new AddPartitionsToTxnResponseData.AddPartitionsToTxnResultCollection();
            for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction transaction : request.transactions()) {
                results.add(new AddPartitionsToTxnResponseData.AddPartitionsToTxnResult()
                        .setTransactionalId(transaction.transactionalId())
                        .setTopicResults(addPartitions(transaction.transactionalId(), transaction.producerId(),
                                transaction.producerEpoch(), transaction.topics(), transaction.verifyOnly())));
            }
            return new AddPartitionsToTxnResponseData().setResultsByTransaction(results);
        }
        AddPartitionsToTxnTopicResultCollection results = addPartitions(request.v3AndBelowTransactionalId(),
                request.v3AndBelowProducerId(), request.v3AndBelowProducerEpoch(), request.v3AndBelowTopics(), false);
        if (version < 2) {
            results.forEach(topic -> topic.resultsByPartition().forEach(partition -> partition.setPartitionErrorCode(
                    fencedAs(Errors.forCode(partition.partitionErrorCode()), version).code())));
        }
        return new AddPartitionsToTxnResponseData().setResultsByTopicV3AndBelow(results);
    }

    /**
     * @return {@code error}, PRODUCER_FENCED told as INVALID_PRODUCER_EPOCH to the versions from before KIP-588 (v0-1 of
     *     AddPartitionsToTxn, AddOffsetsToTxn and EndTxn), as Kafka's broker tells them
     */
    private static Errors fencedAs(Errors error, short version) {
        return error == Errors.PRODUCER_FENCED && version < 2 ? Errors.INVALID_PRODUCER_EPOCH : error;
    }

    private AddPartitionsToTxnTopicResultCollection addPartitions(
            String id, long producerId, short epoch, AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics,
            boolean verifyOnly) {
        Set<TransactionState.Partition> wanted = new LinkedHashSet<>();
        Set<TransactionState.Partition> unknown = new HashSet<>();
        for (AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic topic : topics) {
            int count = partitions.count(topic.name());
            for (int index : topic.partitions()) {
                TransactionState.Partition partition = new TransactionState.Partition(topic.name(), index);
                wanted.add(partition);
                if (index < 0 || index >= count) {
                    unknown.add(partition);
                }
            }
        }
        Map<TransactionState.Partition, Errors> errors = new LinkedHashMap<>();
        if (!unknown.isEmpty()) {
            // As Kafka: the unknown partitions fail, and the others are not tried.
            wanted.forEach(partition -> errors.put(partition, unknown.contains(partition)
                    ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.OPERATION_NOT_ATTEMPTED));
        } else if (verifyOnly) {
            // As Kafka answers a leader's check: a partition not in the transaction is TRANSACTION_ABORTABLE, a
            // fenced producer PRODUCER_FENCED.
            wanted.forEach(partition -> {
                Errors verified = verifyHere(id, producerId, epoch, partition.topic(), partition.index());
                errors.put(partition, verified == Errors.INVALID_TXN_STATE ? Errors.TRANSACTION_ABORTABLE
                        : verified == Errors.INVALID_PRODUCER_EPOCH ? Errors.PRODUCER_FENCED : verified);
            });
        } else {
            Errors error = add(id, producerId, epoch, wanted, Set.of());
            wanted.forEach(partition -> errors.put(partition, error));
        }
        Map<String, AddPartitionsToTxnPartitionResultCollection> byTopic = new LinkedHashMap<>();
        errors.forEach((partition, error) -> byTopic.computeIfAbsent(partition.topic(),
                        ignored -> new AddPartitionsToTxnPartitionResultCollection())
                .add(new AddPartitionsToTxnPartitionResult().setPartitionIndex(partition.index())
                        .setPartitionErrorCode(error.code())));
        AddPartitionsToTxnTopicResultCollection results = new AddPartitionsToTxnTopicResultCollection();
        byTopic.forEach((topic, results1) -> results.add(new AddPartitionsToTxnTopicResult().setName(topic)
                .setResultsByPartition(results1)));
        return results;
    }

    /** The group's id is not checked here, as Kafka's coordinator does not: its TxnOffsetCommit is. */
    AddOffsetsToTxnResponseData addOffsets(AddOffsetsToTxnRequestData request, short version) {
        return new AddOffsetsToTxnResponseData().setErrorCode(fencedAs(add(request.transactionalId(),
                request.producerId(), request.producerEpoch(), Set.of(), Set.of(request.groupId())), version).code());
    }

    /** Adds partitions and groups to a producer's transaction, opening it if none is open. */
    private Errors add(String id, long producerId, short epoch, Set<TransactionState.Partition> morePartitions,
                       Set<String> moreGroups) {
        if (id == null || id.isEmpty()) {
            return Errors.INVALID_REQUEST;
        }
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return coordination;
        }
        Slot slot = slots.get(id);
        if (slot == null) {
            return Errors.INVALID_PRODUCER_ID_MAPPING;
        }
        synchronized (slot) {
            TransactionState state = slot.state;
            Errors holder = holder(state, producerId, epoch);
            if (holder != Errors.NONE) {
                return holder;
            }
            switch (state.status()) {
                case PREPARE_COMMIT, PREPARE_ABORT -> {
                    completeQuietly(slot);
                    return Errors.CONCURRENT_TRANSACTIONS;
                }
                case ONGOING -> {
                    if (state.partitions().containsAll(morePartitions) && state.groups().containsAll(moreGroups)) {
                        return Errors.NONE;
                    }
                }
                default -> {
                }
            }
            return save(slot, state.adding(morePartitions, moreGroups, clock.getAsLong()));
        }
    }

    /** @return NONE if the producer holds the id's current producer id and epoch, else the error to answer */
    private static Errors holder(TransactionState state, long producerId, short epoch) {
        if (state == null || state.producerId() != producerId) {
            return Errors.INVALID_PRODUCER_ID_MAPPING;
        }
        if (state.epoch() != epoch) {
            return Errors.PRODUCER_FENCED;
        }
        return Errors.NONE;
    }

    /**
     * The check a partition's leader makes of a transaction's batch before it appends it (KIP-890): the producer holds
     * the transactional id, its transaction is open, and the partition was added to it.
     *
     * @return NONE, INVALID_PRODUCER_EPOCH for a fenced producer, or INVALID_TXN_STATE
     */
    Errors verify(String id, long producerId, short epoch, String topic, int index) {
        Errors coordination = coordination();
        if (coordination == Errors.NOT_COORDINATOR) {
            return verifyRemotely(id, producerId, epoch, topic, index);
        }
        if (coordination != Errors.NONE) {
            // As Kafka's leaders answer when the coordinator cannot say now: retriable.
            return Errors.NOT_ENOUGH_REPLICAS;
        }
        return verifyHere(id, producerId, epoch, topic, index);
    }

    /**
     * The coordinator's side of a leader's check (AddPartitionsToTxn v4-5, verify only): NOT_COORDINATOR (or the like)
     * when this broker does not coordinate now, rather than asking another.
     */
    private Errors verifyHere(String id, long producerId, short epoch, String topic, int index) {
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return coordination;
        }
        Slot slot = id == null ? null : slots.get(id);
        if (slot == null) {
            return Errors.INVALID_PRODUCER_ID_MAPPING;
        }
        synchronized (slot) {
            TransactionState state = slot.state;
            if (state == null || state.producerId() != producerId) {
                return Errors.INVALID_PRODUCER_ID_MAPPING;
            }
            if (epoch < state.epoch()) {
                return Errors.INVALID_PRODUCER_EPOCH;
            }
            return epoch == state.epoch() && state.status() == TransactionState.Status.ONGOING
                    && state.partitions().contains(new TransactionState.Partition(topic, index))
                    ? Errors.NONE : Errors.INVALID_TXN_STATE;
        }
    }

    /**
     * Adds a partition to a producer's transaction for its first batch (Produce v12): here if this broker
     * coordinates, else with AddPartitionsToTxn v5 to the coordinator.
     *
     * @return NONE once added, or the error to answer the batch with
     */
    Errors addImplicitly(String id, long producerId, short epoch, String topic, int index) {
        Errors coordination = coordination();
        Errors added = coordination == Errors.NONE
                ? add(id, producerId, epoch, Set.of(new TransactionState.Partition(topic, index)), Set.of())
                : coordination == Errors.NOT_COORDINATOR ? askCoordinator(id, producerId, epoch, topic, index, false)
                : null;
        // No answer now (the coordinator loading, unreachable, or completing the last transaction) is retriable: the
        // producer sends the batch again.
        return added == null || added == Errors.CONCURRENT_TRANSACTIONS ? Errors.NOT_ENOUGH_REPLICAS
                : added == Errors.PRODUCER_FENCED ? Errors.INVALID_PRODUCER_EPOCH : added;
    }

    /**
     * Asks the coordinator (the controller) about one partition of a producer's transaction, as Kafka's leaders ask:
     * AddPartitionsToTxn v4 to check it is in the transaction ({@code verifyOnly}), v5 to add it.
     *
     * @return the coordinator's answer for the partition (its request's error if it refused the whole request), or
     *     null if the coordinator could not be reached
     */
    private Errors askCoordinator(String id, long producerId, short epoch, String topic, int index,
                                  boolean verifyOnly) {
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection topics =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopicCollection();
        topics.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTopic().setName(topic)
                .setPartitions(List.of(index)));
        AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection transactions =
                new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransactionCollection();
        transactions.add(new AddPartitionsToTxnRequestData.AddPartitionsToTxnTransaction().setTransactionalId(id)
                .setProducerId(producerId).setProducerEpoch(epoch).setVerifyOnly(verifyOnly).setTopics(topics));
        AddPartitionsToTxnResponseData response;
        try {
            response = brokers.send(cluster.controller(), org.apache.kafka.common.protocol.ApiKeys.ADD_PARTITIONS_TO_TXN,
                    verifyOnly ? (short) 4 : (short) 5, new AddPartitionsToTxnRequestData().setTransactions(transactions),
                    new AddPartitionsToTxnResponseData());
        } catch (java.io.IOException e) {
            LOG.warn("asking the coordinator about partition {}-{} of transaction {} failed: {}", topic, index, id,
                    e.toString());
            return null;
        }
        if (response.errorCode() != Errors.NONE.code()) {
            return Errors.forCode(response.errorCode());
        }
        for (AddPartitionsToTxnResponseData.AddPartitionsToTxnResult result : response.resultsByTransaction()) {
            for (AddPartitionsToTxnTopicResult topicResult : result.topicResults()) {
                for (AddPartitionsToTxnPartitionResult answer : topicResult.resultsByPartition()) {
                    if (answer.partitionErrorCode() != Errors.NONE.code()) {
                        return Errors.forCode(answer.partitionErrorCode());
                    }
                }
            }
        }
        return Errors.NONE;
    }

    /** Checks with the coordinator (the controller), verify only, as Kafka's leaders check. */
    private Errors verifyRemotely(String id, long producerId, short epoch, String topic, int index) {
        Errors error = askCoordinator(id, producerId, epoch, topic, index, true);
        if (error == null) {
            return Errors.NOT_ENOUGH_REPLICAS; // retriable: the producer sends the batch again
        }
        return error == Errors.NONE ? Errors.NONE
                : error == Errors.PRODUCER_FENCED || error == Errors.INVALID_PRODUCER_EPOCH ? Errors.INVALID_PRODUCER_EPOCH
                : error == Errors.INVALID_PRODUCER_ID_MAPPING ? error
                : error == Errors.TRANSACTION_ABORTABLE || error == Errors.INVALID_TXN_STATE ? Errors.INVALID_TXN_STATE
                : Errors.NOT_ENOUGH_REPLICAS; // the coordinator moving or loading: retriable
    }

    // ---- TxnOffsetCommit ----

    /**
     * Stages a transaction's group offsets: saved with its state, committed with it, dropped if it aborts. The group's
     * generation and member, when given, are checked by {@code groupCheck}.
     */
    TxnOffsetCommitResponseData commitOffsets(TxnOffsetCommitRequestData request, short version, Errors groupCheck) {
        Errors error = groupCheck;
        if (error == Errors.NONE && GroupNames.toStore(request.groupId()) == null) {
            error = Errors.INVALID_GROUP_ID;
        }
        Map<TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition, Errors> byPartition = new LinkedHashMap<>();
        List<TransactionState.Offset> offsets = new ArrayList<>();
        for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic topic : request.topics()) {
            int count = partitions.count(topic.name());
            for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition partition : topic.partitions()) {
                if (partition.partitionIndex() < 0 || partition.partitionIndex() >= count) {
                    byPartition.put(partition, Errors.UNKNOWN_TOPIC_OR_PARTITION);
                } else {
                    offsets.add(new TransactionState.Offset(request.groupId(), topic.name(),
                            partition.partitionIndex(), partition.committedOffset()));
                }
            }
        }
        if (error == Errors.NONE && !offsets.isEmpty()) {
            error = stage(request.transactionalId(), request.producerId(), request.producerEpoch(),
                    request.groupId(), offsets);
            // As Kafka's group coordinator answers: a stale epoch is INVALID_PRODUCER_EPOCH, and from v4 a group not
            // in the transaction TRANSACTION_ABORTABLE.
            if (error == Errors.PRODUCER_FENCED) {
                error = Errors.INVALID_PRODUCER_EPOCH;
            } else if (error == Errors.INVALID_TXN_STATE && version >= 4) {
                error = Errors.TRANSACTION_ABORTABLE;
            }
        }
        TxnOffsetCommitResponseData response = new TxnOffsetCommitResponseData();
        for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic topic : request.topics()) {
            List<TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition> answers = new ArrayList<>();
            for (TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition partition : topic.partitions()) {
                answers.add(new TxnOffsetCommitResponseData.TxnOffsetCommitResponsePartition()
                        .setPartitionIndex(partition.partitionIndex())
                        .setErrorCode(byPartition.getOrDefault(partition, error).code()));
            }
            response.topics().add(new TxnOffsetCommitResponseData.TxnOffsetCommitResponseTopic()
                    .setName(topic.name()).setPartitions(answers));
        }
        return response;
    }

    private Errors stage(String id, long producerId, short epoch, String group,
                         List<TransactionState.Offset> offsets) {
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return coordination;
        }
        Slot slot = id == null ? null : slots.get(id);
        if (slot == null) {
            return Errors.INVALID_PRODUCER_ID_MAPPING;
        }
        synchronized (slot) {
            TransactionState state = slot.state;
            if (state == null || state.producerId() != producerId) {
                return Errors.INVALID_PRODUCER_ID_MAPPING;
            }
            if (state.epoch() != epoch) {
                return Errors.PRODUCER_FENCED;
            }
            if (state.status() == TransactionState.Status.PREPARE_COMMIT
                    || state.status() == TransactionState.Status.PREPARE_ABORT) {
                return Errors.CONCURRENT_TRANSACTIONS;
            }
            if (state.status() != TransactionState.Status.ONGOING || !state.groups().contains(group)) {
                // The group was not added to the transaction (AddOffsetsToTxn): its offsets would never commit.
                return Errors.INVALID_TXN_STATE;
            }
            return save(slot, state.staging(offsets, clock.getAsLong()));
        }
    }

    /** @return whether an open transaction has offsets of the group's partition to commit (OffsetFetch's stability) */
    boolean pendingOffset(String group, String topic, int partition) {
        if (!serves()) {
            return false;
        }
        if (coordination() != Errors.NONE) {
            // The states are not loaded (yet): a transaction may be about to commit this offset.
            return true;
        }
        for (Slot slot : slots.values()) {
            TransactionState state = slot.state;
            if (state != null && !state.offsets().isEmpty() && state.status() != TransactionState.Status.EMPTY
                    && state.status() != TransactionState.Status.COMPLETE_COMMIT
                    && state.status() != TransactionState.Status.COMPLETE_ABORT) {
                for (TransactionState.Offset offset : state.offsets()) {
                    if (offset.group().equals(group) && offset.topic().equals(topic)
                            && offset.partition() == partition) {
                        return true;
                    }
                }
            }
        }
        return false;
    }

    // ---- EndTxn, timeouts ----

    EndTxnResponseData endTxn(EndTxnRequestData request, short version) {
        EndTxnResponseData response = endTxn(request);
        return response.setErrorCode(fencedAs(Errors.forCode(response.errorCode()), version).code());
    }

    private EndTxnResponseData endTxn(EndTxnRequestData request) {
        String id = request.transactionalId();
        if (id == null || id.isEmpty()) {
            return new EndTxnResponseData().setErrorCode(Errors.INVALID_REQUEST.code());
        }
        Errors coordination = coordination();
        if (coordination != Errors.NONE) {
            return new EndTxnResponseData().setErrorCode(coordination.code());
        }
        Slot slot = slots.get(id);
        if (slot == null) {
            return new EndTxnResponseData().setErrorCode(Errors.INVALID_PRODUCER_ID_MAPPING.code());
        }
        boolean commit = request.committed();
        synchronized (slot) {
            TransactionState state = slot.state;
            Errors holder = holder(state, request.producerId(), request.producerEpoch());
            if (holder != Errors.NONE) {
                return new EndTxnResponseData().setErrorCode(holder.code());
            }
            Errors error = switch (state.status()) {
                case ONGOING -> end(slot, state, commit);
                case COMPLETE_COMMIT -> commit ? Errors.NONE : Errors.INVALID_TXN_STATE;
                case COMPLETE_ABORT -> commit ? Errors.INVALID_TXN_STATE : Errors.NONE;
                case PREPARE_COMMIT -> {
                    if (!commit) {
                        yield Errors.INVALID_TXN_STATE;
                    }
                    yield completeQuietly(slot) ? Errors.NONE : Errors.CONCURRENT_TRANSACTIONS;
                }
                case PREPARE_ABORT -> {
                    if (commit) {
                        yield Errors.INVALID_TXN_STATE;
                    }
                    yield completeQuietly(slot) ? Errors.NONE : Errors.CONCURRENT_TRANSACTIONS;
                }
                case EMPTY -> Errors.INVALID_TXN_STATE;
            };
            return new EndTxnResponseData().setErrorCode(error.code());
        }
    }

    /**
     * Ends an open transaction (its state {@code state}, which may carry a fenced epoch): prepared and saved, then
     * completed. Call under the slot's lock.
     *
     * @return NONE once it is prepared (complete, unless a marker could not be written yet: then it completes later)
     */
    private Errors end(Slot slot, TransactionState state, boolean commit) {
        Errors saved = save(slot, state.to(commit ? TransactionState.Status.PREPARE_COMMIT
                : TransactionState.Status.PREPARE_ABORT, clock.getAsLong()));
        if (saved != Errors.NONE) {
            return saved;
        }
        completeQuietly(slot);
        return Errors.NONE;
    }

    /** {@link #complete}, a failure logged; @return whether the transaction is complete */
    private boolean completeQuietly(Slot slot) {
        try {
            complete(slot);
            return true;
        } catch (RuntimeException e) {
            LOG.warn("completing transaction {} failed (tried again later): {}", slot.state.transactionalId(),
                    e.toString());
            return false;
        }
    }

    /**
     * Completes a prepared transaction: its marker written to each of its partitions, its offsets committed (on a
     * commit), and its complete state saved. Call under the slot's lock.
     *
     * @throws RuntimeException if a marker, the offsets or the state could not be written (it stays prepared)
     */
    private void complete(Slot slot) {
        TransactionState state = slot.state;
        boolean commit = state.status() == TransactionState.Status.PREPARE_COMMIT;
        long epoch = loadedEpoch;
        for (TransactionState.Partition partition : state.partitions()) {
            // A coordinator that lost its place writes no more markers: the next one completes the transaction.
            if (coordination() != Errors.NONE || loadedEpoch != epoch) {
                throw new Partition.NotLeaderException("this broker no longer coordinates transactions");
            }
            writeMarker(partition, state.producerId(), state.epoch(), commit, (int) epoch);
        }
        if (commit) {
            Map<String, List<ClusterView.CommittedOffset>> byGroup = new LinkedHashMap<>();
            for (TransactionState.Offset offset : state.offsets()) {
                byGroup.computeIfAbsent(offset.group(), ignored -> new ArrayList<>()).add(
                        new ClusterView.CommittedOffset(offset.topic(), offset.partition(), offset.offset()));
            }
            for (Map.Entry<String, List<ClusterView.CommittedOffset>> group : byGroup.entrySet()) {
                await(cluster.commitTransactionOffsets(GroupNames.toStore(group.getKey()), group.getValue()));
            }
        }
        Errors saved = save(slot, state.completed(commit ? TransactionState.Status.COMPLETE_COMMIT
                : TransactionState.Status.COMPLETE_ABORT, clock.getAsLong()));
        if (saved != Errors.NONE) {
            throw new IllegalStateException("the complete state could not be saved: " + saved);
        }
    }

    /**
     * Writes a transaction marker to a partition this broker leads, waiting until it is stored. A partition whose
     * topic went is passed over.
     */
    private void writeMarker(TransactionState.Partition target, long producerId, short epoch, boolean commit,
                             int coordinatorEpoch) {
        Partition partition = partitions.partition(target.topic(), target.index());
        if (partition == null) {
            return; // the topic was deleted: nothing left to mark
        }
        if (!partition.leads()) {
            writeMarkerRemotely(partition, producerId, epoch, commit, coordinatorEpoch);
            return;
        }
        Errors error = writeMarkerHere(partition, producerId, epoch, commit, coordinatorEpoch);
        if (error == Errors.INVALID_PRODUCER_EPOCH) {
            // As Kafka's coordinator: the producer has moved to a newer epoch there, so this transaction is over there.
            LOG.warn("the marker of producer {} epoch {} to {}-{} is older than the producer there: passed over",
                    producerId, epoch, target.topic(), target.index());
            return;
        }
        if (error != Errors.NONE) {
            throw new IllegalStateException("the marker of " + target.topic() + "-" + target.index() + ": " + error);
        }
    }

    /** Sends the marker to the partition's leader (WriteTxnMarkers), waiting for its answer. */
    private void writeMarkerRemotely(Partition partition, long producerId, short epoch, boolean commit,
                                     int coordinatorEpoch) {
        int leader = partition.leadership().leader();
        if (leader < 0) {
            throw new Partition.NotLeaderException("no leader of " + partition.topic() + "-" + partition.index());
        }
        WriteTxnMarkersRequestData.WritableTxnMarker marker = new WriteTxnMarkersRequestData.WritableTxnMarker()
                .setProducerId(producerId).setProducerEpoch(epoch).setTransactionResult(commit)
                .setCoordinatorEpoch(coordinatorEpoch).setTopics(List.of(new WriteTxnMarkersRequestData.WritableTxnMarkerTopic()
                        .setName(partition.topic()).setPartitionIndexes(List.of(partition.index()))));
        WriteTxnMarkersResponseData response;
        try {
            response = brokers.send(leader, org.apache.kafka.common.protocol.ApiKeys.WRITE_TXN_MARKERS, (short) 1,
                    new WriteTxnMarkersRequestData().setMarkers(List.of(marker)), new WriteTxnMarkersResponseData());
        } catch (java.io.IOException e) {
            throw new IllegalStateException("the marker of " + partition.topic() + "-" + partition.index()
                    + " could not reach broker " + leader + ": " + e, e);
        }
        for (WriteTxnMarkersResponseData.WritableTxnMarkerResult result : response.markers()) {
            for (WriteTxnMarkersResponseData.WritableTxnMarkerTopicResult topic : result.topics()) {
                for (WriteTxnMarkersResponseData.WritableTxnMarkerPartitionResult answer : topic.partitions()) {
                    Errors error = Errors.forCode(answer.errorCode());
                    // UNKNOWN_TOPIC_OR_PARTITION too is tried again (a leader whose metadata lags this broker's); a
                    // producer moved to a newer epoch there (as Kafka's coordinator) leaves nothing to mark.
                    if (error != Errors.NONE && error != Errors.INVALID_PRODUCER_EPOCH) {
                        throw new IllegalStateException("the marker of " + partition.topic() + "-"
                                + partition.index() + " on broker " + leader + ": " + error);
                    }
                }
            }
        }
    }

    /** WriteTxnMarkers, from a coordinator: each marker written to the partitions this broker leads. */
    WriteTxnMarkersResponseData writeMarkers(WriteTxnMarkersRequestData request) {
        WriteTxnMarkersResponseData response = new WriteTxnMarkersResponseData();
        for (WriteTxnMarkersRequestData.WritableTxnMarker marker : request.markers()) {
            WriteTxnMarkersResponseData.WritableTxnMarkerResult result =
                    new WriteTxnMarkersResponseData.WritableTxnMarkerResult().setProducerId(marker.producerId());
            response.markers().add(result);
            for (WriteTxnMarkersRequestData.WritableTxnMarkerTopic topic : marker.topics()) {
                WriteTxnMarkersResponseData.WritableTxnMarkerTopicResult topicResult =
                        new WriteTxnMarkersResponseData.WritableTxnMarkerTopicResult().setName(topic.name());
                result.topics().add(topicResult);
                for (int index : topic.partitionIndexes()) {
                    Partition partition = partitions.partition(topic.name(), index);
                    Errors error;
                    if (partition == null) {
                        error = Errors.UNKNOWN_TOPIC_OR_PARTITION;
                    } else if (!partition.leads()) {
                        error = Errors.NOT_LEADER_OR_FOLLOWER;
                    } else {
                        error = writeMarkerHere(partition, marker.producerId(), marker.producerEpoch(),
                                marker.transactionResult(), marker.coordinatorEpoch());
                    }
                    topicResult.partitions().add(new WriteTxnMarkersResponseData.WritableTxnMarkerPartitionResult()
                            .setPartitionIndex(index).setErrorCode(error.code()));
                }
            }
        }
        return response;
    }

    /**
     * Writes a marker to a partition this broker leads, waiting until it is committed (in a cluster, a majority of
     * the replicas have it: the replica that takes over holds it too). The producer's transaction ends in the
     * partition's state only then, at the marker's offset, so the last stable offset never passes a marker that a
     * new leader may not have.
     *
     * @return NONE, or the error: a marker from a coordinator that lost its place is refused
     */
    private Errors writeMarkerHere(Partition partition, long producerId, short epoch, boolean commit,
                                   int coordinatorEpoch) {
        MemoryRecords marker = MemoryRecords.withEndTransactionMarker(0L, clock.getAsLong(), partition.leaderEpoch(),
                producerId, epoch, new EndTransactionMarker(commit ? ControlRecordType.COMMIT : ControlRecordType.ABORT,
                        coordinatorEpoch));
        KafkaBatch batch = KafkaBatch.check(MemorySegment.ofBuffer(marker.buffer()));
        ProducerStates.Producers state = producerStates.of(partition);
        CompletableFuture<Long> committed;
        synchronized (state.lock) {
            Errors refused = state.checkMarker(producerId, epoch, coordinatorEpoch);
            if (refused != Errors.NONE) {
                LOG.warn("refused a marker of producer {} epoch {} from coordinator epoch {} to {}-{}: {}", producerId,
                        epoch, coordinatorEpoch, partition.topic(), partition.index(), refused);
                return refused;
            }
            Partition.Appended appended = partition.append(batch, Durability.ACKNOWLEDGED);
            committed = appended.committed();
            if (!appended.stored().isCompletedExceptionally()) {
                state.recordMarkerAppended(producerId, epoch, coordinatorEpoch);
            }
        }
        try {
            long offset = await(committed);
            synchronized (state.lock) {
                state.recordMarkerCommitted(producerId, commit, offset);
            }
            return Errors.NONE;
        } catch (RuntimeException e) {
            if (e.getCause() instanceof TopicDeletedException) {
                return Errors.UNKNOWN_TOPIC_OR_PARTITION;
            }
            synchronized (state.lock) {
                state.invalidate();
            }
            LOG.warn("a marker of producer {} to {}-{} failed: {}", producerId, partition.topic(), partition.index(),
                    e.toString());
            return e.getCause() instanceof Partition.NotLeaderException ? Errors.NOT_LEADER_OR_FOLLOWER
                    : Errors.KAFKA_STORAGE_ERROR;
        }
    }

    /** Aborts the transactions open past their timeout, their producers fenced; completes those left prepared. */
    void abortTimedOut() {
        if (!serves() || coordination() != Errors.NONE) {
            return;
        }
        long now = clock.getAsLong();
        for (Slot slot : slots.values()) {
            synchronized (slot) {
                TransactionState state = slot.state;
                if (state == null) {
                    continue;
                }
                if (state.status() == TransactionState.Status.ONGOING
                        && now - state.startedMs() > state.timeoutMs()) {
                    LOG.info("aborting transaction {} of producer {} epoch {}: open for {} ms, past its timeout",
                            state.transactionalId(), state.producerId(), state.epoch(), now - state.startedMs());
                    end(slot, fenced(state, now), false);
                } else if (state.status() == TransactionState.Status.PREPARE_COMMIT
                        || state.status() == TransactionState.Status.PREPARE_ABORT) {
                    completeQuietly(slot);
                }
            }
        }
    }

    /** Saves a slot's next state, then takes it; call under the slot's lock. @return NONE, or the error to answer */
    private Errors save(Slot slot, TransactionState next) {
        try {
            // Stamped with the epoch the states were loaded in: a save by a coordinator that lost its place since
            // (even one that came back in a later epoch, its states reloaded) is refused.
            await(cluster.saveTransaction(next.transactionalId(), next.encode(), loadedEpoch));
            slot.state = next;
            return Errors.NONE;
        } catch (RuntimeException e) {
            LOG.warn("saving the state of transaction {} failed: {}", next.transactionalId(), e.toString());
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            // As Kafka's coordinator answers a failed append to its log: the client finds the coordinator again.
            return cause instanceof Partition.NotLeaderException ? Errors.NOT_COORDINATOR
                    : Errors.COORDINATOR_NOT_AVAILABLE;
        }
    }

    private static <T> T await(CompletableFuture<T> future) {
        try {
            return future.get(SAVE_TIMEOUT_MILLIS, TimeUnit.MILLISECONDS);
        } catch (ExecutionException e) {
            throw new IllegalStateException(String.valueOf(e.getCause().getMessage()), e.getCause());
        } catch (TimeoutException e) {
            throw new IllegalStateException("timed out", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }

    // ---- ListTransactions, DescribeTransactions ----

    /**
     * ListTransactions, which Admin asks every broker: a broker that coordinates none (in a cluster, one that is not
     * the controller) answers an empty list, as a Kafka broker leading no partition of __transaction_state does.
     */
    ListTransactionsResponseData list(ListTransactionsRequestData request) {
        ListTransactionsResponseData response = new ListTransactionsResponseData();
        Set<String> known = new HashSet<>();
        for (TransactionState.Status status : TransactionState.Status.values()) {
            known.add(status.kafkaName());
        }
        List<String> unknownStates = new ArrayList<>();
        for (String filter : request.stateFilters()) {
            if (!known.contains(filter)) {
                unknownStates.add(filter);
            }
        }
        Errors coordination = coordination();
        if (coordination == Errors.NOT_COORDINATOR) {
            return response.setUnknownStateFilters(unknownStates);
        }
        if (coordination != Errors.NONE) {
            return response.setErrorCode(coordination.code());
        }
        Pattern pattern = null;
        if (request.transactionalIdPattern() != null && !request.transactionalIdPattern().isEmpty()) {
            try {
                pattern = Pattern.compile(request.transactionalIdPattern());
            } catch (PatternSyntaxException e) {
                return response.setErrorCode(Errors.INVALID_REGULAR_EXPRESSION.code());
            }
        }
        long now = clock.getAsLong();
        List<ListTransactionsResponseData.TransactionState> listed = new ArrayList<>();
        for (Slot slot : slots.values()) {
            TransactionState state = slot.state;
            if (state == null
                    || !request.stateFilters().isEmpty() && !request.stateFilters().contains(state.status().kafkaName())
                    || !request.producerIdFilters().isEmpty() && !request.producerIdFilters()
                            .contains(state.producerId())
                    || request.durationFilter() >= 0 && (state.status() != TransactionState.Status.ONGOING
                            || now - state.startedMs() < request.durationFilter())
                    || pattern != null && !pattern.matcher(state.transactionalId()).matches()) {
                continue;
            }
            listed.add(new ListTransactionsResponseData.TransactionState()
                    .setTransactionalId(state.transactionalId()).setProducerId(state.producerId())
                    .setTransactionState(state.status().kafkaName()));
        }
        return response.setUnknownStateFilters(unknownStates).setTransactionStates(listed);
    }

    DescribeTransactionsResponseData describe(DescribeTransactionsRequestData request) {
        DescribeTransactionsResponseData response = new DescribeTransactionsResponseData();
        Errors coordination = coordination();
        for (String id : request.transactionalIds()) {
            DescribeTransactionsResponseData.TransactionState answer =
                    new DescribeTransactionsResponseData.TransactionState().setTransactionalId(id)
                            .setTransactionState("").setProducerId(-1).setProducerEpoch((short) -1)
                            .setTransactionStartTimeMs(-1);
            response.transactionStates().add(answer);
            if (coordination != Errors.NONE) {
                answer.setErrorCode(coordination.code());
                continue;
            }
            if (id == null || id.isEmpty()) {
                answer.setErrorCode(Errors.INVALID_REQUEST.code());
                continue;
            }
            Slot slot = slots.get(id);
            TransactionState state = slot == null ? null : slot.state;
            if (state == null) {
                answer.setErrorCode(Errors.TRANSACTIONAL_ID_NOT_FOUND.code());
                continue;
            }
            Map<String, List<Integer>> byTopic = new LinkedHashMap<>();
            state.partitions().forEach(partition -> byTopic.computeIfAbsent(partition.topic(),
                    ignored -> new ArrayList<>()).add(partition.index()));
            DescribeTransactionsResponseData.TopicDataCollection topics =
                    new DescribeTransactionsResponseData.TopicDataCollection();
            byTopic.forEach((topic, indexes) -> topics.add(new DescribeTransactionsResponseData.TopicData()
                    .setTopic(topic).setPartitions(indexes)));
            answer.setTransactionState(state.status().kafkaName()).setTransactionTimeoutMs(state.timeoutMs())
                    .setTransactionStartTimeMs(state.startedMs()).setProducerId(state.producerId())
                    .setProducerEpoch(state.epoch()).setTopics(topics);
        }
        return response;
    }
}
