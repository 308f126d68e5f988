package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.BrokerConfig;
import io.sluice.store.ConsumerPosition;
import io.sluice.testsupport.PythonClients;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * confluent-kafka (librdkafka, through {@link PythonClients}) against three brokers of one cluster in this JVM: its
 * AdminClient lists the three brokers and a replicated topic, creates a topic whose partitions get three replicas
 * each, and describes a topic's configs; its Producer and Consumer carry records there and back through the
 * partitions' leaders. The script asserts what the client gets; this test then checks every broker's store.
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

    /** One cluster for every test here; each test has topics of its own. */
    @BeforeAll
    static void start() throws Exception {
        cluster = new InProcessCluster(dir, ClusterNode.Tuning.DEFAULT);
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
