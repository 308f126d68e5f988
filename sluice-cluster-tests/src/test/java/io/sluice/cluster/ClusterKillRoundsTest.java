package io.sluice.cluster;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import io.sluice.testsupport.KafkaWire;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.Properties;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.OffsetSpec;
import org.apache.kafka.clients.admin.RecordsToDelete;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.MetadataRequestData;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.ratis.client.RaftClient;
import org.apache.ratis.conf.RaftProperties;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.protocol.RaftPeer;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Three brokers in three processes on 127.0.0.1, an idempotent acks=all kafka-clients producer under load, and
 * rounds of SIGKILL of one broker (the leader of partition 0 in every other round, a random one otherwise) and its
 * restart; every fourth round stops the broker cleanly instead (SIGTERM), so that its restart takes the producers its
 * close kept rather than reading them back. Afterwards every acknowledged record is present exactly once, at the offset it was acknowledged with, no
 * record is stored twice, and the three replicas hold the same batches, byte for byte. Meanwhile a consumer group
 * commits offsets over and over through the coordinator (which the kills move): the group's last acknowledged commit
 * is what the coordinator answers at the end, and what every node's store holds. And a transactional producer runs
 * transactions over another topic, alternately committed and aborted, through the transaction coordinator the kills
 * move: a read_committed consumer then reads every record of each transaction whose commit was acknowledged exactly
 * once, none of one whose abort was, and of one whose end its producer never learnt all or none. Halfway through the
 * rounds the records of partition {@value #DELETED_PARTITION} are deleted up to its high watermark (DeleteRecords, -1):
 * at the end the cluster answers that log start, and so does every replica from its own log, after the restarts that
 * followed; the records below it are not read back, every other acknowledged one is.
 * {@code -Dsluice.cluster.rounds} sets the rounds (20 by default; each is a SIGKILL and a restart).
 * {@code -Dsluice.cluster.snapshotEvery=200} has every node snapshot its logs every 200 entries (the metadata's and the
 * partitions'; 100,000 by default), so nodes restart from their snapshots and followers behind a purged log install
 * them, and the test then requires restarts from a metadata snapshot. CI runs without it (docs/history.md, "The kill
 * rounds", says how that variant fares). A failed run keeps the brokers' logs in target/kill-rounds-failed-*.
 */
class ClusterKillRoundsTest {

    private static final String TOPIC = "k";
    private static final int PARTITIONS = 3;
    private static final String GROUP = "kill-rounds-offsets";
    /** The partition whose records are deleted halfway through the rounds. */
    private static final int DELETED_PARTITION = 2;
    /** Entries each replica applies between snapshots, if set: small, so the rounds restart nodes from snapshots. */
    private static final Integer SNAPSHOT_EVERY = Integer.getInteger("sluice.cluster.snapshotEvery");

    @TempDir
    Path dir;

    private ClusterSpec cluster;
    private final Process[] processes = new Process[4];
    private final AtomicInteger starts = new AtomicInteger();

    private void start(int id) throws Exception {
        Path log = dir.resolve("broker-" + id + "-" + starts.incrementAndGet() + ".log");
        String java = ProcessHandle.current().info().command().orElse("java");
        // C1 only: a restarted broker's JIT compilation no longer competes with the other two for the two cores, and
        // restarts take half as long.
        List<String> command = new ArrayList<>(List.of(java, "-Xmx384m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-Dorg.slf4j.simpleLogger.log.io.sluice.cluster=info",
                // Times and Raft role changes, for reading a failed run's logs.
                "-Dorg.slf4j.simpleLogger.showDateTime=true", "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl.RoleInfo=info",
                "-cp", System.getProperty("java.class.path"), ClusterBroker.class.getName(),
                dir.resolve("node-" + id).toString(), cluster.toString(), Integer.toString(id), "kill-rounds", "async"));
        if (SNAPSHOT_EVERY != null) {
            command.add(SNAPSHOT_EVERY.toString());
        }
        ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile());
        processes[id] = builder.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).contains("ready " + id)) {
            if (!processes[id].isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("broker " + id + " did not start:\n" + Files.readString(log));
            }
            Thread.sleep(50);
        }
    }

    private void kill(int id) throws InterruptedException {
        processes[id].destroyForcibly(); // SIGKILL
        processes[id].waitFor(30, TimeUnit.SECONDS);
    }

    @AfterEach
    void stopAll() throws InterruptedException {
        for (Process process : processes) {
            if (process != null && process.isAlive()) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private String bootstrap() {
        return TestClusters.bootstrap(cluster);
    }

    /** One acknowledged record: where it went. */
    private record Acked(int partition, long offset) {
    }

    @Test
    void everyAcknowledgedRecordSurvivesRoundsOfSigkillExactlyOnceAndTheReplicasAgree() throws Exception {
        try {
            runRounds();
        } catch (Exception | AssertionError e) {
            keepBrokerLogs(e);
            throw e;
        }
    }

    /**
     * Writes what every thread of a broker that did not stop is doing ({@code jcmd Thread.print}, from this JVM's own
     * JDK) to {@code file}, among the logs a failed run keeps.
     */
    private static void dumpThreads(Process process, Path file) {
        Path java = Path.of(ProcessHandle.current().info().command().orElse("java"));
        Path jcmd = java.resolveSibling("jcmd");
        try {
            new ProcessBuilder(jcmd.toString(), Long.toString(process.pid()), "Thread.print")
                    .redirectErrorStream(true).redirectOutput(file.toFile()).start().waitFor(30, TimeUnit.SECONDS);
        } catch (IOException e) {
            System.err.println("no thread dump of broker " + process.pid() + ": " + e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * A failed run's broker logs outlive the temporary directory: they are copied to target/kill-rounds-failed-*, and
     * the failure names the copy.
     */
    private void keepBrokerLogs(Throwable failure) {
        // What each running broker says of each partition, as a client would see it.
        StringBuilder views = new StringBuilder("partitions as each broker describes them:");
        for (ClusterSpec.Node node : cluster.nodes()) {
            for (int p = 0; p < PARTITIONS; p++) {
                try {
                    MetadataResponseData.MetadataResponsePartition info = metadataOf(node.clientPort(), p);
                    views.append("\n  broker ").append(node.id()).append(", ").append(TOPIC).append('-').append(p)
                            .append(info == null ? ": none" : ": leader " + info.leaderId() + " epoch "
                                    + info.leaderEpoch() + " isr " + info.isrNodes() + " error " + info.errorCode());
                } catch (IOException | RuntimeException e) {
                    views.append("\n  broker ").append(node.id()).append(": ").append(e);
                }
            }
        }
        failure.addSuppressed(new AssertionError(views.toString()));
        Path kept = Path.of("target", "kill-rounds-failed-" + System.currentTimeMillis()).toAbsolutePath();
        try (var logs = Files.list(dir)) {
            Files.createDirectories(kept);
            for (Path log : logs.filter(path -> path.getFileName().toString().endsWith(".log")).toList()) {
                Files.copy(log, kept.resolve(log.getFileName()));
            }
            failure.addSuppressed(new AssertionError("the brokers' logs are kept in " + kept));
        } catch (IOException e) {
            failure.addSuppressed(e);
        }
    }

    private void runRounds() throws Exception {
        int rounds = Integer.getInteger("sluice.cluster.rounds", 20);
        cluster = TestClusters.threeOnLoopback();
        for (int id = 1; id <= 3; id++) {
            start(id);
        }
        Properties adminProperties = new Properties();
        adminProperties.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        Map<String, Acked> acked = new ConcurrentHashMap<>();
        AtomicReference<Exception> failed = new AtomicReference<>();
        AtomicBoolean stop = new AtomicBoolean();
        AtomicInteger sent = new AtomicInteger();
        AtomicLong commitsAcknowledged = new AtomicLong();
        AtomicLong commitsTried = new AtomicLong();
        Map<Integer, Outcome> transactions = new ConcurrentHashMap<>();
        Random random = new Random(42);
        int leaderKills = 0;
        long began = System.nanoTime();
        List<String> roundSeconds = new ArrayList<>();
        long roundsEnded;
        long deletedBelow = -1;
        try (Admin admin = Admin.create(adminProperties)) {
            admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 3))).all().get(60, TimeUnit.SECONDS);
            // Committed once, before the rounds: after the first snapshots, only they hold it.
            admin.alterConsumerGroupOffsets(GROUP, Map.of(new TopicPartition(TOPIC, 1), new OffsetAndMetadata(7)))
                    .all().get(60, TimeUnit.SECONDS);
            Thread producerThread = Thread.ofPlatform().name("kill-rounds-producer").start(() ->
                    produce(acked, failed, stop, sent));
            Thread committerThread = Thread.ofPlatform().name("kill-rounds-committer").start(() ->
                    commitOffsets(commitsAcknowledged, commitsTried, failed, stop));
            admin.createTopics(List.of(new NewTopic(TRANSACTIONS_TOPIC, PARTITIONS, (short) 3))).all()
                    .get(60, TimeUnit.SECONDS);
            Thread transactionThread = Thread.ofPlatform().name("kill-rounds-transactions").start(() ->
                    transact(transactions, stop));
            for (int round = 0; round < rounds; round++) {
                long roundBegan = System.nanoTime();
                Thread.sleep(500);
                if (round == rounds / 2) {
                    // -1: up to the high watermark; the Admin client retries through a leader just killed.
                    TopicPartition deleted = new TopicPartition(TOPIC, DELETED_PARTITION);
                    deletedBelow = admin.deleteRecords(Map.of(deleted, RecordsToDelete.beforeOffset(-1L)))
                            .lowWatermarks().get(deleted).get(60, TimeUnit.SECONDS).lowWatermark();
                }
                int victim = round % 2 == 0 ? leaderOfPartition0(admin) : 1 + random.nextInt(3);
                leaderKills += round % 2 == 0 ? 1 : 0;
                if (round % 4 == 3) {
                    processes[victim].destroy(); // SIGTERM: a clean close, which keeps the producers
                    if (!processes[victim].waitFor(60, TimeUnit.SECONDS)) {
                        dumpThreads(processes[victim], dir.resolve("broker-" + victim + "-threads-at-stop.log"));
                    }
                    assertThat(processes[victim].isAlive()).as("broker %d stopped", victim).isFalse();
                } else {
                    kill(victim);
                }
                Thread.sleep(100 + random.nextInt(400));
                start(victim);
                roundSeconds.add(String.format("%.1f", (System.nanoTime() - roundBegan) / 1e9));
            }
            roundsEnded = System.nanoTime();
            Thread.sleep(2_000);
            stop.set(true);
            producerThread.join(180_000);
            committerThread.join(60_000);
            transactionThread.join(120_000);
        }
        long drained = System.nanoTime();
        assertThat(failed.get()).as("the producer's failure").isNull();
        assertThat(leaderKills).as("rounds that killed partition 0's leader").isGreaterThanOrEqualTo(rounds / 2);
        assertThat(acked).as("acknowledged records").hasSizeGreaterThan(1_000);
        assertThat(commitsAcknowledged.get()).as("offset commits acknowledged").isGreaterThan(300);
        assertThat(deletedBelow).as("the log start the deletion answered").isPositive();
        if (rounds >= 4) {
            assertThat(restartLogsContaining("took the producers its last clean close kept"))
                    .as("restarts after a clean stop that took the producers kept").isPositive();
        }
        if (SNAPSHOT_EVERY != null) {
            assertThat(restartLogsContaining("metadata: starting from the snapshot"))
                    .as("restarts that began from a metadata snapshot").isPositive();
        }

        // Every record read back from the leaders: acknowledged ones at their offsets, none stored twice.
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> read = readAll();
        long readBack = System.nanoTime();
        Set<String> seen = new HashSet<>();
        Map<String, Acked> found = new HashMap<>();
        for (var entry : read.entrySet()) {
            for (ConsumerRecord<byte[], byte[]> record : entry.getValue()) {
                String value = new String(record.value(), StandardCharsets.UTF_8);
                assertThat(seen.add(value)).as("record %s stored once", value).isTrue();
                found.put(value, new Acked(record.partition(), record.offset()));
            }
        }
        long deleted = 0;
        for (var entry : acked.entrySet()) {
            if (entry.getValue().partition() == DELETED_PARTITION && entry.getValue().offset() < deletedBelow) {
                deleted++;
                assertThat(found).as("deleted record %s", entry.getKey()).doesNotContainKey(entry.getKey());
            } else {
                assertThat(found.get(entry.getKey())).as("acknowledged record %s", entry.getKey())
                        .isEqualTo(entry.getValue());
            }
        }
        assertThat(deleted).as("acknowledged records deleted").isPositive();

        // Transactions: a read_committed consumer sees every record of each transaction whose commit was
        // acknowledged, exactly once, none of one whose abort was, and of any other all records or none.
        Map<Integer, List<String>> readCommitted = readCommittedTransactions();
        long committedTransactions = transactions.values().stream().filter(o -> o == Outcome.COMMITTED).count();
        long abortedTransactions = transactions.values().stream().filter(o -> o == Outcome.ABORTED).count();
        assertThat(committedTransactions).as("transactions committed").isGreaterThan(20);
        assertThat(abortedTransactions).as("transactions aborted").isGreaterThan(20);
        for (var entry : transactions.entrySet()) {
            List<String> records = readCommitted.getOrDefault(entry.getKey(), List.of());
            switch (entry.getValue()) {
                case COMMITTED -> assertThat(records).as("committed transaction %d", entry.getKey())
                        .hasSize(TRANSACTION_RECORDS).doesNotHaveDuplicates();
                case ABORTED -> assertThat(records).as("aborted transaction %d", entry.getKey()).isEmpty();
                case UNKNOWN -> assertThat(records.size()).as("transaction %d, its end unknown", entry.getKey())
                        .isIn(0, TRANSACTION_RECORDS);
            }
        }
        assertThat(transactions.keySet()).as("transactions read").containsAll(readCommitted.keySet());

        // The followers catch up (each partition's leader, asked itself, reports all three replicas in sync: those
        // whose log matches its up to the commit), then a clean stop;
        // the replicas must hold the same batches.
        awaitAllInSync();
        long inSync = System.nanoTime();
        try (Admin admin = Admin.create(adminProperties)) {
            TopicPartition partition = new TopicPartition(TOPIC, DELETED_PARTITION);
            assertThat(admin.listOffsets(Map.of(partition, OffsetSpec.earliest())).partitionResult(partition)
                    .get(60, TimeUnit.SECONDS).offset()).as("the earliest offset the cluster answers")
                    .isEqualTo(deletedBelow);
        }
        for (ClusterSpec.Node node : cluster.nodes()) {
            long expected = deletedBelow;
            InProcessCluster.await("broker " + node.id() + "'s replica starts at " + expected, 60,
                    () -> earliestOnReplica(node.clientPort()) == expected);
        }
        // The group's offset: the last acknowledged commit, or one tried after it (unacknowledged, but maybe
        // committed); every node's store holds the same once stopped.
        long committed;
        try (Admin admin = Admin.create(adminProperties)) {
            var offsets = admin.listConsumerGroupOffsets(GROUP).partitionsToOffsetAndMetadata().get(60, TimeUnit.SECONDS);
            assertThat(offsets).as("the group's offsets").containsKeys(new TopicPartition(TOPIC, 0),
                    new TopicPartition(TOPIC, 1));
            committed = offsets.get(new TopicPartition(TOPIC, 0)).offset();
            assertThat(offsets.get(new TopicPartition(TOPIC, 1)).offset()).as("the offset committed before the rounds")
                    .isEqualTo(7);
        }
        assertThat(committed).as("the group's committed offset").isBetween(commitsAcknowledged.get(),
                commitsTried.get());
        awaitMetadataApplied();
        for (int id = 1; id <= 3; id++) {
            processes[id].destroy(); // SIGTERM: a clean close
        }
        for (int id = 1; id <= 3; id++) {
            assertThat(processes[id].waitFor(60, TimeUnit.SECONDS)).as("broker %d stopped", id).isTrue();
        }
        for (int id = 1; id <= 3; id++) {
            assertThat(committedInStore(id, 0)).as("the group's offset in node %d's store", id).hasValue(committed);
            assertThat(committedInStore(id, 1)).as("the offset committed before the rounds in node %d's store", id)
                    .hasValue(7);
        }
        for (int p = 0; p < PARTITIONS; p++) {
            // From where every replica's store starts: each raises its first offset to the log start as far as its
            // own Raft log lets it.
            long from = 0;
            for (int id = 1; id <= 3; id++) {
                from = Math.max(from, firstStored(id, p));
            }
            List<byte[]> first = batches(1, p, from);
            assertThat(first).as("partition %d on node 1", p).isNotEmpty();
            for (int id = 2; id <= 3; id++) {
                List<byte[]> other = batches(id, p, from);
                assertThat(other).as("partition %d: node %d's batches against node 1's", p, id)
                        .hasSameSizeAs(first);
                for (int i = 0; i < first.size(); i++) {
                    assertThat(other.get(i)).as("partition %d batch %d on node %d", p, i, id).isEqualTo(first.get(i));
                }
            }
        }
        System.out.printf("kill rounds: %d rounds (%d of partition 0's leader), %d records sent, %d acknowledged;"
                + " transactions: %d committed, %d aborted, %d of unknown end;"
                + " %d offset commits tried, %d acknowledged, %d restarts from a metadata snapshot; seconds: rounds %d (each %s), producer drained %d, read back %d, replicas in sync %d%n",
                rounds, leaderKills, sent.get(), acked.size(), committedTransactions, abortedTransactions,
                transactions.size() - committedTransactions - abortedTransactions, commitsTried.get(), commitsAcknowledged.get(),
                restartLogsContaining("metadata: starting from the snapshot"), TimeUnit.NANOSECONDS.toSeconds(roundsEnded - began),
                String.join(" ", roundSeconds), TimeUnit.NANOSECONDS.toSeconds(drained - roundsEnded),
                TimeUnit.NANOSECONDS.toSeconds(readBack - drained), TimeUnit.NANOSECONDS.toSeconds(inSync - readBack));
    }

    /** Waits until each partition's leader, asked itself, reports its three replicas in sync (up to 120 s). */
    private void awaitAllInSync() throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        for (int p = 0; p < PARTITIONS; p++) {
            while (true) {
                boolean caughtUp = false;
                for (ClusterSpec.Node node : cluster.nodes()) {
                    MetadataResponseData.MetadataResponsePartition info = metadataOf(node.clientPort(), p);
                    caughtUp |= info != null && info.leaderId() == node.id() && info.isrNodes().size() == 3;
                }
                if (caughtUp) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new AssertionError("partition " + p + " did not get three replicas in sync within 120 s"
                            + brokerLogTails());
                }
                Thread.sleep(200);
            }
        }
    }

    /**
     * Waits until every node applied every metadata entry any of them knows committed: a node's store holds the
     * group's offsets once it applied their entry, and the stores are read after the stop.
     */
    private void awaitMetadataApplied() throws IOException, InterruptedException {
        RaftGroupId id = RaftGroups.metadataGroupId("kill-rounds");
        List<RaftPeer> peers = cluster.nodes().stream().map(node -> RaftPeer.newBuilder()
                .setId(ClusterNode.peerId(node.id())).setAddress(node.raftAddress()).build()).toList();
        try (RaftClient client = RaftClient.newBuilder().setProperties(new RaftProperties())
                .setRaftGroup(RaftGroup.valueOf(id, peers)).build()) {
            InProcessCluster.await("every node applied the metadata's committed entries", 60, () -> {
                long applied = Long.MAX_VALUE;
                long committed = -1;
                for (RaftPeer peer : peers) {
                    try {
                        var log = client.getGroupManagementApi(peer.getId()).info(id).getLogInfoProto();
                        applied = Math.min(applied, log.getApplied().getIndex());
                        committed = Math.max(committed, log.getCommitted().getIndex());
                    } catch (IOException | RuntimeException e) {
                        return false;
                    }
                }
                return committed >= 0 && applied >= committed;
            });
        }
    }

    /** @return for a failure's message: the last lines each broker's latest process logged of its own or errors */
    private String brokerLogTails() throws IOException {
        StringBuilder tails = new StringBuilder();
        for (int id = 1; id <= 3; id++) {
            String prefix = "broker-" + id + "-";
            try (var logs = Files.list(dir)) {
                Path latest = logs.filter(path -> path.getFileName().toString().startsWith(prefix))
                        .max(java.util.Comparator.comparingInt(path -> Integer.parseInt(path.getFileName().toString()
                                .substring(prefix.length()).replace(".log", "")))).orElse(null);
                if (latest == null) {
                    continue;
                }
                List<String> lines = Files.readAllLines(latest).stream()
                        .filter(line -> line.contains("io.sluice") || line.contains("ERROR")).toList();
                tails.append("\n--- ").append(latest.getFileName()).append(", last of ").append(lines.size())
                        .append(" lines from Sluice or errors:\n");
                lines.subList(Math.max(0, lines.size() - 30), lines.size())
                        .forEach(line -> tails.append(line, 0, Math.min(line.length(), 400)).append('\n'));
            }
        }
        return tails.toString();
    }

    /**
     * @return the earliest offset of {@link #DELETED_PARTITION} as the broker on {@code port} answers it from its own
     *     replica's log (ListOffsets from the debugging replica id, -2), or -1 if it does not answer
     */
    private static long earliestOnReplica(int port) {
        short version = 10;
        var request = new ListOffsetsRequestData().setReplicaId(-2).setTopics(List.of(
                new ListOffsetsRequestData.ListOffsetsTopic().setName(TOPIC).setPartitions(List.of(
                        new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(DELETED_PARTITION)
                                .setTimestamp(-2)))));
        try {
            var answer = new ListOffsetsResponseData(KafkaWire.call(port, ApiKeys.LIST_OFFSETS, version, request),
                    version).topics().getFirst().partitions().getFirst();
            return answer.errorCode() == 0 ? answer.offset() : -1;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** @return partition {@code p} as the broker on {@code port} itself describes it (one Metadata request), or null */
    private static MetadataResponseData.MetadataResponsePartition metadataOf(int port, int p) throws IOException {
        short version = 12;
        var request = new MetadataRequestData().setTopics(new ArrayList<>(List.of(
                new MetadataRequestData.MetadataRequestTopic().setName(TOPIC)))).setAllowAutoTopicCreation(false);
        try {
            var topic = new MetadataResponseData(KafkaWire.call(port, ApiKeys.METADATA, version, request), version)
                    .topics().find(TOPIC);
            return topic == null || p >= topic.partitions().size() ? null : topic.partitions().get(p);
        } catch (IOException e) {
            return null;
        }
    }

    /** @return the node leading partition 0, once one is reported (an election may be on after the last restart) */
    private static int leaderOfPartition0(Admin admin) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            Node leader = null;
            try {
                leader = admin.describeTopics(List.of(TOPIC)).allTopicNames().get(30, TimeUnit.SECONDS).get(TOPIC)
                        .partitions().getFirst().leader();
            } catch (java.util.concurrent.ExecutionException e) {
                // A broker that has not applied the topic's creation yet (just restarted) does not know it: ask again.
                if (!(e.getCause() instanceof org.apache.kafka.common.errors.UnknownTopicOrPartitionException)) {
                    throw e;
                }
            }
            if (leader != null && leader.id() >= 1) {
                return leader.id();
            }
            if (System.nanoTime() > deadline) {
                throw new AssertionError("no leader of partition 0 reported within 60 s");
            }
            Thread.sleep(50);
        }
    }

    private void produce(Map<String, Acked> acked, AtomicReference<Exception> failed, AtomicBoolean stop,
                         AtomicInteger sent) {
        try (KafkaProducer<byte[], byte[]> producer = TestClusters.idempotentProducer(bootstrap(), 300_000, 10_000)) {
            for (int n = 0; !stop.get(); n++) {
                String value = "v-" + n;
                producer.send(new ProducerRecord<>(TOPIC, null, ("k" + n).getBytes(StandardCharsets.UTF_8),
                        value.getBytes(StandardCharsets.UTF_8)), (metadata, error) -> {
                            if (error != null) {
                                failed.compareAndSet(null, error);
                            } else {
                                Acked previous = acked.put(value, new Acked(metadata.partition(), metadata.offset()));
                                if (previous != null) {
                                    failed.compareAndSet(null, new IllegalStateException(value
                                            + " acknowledged twice"));
                                }
                            }
                        });
                sent.incrementAndGet();
                // At most 2,500 records a second: load enough to have batches in flight at every kill, while leaving
                // the two cores room for the brokers' restarts.
                if (n % 50 == 0) {
                    Thread.sleep(20);
                }
            }
            producer.flush();
        } catch (Exception e) {
            failed.compareAndSet(null, e);
        }
    }

    private static final String TRANSACTIONS_TOPIC = "kt";
    /** Records per transaction, over the partitions. */
    private static final int TRANSACTION_RECORDS = 6;

    /** How a transaction ended, as its producer was told. */
    private enum Outcome {
        COMMITTED, ABORTED, UNKNOWN
    }

    /**
     * Transactions of {@link #TRANSACTION_RECORDS} records over the partitions of {@link #TRANSACTIONS_TOPIC},
     * alternately committed and aborted, until stopped: each noted as its producer was told it ended. A producer that
     * fails (fenced, timed out as a broker dies) is closed and another takes the transactional id.
     */
    private void transact(Map<Integer, Outcome> outcomes, AtomicBoolean stop) {
        int next = 0;
        while (!stop.get()) {
            Properties properties = new Properties();
            properties.put(org.apache.kafka.clients.producer.ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
            properties.put(org.apache.kafka.clients.producer.ProducerConfig.TRANSACTIONAL_ID_CONFIG, "kill-rounds");
            properties.put(org.apache.kafka.clients.producer.ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
            properties.put(org.apache.kafka.clients.producer.ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 30_000);
            properties.put(org.apache.kafka.clients.producer.ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties,
                    new org.apache.kafka.common.serialization.StringSerializer(),
                    new org.apache.kafka.common.serialization.StringSerializer())) {
                producer.initTransactions();
                while (!stop.get()) {
                    int id = next++;
                    outcomes.put(id, Outcome.UNKNOWN);
                    producer.beginTransaction();
                    for (int i = 0; i < TRANSACTION_RECORDS; i++) {
                        producer.send(new ProducerRecord<>(TRANSACTIONS_TOPIC, i % PARTITIONS, null, id + "-" + i));
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
                // A dead broker on the way: the transaction's end is unknown; a new producer takes the id over.
                try {
                    Thread.sleep(200);
                } catch (InterruptedException interrupted) {
                    Thread.currentThread().interrupt();
                    return;
                }
            }
        }
    }

    /** @return the records of {@link #TRANSACTIONS_TOPIC} a read_committed consumer reads, by transaction */
    private Map<Integer, List<String>> readCommittedTransactions() {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        Map<Integer, List<String>> read = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(TRANSACTIONS_TOPIC, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (true) {
                boolean done = true;
                for (TopicPartition partition : partitions) {
                    done &= consumer.position(partition) >= ends.get(partition);
                }
                if (done) {
                    break;
                }
                assertThat(System.nanoTime()).as("read the transactions' topic to its stable end in time")
                        .isLessThan(deadline);
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    String value = new String(record.value(), StandardCharsets.UTF_8);
                    read.computeIfAbsent(Integer.parseInt(value.substring(0, value.indexOf('-'))),
                            t -> new ArrayList<>()).add(value);
                }
            }
        }
        return read;
    }

    private Map<Integer, List<ConsumerRecord<byte[], byte[]>>> readAll() {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        Map<Integer, List<ConsumerRecord<byte[], byte[]>>> read = new HashMap<>();
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(TOPIC, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (System.nanoTime() < deadline) {
                boolean done = true;
                for (TopicPartition partition : partitions) {
                    done &= consumer.position(partition) >= ends.get(partition);
                }
                if (done) {
                    break;
                }
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(200))) {
                    read.computeIfAbsent(record.partition(), p -> new ArrayList<>()).add(record);
                }
            }
        }
        return read;
    }

    /**
     * Commits the group's offset of partition 0, one more each time, from a consumer outside any group generation (as
     * a tool or a stream processor that assigns its partitions does): each commit is an entry of the metadata's log.
     */
    private void commitOffsets(AtomicLong acknowledged, AtomicLong tried, AtomicReference<Exception> failed,
                               AtomicBoolean stop) {
        Properties properties = new Properties();
        properties.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ConsumerConfig.GROUP_ID_CONFIG, GROUP);
        properties.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        TopicPartition partition = new TopicPartition(TOPIC, 0);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(properties, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(partition));
            for (long offset = 1; !stop.get(); offset++) {
                tried.set(offset);
                try {
                    consumer.commitSync(Map.of(partition, new OffsetAndMetadata(offset)), Duration.ofSeconds(20));
                    acknowledged.set(offset);
                } catch (org.apache.kafka.common.errors.TimeoutException e) {
                    // Unacknowledged (the coordinator was killed, or moving): committed or not; the next one is tried.
                }
                Thread.sleep(30);
            }
        } catch (Exception e) {
            failed.compareAndSet(null, e);
        }
    }

    /** @return how many of the brokers' restarts (not their first starts, the logs 1 to 3) logged {@code text} */
    private long restartLogsContaining(String text) throws IOException {
        long found = 0;
        for (int start = 4; start <= starts.get(); start++) {
            try (var logs = Files.newDirectoryStream(dir, "broker-*-" + start + ".log")) {
                for (Path log : logs) {
                    found += Files.readString(log).contains(text) ? 1 : 0;
                }
            }
        }
        return found;
    }

    /** @return the group's offset of a partition in a stopped node's store */
    private OptionalLong committedInStore(int id, int partition) {
        try (Store store = Store.openReadOnly(dir.resolve("node-" + id).resolve("store"),
                StoreConfig.builder().build())) {
            return store.committedOffset(GROUP, TOPIC, partition);
        }
    }

    /** @return the first offset a stopped node's store holds of a partition */
    private long firstStored(int id, int partition) {
        try (Store store = Store.openReadOnly(dir.resolve("node-" + id).resolve("store"),
                StoreConfig.builder().build())) {
            return store.minOffset(TOPIC, partition);
        }
    }

    /** @return the batches of a partition in a stopped node's store from offset {@code from} on, in order */
    private List<byte[]> batches(int id, int partition, long from) {
        List<byte[]> all = new ArrayList<>();
        try (Store store = Store.openReadOnly(dir.resolve("node-" + id).resolve("store"),
                StoreConfig.builder().build())) {
            long offset = from;
            while (offset < store.maxOffset(TOPIC, partition)) {
                try (ReadResult result = store.read(TOPIC, partition, offset, 500, 8 << 20)) {
                    for (StoredMessage message : result.messages()) {
                        all.add(message.bodyBytes());
                    }
                    offset = result.nextOffset();
                }
            }
        }
        return all;
    }
}
