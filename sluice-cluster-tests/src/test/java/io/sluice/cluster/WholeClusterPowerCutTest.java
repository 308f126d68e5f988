package io.sluice.cluster;

import static io.sluice.cluster.InProcessCluster.await;
import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.sim.CrashModel;
import io.sluice.sim.SimFileSystem;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The power of all three brokers is cut at once while a stock producer sends with acks=all. Each store lives on a
 * simulated file system that loses every write not forced (its ASYNC flush never comes by itself here; the test
 * forces the stores once, midway); the Raft logs, which Ratis writes through its own files, survive whole, as they do
 * once forced. The brokers then start again on what survived.
 *
 * <p>Under ASYNC every replica's store lacks batches its Raft log names, so no replica could be rebuilt from a leader
 * among the others: the replicas cut their logs back to their stores and elect one. Under SYNC no store is short.
 */
class WholeClusterPowerCutTest {

    private static final String TOPIC = "t";
    private static final int PARTITIONS = 3;
    private static final int FORCED = 150;
    private static final int AFTER = 100;

    @TempDir
    Path dir;

    private final SimFileSystem[] disks = new SimFileSystem[4];
    private final List<SimFileSystem> systems = new ArrayList<>();
    private InProcessCluster cluster;
    private final ByteArrayOutputStream logged = new ByteArrayOutputStream();
    private PrintStream originalErr;

    @BeforeEach
    void teeTheLog() {
        originalErr = System.err;
        PrintStream original = originalErr;
        // The brokers log through slf4j-simple, to System.err as it is at each line.
        System.setErr(new PrintStream(new OutputStream() {
            @Override
            public void write(int b) {
                original.write(b);
                synchronized (logged) {
                    logged.write(b);
                }
            }

            @Override
            public void write(byte[] b, int off, int len) {
                original.write(b, off, len);
                synchronized (logged) {
                    logged.write(b, off, len);
                }
            }
        }, true, StandardCharsets.UTF_8));
    }

    @AfterEach
    void stopAll() throws IOException {
        try {
            if (cluster != null) {
                cluster.close();
            }
        } finally {
            System.setErr(originalErr);
            systems.forEach(SimFileSystem::release);
        }
    }

    private String log() {
        synchronized (logged) {
            return logged.toString(StandardCharsets.UTF_8);
        }
    }

    /** A store on the node's simulated disk that forces only when asked to (or, under SYNC, at each batch). */
    private StoreConfig store(int id, FlushMode flush) {
        return StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(flush).fileIO(disks[id])
                .segmentSizeBytes(1 << 20).maxMessageBytes(64 * 1024).queueIndexEntriesPerFile(4096)
                .keyIndexSlotsPerFile(1024).keyIndexEntriesPerFile(4096).flushIntervalMillis(3_600_000)
                .flushDirtyBytes(1L << 40).checkpointIntervalMillis(3_600_000).build();
    }

