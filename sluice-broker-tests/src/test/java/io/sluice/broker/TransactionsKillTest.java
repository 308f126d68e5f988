package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.ServerSocket;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
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
 * A broker alone in a process of its own, killed by SIGKILL again and again while a transactional producer commits and
 * aborts transactions over three partitions, and started again on the same store: a read_committed consumer then
 * reads every record of each transaction whose commit was acknowledged exactly once, none of one whose abort was, and
 * of one whose end its producer never learnt all or none (the coordinator completes or aborts it after the restart).
 */
class TransactionsKillTest {

    private static final String TOPIC = "k";
    private static final int PARTITIONS = 3;
    private static final int RECORDS = 6;
    private static final int ROUNDS = 5;
    /** Transactions each round waits to see ended (committed or aborted) before its kill: 30 in all, half committed. */
    private static final int ENDED_PER_ROUND = 5;

    @TempDir
    Path dir;

    private Process process;
    private int port;

    private enum Outcome {
        COMMITTED, ABORTED, UNKNOWN
    }

    @AfterEach
    void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private void start(int round) throws Exception {
        process = BrokerChild.start(dir.resolve("store"), port, dir.resolve("broker-" + round + ".log"));
    }

    private String bootstrap() {
        return "127.0.0.1:" + port;
    }

    @Test
    void acknowledgedCommitsAreReadOnceAndAcknowledgedAbortsNeverAcrossKills() throws Exception {
        try (ServerSocket socket = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        start(0);
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap()))) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
        }
        Map<Integer, Outcome> outcomes = new ConcurrentHashMap<>();
        AtomicBoolean stop = new AtomicBoolean();
        Thread producer = Thread.ofPlatform().name("transactions").start(() -> transact(outcomes, stop));
        for (int round = 1; round <= ROUNDS; round++) {
            // Each kill waits for transactions to have ended since the last one (a loaded machine restarts the
            // broker slowly), as well as for a moment of them.
            Thread.sleep(1_500);
            awaitEnded(outcomes, (long) ENDED_PER_ROUND * round);
            process.destroyForcibly(); // SIGKILL
            process.waitFor(30, TimeUnit.SECONDS);
            start(round);
        }
        Thread.sleep(1_500);
        awaitEnded(outcomes, (long) ENDED_PER_ROUND * (ROUNDS + 1));
        stop.set(true);
        producer.join(120_000);

        long committed = outcomes.values().stream().filter(o -> o == Outcome.COMMITTED).count();
        long aborted = outcomes.values().stream().filter(o -> o == Outcome.ABORTED).count();
        assertThat(committed).as("transactions committed").isGreaterThan(10);
        assertThat(aborted).as("transactions aborted").isGreaterThan(10);
        Map<Integer, List<String>> read = readCommitted();
        for (var entry : outcomes.entrySet()) {
            List<String> records = read.getOrDefault(entry.getKey(), List.of());
            switch (entry.getValue()) {
                case COMMITTED -> assertThat(records).as("committed transaction %d", entry.getKey())
                        .hasSize(RECORDS).doesNotHaveDuplicates();
                case ABORTED -> assertThat(records).as("aborted transaction %d", entry.getKey()).isEmpty();
                case UNKNOWN -> assertThat(records.size()).as("transaction %d, its end unknown", entry.getKey())
                        .isIn(0, RECORDS);
            }
        }
        assertThat(outcomes.keySet()).as("transactions read").containsAll(read.keySet());
        System.out.printf("transactions across %d kills: %d committed, %d aborted, %d of unknown end%n", ROUNDS,
                committed, aborted, outcomes.size() - committed - aborted);
    }

    /** Waits, up to 2 minutes, until at least {@code atLeast} transactions were told they ended. */
    private static void awaitEnded(Map<Integer, Outcome> outcomes, long atLeast) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (outcomes.values().stream().filter(o -> o != Outcome.UNKNOWN).count() < atLeast
                && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
    }

    /** Transactions, alternately committed and aborted, each noted as its producer was told it ended. */
    private void transact(Map<Integer, Outcome> outcomes, AtomicBoolean stop) {
        int next = 0;
        while (!stop.get()) {
            Properties properties = new Properties();
            properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            properties.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kills");
            properties.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
            properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
            properties.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 5_000);
            properties.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 10_000);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
                    new StringSerializer())) {
                producer.initTransactions();
                while (!stop.get()) {
                    int id = next++;
                    outcomes.put(id, Outcome.UNKNOWN);
                    producer.beginTransaction();
                    for (int i = 0; i < RECORDS; i++) {
                        producer.send(new ProducerRecord<>(TOPIC, i % PARTITIONS, null, id + "-" + i));
                    }
                    if (id % 2 == 0) {
                        producer.commitTransaction();
                        outcomes.put(id, Outcome.COMMITTED);
                    } else {
                        producer.flush();
                        producer.abortTransaction();
                        outcomes.put(id, Outcome.ABORTED);
                    }
                }
            } catch (RuntimeException e) {
                try {
                    Thread.sleep(100);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    private Map<Integer, List<String>> readCommitted() {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<Integer, List<String>> read = new HashMap<>();
        try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(properties, new StringDeserializer(),
                new StringDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(TOPIC, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            // The last transaction's producer stopped with it open maybe: its timeout (10 s) ends it.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            while (partitions.stream().anyMatch(p -> consumer.position(p) < ends.get(p))) {
                assertThat(System.nanoTime()).as("read to the stable end in time").isLessThan(deadline);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    read.computeIfAbsent(Integer.parseInt(record.value().substring(0, record.value().indexOf('-'))),
                            t -> new ArrayList<>()).add(record.value());
                }
            }
        }
        return read;
    }
}
