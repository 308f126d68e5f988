package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CliTest {

    @TempDir
    Path dir;

    private static CliRun run(String stdin, String... args) {
        return CliRun.run(stdin, args);
    }

    @Test
    void produceLinesThenConsumeStatAndVerify() {
        String store = dir.resolve("s").toString();
        CliRun produce = run("hello\nwörld \"quoted\"\n", "produce", "--dir", store, "--topic", "greetings", "--json",
                "--segment-size", "8388608");
        assertThat(produce.exit()).isZero();
        assertThat(produce.out().lines().toList().getLast())
                .contains("\"event\":\"summary\"").contains("\"acknowledged\":2");

        CliRun consume = run("", "consume", "--dir", store, "--topic", "greetings", "--queue", "0", "--json");
        assertThat(consume.exit()).isZero();
        assertThat(consume.out().lines()).hasSize(2);
        assertThat(consume.out()).contains("\"offset\":0").contains("\"body\":\"hello\"")
                .contains("\"body\":\"wörld \\\"quoted\\\"\"");

        CliRun generated = run("", "produce", "--dir", store, "--topic", "bulk", "--queue", "3", "--count", "5000",
                "--size", "100", "--flush", "sync", "--write-path", "write-buffer");
        assertThat(generated.exit()).isZero();
        assertThat(generated.out()).contains("produced 5,000 messages to bulk-3");

        CliRun stat = run("", "stat", "--dir", store, "--json");
        assertThat(stat.exit()).isZero();
        assertThat(stat.out()).contains("{\"topic\":\"bulk\",\"queue\":3,\"layout\":\"shared\",\"minOffset\":0,\"maxOffset\":5000}")
                .contains("{\"topic\":\"greetings\",\"queue\":0,\"layout\":\"shared\",\"minOffset\":0,\"maxOffset\":2}");

        CliRun verify = run("", "verify", "--dir", store);
        assertThat(verify.exit()).isZero();
        assertThat(verify.out()).contains("5,002 messages").contains("OK");
    }

    @Test
    void verifyExitsOneOnCorruption() throws Exception {
        String store = dir.resolve("s").toString();
        assertThat(run("", "produce", "--dir", store, "--topic", "t", "--count", "200", "--size", "500",
                "--segment-size", "8388608").exit()).isZero();
        Files.delete(dir.resolve("s/clean-shutdown"));
        try (RandomAccessFile segment = new RandomAccessFile(dir.resolve("s/log/00000000000000000000").toFile(), "rw")) {
            segment.seek(5_000);
            segment.write(new byte[] {1, 2, 3, 4});
        }
        CliRun verify = run("", "verify", "--dir", store);
        assertThat(verify.exit()).isEqualTo(1);
        assertThat(verify.out()).contains("FAULT").contains("corruption");
    }

    @Test
    void keyedProduceThenLookupByKey() {
        String store = dir.resolve("keyed").toString();
        assertThat(run("one\ntwo\nthree\n", "produce", "--dir", store, "--topic", "k", "--keyed", "--segment-size",
                "8388608").exit()).isZero();
        assertThat(run("", "produce", "--dir", store, "--topic", "k", "--queue", "2", "--count", "3", "--size", "8",
                "--keyed", "--segment-size", "8388608").exit()).isZero();
        CliRun text = run("", "lookup", "--dir", store, "--topic", "k", "--key", "key-1");
        assertThat(text.exit()).isZero();
        // key-1 was given to the second stdin line (queue 0) and to the second generated message (queue 2).
        assertThat(text.out().lines().toList()).hasSize(2).first().asString().startsWith("2\t1\t");
        assertThat(text.out().lines().toList().getLast()).isEqualTo("0\t1\ttwo");
        CliRun json = run("", "lookup", "--dir", store, "--topic", "k", "--key", "key-2", "--max", "1", "--json");
        assertThat(json.out().lines()).singleElement().asString().contains("\"keys\":[\"key-2\"]").contains("\"queue\":2");
        assertThat(run("", "lookup", "--dir", store, "--topic", "k", "--key", "nope").out()).isEmpty();
        CliRun empty = run("", "lookup", "--dir", store, "--topic", "k", "--key", "");
        assertThat(empty.exit()).isEqualTo(2);
        assertThat(empty.err()).contains("key must not be empty");
    }

    @Test
    void retentionDeletesByBytesButHoldsWhatAConsumerGroupHasNotRead() {
        String store = dir.resolve("retained").toString();
        // 64 KiB segments, 2000 messages of 100 bytes: about four segments.
        assertThat(run("", "produce", "--dir", store, "--topic", "r", "--count", "2000", "--size", "100",
                "--segment-size", "65536").exit()).isZero();
        CliRun consumed = run("", "consume", "--dir", store, "--topic", "r", "--queue", "0", "--group", "audit", "--max", "5",
                "--json");
        assertThat(consumed.out().lines()).hasSize(5);
        CliRun held = run("", "retention", "--dir", store, "--retention-bytes", "65536", "--json");
        assertThat(held.exit()).isZero();
        assertThat(held.out()).contains("\"segmentsDeleted\":0").contains("\"heldBy\":\"audit\"");
        CliRun stat = run("", "stat", "--dir", store);
        assertThat(stat.out()).contains("consumer audit on r-0: next offset 5, lag 1,995").contains("disk:");
        assertThat(run("", "consume", "--dir", store, "--topic", "r", "--queue", "0", "--group", "audit", "--json").out()
                .lines()).hasSize(1995).first().asString().contains("\"offset\":5,");
        CliRun deleted = run("", "retention", "--dir", store, "--retention-bytes", "65536");
        assertThat(deleted.out()).startsWith("deleted ").contains("by size").doesNotContain("held back");
        assertThat(run("", "stat", "--dir", store, "--json").out()).doesNotContain("\"minOffset\":0,");
    }

    /** @return {@code stat --json}'s output without the disk's figures */
    private static String withoutDisk(String stat) {
        return stat.replaceAll("\"diskUsedRatio\":[^,]*,\"diskUsableBytes\":[^,]*,", "");
    }

    /**
     * A cluster broker's store (store/ beside the Raft logs in raft/) is refused by the tools that would change it
     * outside the broker: a retention pass would delete batches the Raft logs still name, an append would put batches
     * no log names, a standalone broker both, a demo or perf run would delete it. Nothing in it changes.
     */
    @Test
    void toolsThatWouldChangeAClusterBrokersStoreRefuseIt() throws Exception {
        Path node = dir.resolve("node-1");
        String store = node.resolve("store").toString();
        assertThat(run("", "produce", "--dir", store, "--topic", "r", "--count", "2000", "--size", "100",
                "--segment-size", "65536").exit()).isZero();
        Files.createDirectories(node.resolve("raft"));
        // As a cluster broker's first start writes it (ClusterNode.checkIdentity).
        Files.writeString(node.resolve("raft").resolve("sluice-node"), "cluster.id=c1\nnode.id=1\n");
        String before = withoutDisk(run("", "stat", "--dir", store, "--json").out());
        assertThat(before).contains("\"minOffset\":0,\"maxOffset\":2000").doesNotContain("disk");

        CliRun retention = run("", "retention", "--dir", store, "--retention-bytes", "65536");
        assertThat(retention.exit()).isEqualTo(2);
        assertThat(retention.err()).contains("is the store of cluster broker cluster.id=c1 node.id=1");
        CliRun produce = run("", "produce", "--dir", store, "--topic", "r", "--count", "10");
        assertThat(produce.exit()).isEqualTo(2);
        assertThat(produce.err()).contains("cluster broker cluster.id=c1 node.id=1");
        CliRun broker = assertTimeoutPreemptively(Duration.ofSeconds(60), () -> run("", "broker", "--dir", store,
                "--listen", "127.0.0.1:0"));
        assertThat(broker.exit()).isEqualTo(2);
        assertThat(broker.err()).contains("cluster broker cluster.id=c1 node.id=1");
        CliRun perf = run("", "perf", "--dir", store, "--seconds", "1");
        assertThat(perf.exit()).isNotZero();
        assertThat(perf.err()).contains("is the store of cluster broker cluster.id=c1 node.id=1");

        // The store's own figures; the disk's use moves with whatever else runs on the machine.
        assertThat(withoutDisk(run("", "stat", "--dir", store, "--json").out())).isEqualTo(before);
        // Reading it stays allowed.
        assertThat(run("", "consume", "--dir", store, "--topic", "r", "--queue", "0", "--max", "3").exit()).isZero();
    }

    @Test
    void calibrateMeasuresAndRecordsTheCrossoverAndTheStoreStillWorks() throws Exception {
        String store = dir.resolve("calibrated").toString();
        CliRun run = run("", "calibrate", "--dir", store, "--file-size", "8388608", "--json");
        assertThat(run.exit()).as(run.err()).isZero();
        assertThat(run.out()).contains("\"units\":[").contains("\"unit\":4194304").contains("mappedReadGBps");
        String file = java.nio.file.Files.readString(dir.resolve("calibrated").resolve("calibration"));
        assertThat(file).contains("format=1").containsPattern("readCrossoverBytes=(never|\\d+)");
        try (java.util.stream.Stream<java.nio.file.Path> left = java.nio.file.Files.list(dir.resolve("calibrated"))) {
            assertThat(left.map(p -> p.getFileName().toString())).noneMatch(n -> n.startsWith(".calibrate"));
        }
        assertThat(run("one\n", "produce", "--dir", store, "--topic", "c").exit()).isZero();
        assertThat(run("", "consume", "--dir", store, "--topic", "c", "--queue", "0").out()).isEqualTo("0\tone\n");
        CliRun notAStore = run("", "calibrate", "--dir", dir.resolve("calibrated").resolve("log").toString());
        assertThat(notAStore.exit()).isEqualTo(2);
        assertThat(notAStore.err()).contains("neither empty nor a Sluice store");
    }

    @Test
    void produceCreatesATopicInTheLayoutAskedForAndStatShowsItsLogs() {
        String store = dir.resolve("layouts").toString();
        for (int queue = 0; queue < 2; queue++) {
            assertThat(run("", "produce", "--dir", store, "--topic", "perq", "--queue", Integer.toString(queue), "--count",
                    "10", "--size", "16", "--layout", "queue", "--segment-size", "1048576").exit()).isZero();
        }
        assertThat(run("one\n", "produce", "--dir", store, "--topic", "plain").exit()).isZero();
        CliRun stat = run("", "stat", "--dir", store);
        assertThat(stat.out()).contains("perq-0: offsets 0..10 (queue log)").contains("perq-1: offsets 0..10 (queue log)")
                .contains("plain-0: offsets 0..1 (shared log)").contains("log logs/perq/0:").contains("log logs/perq/1:");
        CliRun conflict = run("", "produce", "--dir", store, "--topic", "perq", "--count", "1", "--layout", "topic");
        assertThat(conflict.exit()).isEqualTo(2);
        assertThat(conflict.err()).contains("already exists with layout QUEUE");
        assertThat(run("", "produce", "--dir", store, "--topic", "x", "--count", "1", "--layout", "sideways").exit())
                .isEqualTo(2);
        CliRun batches = run("", "produce", "--dir", store, "--topic", "x", "--count", "1", "--layout", "batches");
        assertThat(batches.exit()).isEqualTo(2);
        assertThat(batches.err()).contains("batches holds Kafka record batches only");
        assertThat(run("", "verify", "--dir", store).exit()).isZero();
    }

    @Test
    void badArgumentsPrintUsageAndExitTwo() {
        CliRun missing = run("", "produce", "--topic", "t");
        assertThat(missing.exit()).isEqualTo(2);
        assertThat(missing.err()).contains("Missing required option").contains("Usage:");
        assertThat(run("", "produce", "--dir", dir.toString(), "--topic", "t", "--flush", "sometimes").exit()).isEqualTo(2);
        assertThat(run("", "nonsense").exit()).isEqualTo(2);
        CliRun badTopic = run("", "produce", "--dir", dir.resolve("x").toString(), "--topic", "no/slash", "--count", "1");
        assertThat(badTopic.exit()).isEqualTo(2);
        assertThat(badTopic.err()).contains("[a-zA-Z0-9._-]");
    }

    @Test
    void helpAndVersionOnEveryCommandPrintAndExitZero() {
        for (String command : new picocli.CommandLine(Main.class).getSubcommands().keySet()) {
            CliRun help = run("", command, "--help");
            assertThat(help.exit()).as("%s --help: %s", command, help.err()).isZero();
            assertThat(help.out()).as(command + " --help").contains("Usage: sluice " + command);
            CliRun version = run("", command, "--version");
            assertThat(version.exit()).as("%s --version: %s", command, version.err()).isZero();
            assertThat(version.out()).as(command + " --version").startsWith("sluice ");
        }
        CliRun top = run("", "--help");
        assertThat(top.exit()).isZero();
        assertThat(top.out()).contains("broker").contains("cluster");
        assertThat(run("", "-h").exit()).isZero();
        assertThat(run("", "-V").out()).startsWith("sluice ");
    }
}
