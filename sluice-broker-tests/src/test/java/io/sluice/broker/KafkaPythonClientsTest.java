package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.CompactedTopic;
import io.sluice.testsupport.PythonClients;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * kafka-python (a Kafka client written in Python alone, through {@link PythonClients}) against one broker on 127.0.0.1:
 * its transactional KafkaProducer commits and aborts, is fenced, and commits a group's offsets, as read_committed and
 * read_uncommitted KafkaConsumers see. A third implementation of the transaction protocol beside Kafka's Java clients
 * and librdkafka, with its own state machine. Its KafkaConsumer reads a compacted partition over the gaps the log
 * cleaner left. The script asserts what the client gets; this test then checks the store.
 */
class KafkaPythonClientsTest {

    private static final String SCRIPT = "python/kafka_python_clients.py";
    private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);
    /** Segments small enough that a compacted topic's first megabytes are sealed, for the cleaner to compact. */
    private static final StoreConfig STORE = StoreConfig.builder().segmentSizeBytes(1 << 20)
            .maxMessageBytes(256 * 1024).build();
    /** The cleaner runs when a test says so. */
    private static final CleanerSettings MANUAL_CLEANER = new CleanerSettings(false, 15_000, 1 << 20,
            Double.MAX_VALUE);

    @TempDir
    Path dir;

    private Store store;
    private Broker broker;

    @BeforeEach
    void start() throws IOException {
        store = Store.open(dir, STORE);
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withCleaner(MANUAL_CLEANER));
    }

    @AfterEach
    void stop() throws IOException {
        broker.close();
        store.close();
    }

    @Test
    void transactionalProducerCommitsAbortsIsFencedAndCommitsAGroupsOffsetsWithATransaction() throws Exception {
        store.createTopic("transacted", BrokerConfig.defaults().topicLayout(), 2);
        assertSucceeds(run("transactions", "--topic", "transacted", "--partitions", "2", "--records", "20",
                "--group", "transacted-readers", "--transactional-id", "kafka-python-tx"));
        // Partition 0 has 8 transactions of 10 records, partition 1 the same 8 and one of 20 (the script's list, its
        // two fenced producers' transactions and the third's); each ends in one marker, and the fenced producer's
        // late record is not stored.
        long[] ends = {8 * 11, 8 * 11 + 21};
        for (int partition = 0; partition < 2; partition++) {
            assertThat(store.maxOffset("transacted", partition)).as("partition %d's end", partition)
                    .isEqualTo(ends[partition]);
        }
        // The group's offsets, committed with a transaction: past the last committed record, before or past the
        // commit marker that ends each partition.
        assertThat(store.consumerPositions()).filteredOn(position -> position.group().equals("transacted-readers"))
                .hasSize(2).allSatisfy(position -> assertThat(position.nextOffset())
                        .isBetween(ends[position.queueId()] - 1, ends[position.queueId()]));
    }

    @Test
    void consumerReadsACompactedPartitionToItsEndOverTheCleanersGaps() throws Exception {
        CompactedTopic compacted = new CompactedTopic(20_000, 200, 10);
        String bootstrap = "127.0.0.1:" + broker.port();
        CompactedTopic.create(bootstrap, "compacted", 1);
        compacted.produce(bootstrap, "compacted");
        assertThat(broker.cleaner().cleanRound()).as("partitions compacted").isOne();
        List<String> args = new ArrayList<>(List.of("--topic", "compacted"));
        args.addAll(compacted.arguments());
        assertSucceeds(run("compacted", args.toArray(String[]::new)));
        assertThat(store.maxOffset("compacted", 0)).isEqualTo(compacted.records());
    }

    private PythonClients.Result run(String check, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of(check, "--bootstrap", "127.0.0.1:" + broker.port(), "--brokers", "1",
                "--replicas", "1", "--cluster-id", BrokerConfig.defaults().clusterId()));
        all.addAll(List.of(args));
        return PythonClients.run(SCRIPT, SCRIPT_TIMEOUT, all.toArray(String[]::new));
    }

    private static void assertSucceeds(PythonClients.Result result) {
        assertThat(result.exitCode()).as(result.describe()).isZero();
    }
}
