package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.broker.net.Outbound;
import io.sluice.store.OpaqueSlice;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import java.io.IOException;
import java.nio.channels.SocketChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.errors.UnknownServerException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeader;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.network.Send;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.SendBuilder;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.apache.kafka.common.requests.ResponseHeader;

/**
 * Fetch: for each partition, the stored batches from the one holding the fetch offset on, up to the partition's and
 * the response's byte limits (the first partition with data gets at least one whole batch, as Kafka does). Batches
 * a producer sent go from the page cache to the socket by {@code sendfile}; messages the store API appended are
 * turned into batches in memory. With fewer than {@code minBytes} ready, the fetch waits up to {@code maxWaitMs}
 * for an append to one of its partitions (a long poll). Fetch sessions are not kept: every response says session
 * 0, so clients send full fetches (from v13 naming each topic by its id, looked up once per request).
 */
final class FetchHandler {

    /** Messages read per step when turning store messages into a batch. */
    private static final int MESSAGES_PER_BATCH = 500;
    /** The most record bytes one response carries, whatever is asked (Kafka's broker fetch.max.bytes). */
    static final long MAX_RESPONSE_BYTES = 55L << 20;
    /** The longest a fetch waits for data. */
    static final int MAX_WAIT_MS = 30_000;

    private final Partitions partitions;
    private final ClusterView cluster;
    private final PartitionWatch watch;
    private final Executor executor;

    private final ProducerStates producerStates;

    FetchHandler(Partitions partitions, ClusterView cluster, PartitionWatch watch, Executor executor,
                 ProducerStates producerStates) {
        this.producerStates = producerStates;
        this.partitions = partitions;
        this.cluster = cluster;
        this.watch = watch;
        this.executor = executor;
    }

    /** The first Fetch version that names topics by id only. */
    static final short TOPIC_IDS = 13;

    CompletableFuture<Outbound> handle(int correlationId, short version, FetchRequestData request) {
        return handle(correlationId, version, request, topic -> true);
    }

    /**
     * @param readable whether the client may read a topic: the partitions of one it may not are answered
     *     TOPIC_AUTHORIZATION_FAILED and not read
     */
    CompletableFuture<Outbound> handle(int correlationId, short version, FetchRequestData request,
                                       java.util.function.Predicate<String> readable) {
        return handle(correlationId, version, request, readable, (data, bytes) -> 0L);
    }

    /** Computes a fetch's throttle from its response's bytes (0: none), recording them against the client's quota. */
    @FunctionalInterface
    interface Throttle {
        long millis(FetchResponseData data, long responseBytes);
    }

    /**
     * @param throttle the client's throttle for the response's bytes: a throttled response says so in
     *     throttle_time_ms, and its connection reads nothing for that long
     */
    CompletableFuture<Outbound> handle(int correlationId, short version, FetchRequestData request,
                                       java.util.function.Predicate<String> readable, Throttle throttle) {
        if (version >= TOPIC_IDS) {
            nameTopics(request);
        }

        // A long poll waits at most MAX_WAIT_MS whatever is asked: the client then simply fetches again.
        long wait = Math.min(MAX_WAIT_MS, Math.max(0, request.maxWaitMs()));
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(wait);
        return respond(request, deadline, readable).thenApply(data -> {
            FetchResponseData answered = LeaderHints.fetch(data, version, partitions, cluster);
            Outbound out = outbound(correlationId, version, answered);
            long millis = throttle.millis(answered, out.size());
            if (millis <= 0) {
                return out;
            }
            answered.setThrottleTimeMs((int) Math.min(Integer.MAX_VALUE, millis));
            return Outbound.muted(outbound(correlationId, version, answered), millis);
        });
    }

    /**
     * Fetch 13+ names topics by id only: each topic's name is looked up once, as the request arrives, and set in the
     * request (where the version carries no name), null for an id no topic has (its partitions are answered
     * UNKNOWN_TOPIC_ID). The zero id names no topic at all: Kafka 4.3.1 fails such a request as a whole
     * (UNKNOWN_SERVER_ERROR), and so does this broker; Kafka's clients fetch by name (v12) until they hold every id.
     */
    private void nameTopics(FetchRequestData request) {
        for (FetchRequestData.FetchTopic topic : request.topics()) {
            if (Uuid.ZERO_UUID.equals(topic.topicId())) {
                throw new UnknownServerException("a Fetch of version 13 or later names a topic by the zero id");
            }
            topic.setTopic(KafkaTopicIds.nameOf(partitions, topic.topicId()));
        }
    }

