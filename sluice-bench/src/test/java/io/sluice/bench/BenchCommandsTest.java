package io.sluice.bench;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.io.TempDir;

/**
 * A tiny run of every experiment through the command line: each must exit 0, verify its own work, and leave
 * its CSV, JSON, charts and report fragments (and nothing else) in the results directory. Sizes are far below
 * anything worth quoting; this proves the commands keep working, not how fast anything is.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class BenchCommandsTest {

    @TempDir
    static Path temporary;

    private static Path results() {
        return temporary.resolve("results");
    }

    private static int bench(String... args) {
        String[] common = {"--results", results().toString(), "--dir", temporary.resolve("work").toString(),
                "--no-progress"};
        String[] all = new String[args.length + common.length];
        System.arraycopy(args, 0, all, 0, args.length);
        System.arraycopy(common, 0, all, args.length, common.length);
        return BenchMain.run(all);
    }

    private static void assertPublished(String experiment, int charts) throws IOException {
        Path directory = results().resolve(experiment);
        assertThat(directory.resolve("result.json")).isRegularFile();
        assertThat(directory.resolve("machine.json")).content().contains("\"cores\"");
        assertThat(directory.resolve("summary.md")).isRegularFile();
        assertThat(directory.resolve("summary.html")).isRegularFile();
        assertThat(Files.readString(directory.resolve("result.json"))).contains("\"checks\": [\"");
        try (Stream<Path> files = Files.list(directory)) {
            List<String> names = files.map(p -> p.getFileName().toString()).toList();
            assertThat(names.stream().filter(n -> n.endsWith(".png"))).hasSize(charts);
            assertThat(names.stream().filter(n -> n.endsWith(".csv"))).isNotEmpty();
        }
        try (Stream<Path> left = Files.list(results())) {
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.endsWith(".partial"));
        }
        assertThat(temporary.resolve("work").resolve(experiment)).doesNotExist();
    }

    @Test
    @Order(1)
    void ioCopy() throws IOException {
        assertThat(bench("io-copy", "--size", "4m", "--one-byte-seconds", "0.1")).isZero();
        assertPublished("io-copy", 1);
        assertThat(results().resolve("io-copy/io-copy.csv")).content()
                .contains("FileInputStream 1 B,cold").contains("transferTo loop,warm");
    }

    @Test
    @Order(2)
    void mmapVsChannel() throws IOException {
        assertThat(bench("mmap-vs-channel", "--size", "1m", "--cell-seconds", "0.05")).isZero();
        assertPublished("mmap-vs-channel", 4);
        assertThat(results().resolve("mmap-vs-channel/result.json")).content()
                .contains("crossover read cached channel direct");
    }

    @Test
    @Order(3)
    void smallIo() throws IOException {
        assertThat(bench("small-io", "--size", "1m", "--cell-seconds", "0.05")).isZero();
        assertPublished("small-io", 1);
    }

    @Test
    @Order(4)
    void store() throws IOException {
        assertThat(bench("store", "--seconds", "0.1", "--warm-up-seconds", "0.05", "--producers", "1,4",
                "--body", "100", "--segment-size", "64m")).isZero();
        assertPublished("store", 2);
        assertThat(results().resolve("store/store.csv")).content().contains("SYNC,100B,4,DIRECT")
                .contains("ASYNC,100B,1,WRITE_BUFFER");
    }

    @Test
    @Order(5)
    void peers() throws IOException {
        // One round, as --quick runs it: each round costs about 12 s of store starts here.
        assertThat(bench("peers", "--seconds", "0.1", "--warm-up-seconds", "0.05", "--producers", "4",
                "--body", "100", "--segment-size", "64m", "--rounds", "1")).isZero();
        assertPublished("peers", 2);
        assertThat(results().resolve("peers/peers.csv")).content().contains("SYNC,100B,4,rocketmq mmap")
                .contains("ASYNC,100B,4,rocketmq pool").contains("ASYNC,100B,4,chronicle");
        assertThat(results().resolve("peers/result.json")).content()
                .contains("RocketMQ's store listens on no address beyond loopback");
    }

    @Test
    @Order(6)
    void mmapModes() throws IOException {
        assertThat(bench("mmap-modes", "--size", "32m")).isZero();
        assertPublished("mmap-modes", 1);
    }

    @Test
    @Order(7)
    void broker() throws IOException {
        assertThat(bench("broker", "--quick", "--records", "2000")).isZero();
        assertPublished("broker", 2);
        assertThat(results().resolve("broker/result.json")).content()
                .contains("kafka produce 1 KiB acks=1: 2000 of 2000 records acknowledged")
                .contains("sluice consume 1 KiB, page cache: 2000 of 2000 records received")
                .contains("single-1-kib-messages-sync-flush-256-producers-throughput-ratio");
    }

    @Test
    @Order(8)
    void tls() throws IOException {
        assertThat(bench("tls", "--quick", "--records", "2000")).isZero();
        assertPublished("tls", 2);
        assertThat(results().resolve("tls/result.json")).content()
                .contains("kafka produce 1 KiB acks=1 over SASL_SSL: 2000 of 2000 records acknowledged")
                .contains("sluice consume 1 KiB, page cache over SSL: 2000 of 2000 records received")
                .contains("sluice SSL listener agrees to TLSv1.3 TLS_AES_256_GCM_SHA384")
                .contains("kafka SASL_SSL listener agrees to TLSv1.3 TLS_AES_256_GCM_SHA384")
                .contains("kafka SASL_SSL listener refuses a wrong SCRAM-SHA-512 password")
                .contains("sluice SASL_SSL listener refuses a wrong SCRAM-SHA-512 password")
                .contains("sluice-produce-1-kib-acks-1-ssl-broker-cpu-over-plaintext");
    }

    @Test
    @Order(9)
    void transactions() throws IOException {
        assertThat(bench("transactions", "--quick", "--records", "2000")).isZero();
        assertPublished("transactions", 2);
        assertThat(results().resolve("transactions/result.json")).content()
                .contains("kafka transactions of 100, 10 producers: 2000 of 2000 records committed")
                .contains("sluice read_committed consume: 2000 of 2000 records read");
    }

    @Test
    @Order(10)
    void compaction() throws IOException {
        assertThat(bench("compaction", "--quick", "--bytes", "24m", "--keys", "1000")).isZero();
        assertPublished("compaction", 2);
        assertThat(results().resolve("compaction/result.json")).content()
                .contains("kafka round 1: every one of 1000 keys read back with its latest value after cleaning")
                .contains("sluice round 1: every one of 1000 keys read back with its latest value after cleaning")
                .contains("compaction-bytes-per-cleaner-cpu-ratio");
    }

    @Test
    @Order(11)
    void reportGathersEveryExperiment() throws IOException {
        assertThat(bench("report")).isZero();
        String html = Files.readString(results().resolve("index.html"));
        for (String experiment : List.of("io-copy", "mmap-vs-channel", "small-io", "store", "peers",
                "mmap-modes", "broker", "tls", "transactions", "compaction")) {
            assertThat(html).contains("<section id=\"" + experiment + "\">");
        }
        assertThat(results().resolve("REPORT.md")).content().contains("## peers").contains("Published (background)")
                .contains("![store-sync-100B](store/store-sync-100B.png)");
    }
}
