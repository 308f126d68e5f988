package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumMap;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.Supplier;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker alone in a process of its own, its compacted topic's partitions in 1 MiB segments that its log cleaner
 * compacts again every 50 ms, killed by SIGKILL again and again while an idempotent producer writes acks=all updates
 * over a few hundred keys, and started again on the same store. The kills take turns: at a seeded moment, as soon as a
 * segment's copy is seen being written, as soon as a swap's marker is seen, and as soon as a copy seen is gone
 * (renamed over its segment: the swap is under way). After each start, with the producer
 * paused once everything it sent was answered (the cleaner goes on), a consumer reads each partition from its start to
 * its end: every record read is one produced, with its key and value, at the offset its acknowledgement gave if it had
 * one, and no value is read twice; and for every key the record read last is the latest acknowledged one of that key
 * or a later record of the same key. After the last kill the store opens in this process and the verifier finds no
 * fault.
 */
class CompactionKillTest {

    private static final String TOPIC = "compacted";
    private static final int PARTITIONS = 2;
    private static final int KEYS = 300;
    private static final int ROUNDS = 8;
    private static final int SEGMENT_BYTES = 1 << 20;
    private static final int MAX_MESSAGE_BYTES = 256 * 1024;
    private static final String PADDING = "p".repeat(600);

    @TempDir
    Path dir;

    private Process process;
    private int port;

    /** A record sent: its key and value. */
    private record Sent(int key, String value) {
    }

    /** An acknowledged record: its sequence number (in its value) and offset. */
    private record Acked(long sequence, long offset) {
    }

    private final Map<Long, Sent> sent = new ConcurrentHashMap<>();
    private final Map<Long, Long> ackedOffsets = new ConcurrentHashMap<>();
    /** Per key, the acknowledged record of the highest offset. */
    private final Map<Integer, Acked> latestAcked = new ConcurrentHashMap<>();
    private final AtomicLong failed = new AtomicLong();
    /** Set while the producer is asked to stop sending for a check; null while it sends. */
    private volatile Pause pause;

    /** A pause of the producer: counted down once everything it sent is answered, and to let it go on. */
    private record Pause(CountDownLatch quiet, CountDownLatch resume) {
    }

    @AfterEach
    void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private void start(int round) throws Exception {
        process = BrokerChild.start(dir.resolve("store"), port, dir.resolve("broker-" + round + ".log"), "segmentSizeBytes=" + SEGMENT_BYTES,
                "maxMessageBytes=" + MAX_MESSAGE_BYTES, "cleanerBackoffMillis=50");
    }

    private String bootstrap() {
        return "127.0.0.1:" + port;
    }