    private CompletableFuture<FetchResponseData> respond(FetchRequestData request, long deadline,
                                                         java.util.function.Predicate<String> readable) {
        long wait = deadline - System.nanoTime();
        boolean mayWait = wait > 0 && request.minBytes() > 0;
        // Register before looking, so that an append between the look and the wait wakes this fetch.
        CompletableFuture<Void> changed = mayWait ? watch.register(named(request, readable)) : null;
        Built built = build(request, readable);
        if (!mayWait || built.bytes >= request.minBytes() || built.errors) {
            if (changed != null) {
                changed.complete(null);
            }
            return CompletableFuture.completedFuture(built.data);
        }
        return changed.completeOnTimeout(null, wait, TimeUnit.NANOSECONDS)
                .thenComposeAsync(ignored -> System.nanoTime() - deadline >= 0
                        ? CompletableFuture.completedFuture(build(request, readable).data)
                        : respond(request, deadline, readable), executor);
    }

    /** @return the partitions the fetch names that exist (only those can be written to while it waits) */
    private List<Map.Entry<String, Integer>> named(FetchRequestData request,
                                                   java.util.function.Predicate<String> readable) {
        List<Map.Entry<String, Integer>> all = new ArrayList<>();
        for (FetchRequestData.FetchTopic topic : request.topics()) {
            if (topic.topic() != null && !readable.test(topic.topic())) {
                continue;
            }
            int count = partitions.count(topic.topic());
            for (FetchRequestData.FetchPartition partition : topic.partitions()) {
                if (partition.partition() >= 0 && partition.partition() < count) {
                    all.add(Map.entry(topic.topic(), partition.partition()));
                }
            }
        }
        return all;
    }

    private record Built(FetchResponseData data, long bytes, boolean errors) {
    }

    private Built build(FetchRequestData request, java.util.function.Predicate<String> readable) {
        long budget = request.maxBytes() <= 0 ? MAX_RESPONSE_BYTES : Math.min(request.maxBytes(), MAX_RESPONSE_BYTES);
        long bytes = 0;
        boolean errors = false;
        List<FetchResponseData.FetchableTopicResponse> topics = new ArrayList<>();
        for (FetchRequestData.FetchTopic topic : request.topics()) {
            List<FetchResponseData.PartitionData> partitions = new ArrayList<>();
            for (FetchRequestData.FetchPartition wanted : topic.partitions()) {
                FetchResponseData.PartitionData data = new FetchResponseData.PartitionData()
                        .setPartitionIndex(wanted.partition()).setHighWatermark(-1).setLastStableOffset(-1)
                        .setLogStartOffset(-1).setPreferredReadReplica(-1).setRecords(MemoryRecords.EMPTY)
                        .setAbortedTransactions(request.isolationLevel() == 1 ? List.of() : null);
                long sent = 0;
                if (topic.topic() == null) {
                    // An id no topic has (Fetch 13+).
                    data.setErrorCode(Errors.UNKNOWN_TOPIC_ID.code());
                } else if (!readable.test(topic.topic())) {
                    data.setErrorCode(Errors.TOPIC_AUTHORIZATION_FAILED.code());
                } else {
                    long limit = Math.min(budget - bytes, wanted.partitionMaxBytes());
                    sent = fill(topic.topic(), wanted, data, limit, bytes == 0, request.isolationLevel() == 1);
                }
                if (data.errorCode() != Errors.NONE.code()) {
                    // Kafka answers a partition in error with an empty list here, whatever the isolation level.
                    data.setAbortedTransactions(List.of());
                    errors = true;
                }
                bytes += sent;
                partitions.add(data);
            }
            // The name (v12 and below) or the id (13+) is what the version writes; each is the request's own.
            topics.add(new FetchResponseData.FetchableTopicResponse().setTopic(topic.topic())
                    .setTopicId(topic.topicId()).setPartitions(partitions));
        }
        return new Built(new FetchResponseData().setSessionId(0).setResponses(topics), bytes, errors);
    }

    /** Fills one partition's answer; @return the record bytes it carries */
    private long fill(String topic, FetchRequestData.FetchPartition wanted, FetchResponseData.PartitionData data,
                      long limit, boolean first, boolean committedOnly) {
        try {
            return read(topic, wanted, data, limit, first, committedOnly);
        } catch (RuntimeException e) {
            data.setErrorCode(ListOffsetsHandler.readError(e).code());
            return 0;
        }
    }

