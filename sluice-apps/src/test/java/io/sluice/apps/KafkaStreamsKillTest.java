package io.sluice.apps;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.cli.Main;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.errors.StreamsUncaughtExceptionHandler;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Kafka Streams 4.3.1's exactly_once_v2 word count while `sluice broker` processes are killed by SIGKILL mid-run: a
 * broker alone (started again on its store), or the controller of a cluster of three (the transaction and group
 * coordinator; started again once the others took over). The counts are exactly right afterwards: every line counted
 * once, none twice.
 */
class KafkaStreamsKillTest {

    private static final List<String> WORDS = List.of("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
            "theta", "iota", "kappa");

    @TempDir
    Path dir;

    private final Process[] processes = new Process[4];
    /** Each broker's arguments, to start it again as it was. */
    private final Map<Integer, List<String>> arguments = new HashMap<>();

    @AfterEach
    void killAll() throws Exception {
        for (Process process : processes) {
            if (process != null) {
                process.destroyForcibly();
                process.waitFor(30, TimeUnit.SECONDS);
            }
        }
    }

    private void start(int id, String... args) throws Exception {
        arguments.put(id, List.of(args));
        Path log = dir.resolve("broker-" + id + "-" + System.nanoTime() + ".log");
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(java, "-Xmx384m", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "--enable-native-access=ALL-UNNAMED",
                "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn", "-cp", System.getProperty("java.class.path"),
                Main.class.getName(), "broker"));
        command.addAll(Arrays.asList(args));
        processes[id] = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).contains("Sluice broker")) {
            if (!processes[id].isAlive() || System.nanoTime() > deadline) {
                throw new AssertionError("broker " + id + " did not start:\n" + Files.readString(log));
            }
            Thread.sleep(20);
        }
    }

    private void kill(int id) throws InterruptedException {
        processes[id].destroyForcibly(); // SIGKILL
        processes[id].waitFor(30, TimeUnit.SECONDS);
    }

    private static KafkaStreams wordCount(String bootstrap, int replicas, Path state) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("lines")
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word)
                .count(Materialized.as(Stores.inMemoryKeyValueStore("counts")))
                .toStream()
                .to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "word-count");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, StreamsConfig.EXACTLY_ONCE_V2);
        props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, replicas);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        // A thread that meets a dead broker's error is replaced, as a production application sets it.
        streams.setUncaughtExceptionHandler(error ->
                StreamsUncaughtExceptionHandler.StreamThreadExceptionResponse.REPLACE_THREAD);
        streams.start();
        return streams;
    }

    private static void sendLines(String bootstrap, int from, int count, Map<String, Long> counts) {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000),
                new StringSerializer(), new StringSerializer())) {
            for (int i = from; i < from + count; i++) {
                StringBuilder line = new StringBuilder();
                for (int w = 0; w <= i % 4; w++) {
                    String word = WORDS.get((i * 7 + w * 3) % WORDS.size());
                    line.append(w == 0 ? "" : " ").append(word);
                    counts.merge(word, 1L, Long::sum);
                }
                producer.send(new ProducerRecord<>("lines", "line-" + i, line.toString()));
            }
            producer.flush();
        }
    }

    /** Reads the output topic (read_committed) until each word's latest count is the expected one, up to 120 s. */
    private static Map<String, Long> awaitCounts(String bootstrap, Map<String, Long> expected, int atLeast) {
        Map<String, Long> latest = new HashMap<>();
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, "checker-"
                        + System.nanoTime(), ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"), new StringDeserializer(),
                new LongDeserializer())) {
            consumer.subscribe(List.of("counts"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            int seen = 0;
            while ((expected == null ? seen < atLeast : !latest.equals(expected)) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(record.key(), record.value());
                    seen++;
                }
            }
        }
        return latest;
    }

    @ParameterizedTest
    @ValueSource(strings = {"broker", "cluster"})
    void anExactlyOnceWordCountIsExactAfterItsCoordinatorsBrokerIsKilled(String kind) throws Exception {
        boolean cluster = kind.equals("cluster");
        String bootstrap;
        int victim;
        if (cluster) {
            StringBuilder spec = new StringBuilder();
            StringBuilder servers = new StringBuilder();
            for (int id = 1; id <= 3; id++) {
                int client = Target.freePort();
                spec.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(client).append('/')
                        .append(Target.freePort());
                servers.append(id == 1 ? "" : ",").append("127.0.0.1:").append(client);
            }
            for (int id = 1; id <= 3; id++) {
                start(id, "--dir=" + dir.resolve("node-" + id), "--cluster=" + spec, "--node-id=" + id);
            }
            bootstrap = servers.toString();
        } else {
            int port = Target.freePort();
            start(1, "--dir=" + dir.resolve("alone"), "--listen=127.0.0.1:" + port);
            bootstrap = "127.0.0.1:" + port;
        }
        int replicas = cluster ? 3 : 1;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
            admin.createTopics(List.of(new NewTopic("lines", 2, (short) replicas),
                    new NewTopic("counts", 2, (short) replicas))).all().get(60, TimeUnit.SECONDS);
            victim = cluster ? admin.describeCluster().controller().get(30, TimeUnit.SECONDS).id() : 1;
        }
        Map<String, Long> expected = new HashMap<>();
        sendLines(bootstrap, 0, 300, expected);
        try (KafkaStreams streams = wordCount(bootstrap, replicas, dir.resolve("state"))) {
            // Mid-run: some counts are out, as transactions go on.
            assertThat(awaitCounts(bootstrap, null, 5)).as("counts under way").isNotEmpty();
            kill(victim);
            // A broker alone is down until it starts again; a cluster's others take over meanwhile.
            Thread.sleep(cluster ? 1_000 : 300);
            start(victim, arguments.get(victim).toArray(new String[0]));
            sendLines(bootstrap, 300, 300, expected);
            assertThat(awaitCounts(bootstrap, expected, 0)).isEqualTo(expected);
            streams.close(CloseOptions.groupMembershipOperation(CloseOptions.GroupMembershipOperation.LEAVE_GROUP)
                    .withTimeout(Duration.ofSeconds(30)));
        }
    }
}
