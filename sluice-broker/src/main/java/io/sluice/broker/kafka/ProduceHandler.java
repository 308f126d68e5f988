package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.broker.metrics.BrokerMetrics;
import io.sluice.store.Durability;
import io.sluice.store.KafkaBatch;
import io.sluice.store.TopicDeletedException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.LongSupplier;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.message.ProduceResponseData.PartitionProduceResponse;
import org.apache.kafka.common.message.ProduceResponseData.TopicProduceResponse;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Produce: each partition's record batch is checked ({@link RecordBatches#check}), passed through the idempotent
 * producer's sequence check ({@link ProducerStates}), and appended to the {@link Partition} as the producer sent it,
 * compressed or not. acks=1 answers once the partition stored the batch, acks=-1 once it is committed (for a broker
 * alone the same moment; in a cluster once a majority of the replicas have it), acks=0 never. A batch refused for any
 * reason stores nothing, and each partition is answered on its own.
 */
final class ProduceHandler {

    private static final Logger LOG = LoggerFactory.getLogger(ProduceHandler.class);

    /** The record walker of each thread that checks batches. */
    private static final ThreadLocal<RecordWalker> WALKERS = ThreadLocal.withInitial(RecordWalker::new);

    /** The first Produce version that names topics by id only. */
    static final short TOPIC_IDS = 13;

    /** How long a produce waits for this broker, just elected leader, to be ready to append. */
    static final long LEADER_READY_WAIT_MILLIS = 2_000;

    private final Partitions partitions;
    private final ClusterView cluster;
    private final ProducerStates producers;
    private final BrokerMetrics metrics;
    private final ProducePolicies policies;
    private final int storeMaxBatchBytes;
    private final LongSupplier clock;
    private final TopicFlushes flushes;
    private final TransactionCoordinator transactions;

    /**
     * @param metrics where acknowledged appends are timed, or null
     * @param policies what each topic's configs ask of a produce
     * @param storeMaxBatchBytes the largest batch the store takes, whatever a topic's max.message.bytes
     * @param clock the time in ms (timestamps checked and stamped, flush.ms)
     */
    ProduceHandler(Partitions partitions, ClusterView cluster, ProducerStates producers, BrokerMetrics metrics,
                   ProducePolicies policies, int storeMaxBatchBytes, LongSupplier clock,
                   TransactionCoordinator transactions) {
        this.transactions = transactions;
        this.partitions = partitions;
        this.cluster = cluster;
        this.producers = producers;
        this.metrics = metrics;
        this.policies = policies;
        this.storeMaxBatchBytes = storeMaxBatchBytes;
        this.clock = clock;
        this.flushes = new TopicFlushes(clock);
    }

