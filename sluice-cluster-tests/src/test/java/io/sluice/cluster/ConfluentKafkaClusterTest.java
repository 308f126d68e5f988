package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.testsupport.CompactedTopic;
import io.sluice.testsupport.PythonClients;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * confluent-kafka (librdkafka, through {@link PythonClients}) against three brokers of one cluster in this JVM: its
 * AdminClient lists the three brokers and a replicated topic, creates a topic whose partitions get three replicas
 * each, and describes a topic's configs; its Producer and Consumer carry records there and back through the
 * partitions' leaders; its Consumer reads a replicated partition over the gaps its leader's cleaner left. The script
 * asserts what the client gets; this test then checks every broker's store.
 *
 * <p>The first test to run a script may make the clients' virtual environment, which {@link PythonClients} allows up
 * to 20 minutes (pip fetching the clients), so these tests have a longer limit than the module's default.
 */
@Timeout(value = 30, unit = TimeUnit.MINUTES)
class ConfluentKafkaClusterTest {

    private static final String SCRIPT = "python/confluent_kafka_clients.py";
    private static final Duration SCRIPT_TIMEOUT = Duration.ofMinutes(3);

    @TempDir
    static Path dir;

    private static InProcessCluster cluster;

    /**
     * One cluster for every test here; each test has topics of its own. Its replicas can compact: their stores have
     * small segments, and they take snapshots every 100 entries, since a replica compacts only what its Raft log no
     * longer names. Their cleaners run when a test says so.
     */
    @BeforeAll
    static void start() throws Exception {
        StoreConfig small = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC)
                .segmentSizeBytes(1 << 20).maxMessageBytes(256 * 1024).build();
        cluster = new InProcessCluster(dir, new ClusterNode.Tuning(100, 8192, 1), id -> small).withBrokerConfig(
                BrokerConfig.defaults().withCleaner(new CleanerSettings(false, 15_000, 1 << 20, Double.MAX_VALUE)));
        cluster.startAll();
        cluster.awaitMembers();
    }

    @AfterAll
    static void stop() throws IOException {
        if (cluster != null) {
            cluster.close();
        }
    }

    @Test
    void adminClientListsTheBrokersAndAReplicatedTopic() throws Exception {
        cluster.createTopic("listed", 4);
        assertSucceeds(run("list-topics", "--topic", "listed", "--partitions", "4"));
    }

    @Test
    void adminClientCreatesAReplicatedTopicAndIsToldTheSecondCreateFindsItThere() throws Exception {
        assertSucceeds(run("create-topics", "--topic", "created", "--partitions", "5"));
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("broker " + node + "'s store has the 5 partitions of created", 30,
                    () -> cluster.broker(node).store().queueCount("created") == 5);
        }
    }

    @Test
    void adminClientDescribesATopicsConfigs() throws Exception {
        cluster.createTopic("described", 1);
        var store = cluster.broker(1).store().config();
        assertSucceeds(run("describe-configs", "--topic", "described",
                "--config", "segment.bytes=" + store.segmentSizeBytes(),
                "--config", "max.message.bytes=" + store.maxMessageBytes(), "--config", "cleanup.policy=delete"));
    }

    @Test
    void aConsumerOfTheKip848ProtocolReadsThroughTheLeadersAndCommitsOnEveryBroker() throws Exception {
        cluster.createTopic("trip848", 3);
        assertSucceeds(run("round-trip", "--topic", "trip848", "--partitions", "3", "--records", "300",
                "--group", "trip848-readers", "--group-protocol", "consumer"));
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("broker " + node + " holds the group's commits", 30, () -> cluster.broker(node)
                    .store().consumerPositions().stream().filter(position -> position.group().equals("trip848-readers"))
                    .map(ConsumerPosition::nextOffset).toList().equals(List.of(100L, 100L, 100L)));
        }
    }

    /**
     * librdkafka's transactional producer through the cluster: transactions committed and aborted, a newer producer of
     * the id fencing the older, read_committed reading each committed record once, and a group's offsets committed with
     * a transaction; every broker ends each partition where a broker alone does.
     */
    @Test
    void transactionalProducerCommitsAbortsIsFencedAndCommitsAGroupsOffsetsThroughTheCluster() throws Exception {
        cluster.createTopic("transacted", 2);
        assertSucceeds(run("transactions", "--topic", "transacted", "--partitions", "2", "--records", "20",
                "--group", "transacted-readers", "--transactional-id", "confluent-tx"));
        // As on a broker alone (ConfluentKafkaClientsTest): 8 transactions of 10 records on partition 0, the same 8
        // and one of 20 on partition 1, each ending in a marker.
        long[] ends = {8 * 11, 8 * 11 + 21};
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("broker " + node + " holds both partitions of transacted to their ends", 30,
                    () -> cluster.broker(node).store().maxOffset("transacted", 0) == ends[0]
                            && cluster.broker(node).store().maxOffset("transacted", 1) == ends[1]);
        }
    }

    @Test
    void producerAndConsumerCarryRecordsThereAndBackThroughTheLeaders() throws Exception {
        cluster.createTopic("trip", 3);
        assertSucceeds(run("round-trip", "--topic", "trip", "--partitions", "3", "--records", "300",
                "--group", "trip-readers"));
        for (int id = 1; id <= 3; id++) {
            int node = id;
            InProcessCluster.await("broker " + node + " holds the 100 records of each partition of trip and the"
                    + " group's commits", 30, () -> {
                        for (int partition = 0; partition < 3; partition++) {
                            if (cluster.broker(node).store().maxOffset("trip", partition) != 100) {
                                return false;
                            }
                        }
                        return cluster.broker(node).store().consumerPositions().stream()
                                .filter(position -> position.group().equals("trip-readers"))
                                .map(ConsumerPosition::nextOffset).toList().equals(List.of(100L, 100L, 100L));
                    });
        }
    }

    /** The leader's cleaner compacts what its Raft log no longer names, about the first half of the partition here. */
    @Test
    void consumerReadsACompactedReplicatedPartitionToItsEndOverTheCleanersGaps() throws Exception {
        CompactedTopic compacted = new CompactedTopic(20_000, 200, 10);
        CompactedTopic.create(cluster.bootstrap(), "compacted", 3);
        compacted.produce(cluster.bootstrap(), "compacted");
        ClusterBroker leader = cluster.broker(cluster.leaderOf("compacted"));
        long[] left = new long[1];
        InProcessCluster.await("the leader compacted a quarter of the partition at least", 90, () -> {
            leader.cleaner().cleanRound();
            left[0] = records(leader.store(), "compacted");
            return left[0] < compacted.records() * 3 / 4;
        });
        List<String> args = new ArrayList<>(List.of("--topic", "compacted", "--group", "compacted-reader",
                "--most-read", Long.toString(left[0])));
        args.addAll(compacted.arguments());
        assertSucceeds(run("compacted", args.toArray(String[]::new)));
    }

    /** @return the records of a store's partition 0 of {@code topic} */
    private static long records(Store store, String topic) {
        long records = 0;
        for (byte[] batch : InProcessCluster.batches(store, topic, store.nextOffset(topic, 0))) {
            for (RecordBatch each : MemoryRecords.readableRecords(ByteBuffer.wrap(batch)).batches()) {
                Integer count = each.countOrNull();
                records += count == null ? 0 : count;
            }
        }
        return records;
    }

    private static PythonClients.Result run(String check, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of(check, "--bootstrap", cluster.bootstrap(), "--brokers", "3",
                "--replicas", "3", "--cluster-id", BrokerConfig.defaults().clusterId()));
        all.addAll(List.of(args));
        return PythonClients.run(SCRIPT, SCRIPT_TIMEOUT, all.toArray(String[]::new));
    }

    private static void assertSucceeds(PythonClients.Result result) {
        assertThat(result.exitCode()).as(result.describe()).isZero();
    }
}