    @Test
    void theLatestAcknowledgedValueOfEachKeyIsReadLastAcrossKillsDuringCompaction() throws Exception {
        // The kills' moments and the updates' keys follow the seed; what a kill strikes depends on timing too.
        long seed = Long.getLong("sluice.kill.seed", System.nanoTime());
        System.out.println("CompactionKillTest seed " + seed + " (-Dsluice.kill.seed=" + seed + " to run it again)");
        Random random = new Random(seed);
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        start(0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap()))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1).configs(Map.of(
                    "cleanup.policy", "compact", "min.cleanable.dirty.ratio", "0.01"))))
                    .all().get(30, TimeUnit.SECONDS);
        }
        AtomicBoolean stop = new AtomicBoolean();
        Thread producer = Thread.ofPlatform().name("updates").start(() -> produce(stop, random.nextLong()));
        List<String> reads = new ArrayList<>();
        Map<KillAt, Integer> struck = new EnumMap<>(KillAt.class);
        for (int round = 1; round <= ROUNDS; round++) {
            KillAt at = KillAt.values()[round % KillAt.values().length];
            if (killAt(at, random)) {
                struck.merge(at, 1, Integer::sum);
            }
            process.waitFor(30, TimeUnit.SECONDS);
            start(round);
            String where = "after kill " + round + " (seed " + seed + ")";
            reads.add(quietly(() -> check(where)));
        }
        stop.set(true);
        producer.join(60_000);
        reads.add(check("at the end (seed " + seed + ")"));
        assertThat(latestAcked).as("keys acknowledged").hasSize(KEYS);
        assertThat(sent.size()).as("records sent").isGreaterThan(10 * KEYS);

        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
        process = null;
        try (Store store = Store.open(dir.resolve("store"), Broker.asyncFlushing(StoreConfig.builder()
                .flushMode(FlushMode.ASYNC).writePath(Broker.ASYNC_WRITE_PATH).segmentSizeBytes(SEGMENT_BYTES)
                .maxMessageBytes(MAX_MESSAGE_BYTES)).build())) {
            assertThat(store.recoveryReports()).as("recovered at the open").isNotEmpty();
        }
        assertThat(StoreVerifier.verify(dir.resolve("store")).faults()).isEmpty();
        long interrupted = 0;
        for (int round = 1; round <= ROUNDS; round++) {
            interrupted += Files.readString(dir.resolve("broker-" + round + ".log"))
                    .lines().filter(line -> line.contains("a compaction was interrupted")).count();
        }
        System.out.printf("compaction across %d kills: %d records sent, %d acknowledged, %d failed; kills that saw"
                + " what they waited for: %s; swaps found interrupted at a start: %d; records read / offsets: %s%n",
                ROUNDS, sent.size(), ackedOffsets.size(), failed.get(), struck, interrupted, reads);
        assertThat(interrupted).as("starts that found a swap interrupted (its marker there)").isPositive();
    }

    /** When a round's kill strikes. */
    private enum KillAt {
        /** At a seeded moment, 1 to 2.5 s into the round. */
        MOMENT,
        /** As soon as a segment's copy ({@code <base>.cleaned}) is seen being written, or after 4 s. */
        COPY,
        /** As soon as a swap's marker ({@code <base>.reindex}) is seen, or after 4 s. */
        MARKER,
        /**
         * As soon as a copy seen being written is gone (renamed over its segment, most often: its index entries are
         * being rewritten and forced), or after 4 s.
         */
        SWAP
    }

    /**
     * Kills the broker (SIGKILL) when {@code at} says.
     *
     * @return true if it saw what it waited for
     */
    private boolean killAt(KillAt at, Random random) throws InterruptedException {
        boolean seen = false;
        if (at == KillAt.MOMENT) {
            Thread.sleep(1_000 + random.nextInt(1_500));
        } else {
            Thread.sleep(500); // updates to clean first
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(4);
            Path copy = null;
            while (System.nanoTime() < deadline && !seen) {
                if (at == KillAt.MARKER) {
                    seen = compactionFile("*.reindex") != null;
                } else if (copy == null) {
                    copy = compactionFile("*.cleaned");
                    seen = copy != null && at == KillAt.COPY;
                } else {
                    seen = !Files.exists(copy);
                }
                if (!seen) {
                    LockSupport.parkNanos(100_000);
                }
            }
        }
        process.destroyForcibly();
        return seen;
    }

    /** @return a file in a partition's log directory whose name matches {@code glob}, or null if none is there */
    private Path compactionFile(String glob) {
        for (int p = 0; p < PARTITIONS; p++) {
            try (DirectoryStream<Path> files = Files.newDirectoryStream(dir.resolve("store/logs/" + TOPIC + "/" + p
                    + "/log"), glob)) {
                for (Path file : files) {
                    return file;
                }
            } catch (IOException e) {
                // not created yet
            }
        }
        return null;
    }

    /**
     * Sends updates, 20 at a time and then a 10 ms pause, each to a random key's partition, noting every record sent
     * and, as acknowledgements come, its offset; at most 2,000 unacknowledged at once.
     */
    private void produce(AtomicBoolean stop, long seed) {
        Random random = new Random(seed);
        Semaphore window = new Semaphore(2_000);
        long sequence = 0;
        while (!stop.get()) {
            Properties properties = new Properties();
            properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            properties.put(ProducerConfig.ACKS_CONFIG, "all");
            properties.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, true);
            properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            properties.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
            properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
            properties.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
                    new StringSerializer())) {
                while (!stop.get()) {
                    Pause asked = pause;
                    if (asked != null) {
                        producer.flush();
                        asked.quiet().countDown();
                        asked.resume().await();
                    }
                    for (int i = 0; i < 20; i++) {
                        long seq = sequence++;
                        int key = random.nextInt(KEYS);
                        String value = "k" + key + "#" + seq + "#" + PADDING;
                        sent.put(seq, new Sent(key, value));
                        window.acquire();
                        producer.send(new ProducerRecord<>(TOPIC, key % PARTITIONS, "k" + key, value),
                                (metadata, exception) -> {
                                    window.release();
                                    if (exception != null) {
                                        failed.incrementAndGet();
                                        return;
                                    }
                                    ackedOffsets.put(seq, metadata.offset());
                                    latestAcked.merge(key, new Acked(seq, metadata.offset()),
                                            (a, b) -> a.offset() >= b.offset() ? a : b);
                                });
                    }
                    Thread.sleep(10);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            } catch (RuntimeException e) {
                // The producer gave up (the broker was down too long): a new one goes on.
            }
        }
    }

    /**
     * Runs {@code check} while the producer sends nothing, once every record it sent was answered: the cleaner goes on
     * meanwhile, but keeps only records the partitions' ends cover. (While records are appended, a record below the end
     * a check reads to may go for a later one of its key that lies past it.)
     */
    private String quietly(Supplier<String> check) throws InterruptedException {
        Pause asked = new Pause(new CountDownLatch(1), new CountDownLatch(1));
        pause = asked;
        try {
            assertThat(asked.quiet().await(60, TimeUnit.SECONDS)).as("the producer paused").isTrue();
            return check.get();
        } finally {
            pause = null;
            asked.resume().countDown();
        }
    }

    /**
     * Reads each partition from its start to the end it has now and checks it against what was sent and acknowledged.
     *
     * @return the records read and the offsets below the ends, "read/offsets"
     */
    private String check(String where) {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_uncommitted");
        properties.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, 4 << 20);
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
                new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(TOPIC, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            Map<Integer, Acked> expected = new HashMap<>();
            latestAcked.forEach((key, acked) -> {
                if (acked.offset() < ends.get(new TopicPartition(TOPIC, key % PARTITIONS))) {
                    expected.put(key, acked);
                }
            });
            Map<Integer, ConsumerRecord<String, String>> last = new HashMap<>();
            Set<String> values = new HashSet<>();
            long read = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < ends.get(p))) {
                assertThat(System.nanoTime()).as(where + ": read to the end in time").isLessThan(deadline);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    if (record.offset() >= ends.get(new TopicPartition(TOPIC, record.partition()))) {
                        continue;
                    }
                    read++;
                    String value = record.value();
                    long seq = Long.parseLong(value.substring(value.indexOf('#') + 1, value.lastIndexOf('#')));
                    Sent sentRecord = sent.get(seq);
                    assertThat(sentRecord).as("%s: record at %s-%d was sent", where, record.partition(),
                            record.offset()).isNotNull();
                    assertThat(record.key()).as("%s: key at %d", where, record.offset())
                            .isEqualTo("k" + sentRecord.key());
                    assertThat(value).as("%s: value at %d", where, record.offset()).isEqualTo(sentRecord.value());
                    assertThat(record.partition()).isEqualTo(sentRecord.key() % PARTITIONS);
                    Long acked = ackedOffsets.get(seq);
                    if (acked != null) {
                        assertThat(record.offset()).as("%s: offset of acknowledged record %d", where, seq)
                                .isEqualTo(acked);
                    }
                    assertThat(values.add(value)).as("%s: record %d read once (at %d)", where, seq,
                            record.offset()).isTrue();
                    last.put(sentRecord.key(), record);
                }
            }
            expected.forEach((key, acked) -> {
                ConsumerRecord<String, String> seen = last.get(key);
                assertThat(seen).as("%s: key k%d, acknowledged at offset %d, read", where, key, acked.offset())
                        .isNotNull();
                assertThat(seen.offset()).as("%s: key k%d read last at an offset below its latest acknowledged",
                        where, key).isGreaterThanOrEqualTo(acked.offset());
                if (seen.offset() == acked.offset()) {
                    assertThat(seen.value()).as("%s: key k%d", where, key).isEqualTo(sent.get(acked.sequence())
                            .value());
                }
            });
            long offsets = ends.values().stream().mapToLong(Long::longValue).sum();
            return read + "/" + offsets;
        }
    }
}
