package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
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
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code sluice broker} as a process: SIGTERM closes it cleanly (the store opens without recovery); SIGKILL under
 * an acks=all load loses nothing that was acknowledged, round after round.
 */
class BrokerProcessTest {

    private static final Pattern STARTED = Pattern.compile("on 127\\.0\\.0\\.1:(\\d+) .* started in \\d+ ms");
    private static final int PARTITIONS = 2;

    @TempDir
    Path dir;

    /** A running broker process and the port it listens on. */
    private record Running(Process process, int port) {
    }

    private Running start() throws IOException {
        List<String> command = List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "--enable-native-access=ALL-UNNAMED", "-Xmx512m", "-cp", System.getProperty("java.class.path"),
                Main.class.getName(), "broker", "--dir", dir.toString(), "--listen", "127.0.0.1:0");
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        BufferedReader out = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        String line = out.readLine();
        Matcher matcher = line == null ? null : STARTED.matcher(line);
        if (matcher == null || !matcher.find()) {
            process.destroyForcibly();
            throw new IllegalStateException("the broker did not start: " + line);
        }
        return new Running(process, Integer.parseInt(matcher.group(1)));
    }

    private static Map<String, Object> producerSettings(int port) {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port);
        settings.put(ProducerConfig.ACKS_CONFIG, "all");
        settings.put(ProducerConfig.LINGER_MS_CONFIG, 2);
        settings.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 5_000);
        settings.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
        settings.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 5_000);
        settings.put(ProducerConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200);
        return settings;
    }

    private static void createTopic(int port) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port))) {
            admin.createTopics(List.of(new NewTopic("load", PARTITIONS, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
    }

    private static byte[] value(long id) {
        byte[] value = new byte[100 + (int) (id % 400)];
        new SplittableRandom(id).nextBytes(value);
        return value;
    }

    @Test
    void sigtermClosesCleanlyAndTheNextStartNeedsNoRecovery() throws Exception {
        Running broker = start();
        createTopic(broker.port());
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerSettings(broker.port()),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (long i = 0; i < 1_000; i++) {
                producer.send(new ProducerRecord<>("load", (int) (i % PARTITIONS), null, value(i))).get();
            }
        }
        broker.process().destroy(); // SIGTERM
        assertThat(broker.process().waitFor(20, TimeUnit.SECONDS)).isTrue();
        assertThat(broker.process().exitValue()).isIn(0, 143);
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            assertThat(store.openedClean()).as("the clean-shutdown marker was written").isTrue();
            assertThat(store.maxOffset("load", 0) + store.maxOffset("load", 1)).isEqualTo(1_000);
        }
        // The marker is what spares the next start a recovery; the broker started on it closes cleanly again.
        Running again = start();
        again.process().destroy();
        assertThat(again.process().waitFor(20, TimeUnit.SECONDS)).isTrue();
        try (Store store = Store.open(dir, StoreConfig.builder().build())) {
            assertThat(store.openedClean()).as("the marker after the second start's SIGTERM").isTrue();
            assertThat(store.maxOffset("load", 0) + store.maxOffset("load", 1)).isEqualTo(1_000);
        }
    }

    @Test
    void sigkillUnderAcksAllLoadLosesNothingAcknowledged() throws Exception {
        // (partition, offset) -> the id of the record acknowledged there.
        Map<Long, Long> acknowledged = new ConcurrentHashMap<>();
        Set<Long> reused = ConcurrentHashMap.newKeySet();
        SplittableRandom random = new SplittableRandom(77);
        long nextId = 0;
        int rounds = 10;
        for (int round = 0; round < rounds; round++) {
            Running broker = start();
            if (round == 0) {
                createTopic(broker.port());
            }
            AtomicBoolean stop = new AtomicBoolean();
            CountDownLatch firstAcknowledged = new CountDownLatch(1);
            long firstId = nextId;
            nextId += 1_000_000;
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerSettings(broker.port()),
                    new ByteArraySerializer(), new ByteArraySerializer());
            Thread load = Thread.ofPlatform().start(() -> {
                try {
                    for (long id = firstId; !stop.get(); id++) {
                        long recordId = id;
                        int partition = (int) (id % PARTITIONS);
                        producer.send(new ProducerRecord<>("load", partition, null, value(id)), (metadata, error) -> {
                            // An offset acknowledged twice (a record lost, its offset reused) is kept as a conflict.
                            if (error == null && acknowledged.putIfAbsent(((long) partition << 40) | metadata.offset(),
                                    recordId) != null) {
                                reused.add(((long) partition << 40) | metadata.offset());
                            }
                            if (error == null) {
                                firstAcknowledged.countDown();
                            }
                        });
                    }
                } catch (RuntimeException e) {
                    // the broker died under the producer, or the producer was closed: expected
                }
            });
            // The kill comes while records are being acknowledged, however slow the machine is to get there.
            assertThat(firstAcknowledged.await(60, TimeUnit.SECONDS)).as("a record acknowledged in round %d", round)
                    .isTrue();
            Thread.sleep(300 + random.nextInt(700));
            broker.process().destroyForcibly(); // SIGKILL
            broker.process().waitFor(20, TimeUnit.SECONDS);
            stop.set(true);
            // What is still unanswered fails, unacknowledged; a send blocked on a full buffer the dead broker no
            // longer drains is woken by the close, rather than waiting out max.block.ms.
            producer.close(Duration.ofMillis(200));
            load.join(30_000);
            assertThat(load.isAlive()).as("the load of round %d stopped", round).isFalse();
        }
        assertThat(reused).as("offsets acknowledged for two records").isEmpty();
        assertThat(acknowledged).hasSizeGreaterThan(rounds * 100);
        Running broker = start();
        try {
            Map<Long, Long> found = new HashMap<>();
            Map<String, Object> settings = new HashMap<>();
            settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
            settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                List<TopicPartition> partitions = new ArrayList<>();
                for (int p = 0; p < PARTITIONS; p++) {
                    partitions.add(new TopicPartition("load", p));
                }
                consumer.assign(partitions);
                consumer.seekToBeginning(partitions);
                Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
                long total = ends.values().stream().mapToLong(Long::longValue).sum();
                System.out.println("SIGKILL rounds: end offsets " + ends);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                while (found.size() < total && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                        found.put(((long) record.partition() << 40) | record.offset(),
                                identify(record.value(), acknowledged.get(((long) record.partition() << 40)
                                        | record.offset())));
                    }
                }
            }
            System.out.println("SIGKILL rounds: acknowledged " + acknowledged.size() + ", found " + found.size());
            for (Map.Entry<Long, Long> ack : acknowledged.entrySet()) {
                assertThat(found.get(ack.getKey())).as("acknowledged record at partition %d offset %d",
                        ack.getKey() >>> 40, ack.getKey() & ((1L << 40) - 1)).isEqualTo(ack.getValue());
            }
        } finally {
            broker.process().destroy();
            broker.process().waitFor(20, TimeUnit.SECONDS);
        }
        assertThat(Files.exists(dir.resolve("clean-shutdown"))).isTrue();
    }

    /** @return {@code expected} if the bytes are that record's, else -1 */
    private static long identify(byte[] value, Long expected) {
        return expected != null && java.util.Arrays.equals(value, value(expected)) ? expected : -1;
    }
}
