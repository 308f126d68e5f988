package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.ratis.util.CodeInjectionForTesting;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A seeded network fault: three brokers in this JVM serve an idempotent acks=all kafka-clients producer; the Raft
 * traffic between them is delayed at random, then the leader of the partition is cut off from the other two (its
 * requests to them and theirs to it are held back, through Ratis's own test hook at the handling of AppendEntries
 * and RequestVote) while clients still reach it. A new leader is elected and the old one steps down; after the cut
 * heals nothing acknowledged is lost, no record is acknowledged twice or stored twice, and the replicas agree.
 * {@code -Dsluice.cluster.seed} picks the seed (1 by default).
 */
class NetworkPartitionTest {

    private static final String APPEND_ENTRIES = "RaftServerImpl.appendEntries";
    private static final String REQUEST_VOTE = "RaftServerImpl.requestVote";
    private static final String TOPIC = "n";

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final ClusterBroker[] brokers = new ClusterBroker[4];
    /** The node cut off, as a Raft peer id ("n2"), or null. */
    private final AtomicReference<String> isolated = new AtomicReference<>();

    @AfterEach
    void stopAll() throws IOException {
        isolated.set(null);
        CodeInjectionForTesting.remove(APPEND_ENTRIES);
        CodeInjectionForTesting.remove(REQUEST_VOTE);
        for (ClusterBroker broker : brokers) {
            if (broker != null) {
                broker.close();
            }
        }
        TestClusters.assertNoRaftThreadsLeft();
    }

    /** Holds back a request from or to the isolated node until the cut heals; delays some others a little. */
    private CodeInjectionForTesting.Code network(Random random) {
        Object lock = new Object();
        return (local, remote, args) -> {
            long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            String cut = isolated.get();
            while (cut != null && (cut.equals(String.valueOf(local)) || cut.equals(String.valueOf(remote)))
                    && System.nanoTime() < end) {
                sleep(10);
                cut = isolated.get();
            }
            int delay;
            synchronized (lock) {
                delay = random.nextInt(100) < 5 ? random.nextInt(40) : 0;
            }
            if (delay > 0) {
                sleep(delay);
            }
            return true;
        };
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private String bootstrap() {
        return TestClusters.bootstrap(cluster);
    }

    private int leader() {
        for (int id = 1; id <= 3; id++) {
            if (brokers[id].node().leads(TOPIC, 0)) {
                return id;
            }
        }
        return -1;
    }

    private int awaitLeaderOtherThan(int old, long seconds) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        while (System.nanoTime() < deadline) {
            for (int id = 1; id <= 3; id++) {
                if (id != old && brokers[id].node().leads(TOPIC, 0)) {
                    return id;
                }
            }
            Thread.sleep(20);
        }
        return -1;
    }

    @Test
    void aLeaderCutOffFromTheOthersLosesItsPlaceAndNothingAcknowledgedIsLostOrRepeated() throws Exception {
        long seed = Long.getLong("sluice.cluster.seed", 1);
        Random random = new Random(seed);
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            brokers[id] = ClusterBroker.start(dir.resolve("b" + id), cluster, id, StoreConfig.builder()
                    .writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build(), BrokerConfig.defaults());
        }
        CodeInjectionForTesting.Code network = network(new Random(seed * 31));
        CodeInjectionForTesting.put(APPEND_ENTRIES, network);
        CodeInjectionForTesting.put(REQUEST_VOTE, network);
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
        }

        Map<String, Long> acked = new ConcurrentHashMap<>();
        AtomicReference<Exception> failed = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger sent = new AtomicInteger();
        Thread producer = Thread.ofPlatform().start(() -> produce(acked, failed, stop, sent));
        Thread.sleep(500 + random.nextInt(1000));
        int old = leader();
        assertThat(old).as("a leader of %s-0 before the cut", TOPIC).isPositive();
        isolated.set(ClusterNode.peerId(old).toString());
        int successor = awaitLeaderOtherThan(old, 20);
        assertThat(successor).as("a new leader while node %d is cut off", old).isPositive();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        while (brokers[old].node().leads(TOPIC, 0) && System.nanoTime() < deadline) {
            Thread.sleep(20);
        }
        assertThat(brokers[old].node().leads(TOPIC, 0)).as("the old leader stepped down").isFalse();
        Thread.sleep(1_000 + random.nextInt(2_000));
        isolated.set(null);
        Thread.sleep(1_500);
        stop.set(true);
        producer.join(120_000);
        assertThat(failed.get()).as("the producer's failure").isNull();
        assertThat(acked).as("acknowledged records").hasSizeGreaterThan(1_000);

        Map<String, Long> found = new HashMap<>();
        Properties consumerProperties = new Properties();
        consumerProperties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(consumerProperties,
                new ByteArrayDeserializer(), new ByteArrayDeserializer())) {
            TopicPartition partition = new TopicPartition(TOPIC, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long readDeadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (consumer.position(partition) < end && System.nanoTime() < readDeadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    String value = new String(record.value(), StandardCharsets.UTF_8);
                    assertThat(found.put(value, record.offset())).as("record %s stored once", value).isNull();
                }
            }
        }
        for (Map.Entry<String, Long> entry : acked.entrySet()) {
            assertThat(found.get(entry.getKey())).as("acknowledged record %s", entry.getKey())
                    .isEqualTo(entry.getValue());
        }
        // The replicas agree (the old leader's batches that never reached a majority were cut from its store).
        Thread.sleep(2_000);
        List<byte[]> first = batches(brokers[1].store());
        for (int id = 2; id <= 3; id++) {
            List<byte[]> other = batches(brokers[id].store());
            assertThat(other).as("node %d's batches against node 1's", id).hasSameSizeAs(first);
            for (int i = 0; i < first.size(); i++) {
                assertThat(other.get(i)).as("batch %d on node %d", i, id).isEqualTo(first.get(i));
            }
        }
        System.out.printf("network partition (seed %d): node %d cut off, node %d took over; %d sent, %d acknowledged%n",
                seed, old, successor, sent.get(), acked.size());
    }

    private void produce(Map<String, Long> acked, AtomicReference<Exception> failed, AtomicBoolean stop,
                         AtomicInteger sent) {
        Set<String> twice = new HashSet<>();
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(bootstrap(), 120_000, 5_000)) {
            for (int n = 0; !stop.get(); n++) {
                String value = "p-" + n;
                producer.send(new ProducerRecord<>(TOPIC, value.getBytes(StandardCharsets.UTF_8)),
                        (metadata, error) -> {
                            if (error != null) {
                                failed.compareAndSet(null, error);
                            } else if (acked.put(value, metadata.offset()) != null) {
                                synchronized (twice) {
                                    twice.add(value);
                                }
                                failed.compareAndSet(null, new IllegalStateException(value + " acknowledged twice"));
                            }
                        });
                sent.incrementAndGet();
                if (n % 100 == 0) {
                    Thread.sleep(10);
                }
            }
            producer.flush();
        } catch (Exception e) {
            failed.compareAndSet(null, e);
        }
    }

    private static List<byte[]> batches(Store store) {
        List<byte[]> all = new ArrayList<>();
        long offset = store.minOffset(TOPIC, 0);
        while (offset < store.maxOffset(TOPIC, 0)) {
            try (ReadResult result = store.read(TOPIC, 0, offset, 500, 8 << 20)) {
                if (result.messages().isEmpty()) {
                    break;
                }
                for (StoredMessage message : result.messages()) {
                    all.add(message.bodyBytes());
                }
                offset = result.nextOffset();
            }
        }
        return all;
    }
}
