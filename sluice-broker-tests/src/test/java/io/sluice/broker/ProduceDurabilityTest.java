package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import io.sluice.store.io.DiskSpace;
import io.sluice.testsupport.KafkaWire;
import java.net.Socket;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.message.DeleteTopicsRequestData;
import org.apache.kafka.common.message.DeleteTopicsResponseData;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** What an acknowledgement means, and what a refused append leaves of the idempotent producer's state. */
class ProduceDurabilityTest {

    @TempDir
    Path dir;

    private static ProduceResponseData.PartitionProduceResponse produce(Socket socket, short acks, MemoryRecords records)
            throws Exception {
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName("t").setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(records))));
        return new ProduceResponseData(KafkaWire.exchange(socket, ApiKeys.PRODUCE, (short) 9, new ProduceRequestData()
                .setAcks(acks).setTimeoutMs(10_000).setTopicData(topics)), (short) 9).responses().iterator().next()
                .partitionResponses().getFirst();
    }

    @Test
    void onAWritePathThatBuffersInTheProcessAnAcknowledgedBatchIsOnDiskForAcksOneToo() throws Exception {
        // Nothing would commit or force for an hour but a forced append.
        StoreConfig config = StoreConfig.builder().writePath(WritePath.WRITE_BUFFER).flushMode(FlushMode.ASYNC)
                .commitIntervalMillis(3_600_000).flushIntervalMillis(3_600_000).commitMinBytes(Long.MAX_VALUE)
                .flushDirtyBytes(Long.MAX_VALUE).checkpointIntervalMillis(3_600_000).build();
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            store.createTopic("t", TopicLayout.QUEUE, 1);
            for (short acks : new short[] {1, -1}) {
                ProduceResponseData.PartitionProduceResponse response = produce(socket, acks,
                        MemoryRecords.withRecords(Compression.NONE, new SimpleRecord("v".getBytes())));
                assertThat(response.errorCode()).isEqualTo(Errors.NONE.code());
                var status = store.ownLogStatuses().get("t/0");
                assertThat(status.flushedPosition()).as("acks=%d: acknowledged only once forced", acks)
                        .isEqualTo(status.writePosition());
            }
        }
    }

    @Test
    void aBatchRefusedForAFullDiskIsNotTakenForSentAndItsRetryIsStored() throws Exception {
        ZeroCopyFetchTest.CountingFileIO io = new ZeroCopyFetchTest.CountingFileIO();
        RetentionPolicy retention = new RetentionPolicy(Long.MAX_VALUE, Long.MAX_VALUE, 0.7, 0.8, 0.9, 20, true);
        try (Store store = Store.open(dir, StoreConfig.builder().fileIO(io).retention(retention).build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket socket = new Socket("127.0.0.1", broker.port())) {
            store.createTopic("t", TopicLayout.QUEUE, 1);
            MemoryRecords first = MemoryRecords.withIdempotentRecords(Compression.NONE, 5L, (short) 0, 0,
                    new SimpleRecord("a".getBytes()));
            assertThat(produce(socket, (short) -1, first).baseOffset()).isZero();
            // The disk fills: appends are refused.
            io.reported = new DiskSpace(1_000_000_000L, 10_000_000L, 10_000_000L);
            MemoryRecords second = MemoryRecords.withIdempotentRecords(Compression.NONE, 5L, (short) 0, 1,
                    new SimpleRecord("b".getBytes()));
            long deadline = System.nanoTime() + 10_000_000_000L;
            ProduceResponseData.PartitionProduceResponse refused = produce(socket, (short) -1, second);
            while (refused.errorCode() == Errors.NONE.code() && System.nanoTime() < deadline) {
                Thread.sleep(20);
                refused = produce(socket, (short) -1, MemoryRecords.withIdempotentRecords(Compression.NONE, 5L,
                        (short) 0, (int) store.maxOffset("t", 0), new SimpleRecord("b".getBytes())));
            }
            assertThat(refused.errorCode()).isEqualTo(Errors.KAFKA_STORAGE_ERROR.code());
            long stored = store.maxOffset("t", 0);
            // Space comes back: the refused batch's retry is stored, not answered as a duplicate of a failure.
            io.reported = null;
            ProduceResponseData.PartitionProduceResponse retry;
            deadline = System.nanoTime() + 10_000_000_000L;
            do {
                Thread.sleep(20);
                retry = produce(socket, (short) -1, MemoryRecords.withIdempotentRecords(Compression.NONE, 5L,
                        (short) 0, (int) stored, new SimpleRecord("b".getBytes())));
            } while (retry.errorCode() != Errors.NONE.code() && System.nanoTime() < deadline);
            assertThat(retry.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(retry.baseOffset()).isEqualTo(stored);
            assertThat(store.maxOffset("t", 0)).isEqualTo(stored + 1);
        }
    }

    /**
     * A refused deletion (a SHARED topic) keeps the producers' state: a retry of a batch still waiting for its force
     * is answered as a duplicate of it, not stored again from a state rebuilt from what was forced.
     */
    @Test
    void aRefusedDeletionKeepsTheProducersStateOfItsTopic() throws Exception {
        ZeroCopyFetchTest.CountingFileIO io = new ZeroCopyFetchTest.CountingFileIO();
        StoreConfig config = StoreConfig.builder().fileIO(io).flushMode(FlushMode.SYNC)
                .checkpointIntervalMillis(3_600_000).build();
        ExecutorService clients = Executors.newFixedThreadPool(2);
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Socket first = new Socket("127.0.0.1", broker.port());
             Socket second = new Socket("127.0.0.1", broker.port());
             Socket admin = new Socket("127.0.0.1", broker.port())) {
            store.createTopic("t", TopicLayout.SHARED, 1);
            assertThat(produce(first, (short) -1, MemoryRecords.withIdempotentRecords(Compression.NONE, 5L, (short) 0,
                    0, new SimpleRecord("a".getBytes()))).errorCode()).isEqualTo(Errors.NONE.code());
            long written = store.status().writePosition();

            io.forceGate = new CountDownLatch(1);
            MemoryRecords pending = MemoryRecords.withIdempotentRecords(Compression.NONE, 5L, (short) 0, 1,
                    new SimpleRecord("b".getBytes()));
            Future<ProduceResponseData.PartitionProduceResponse> original =
                    clients.submit(() -> produce(first, (short) -1, MemoryRecords.readableRecords(pending.buffer().duplicate())));
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (store.status().writePosition() == written && System.nanoTime() < deadline) {
                Thread.sleep(5);
            }
            assertThat(store.status().writePosition()).as("appended, waiting for its force").isGreaterThan(written);

            DeleteTopicsRequestData delete = new DeleteTopicsRequestData().setTimeoutMs(10_000)
                    .setTopicNames(List.of("t"));
            DeleteTopicsResponseData deleted = new DeleteTopicsResponseData(KafkaWire.exchange(admin,
                    ApiKeys.DELETE_TOPICS, (short) 5, delete), (short) 5);
            assertThat(deleted.responses().find("t").errorCode()).isEqualTo(Errors.TOPIC_DELETION_DISABLED.code());

            Future<ProduceResponseData.PartitionProduceResponse> retry =
                    clients.submit(() -> produce(second, (short) -1, MemoryRecords.readableRecords(pending.buffer().duplicate())));
            Thread.sleep(200); // the retry reaches the broker while the original still waits
            io.forceGate.countDown();
            io.forceGate = null;
            assertThat(original.get(30, TimeUnit.SECONDS).errorCode()).isEqualTo(Errors.NONE.code());
            ProduceResponseData.PartitionProduceResponse again = retry.get(30, TimeUnit.SECONDS);
            assertThat(again.errorCode()).isEqualTo(Errors.NONE.code());
            assertThat(again.baseOffset()).as("answered as the original").isEqualTo(1);
            assertThat(store.maxOffset("t", 0)).as("stored once").isEqualTo(2);
        } finally {
            clients.shutdownNow();
        }
    }
}
