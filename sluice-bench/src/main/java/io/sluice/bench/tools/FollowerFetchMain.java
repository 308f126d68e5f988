package io.sluice.bench.tools;

import io.sluice.broker.Broker;
import io.sluice.store.Durability;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.SocketChannel;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import org.apache.kafka.common.message.FetchRequestData;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.RequestHeaderData;
import org.apache.kafka.common.message.ResponseHeaderData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.protocol.ObjectSerializationCache;
import org.apache.kafka.common.record.internal.MemoryRecords;

/**
 * A prototype of a follower that copies a partition by fetching it, as Kafka's followers do, to measure what such a
 * replication data path costs against the Raft one: it fetches one partition from a leader broker with Fetch v12
 * (long-polling, from its own log end), and appends each whole record batch of each answer to its own store, as it
 * came (offsets, epochs and CRC kept), under ASYNC as the cluster's stores run. It keeps no high watermark, elects
 * nothing and truncates nothing: what it measures is the CPU of moving the bytes, on the leader (serving the fetches)
 * and on itself. Runs until killed; prints its log end every 10 s and when stopped.
 *
 * <p>Arguments: the leader's host:port, a store directory, the topic, the partition.
 */
public final class FollowerFetchMain {

    private static final short VERSION = 12;
    private static final int MAX_BYTES = 8 << 20;

    private FollowerFetchMain() {
    }

    public static void main(String[] args) throws Exception {
        String[] leader = args[0].split(":");
        String topic = args[2];
        int partition = Integer.parseInt(args[3]);
        StoreConfig config = Broker.asyncFlushing(StoreConfig.builder().flushMode(FlushMode.ASYNC)
                .writePath(Broker.ASYNC_WRITE_PATH)).build();
        try (Store store = Store.open(Path.of(args[1]), config);
             SocketChannel channel = SocketChannel.open(new InetSocketAddress(leader[0],
                     Integer.parseInt(leader[1])))) {
            store.createTopic(topic, TopicLayout.BATCHES, partition + 1);
            Runtime.getRuntime().addShutdownHook(Thread.ofPlatform().unstarted(
                    () -> System.out.println("log end " + store.nextOffset(topic, partition))));
            channel.socket().setTcpNoDelay(true);
            ByteBuffer input = ByteBuffer.allocateDirect(MAX_BYTES + (1 << 20));
            ObjectSerializationCache cache = new ObjectSerializationCache();
            long end = store.nextOffset(topic, partition);
            long reported = System.nanoTime();
            CompletableFuture<?> last = CompletableFuture.completedFuture(null);
            for (int correlation = 0; ; correlation++) {
                send(channel, cache, correlation, request(topic, partition, end));
                FetchResponseData.PartitionData answer = answer(channel, input, correlation);
                if (answer.errorCode() == Errors.UNKNOWN_TOPIC_OR_PARTITION.code()) {
                    Thread.sleep(100); // not created yet
                    continue;
                }
                if (answer.errorCode() != Errors.NONE.code()) {
                    throw new IOException("fetch from " + end + ": " + Errors.forCode(answer.errorCode()));
                }
                ByteBuffer records = ((MemoryRecords) answer.records()).buffer();
                while (records.remaining() >= 12) {
                    int size = 12 + records.getInt(records.position() + 8);
                    if (size > records.remaining()) {
                        break; // a batch cut at the answer's end: fetched again next time
                    }
                    ByteBuffer one = records.slice(records.position(), size);
                    KafkaBatch batch = KafkaBatch.check(MemorySegment.ofBuffer(one));
                    last = store.appendKafkaBatch(topic, partition, batch, Durability.FLUSH_MODE);
                    end += batch.offsetCount();
                    records.position(records.position() + size);
                }
                if (System.nanoTime() - reported > 10_000_000_000L) {
                    last.join();
                    System.out.println("log end " + store.nextOffset(topic, partition));
                    reported = System.nanoTime();
                }
            }
        }
    }

    private static FetchRequestData request(String topic, int partition, long from) {
        return new FetchRequestData().setReplicaId(-1).setMaxWaitMs(500).setMinBytes(1).setMaxBytes(MAX_BYTES)
                .setIsolationLevel((byte) 0).setSessionId(0).setSessionEpoch(-1)
                .setTopics(List.of(new FetchRequestData.FetchTopic().setTopic(topic).setPartitions(List.of(
                        new FetchRequestData.FetchPartition().setPartition(partition).setFetchOffset(from)
                                .setPartitionMaxBytes(MAX_BYTES).setCurrentLeaderEpoch(-1)))));
    }

    private static void send(SocketChannel channel, ObjectSerializationCache cache, int correlation,
                             FetchRequestData body) throws IOException {
        short headerVersion = ApiKeys.FETCH.requestHeaderVersion(VERSION);
        RequestHeaderData header = new RequestHeaderData().setRequestApiKey(ApiKeys.FETCH.id)
                .setRequestApiVersion(VERSION).setCorrelationId(correlation).setClientId("follower");
        int size = header.size(cache, headerVersion) + body.size(cache, VERSION);
        ByteBuffer out = ByteBuffer.allocate(4 + size).putInt(size);
        ByteBufferAccessor writer = new ByteBufferAccessor(out);
        header.write(writer, cache, headerVersion);
        body.write(writer, cache, VERSION);
        out.flip();
        while (out.hasRemaining()) {
            channel.write(out);
        }
    }

    private static FetchResponseData.PartitionData answer(SocketChannel channel, ByteBuffer input, int correlation)
            throws IOException {
        input.clear().limit(4);
        fill(channel, input);
        int size = input.getInt(0);
        if (size > input.capacity()) {
            throw new IOException("an answer of " + size + " bytes");
        }
        input.clear().limit(size);
        fill(channel, input);
        input.flip();
        ByteBufferAccessor reader = new ByteBufferAccessor(input);
        int answered = new ResponseHeaderData(reader, ApiKeys.FETCH.responseHeaderVersion(VERSION)).correlationId();
        if (answered != correlation) {
            throw new IOException("answer " + answered + " to request " + correlation);
        }
        FetchResponseData response = new FetchResponseData(reader, VERSION);
        if (response.errorCode() != Errors.NONE.code()) {
            throw new IOException("fetch: " + Errors.forCode(response.errorCode()));
        }
        return response.responses().getFirst().partitions().getFirst();
    }

    private static void fill(SocketChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            if (channel.read(buffer) < 0) {
                throw new EOFException("the leader closed the connection");
            }
        }
    }
}