    private void start(FlushMode flush) throws Exception {
        for (int id = 1; id <= 3; id++) {
            disks[id] = new SimFileSystem();
            systems.add(disks[id]);
        }
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100_000, 8L << 20, 1), id -> store(id, flush));
        cluster.startAll();
        cluster.awaitMembers();
        cluster.createTopic(TOPIC, PARTITIONS);
    }

    private KafkaProducer<byte[], byte[]> producer() {
        return TestClusters.idempotentProducer(cluster.bootstrap(), 120_000, 30_000);
    }

    private static String value(int partition, int i) {
        return TOPIC + "-" + partition + "-" + i;
    }

    private static Future<RecordMetadata> send(KafkaProducer<byte[], byte[]> producer, int partition, int i) {
        return producer.send(new ProducerRecord<>(TOPIC, partition, null,
                value(partition, i).getBytes(StandardCharsets.UTF_8)));
    }

    /** Sends records {@code from} to {@code to - 1} to every partition and waits for each acknowledgement. */
    private void sendAll(KafkaProducer<byte[], byte[]> producer, int from, int to) throws Exception {
        List<Future<RecordMetadata>> futures = new ArrayList<>();
        for (int i = from; i < to; i++) {
            for (int p = 0; p < PARTITIONS; p++) {
                futures.add(send(producer, p, i));
            }
            if (i % 10 == 9) {
                producer.flush();
            }
        }
        for (Future<RecordMetadata> future : futures) {
            future.get(120, TimeUnit.SECONDS);
        }
    }

    /** Commits group g's offset of partition 0 (a metadata entry, kept in every store's consumer positions). */
    private void commitOffset(long offset) {
        try (KafkaConsumer<byte[], byte[]> consumer = consumer("g")) {
            consumer.assign(List.of(new TopicPartition(TOPIC, 0)));
            consumer.commitSync(Map.of(new TopicPartition(TOPIC, 0), new OffsetAndMetadata(offset)),
                    Duration.ofSeconds(60));
        }
    }

    private KafkaConsumer<byte[], byte[]> consumer(String group) {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, cluster.bootstrap());
        properties.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        return new KafkaConsumer<>(properties, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /**
     * Sends {@link #FORCED} records to each partition, all acknowledged, forces every store, commits an offset, then
     * sends more, and once some of those are acknowledged on each partition cuts every node's power.
     *
     * @return the records acknowledged, by partition: first those forced, then those acknowledged after
     */
    private List<List<String>> produceAndCut() throws Exception {
        List<List<String>> acknowledged = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            sendAll(producer, 0, FORCED);
        }
        for (int id = 1; id <= 3; id++) {
            cluster.broker(id).store().sync();
        }
        commitOffset(42);
        KafkaProducer<byte[], byte[]> producer = producer();
        List<List<Future<RecordMetadata>>> later = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            later.add(new ArrayList<>());
        }
        for (int i = FORCED; i < FORCED + 400; i++) {
            for (int p = 0; p < PARTITIONS; p++) {
                later.get(p).add(send(producer, p, i));
            }
            if (i % 10 == 9) {
                producer.flush();
            }
            if (i == FORCED + 60) {
                // A third of the later records go out, and once each partition has some acknowledged, the power goes.
                await("records acknowledged after the force on every partition", 60,
                        () -> later.stream().allMatch(futures -> futures.get(30).isDone()));
                break;
            }
        }
        cutThePower();
        producer.close(Duration.ZERO);
        for (int p = 0; p < PARTITIONS; p++) {
            List<String> partition = new ArrayList<>();
            for (int i = 0; i < FORCED; i++) {
                partition.add(value(p, i));
            }
            List<Future<RecordMetadata>> futures = later.get(p);
            for (int i = 0; i < futures.size(); i++) {
                if (acknowledged(futures.get(i))) {
                    partition.add(value(p, FORCED + i));
                }
            }
            acknowledged.add(partition);
        }
        return acknowledged;
    }

    private static boolean acknowledged(Future<RecordMetadata> future) {
        try {
            return future.isDone() && future.get() != null;
        } catch (ExecutionException | InterruptedException e) {
            return false;
        }
    }

    /**
     * Every node's disk loses what was not forced, at once; then the nodes stop (their stores' writes failing), and
     * each is given the disk as it came back.
     */
    private void cutThePower() {
        SimFileSystem[] after = new SimFileSystem[4];
        for (int id = 1; id <= 3; id++) {
            after[id] = disks[id].crash(new SplittableRandom(id), CrashModel.LOSE_ALL);
        }
        for (int id = 1; id <= 3; id++) {
            cluster.stopAfterPowerCut(id);
            disks[id] = after[id];
            systems.add(after[id]);
        }
    }

    /** @return the broker that leads the partition (waits up to {@code seconds}) */
    private int leaderOf(int partition, int seconds) throws InterruptedException {
        int[] leader = new int[1];
        await("a leader of " + TOPIC + "-" + partition + " that serves", seconds, () -> {
            for (int id = 1; id <= 3; id++) {
                if (cluster.broker(id) != null && cluster.broker(id).node().leads(TOPIC, partition)) {
                    leader[0] = id;
                    return true;
                }
            }
            return false;
        });
        return leader[0];
    }

    /**
     * After the restart: every partition gets a leader that serves, a stock producer's records are acknowledged, the
     * three replicas end in sync and hold the same batches byte for byte, a stock consumer reads each partition with
     * no record twice, every record acknowledged and forced before the cut (and every one in {@code kept}) among them,
     * and the committed offset is still there.
     *
     * @return what the consumer read, by partition
     */
    private List<List<String>> assertServesAfterRestart(List<List<String>> kept) throws Exception {
        for (int p = 0; p < PARTITIONS; p++) {
            leaderOf(p, 60);
        }
        int from = FORCED + 1_000;
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            sendAll(producer, from, from + AFTER);
        }
        List<List<String>> read = new ArrayList<>();
        for (int p = 0; p < PARTITIONS; p++) {
            int partition = p;
            int leader = leaderOf(p, 30);
            await(TOPIC + "-" + p + " has its three replicas in sync", 90, () -> cluster.broker(leader).node()
                    .partition(TOPIC, partition).inSync().size() == 3);
            Store leaderStore = cluster.broker(leader).store();
            long end = cluster.broker(leader).node().highWatermark(TOPIC, p);
            for (int id = 1; id <= 3; id++) {
                int node = id;
                await("node " + id + " committed " + TOPIC + "-" + p + " to " + end, 60,
                        () -> cluster.broker(node).node().highWatermark(TOPIC, partition) >= end);
                Store store = cluster.broker(id).store();
                assertThat(store.minOffset(TOPIC, p)).as("node %d's first offset of %s-%d", id, TOPIC, p)
                        .isEqualTo(leaderStore.minOffset(TOPIC, p));
                List<byte[]> expected = InProcessCluster.batches(leaderStore, TOPIC, p, 0, end);
                List<byte[]> actual = InProcessCluster.batches(store, TOPIC, p, 0, end);
                assertThat(actual).as("node %d's batches of %s-%d", id, TOPIC, p).hasSameSizeAs(expected);
                for (int i = 0; i < expected.size(); i++) {
                    assertThat(actual.get(i)).as("node %d's batch %d of %s-%d", id, i, TOPIC, p)
                            .isEqualTo(expected.get(i));
                }
            }
            List<String> values = cluster.readValues(TOPIC, p, kept.get(p).size() + AFTER);
            assertThat(new HashSet<>(values)).as("records of %s-%d stored once", TOPIC, p).hasSameSizeAs(values);
            assertThat(values).as("records of %s-%d acknowledged and forced before the cut, in order", TOPIC, p)
                    .startsWith(kept.get(p).subList(0, FORCED).toArray(new String[0]));
            assertThat(values).as("records of %s-%d that must be kept", TOPIC, p).containsAll(kept.get(p));
            for (int i = from; i < from + AFTER; i++) {
                assertThat(values).as("records of %s-%d sent after the restart", TOPIC, p).contains(value(p, i));
            }
            read.add(values);
        }
        try (KafkaConsumer<byte[], byte[]> consumer = consumer("g")) {
            TopicPartition partition = new TopicPartition(TOPIC, 0);
            assertThat(consumer.committed(Set.of(partition), Duration.ofSeconds(60)).get(partition).offset())
                    .as("group g's offset committed before the cut").isEqualTo(42);
        }
        return read;
    }

    /**
     * Under ASYNC every store loses the batches written after the force, and every Raft log names them: before the
     * cut back, each replica stopped waiting for a leader among the others and no partition was served again.
     */
    @Test
    void aPowerCutOfEveryBrokerUnderAsyncComesBackWithTheForcedRecords() throws Exception {
        start(FlushMode.ASYNC);
        List<List<String>> acknowledged = produceAndCut();
        for (int p = 0; p < PARTITIONS; p++) {
            assertThat(acknowledged.get(p)).as("records of %s-%d acknowledged after the force", TOPIC, p)
                    .hasSizeGreaterThan(FORCED);
        }
        cluster.startAll();
        List<List<String>> forced = new ArrayList<>();
        for (List<String> partition : acknowledged) {
            forced.add(partition.subList(0, FORCED));
        }
        List<List<String>> read = assertServesAfterRestart(forced);
        String log = log();
        for (int p = 0; p < PARTITIONS; p++) {
            assertThat(log).as("the log names what %s-%d lost", TOPIC, p)
                    .containsPattern("Offsets \\d+ to \\d+ of " + TOPIC + "-" + p + ", acknowledged or not, are given"
                            + " up here");
            List<String> lost = new ArrayList<>(acknowledged.get(p));
            lost.removeAll(read.get(p));
            originalErr.println(TOPIC + "-" + p + ": " + (acknowledged.get(p).size() - FORCED)
                    + " records acknowledged after the force, " + lost.size() + " of them lost in the cut");
        }
    }

    /** Under SYNC each batch is forced before its Raft entry is written: the same cut loses no acknowledged record. */
    @Test
    void aPowerCutOfEveryBrokerUnderSyncKeepsEveryAcknowledgedRecord() throws Exception {
        start(FlushMode.SYNC);
        List<List<String>> acknowledged = produceAndCut();
        cluster.startAll();
        assertServesAfterRestart(acknowledged);
        assertThat(log()).as("nothing cut back").doesNotContain("are given up here");
    }
}
