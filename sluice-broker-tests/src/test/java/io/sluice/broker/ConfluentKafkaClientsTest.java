package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.ConsumerPosition;
import io.sluice.store.RetentionPolicy;
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
 * confluent-kafka (librdkafka, through {@link PythonClients}) against one broker on 127.0.0.1: its AdminClient lists
 * topics, creates them, and describes a topic's configs; its Producer and Consumer carry records there and back; its
 * transactional Producer commits and aborts, is fenced, and commits a group's offsets, as read_committed and
 * read_uncommitted Consumers see; its Consumer reads a compacted partition over the gaps the log cleaner left. The
 * script asserts what the client gets; this test then checks the store.
 */
class ConfluentKafkaClientsTest {

    private static final String SCRIPT = "python/confluent_kafka_clients.py";
    private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);
    /**
     * Settings other than the defaults, so that the configs described are seen to come from this store; segments small
     * enough that a compacted topic's first megabytes are sealed, for the cleaner to compact.
     */
    private static final long SEGMENT_BYTES = 1L << 20;
    private static final int MAX_MESSAGE_BYTES = 256 * 1024;
    /** The cleaner runs when a test says so. */
    private static final CleanerSettings MANUAL_CLEANER = new CleanerSettings(false, 15_000, 1 << 20,
            Double.MAX_VALUE);
    private static final long RETENTION_MILLIS = 3_600_000;

    @TempDir
    Path dir;

    private Store store;
    private Broker broker;

    @BeforeEach
    void start() throws IOException {
        store = Store.open(dir, StoreConfig.builder().segmentSizeBytes(SEGMENT_BYTES).maxMessageBytes(MAX_MESSAGE_BYTES)
                .retention(RetentionPolicy.defaults().withRetentionMillis(RETENTION_MILLIS)).build());
        broker = Broker.start(store, BrokerConfig.defaults().withPort(0).withCleaner(MANUAL_CLEANER));
    }

    @AfterEach
    void stop() throws IOException {
        broker.close();
        store.close();
    }

    @Test
    void adminClientListsTopics() throws Exception {
        store.createTopic("listed", BrokerConfig.defaults().topicLayout(), 4);
        assertSucceeds(run("list-topics", "--topic", "listed", "--partitions", "4"));
    }

    @Test
    void adminClientCreatesATopicAndIsToldTheSecondCreateFindsItThere() throws Exception {
        assertSucceeds(run("create-topics", "--topic", "created", "--partitions", "5"));
        assertThat(store.queueCount("created")).isEqualTo(5);
    }

    @Test
    void adminClientDescribesATopicsConfigs() throws Exception {
        store.createTopic("described", BrokerConfig.defaults().topicLayout(), 1);
        assertSucceeds(run("describe-configs", "--topic", "described", "--config", "segment.bytes=" + SEGMENT_BYTES,
                "--config", "max.message.bytes=" + MAX_MESSAGE_BYTES, "--config", "retention.ms=" + RETENTION_MILLIS,
                "--config", "cleanup.policy=delete"));
    }

    @Test
    void aConsumerOfTheKip848ProtocolReadsEveryRecordAndCommits() throws Exception {
        store.createTopic("trip848", BrokerConfig.defaults().topicLayout(), 3);
        assertSucceeds(run("round-trip", "--topic", "trip848", "--partitions", "3", "--records", "300",
                "--group", "trip848-readers", "--group-protocol", "consumer"));
        assertThat(broker.metrics().requests("ConsumerGroupHeartbeat", 0)
                + broker.metrics().requests("ConsumerGroupHeartbeat", 1)).as("heartbeats of the KIP-848 protocol")
                .isPositive();
        assertThat(store.consumerPositions()).filteredOn(position -> position.group().equals("trip848-readers"))
                .extracting(ConsumerPosition::nextOffset).containsExactly(100L, 100L, 100L);
    }

    @Test
    void adminClientCreatesATopicWithConfigsAndChangesThem() throws Exception {
        assertSucceeds(run("alter-configs", "--topic", "configured"));
        assertThat(store.topicConfigs("configured")).isEqualTo(java.util.Map.of("retention.bytes", "100000"));
    }

    @Test
    void producerAndConsumerCarryRecordsThereAndBack() throws Exception {
        store.createTopic("trip", BrokerConfig.defaults().topicLayout(), 3);
        assertSucceeds(run("round-trip", "--topic", "trip", "--partitions", "3", "--records", "300",
                "--group", "trip-readers"));
        for (int partition = 0; partition < 3; partition++) {
            assertThat(store.maxOffset("trip", partition)).as("partition %d's end", partition).isEqualTo(100);
        }
        assertThat(store.consumerPositions()).filteredOn(position -> position.group().equals("trip-readers"))
                .extracting(ConsumerPosition::queueId, ConsumerPosition::nextOffset)
                .containsExactlyInAnyOrder(org.assertj.core.groups.Tuple.tuple(0, 100L),
                        org.assertj.core.groups.Tuple.tuple(1, 100L), org.assertj.core.groups.Tuple.tuple(2, 100L));
    }

    @Test
    void transactionalProducerCommitsAbortsIsFencedAndCommitsAGroupsOffsetsWithATransaction() throws Exception {
        store.createTopic("transacted", BrokerConfig.defaults().topicLayout(), 2);
        assertSucceeds(run("transactions", "--topic", "transacted", "--partitions", "2", "--records", "20",
                "--group", "transacted-readers", "--transactional-id", "confluent-tx"));
        // Partition 0 has 8 transactions of 10 records, partition 1 the same 8 and one of 20 (the script's list, its
        // two fenced producers' transactions and the third's); each ends in one marker, and the fenced producer's
        // late record is not stored.
        long[] ends = {8 * 11, 8 * 11 + 21};
        for (int partition = 0; partition < 2; partition++) {
            assertThat(store.maxOffset("transacted", partition)).as("partition %d's end", partition)
                    .isEqualTo(ends[partition]);
        }
        // The group's offsets, committed with a transaction: past the last committed record, before or past the
        // commit marker that ends each partition (where librdkafka's position is depends on how its fetches fell).
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
        List<String> args = new ArrayList<>(List.of("--topic", "compacted", "--group", "compacted-reader"));
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