    /** @return the response once every partition is answered (null for acks=0) */
    CompletableFuture<ProduceResponseData> handle(ProduceRequestData request, short version) {
        short acks = request.acks();
        List<CompletableFuture<?>> pending = new ArrayList<>();
        ProduceResponseData.TopicProduceResponseCollection topics =
                new ProduceResponseData.TopicProduceResponseCollection();
        for (ProduceRequestData.TopicProduceData topic : request.topicData()) {
            List<PartitionProduceResponse> answers = new ArrayList<>();
            // From v13 a topic is named by its id only; an id no topic has (the zero id too) is UNKNOWN_TOPIC_ID.
            String name = version >= TOPIC_IDS ? KafkaTopicIds.nameOf(partitions, topic.topicId()) : topic.name();
            for (ProduceRequestData.PartitionProduceData data : topic.partitionData()) {
                PartitionProduceResponse response = new PartitionProduceResponse().setIndex(data.index())
                        .setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1);
                answers.add(response);
                if (name == null) {
                    response.setErrorCode(Errors.UNKNOWN_TOPIC_ID.code());
                } else if (acks != 0 && acks != 1 && acks != -1) {
                    fail(response, Errors.INVALID_REQUIRED_ACKS, "acks must be 0, 1 or -1, not " + acks);
                } else {
                    CompletableFuture<?> appended;
                    try {
                        appended = produce(name, data, version, acks, request.timeoutMs(), response,
                                request.transactionalId());
                    } catch (RuntimeException e) {
                        // Whatever goes wrong with one partition is that partition's answer: the others were stored
                        // or refused already, and closing the connection would have the client send them again.
                        LOG.warn("a produce to {}-{} failed", name, data.index(), e);
                        fail(response, Errors.UNKNOWN_SERVER_ERROR, String.valueOf(e.getMessage()));
                        appended = null;
                    }
                    if (appended != null) {
                        pending.add(appended);
                    }
                }
            }
            // The name (v12 and below) or the id (13+) is what the version writes; the name is kept in memory for the
            // leader hints.
            topics.add(new TopicProduceResponse().setName(name == null ? "" : name).setTopicId(topic.topicId())
                    .setPartitionResponses(answers));
        }
        ProduceResponseData response = new ProduceResponseData().setResponses(topics);
        CompletableFuture<Void> all = CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]));
        return all.thenApply(ignored -> acks == 0 ? null
                : LeaderHints.produce(response, version, partitions, cluster));
    }

    private static void fail(PartitionProduceResponse response, Errors error, String message) {
        response.setErrorCode(error.code()).setErrorMessage(message);
    }

    /**
     * What a topic's configs ask of a checked batch, in the order Kafka's broker asks it: enough replicas in sync for
     * acks=all (min.insync.replicas), every record keyed on a compacted topic, each record's CreateTime within the
     * topic's bounds, or the broker's time stamped on the batch (LogAppendTime).
     *
     * @return the batch to append: {@code checked}, or a stamped copy of it
     * @throws BatchRefusedException naming the error to answer
     */
    private RecordBatches.Checked applyPolicy(RecordBatches.Checked checked, TopicConfigs.Produce policy, String topic,
                                              int partitionIndex, short acks, Partition partition) {
        // A leader is always in sync with itself: with the default of 1 nothing is asked of the partition.
        if (acks == -1 && policy.minInsyncReplicas() > 1) {
            int inSync = partition.leadership().inSync().size();
            if (inSync < policy.minInsyncReplicas()) {
                throw new BatchRefusedException(Errors.NOT_ENOUGH_REPLICAS, "The size of the current ISR : " + inSync
                        + " is insufficient to satisfy the min.isr requirement of " + policy.minInsyncReplicas()
                        + " for partition " + topic + "-" + partitionIndex);
            }
        }
        if (policy.compacted() && checked.keyless()) {
            throw new BatchRefusedException(Errors.INVALID_RECORD, "Compacted topic cannot accept message without key"
                    + " in topic partition " + topic + "-" + partitionIndex + ".");
        }
        long now = clock.getAsLong();
        if (policy.logAppendTime()) {
            checked = RecordBatches.stampLogAppendTime(checked, now);
        } else {
            long earliest = policy.timestampBeforeMaxMs() == Long.MAX_VALUE ? Long.MIN_VALUE
                    : now - policy.timestampBeforeMaxMs();
            long latest = policy.timestampAfterMaxMs() > Long.MAX_VALUE - now ? Long.MAX_VALUE
                    : now + policy.timestampAfterMaxMs();
            long out = checked.firstRecordTimestamp() != RecordBatch.NO_TIMESTAMP
                    && checked.firstRecordTimestamp() < earliest ? checked.firstRecordTimestamp()
                    : checked.lastRecordTimestamp() > latest ? checked.lastRecordTimestamp() : RecordBatch.NO_TIMESTAMP;
            if (out != RecordBatch.NO_TIMESTAMP) {
                throw new BatchRefusedException(Errors.INVALID_TIMESTAMP, "Timestamp " + out + " of a message of the"
                        + " batch is out of range. The timestamp should be within [" + earliest + ", " + latest + "]");
            }
        }
        return checked;
    }

    /** Checks and appends one partition's batch; @return what completes its answer, or null if answered already */
    private CompletableFuture<?> produce(String topic, ProduceRequestData.PartitionProduceData data, short version,
                                         short acks, int timeoutMs, PartitionProduceResponse response,
                                         String transactionalId) {
        Partition partition = partitions.partition(topic, data.index());
        if (partition == null) {
            fail(response, Errors.UNKNOWN_TOPIC_OR_PARTITION, "no partition " + data.index() + " of topic " + topic);
            return null;
        }
        if (!leadsOrSoonWill(partition)) {
            fail(response, Errors.NOT_LEADER_OR_FOLLOWER, "this broker does not lead " + topic + "-" + data.index());
            return null;
        }
        if (!(data.records() instanceof MemoryRecords records)) {
            fail(response, Errors.INVALID_RECORD, "no records");
            return null;
        }
        TopicConfigs.Produce policy = policies.of(topic);
        RecordBatches.Checked checked;
        try {
            checked = RecordBatches.check(records, Math.min(policy.maxMessageBytes(), storeMaxBatchBytes),
                    WALKERS.get());
            checked = applyPolicy(checked, policy, topic, data.index(), acks, partition);
        } catch (BatchRefusedException e) {
            fail(response, e.error(), e.getMessage());
            return null;
        }
        KafkaBatch batch = checked.batch();
        if (checked.compression() == CompressionType.ZSTD && version < 7) {
            fail(response, Errors.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later");
            return null;
        }
        boolean transactional = checked.transactional();
        Object verification = null;
        if (transactional) {
            if (transactionalId == null) {
                fail(response, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, "a transaction's batch must be sent with"
                        + " its transactional id");
                return null;
            }
            if (batch.producerId() < 0) {
                fail(response, Errors.INVALID_RECORD, "a transaction's batch must carry a producer id");
                return null;
            }
            // KIP-890: the batch is taken only if its producer's transaction is open and holds the partition, so
            // that a late batch of an ended transaction never opens one nobody will end.
            // Once a transaction's batch is here, the transaction holds the partition until its marker: only a
            // transaction's first batch is checked with the coordinator, as Kafka's leaders keep a verification.
            ProducerStates.Producers state = producers.of(partition);
            boolean open;
            synchronized (state.lock) {
                open = state.transactions().isOpen(batch.producerId());
                verification = open ? null : state.startVerification(batch.producerId());
            }
            Errors verified = open ? Errors.NONE : transactions.verify(transactionalId, batch.producerId(),
                    batch.producerEpoch(), topic, data.index());
            if (verified == Errors.INVALID_TXN_STATE && version >= 12) {
                // Produce v12 (KIP-890 part 2): the partition joins the producer's transaction with its first batch,
                // as Kafka's leaders add it, whatever transaction version is finalized.
                verified = transactions.addImplicitly(transactionalId, batch.producerId(), batch.producerEpoch(),
                        topic, data.index());
            }
            if (verified != Errors.NONE) {
                // As Kafka answers: from v11 a batch outside the producer's transaction is TRANSACTION_ABORTABLE.
                Errors answer = verified == Errors.INVALID_TXN_STATE && version >= 11 ? Errors.TRANSACTION_ABORTABLE
                        : verified;
                fail(response, answer, verified == Errors.INVALID_TXN_STATE ? "the producer's transaction does not"
                        + " hold partition " + topic + "-" + data.index() + " (or is not open)" : null);
                return null;
            }
        }
        Durability durability = flushes.durability(topic, data.index(), batch.offsetCount(), policy,
                durability(acks));
        long appendedAt = System.nanoTime();
        CompletableFuture<Long> answer;
        try {
            answer = batch.producerId() >= 0
                    ? appendIdempotent(partition, batch, acks, durability, timeoutMs, response, transactional,
                            verification)
                    : acked(partition.append(batch, durability), acks);
        } catch (IllegalArgumentException e) {
            fail(response, Errors.INVALID_RECORD, e.getMessage());
            return null;
        } catch (TopicDeletedException e) {
            fail(response, Errors.UNKNOWN_TOPIC_OR_PARTITION, e.getMessage());
            return null;
        } catch (RuntimeException e) {
            // A read-only or closed store.
            fail(response, Errors.KAFKA_STORAGE_ERROR, e.getMessage());
            return null;
        }
        if (answer == null) {
            return null;
        }
        // A copy times out, not the append's own future: that one stays for a retry to wait on.
        return answer.thenApply(offset -> offset).orTimeout(Math.max(1, timeoutMs), TimeUnit.MILLISECONDS)
                .handle((offset, error) -> {
                    if (error != null) {
                        Throwable cause = error instanceof CompletionException && error.getCause() != null
                                ? error.getCause() : error;
                        fail(response, errorOf(cause), String.valueOf(cause.getMessage()));
                    } else {
                        if (metrics != null) {
                            metrics.appendAcknowledged(System.nanoTime() - appendedAt);
                        }
                        response.setBaseOffset(offset).setLogStartOffset(partition.logStartOffset());
                        if (policy.logAppendTime()) {
                            response.setLogAppendTimeMs(batch.maxTimestamp());
                        }
                    }
                    return null;
                });
    }

    private static Errors errorOf(Throwable cause) {
        return cause instanceof Partition.NotLeaderException ? Errors.NOT_LEADER_OR_FOLLOWER
                : cause instanceof TimeoutException ? Errors.REQUEST_TIMED_OUT
                : cause instanceof TopicDeletedException ? Errors.UNKNOWN_TOPIC_OR_PARTITION
                : Errors.KAFKA_STORAGE_ERROR;
    }

    /** @return what an append with {@code acks} promises: a producer that waits is told the batch is stored */
    private static Durability durability(short acks) {
        return acks == 0 ? Durability.FLUSH_MODE : Durability.ACKNOWLEDGED;
    }

    /** @return the moment acks asks for: stored (acks=1, and acks=0, whose answer nobody reads) or committed */
    private static CompletableFuture<Long> acked(Partition.Appended appended, short acks) {
        return acks == -1 ? appended.committed() : appended.stored();
    }

    /**
     * @return true if this broker leads the partition; if it was just elected and is not ready yet (a Raft leader
     *     until its term's first entry is committed), waits for it, a little, on the partition's changes: answering
     *     NOT_LEADER_OR_FOLLOWER now and taking the producer's next batch a moment later would store that batch
     *     before this one (and refuse this one's retry as out of order). The connection's later requests wait behind
     *     this one, as they must for their effects to keep the order of the requests.
     */
    private static boolean leadsOrSoonWill(Partition partition) {
        if (partition.leads()) {
            return true;
        }
        try {
            return partition.awaitLeads(LEADER_READY_WAIT_MILLIS).get();
        } catch (ExecutionException e) {
            return false;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /**
     * An idempotent producer's batch: checked against the producer's state under the partition's lock, held across the
     * append so that the order of sequences is the order of offsets. A duplicate of a batch already stored is answered
     * with the original's offset, and, under acks=all, only once the original is committed (the state, taken anew from
     * the producers the log shows at a change of leader, holds what the log holds, committed or about to be).
     *
     * @return the offset to answer with once it may be, or null if answered already (refused)
     */
    private CompletableFuture<Long> appendIdempotent(Partition partition, KafkaBatch batch, short acks,
                                                     Durability durability, int timeoutMs,
                                                     PartitionProduceResponse response, boolean transactional,
                                                     Object verification) {
        int count = batch.offsetCount();
        ProducerStates.Producers state = producers.of(partition);
        synchronized (state.lock) {
            ProducerStates.Verdict verdict = state.check(batch.producerId(), batch.producerEpoch(),
                    batch.baseSequence(), batch.lastSequence());
            if (verdict.duplicateOf() != null) {
                return acks == -1
                        ? verdict.duplicateOf().thenCompose(offset -> partition.awaitCommitted(offset, offset + count,
                                Math.max(1, timeoutMs)))
                        : verdict.duplicateOf();
            }
            if (verdict.error() != Errors.NONE) {
                fail(response, verdict.error(), verdict.message());
                return null;
            }
            // A transaction's first batch here opens it from at most the offset it gets: the last stable offset stays
            // at or below it until the marker, whatever fetch looks before the append returns.
            if (transactional && verification != null
                    && !state.stillVerified(batch.producerId(), verification)) {
                // The transaction ended (a marker came) while its coordinator was asked: the batch would open one
                // that nobody ends. Kafka's leaders refuse it so too (their verification guard).
                fail(response, Errors.INVALID_TXN_STATE, "the producer's transaction ended while its batch was checked");
                return null;
            }
            PartitionTransactions open = transactional ? state.transactions() : null;
            long lowerBound = transactional ? partition.logEndOffset() : -1;
            Partition.Appended appended = partition.append(batch, durability);
            if (transactional && !appended.stored().isCompletedExceptionally()) {
                open.began(batch.producerId(), lowerBound);
            }
            // A refused append (a full disk, a leader stepping down) stored nothing: it is not the producer's last
            // batch, and its retry must be taken as new, not answered as a duplicate of the refusal.
            if (!appended.stored().isCompletedExceptionally()) {
                state.record(batch.producerId(), batch.producerEpoch(), batch.baseSequence(), batch.lastSequence(),
                        appended.committed());
                // Recorded before it is committed; if it fails, whether the log has it is for the log to say: the
                // state is rebuilt from it at its next use.
                appended.committed().whenComplete((offset, failure) -> {
                    if (failure != null) {
                        synchronized (state.lock) {
                            state.invalidate();
                        }
                    }
                });
            }
            return acked(appended, acks);
        }
    }
}
