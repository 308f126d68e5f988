package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.tuple;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.testsupport.CompactedTopic;
import io.sluice.testsupport.GoClients;
import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * franz-go (a Kafka client written in Go alone, through {@link GoClients}) runs transactions against one broker on
 * 127.0.0.1: a transactional producer commits and aborts over two partitions and a read_committed consumer reads each
 * committed record once and no aborted one; a GroupTransactSession consumes, transforms and produces exactly once,
 * its aborted transactions done again; a consumer reads a compacted partition over the gaps the log cleaner left. The
 * program asserts what the client gets; this test then checks the store. Skipped, saying so, on a machine without
 * Go.
 */
class FranzGoClientsTest {

    private static final Duration PROGRAM_TIMEOUT = Duration.ofMinutes(3);
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

    @BeforeAll
    static void needGo() throws InterruptedException {
        assumeTrue(GoClients.available(), GoClients.NO_GO);
    }

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
    void transactionalProducerCommitsAndAbortsAndReadCommittedSeesEachCommittedRecordOnce() throws Exception {
        assertSucceeds(run("transactions", "--topic", "txn", "--transactions", "12", "--records", "40"));
        // On each partition: 20 records from each of 12 transactions and 2 from the one left open then committed,
        // and 13 markers.
        for (int partition = 0; partition < 2; partition++) {
            assertThat(store.maxOffset("txn", partition)).as("partition %d's end", partition).isEqualTo(255);
        }
    }

    @Test
    void groupTransactSessionTransformsEachInputExactlyOnce() throws Exception {
        assertSucceeds(run("eos", "--input", "in", "--output", "out", "--group", "eos", "--records", "200"));
        // On each partition of the input: 100 records committed in 7 transactions, 15 aborted in one, 8 markers.
        // The group stands past the last record (121), before or past the last marker.
        List<ConsumerPosition> positions = store.consumerPositions().stream()
                .filter(position -> position.group().equals("eos")).toList();
        assertThat(positions).extracting(ConsumerPosition::topic, ConsumerPosition::queueId)
                .containsExactlyInAnyOrder(tuple("in", 0), tuple("in", 1));
        assertThat(positions).allSatisfy(position -> assertThat(position.nextOffset()).isBetween(122L, 123L));
        // franz-go names topics by id wherever both sides can (KIP-516): it fetches at 18 and fetches the group's
        // offsets at OffsetFetch 10.
        assertThat(broker.metrics().requests("Fetch", 18)).isPositive();
        assertThat(broker.metrics().requests("OffsetFetch", 10)).isPositive();
        for (int version = 4; version < 13; version++) {
            assertThat(broker.metrics().requests("Fetch", version)).as("fetches of v" + version).isZero();
        }
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

    private GoClients.Result run(String check, String... args) throws Exception {
        List<String> all = new ArrayList<>(List.of(check, "--bootstrap", "127.0.0.1:" + broker.port()));
        all.addAll(List.of(args));
        return GoClients.run(PROGRAM_TIMEOUT, all.toArray(String[]::new));
    }

    private static void assertSucceeds(GoClients.Result result) {
        assertThat(result.exitCode()).as(result.describe()).isZero();
    }
}
