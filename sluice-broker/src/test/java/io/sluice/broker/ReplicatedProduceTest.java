package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.AppendResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import java.lang.foreign.MemorySegment;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.ProduceRequestData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.SimpleRecord;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Produce on a broker of a cluster, against a {@link Replication} that stands for the cluster in this JVM (appends go
 * to the local store): leadership decides who takes a batch, and an idempotent producer's sequences stay in order
 * around a leader's first moments.
 */
class ReplicatedProduceTest {

    private static final short VERSION = 9;
    private static final long PRODUCER = 4242;

    @TempDir
    Path dir;

    /** One broker's view of a one-broker "cluster": it leads once {@link #ready} is set; appends go to the store. */
    static final class LocalReplication implements Replication {
        final Store store;
        final AtomicBoolean ready = new AtomicBoolean();
        final AtomicBoolean elected = new AtomicBoolean(true);
        final AtomicInteger appends = new AtomicInteger();

        LocalReplication(Store store) {
            this.store = store;
        }

        @Override
        public int self() {
            return 1;
        }

        @Override
        public List<Node> brokers() {
            return List.of(new Node(1, "127.0.0.1", 0));
        }

        @Override
        public int controller() {
            return 1;
        }

        @Override
        public PartitionView partition(String topic, int partition) {
            return new PartitionView(elected.get() ? 1 : -1, 1, List.of(1), List.of(1));
        }

        @Override
        public boolean leads(String topic, int partition) {
            return elected.get() && ready.get();
        }

        @Override
        public Appended append(String topic, int partition, byte[] batch) {
            appends.incrementAndGet();
            CompletableFuture<Long> offset = store.appendOpaque(topic, partition, MemorySegment.ofArray(batch),
                    MemoryRecords.readableRecords(java.nio.ByteBuffer.wrap(batch)).batches().iterator().next()
                            .countOrNull()).thenApply(AppendResult::firstQueueOffset);
            return new Appended(offset, offset);
        }

        @Override
        public long highWatermark(String topic, int partition) {
            return store.maxOffset(topic, partition);
        }

        @Override
        public CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor) {
            store.createTopic(topic, TopicLayout.BATCHES, partitions);
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
            offsets.forEach(o -> store.commitOffset(group, o.topic(), o.partition(), o.offset()));
            return CompletableFuture.completedFuture(null);
        }

        @Override
        public int defaultReplicationFactor() {
            return 1;
        }

        @Override
        public void onChange(BiConsumer<String, Integer> listener) {
        }
    }

    private static ProduceRequestData request(int firstSequence, int count) {
        SimpleRecord[] records = new SimpleRecord[count];
        for (int i = 0; i < count; i++) {
            records[i] = new SimpleRecord(("r" + (firstSequence + i)).getBytes(StandardCharsets.UTF_8));
        }
        MemoryRecords batch = MemoryRecords.withIdempotentRecords(Compression.NONE, PRODUCER, (short) 0,
                firstSequence, records);
        ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
        topics.add(new ProduceRequestData.TopicProduceData().setName("t").setPartitionData(List.of(
                new ProduceRequestData.PartitionProduceData().setIndex(0).setRecords(batch))));
        return new ProduceRequestData().setAcks((short) -1).setTimeoutMs(10_000).setTopicData(topics);
    }

    private static ProduceResponseData.PartitionProduceResponse produce(Socket socket, ProduceRequestData request)
            throws Exception {
        return new ProduceResponseData(Wire.exchange(socket, ApiKeys.PRODUCE, VERSION, request), VERSION)
                .responses().iterator().next().partitionResponses().getFirst();
    }

    /**
     * A broker just elected, not ready to append yet, used to answer the producer's first batch NOT_LEADER_OR_FOLLOWER
     * and take its second a moment later, as a new producer's first batch: the first one's retry was then refused as
     * out of order for good. It now holds the first batch until it is ready.
     */
    @Test
    void aLeaderNotReadyYetHoldsTheBatchRatherThanRefuseIt() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                Thread.ofVirtual().start(() -> {
                    try {
                        Thread.sleep(300);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                    cluster.ready.set(true);
                });
                ProduceResponseData.PartitionProduceResponse first = produce(socket, request(0, 3));
                assertThat(Errors.forCode(first.errorCode())).isEqualTo(Errors.NONE);
                assertThat(first.baseOffset()).isZero();
                ProduceResponseData.PartitionProduceResponse second = produce(socket, request(3, 2));
                assertThat(Errors.forCode(second.errorCode())).isEqualTo(Errors.NONE);
                assertThat(second.baseOffset()).isEqualTo(3);
            }
        }
    }

    /** A broker that is not the leader (none elected) answers NOT_LEADER_OR_FOLLOWER and appends nothing. */
    @Test
    void aBrokerThatDoesNotLeadRefusesAndStoresNothing() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            store.createTopic("t", TopicLayout.BATCHES, 1);
            LocalReplication cluster = new LocalReplication(store);
            cluster.elected.set(false);
            try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withNodeId(1), cluster);
                 Socket socket = new Socket("127.0.0.1", broker.port())) {
                ProduceResponseData.PartitionProduceResponse answer = produce(socket, request(0, 3));
                assertThat(Errors.forCode(answer.errorCode())).isEqualTo(Errors.NOT_LEADER_OR_FOLLOWER);
                assertThat(cluster.appends).hasValue(0);
                assertThat(store.maxOffset("t", 0)).isZero();
            }
        }
    }
}
