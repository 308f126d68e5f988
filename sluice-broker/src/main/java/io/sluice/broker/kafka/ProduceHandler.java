package io.sluice.broker.kafka;

import io.sluice.broker.Replication;
import io.sluice.broker.metrics.BrokerMetrics;
import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.TopicDeletedException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.message.ProduceResponseData.PartitionProduceResponse;
import org.apache.kafka.common.message.ProduceResponseData.TopicProduceResponse;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.CompressionType;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Produce: each partition's record batch is checked ({@link RecordBatches#check}), passed through the idempotent
 * producer's sequence check ({@link ProducerStates}), and appended as the producer sent it, compressed or not, as
 * one opaque store record covering one offset per record. acks=-1 and acks=1 answer when the store acknowledges the
 * append: under SYNC once forced to disk (the group commit), under ASYNC once in the page cache (see
 * {@link #forceFor}); acks=0 never. A batch refused for any reason stores nothing.
 */
final class ProduceHandler {

    private static final Logger LOG = LoggerFactory.getLogger(ProduceHandler.class);

    /** The record walker of each thread that checks batches. */
    private static final ThreadLocal<RecordWalker> WALKERS = ThreadLocal.withInitial(RecordWalker::new);

    private final Store store;
    private final ProducerStates producers;
    private final PartitionWatch watch;
    private final BrokerMetrics metrics;
    /** The cluster this broker is one of, or null: then it appends to its store alone. */
    private final Replication replication;

    ProduceHandler(Store store, ProducerStates producers, PartitionWatch watch, BrokerMetrics metrics,
                   Replication replication) {
        this.store = store;
        this.producers = producers;
        this.watch = watch;
        this.metrics = metrics;
        this.replication = replication;
    }

    /** @return the response once every partition is answered (null for acks=0) */
    CompletableFuture<ProduceResponseData> handle(ProduceRequestData request, short version) {
        short acks = request.acks();
        List<CompletableFuture<?>> pending = new ArrayList<>();
        ProduceResponseData.TopicProduceResponseCollection topics =
                new ProduceResponseData.TopicProduceResponseCollection();
        for (ProduceRequestData.TopicProduceData topic : request.topicData()) {
            List<PartitionProduceResponse> partitions = new ArrayList<>();
            for (ProduceRequestData.PartitionProduceData data : topic.partitionData()) {
                PartitionProduceResponse response = new PartitionProduceResponse().setIndex(data.index())
                        .setBaseOffset(-1).setLogAppendTimeMs(-1).setLogStartOffset(-1);
                partitions.add(response);
                if (acks != 0 && acks != 1 && acks != -1) {
                    fail(response, Errors.INVALID_REQUIRED_ACKS, "acks must be 0, 1 or -1, not " + acks);
                } else if (request.transactionalId() != null) {
                    fail(response, Errors.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                            "transactions are not supported by this broker");
                } else {
                    CompletableFuture<?> appended;
                    try {
                        appended = produce(topic.name(), data, version, acks, request.timeoutMs(), response);
                    } catch (RuntimeException e) {
                        // Whatever goes wrong with one partition is that partition's answer: the others were stored
                        // or refused already, and closing the connection would have the client send them again.
                        LOG.warn("a produce to {}-{} failed: {}", topic.name(), data.index(), e.toString());
                        fail(response, Errors.UNKNOWN_SERVER_ERROR, String.valueOf(e.getMessage()));
                        appended = null;
                    }
                    if (appended != null) {
                        pending.add(appended);
                    }
                }
            }
            topics.add(new TopicProduceResponse().setName(topic.name()).setPartitionResponses(partitions));
        }
        ProduceResponseData response = new ProduceResponseData().setResponses(topics);
        CompletableFuture<Void> all = CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0]));
        return all.thenApply(ignored -> acks == 0 ? null : LeaderHints.produce(response, version, replication));
    }

    /**
     * Whether an append must be forced before its answer. Under SYNC every append is answered once forced. Under
     * ASYNC an answer (acks=1 or -1) means the batch is in the page cache, as with a single Kafka broker, where a
     * crash of the process loses nothing acknowledged; but a write path that buffers appends in the process
     * (WRITE_BUFFER, DIRECT) would lose them, so there an acknowledged append waits for a forced group commit.
     */
    private boolean forceFor(short acks) {
        return acks != 0 && store.config().flushMode() == FlushMode.ASYNC && store.config().writePath().buffered();
    }

    private static void fail(PartitionProduceResponse response, Errors error, String message) {
        response.setErrorCode(error.code()).setErrorMessage(message);
    }

    /** Appends one partition's batch; @return what completes its answer, or null if answered already */
    private CompletableFuture<?> produce(String topic, ProduceRequestData.PartitionProduceData data, short version,
                                         short acks, int timeoutMs, PartitionProduceResponse response) {
        boolean force = forceFor(acks);
        int partition = data.index();
        int partitions = Partitions.count(store, topic);
        if (partition < 0 || partition >= partitions) {
            fail(response, Errors.UNKNOWN_TOPIC_OR_PARTITION, "no partition " + partition + " of topic " + topic);
            return null;
        }
        if (replication != null && !leadsOrSoonWill(topic, partition)) {
            fail(response, Errors.NOT_LEADER_OR_FOLLOWER, "this broker does not lead " + topic + "-" + partition);
            return null;
        }
        if (!(data.records() instanceof MemoryRecords records)) {
            fail(response, Errors.INVALID_RECORD, "no records");
            return null;
        }
        MutableRecordBatch batch;
        try {
            batch = RecordBatches.check(records, store.config().maxMessageBytes(), WALKERS.get());
        } catch (BatchRefusedException e) {
            fail(response, e.error(), e.getMessage());
            return null;
        }
        if (batch.compressionType() == CompressionType.ZSTD && version < 7) {
            fail(response, Errors.UNSUPPORTED_COMPRESSION_TYPE, "zstd needs Produce v7 or later");
            return null;
        }
        ByteBuffer bytes = records.buffer();
        int count = batch.countOrNull();
        if (replication != null) {
            return produceReplicated(topic, partition, batch, bytes, acks, timeoutMs, response);
        }
        CompletableFuture<AppendResult> appended;
        long appendedAt = System.nanoTime();
        try {
            if (batch.hasProducerId()) {
                appended = appendIdempotent(topic, partition, batch, bytes, count, force, response);
                if (appended == null) {
                    return null;
                }
            } else {
                appended = store.appendOpaqueToDeclared(topic, partition, MemorySegment.ofBuffer(bytes), count, force);
            }
        } catch (IllegalArgumentException e) {
            fail(response, Errors.INVALID_RECORD, e.getMessage());
            return null;
        } catch (RuntimeException e) {
            // A read-only or closed store.
            fail(response, Errors.KAFKA_STORAGE_ERROR, e.getMessage());
            return null;
        }
        // Under ASYNC the batch is readable now; under SYNC once forced: tell waiting fetches both times.
        watch.signal(topic, partition);
        return appended.handle((result, error) -> {
            if (error != null) {
                Throwable cause = error.getCause() != null ? error.getCause() : error;
                fail(response, cause instanceof TopicDeletedException ? Errors.UNKNOWN_TOPIC_OR_PARTITION
                        : Errors.KAFKA_STORAGE_ERROR, cause.getMessage());
            } else {
                if (metrics != null) {
                    metrics.appendAcknowledged(System.nanoTime() - appendedAt);
                }
                response.setBaseOffset(result.firstQueueOffset())
                        .setLogStartOffset(store.minOffset(topic, partition));
                watch.signal(topic, partition);
            }
            return null;
        });
    }

    /** How long a produce waits for this broker, just elected leader, to be ready to append. */
    static final long LEADER_READY_WAIT_MILLIS = 2_000;

    /**
     * @return true if this broker leads the partition; if it was just elected and is not ready yet (its first entry
     *     not committed), waits for it, a little: answering NOT_LEADER_OR_FOLLOWER now and taking the producer's next
     *     batch a moment later would store that batch before this one (and refuse this one's retry as out of order)
     */
    private boolean leadsOrSoonWill(String topic, int partition) {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(LEADER_READY_WAIT_MILLIS);
        while (!replication.leads(topic, partition)) {
            Replication.PartitionView view = replication.partition(topic, partition);
            if (view == null || view.leader() != replication.self() || System.nanoTime() > deadline) {
                return false;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /**
     * A partition of a cluster: the batch goes through the partition's Raft group; acks=1 answers once this broker
     * (the leader) stored it, acks=-1 once a majority of the replicas have it. Duplicates of an idempotent producer's
     * batches are found from the state this leader keeps, rebuilt from the log when it became leader.
     */
    private CompletableFuture<?> produceReplicated(String topic, int partition, MutableRecordBatch batch,
                                                   ByteBuffer bytes, short acks, int timeoutMs,
                                                   PartitionProduceResponse response) {
        byte[] copy = new byte[bytes.remaining()];
        bytes.duplicate().get(copy);
        long appendedAt = System.nanoTime();
        CompletableFuture<Long> answer;
        if (batch.hasProducerId()) {
            ProducerStates.Partition state = producers.partition(topic, partition,
                    replication.leaderEpoch(topic, partition));
            synchronized (state.lock) {
                ProducerStates.Verdict verdict = state.check(batch.producerId(), batch.producerEpoch(),
                        batch.baseSequence(), batch.lastSequence());
                if (verdict.duplicateOf() != null) {
                    // The original may be stored and not committed yet (state rebuilt from the log holds what the
                    // log holds): acks=all waits until the high watermark passes it.
                    int count = batch.countOrNull();
                    answer = acks == 1 ? verdict.duplicateOf()
                            : verdict.duplicateOf().thenCompose(offset -> committedPast(topic, partition, offset,
                                    offset + count, timeoutMs));
                } else if (verdict.error() != Errors.NONE) {
                    fail(response, verdict.error(), verdict.message());
                    return null;
                } else {
                    Replication.Appended appended = replication.append(topic, partition, copy);
                    if (!appended.committed().isCompletedExceptionally()) {
                        state.record(batch.producerId(), batch.producerEpoch(), batch.baseSequence(),
                                batch.lastSequence(), appended.committed());
                        // Recorded before it is committed; if it fails, whether the log has it is for the log to
                        // say: the state is rebuilt from it at its next use.
                        appended.committed().whenComplete((offset, failure) -> {
                            if (failure != null) {
                                synchronized (state.lock) {
                                    state.invalidate();
                                }
                            }
                        });
                    }
                    answer = acks == 1 ? appended.stored() : appended.committed();
                }
            }
        } else {
            Replication.Appended appended = replication.append(topic, partition, copy);
            answer = acks == 1 ? appended.stored() : appended.committed();
        }
        // A copy times out, not the append's own future: that one stays for a retry to wait on.
        return answer.thenApply(offset -> offset).orTimeout(Math.max(1, timeoutMs), TimeUnit.MILLISECONDS)
                .handle((offset, error) -> {
            if (error != null) {
                Throwable cause = error instanceof CompletionException && error.getCause() != null ? error.getCause()
                        : error;
                fail(response, cause instanceof Replication.NotLeaderException ? Errors.NOT_LEADER_OR_FOLLOWER
                        : cause instanceof TimeoutException ? Errors.REQUEST_TIMED_OUT : Errors.KAFKA_STORAGE_ERROR,
                        String.valueOf(cause.getMessage()));
            } else {
                if (metrics != null) {
                    metrics.appendAcknowledged(System.nanoTime() - appendedAt);
                }
                response.setBaseOffset(offset).setLogStartOffset(store.minOffset(topic, partition));
            }
            return null;
        });
    }

    /** @return completes with {@code offset} once the partition's high watermark reaches {@code end} */
    private CompletableFuture<Long> committedPast(String topic, int partition, long offset, long end, int timeoutMs) {
        if (replication.highWatermark(topic, partition) >= end) {
            return CompletableFuture.completedFuture(offset);
        }
        CompletableFuture<Long> committed = new CompletableFuture<>();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(Math.max(1, timeoutMs));
        Thread.ofVirtual().name("produce-await-commit").start(() -> {
            while (replication.highWatermark(topic, partition) < end) {
                if (System.nanoTime() > deadline) {
                    committed.completeExceptionally(new TimeoutException("not committed within " + timeoutMs + " ms"));
                    return;
                }
                try {
                    Thread.sleep(2);
                } catch (InterruptedException e) {
                    committed.completeExceptionally(e);
                    return;
                }
            }
            committed.complete(offset);
        });
        return committed;
    }

    private CompletableFuture<AppendResult> appendIdempotent(String topic, int partition, MutableRecordBatch batch,
                                                             ByteBuffer bytes, int count, boolean force,
                                                             PartitionProduceResponse response) {
        long producerId = batch.producerId();
        short epoch = batch.producerEpoch();
        int first = batch.baseSequence();
        int last = batch.lastSequence();
        ProducerStates.Partition state = producers.partition(topic, partition);
        synchronized (state.lock) {
            ProducerStates.Verdict verdict = state.check(producerId, epoch, first, last);
            if (verdict.duplicateOf() != null) {
                // A retry of a batch already stored: answer with where it went.
                return verdict.duplicateOf().thenApply(offset -> new AppendResult(offset, count, -1, 0, -1));
            }
            if (verdict.error() != Errors.NONE) {
                fail(response, verdict.error(), verdict.message());
                return null;
            }
            CompletableFuture<AppendResult> appended = store.appendOpaqueToDeclared(topic, partition,
                    MemorySegment.ofBuffer(bytes), count, force);
            // A refused append (a full disk) stored nothing: it is not the producer's last batch, and its retry
            // must be taken as new, not answered as a duplicate of the refusal.
            if (!appended.isCompletedExceptionally()) {
                state.record(producerId, epoch, first, last, appended.thenApply(AppendResult::firstQueueOffset));
            }
            return appended;
        }
    }
}