    /**
     * @param committedOnly read_committed: up to the last stable offset, the transactions aborted in what is sent
     *     listed for the client to drop
     */
    private long read(String topic, FetchRequestData.FetchPartition wanted, FetchResponseData.PartitionData data,
                      long limit, boolean first, boolean committedOnly) {
        Partition partition = partitions.partition(topic, wanted.partition());
        if (partition == null) {
            data.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
            return 0;
        }
        if (!partition.leads()) {
            data.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
            return 0;
        }
        long start = partition.logStartOffset();
        long logEnd = partition.logEndOffset();
        // A consumer reads only what is committed (in a cluster, what a majority has): below the high watermark.
        long highWatermark = Math.min(logEnd, partition.highWatermark());
        long stable = committedOnly ? producerStates.lastStable(partition, highWatermark)
                : producerStates.lastStableIfKnown(partition, highWatermark);
        long end = committedOnly ? stable : highWatermark;
        data.setHighWatermark(highWatermark).setLastStableOffset(stable).setLogStartOffset(start);
        long offset = wanted.fetchOffset();
        if (offset < start || offset > logEnd) {
            data.setErrorCode(Errors.OFFSET_OUT_OF_RANGE.code());
            return 0;
        }
        if (offset >= end || limit <= 0) {
            return 0;
        }
        StoreRecords records = new StoreRecords();
        long bytes = 0;
        while (offset < end && bytes < limit) {
            OpaqueSlice slice = partition.slice(offset, limit - bytes, end);
            if (slice.status() != ReadResult.Status.FOUND) {
                break;
            }
            if (slice.batches() > 0) {
                // A batch larger than what is left is sent only as the response's first (KIP-74).
                if (bytes + slice.bytes() > limit && !(first && bytes == 0)) {
                    break;
                }
                records.add(slice);
                bytes += slice.bytes();
                offset = slice.nextOffset();
            }
            if (slice.messagesNext()) {
                MemoryRecords converted = messages(partition, offset, limit - bytes);
                if (converted == null || bytes > 0 && bytes + converted.sizeInBytes() > limit) {
                    break;
                }
                records.add(converted.buffer());
                bytes += converted.sizeInBytes();
                offset = lastOffset(converted) + 1;
            } else if (slice.batches() == 0) {
                break;
            }
        }
        if (!records.isEmpty()) {
            data.setRecords(records);
            if (committedOnly) {
                List<FetchResponseData.AbortedTransaction> aborted = new ArrayList<>();
                for (PartitionTransactions.Aborted one : producerStates.aborted(partition, wanted.fetchOffset(),
                        offset)) {
                    aborted.add(new FetchResponseData.AbortedTransaction().setProducerId(one.producerId())
                            .setFirstOffset(one.firstOffset()));
                }
                data.setAbortedTransactions(aborted);
            }
        }
        return bytes;
    }

    private static long lastOffset(MemoryRecords records) {
        long last = -1;
        for (var batch : records.batches()) {
            last = batch.lastOffset();
        }
        return last;
    }

    /**
     * Turns the messages the store API appended, from {@code offset} up to the next opaque batch, into one
     * uncompressed batch: key = the first key, value = the body, headers = the properties (and the tag, as
     * {@code sluice.tag}), timestamp = the born timestamp.
     */
    private static MemoryRecords messages(Partition partition, long offset, long limit) {
        try (ReadResult read = partition.read(offset, MESSAGES_PER_BATCH, Math.max(1, limit))) {
            List<SimpleRecord> records = new ArrayList<>();
            long first = -1;
            for (StoredMessage message : read.messages()) {
                if (message.opaque()) {
                    break;
                }
                if (first < 0) {
                    first = message.queueOffset();
                }
                List<Header> headers = new ArrayList<>();
                message.properties().forEach((name, value) -> headers.add(new RecordHeader(name,
                        value.getBytes(StandardCharsets.UTF_8))));
                if (!message.tag().isEmpty()) {
                    headers.add(new RecordHeader("sluice.tag", message.tag().getBytes(StandardCharsets.UTF_8)));
                }
                byte[] key = message.keys().isEmpty() ? null : message.keys().getFirst().getBytes(StandardCharsets.UTF_8);
                records.add(new SimpleRecord(message.bornTimestamp(), key, message.bodyBytes(),
                        headers.toArray(new Header[0])));
            }
            if (records.isEmpty()) {
                return null;
            }
            return MemoryRecords.withRecords(first, Compression.NONE, records.toArray(new SimpleRecord[0]));
        }
    }

    private static Outbound outbound(int correlationId, short version, FetchResponseData data) {
        Send send = SendBuilder.buildResponseSend(new ResponseHeader(correlationId,
                ApiKeys.FETCH.responseHeaderVersion(version)), data, version);
        return new Outbound() {
            @Override
            public long size() {
                return send.size();
            }

            @Override
            public void writeTo(java.nio.channels.GatheringByteChannel channel) throws IOException {
                StoreRecords.SocketTransfer transfer = new StoreRecords.SocketTransfer(channel);
                while (!send.completed()) {
                    send.writeTo(transfer);
                }
            }
        };
    }
}
