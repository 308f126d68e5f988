package io.sluice.apps;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
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
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.LongDeserializer;
import org.apache.kafka.common.serialization.Serdes;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.apache.kafka.streams.CloseOptions;
import org.apache.kafka.streams.KafkaStreams;
import org.apache.kafka.streams.StreamsBuilder;
import org.apache.kafka.streams.StreamsConfig;
import org.apache.kafka.streams.kstream.Materialized;
import org.apache.kafka.streams.kstream.Produced;
import org.apache.kafka.streams.processor.StateRestoreListener;
import org.apache.kafka.streams.state.Stores;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kafka Streams 4.3.1, unchanged, against a broker alone and a cluster of three: a word count with a repartition and
 * a state store whose changelog Streams creates compacted. The counts are exact, and Streams purges the repartition
 * topic as it commits (DeleteRecords up to its committed offsets); with the local state wiped, a new
 * instance restores the store from the changelog, every record left in it, and counts on from there. On the broker
 * alone the log cleaner has compacted the changelog to less than half its updates first, so the restore steps over
 * the cleaner's gaps; a cluster's replicas compact only below their Raft snapshots, which these few entries do not
 * reach ({@link Target}).
 */
class KafkaStreamsTest {

    private static final List<String> WORDS = List.of("alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta",
            "theta", "iota", "kappa");

    /**
     * The lines the first instance counts where the cleaner compacts within the test ({@link Target#compacts()}):
     * 15,000 updates of the store, each a record of the changelog (the store has no cache), which fill several of the
     * stores' small segments in each of the changelog's partitions, for the cleaner to compact. Elsewhere 600.
     */
    private static final int LINES_COMPACTED = 6_000;
    private static final int LINES = 600;
    private static final String CHANGELOG = "word-count-counts-changelog";
    private static final String REPARTITION = "word-count-counts-repartition";

    @TempDir
    Path dir;

    private static KafkaStreams wordCount(String bootstrap, int replicas, Path state, String guarantee,
                                          StateRestoreListener restores) {
        StreamsBuilder builder = new StreamsBuilder();
        builder.<String, String>stream("lines")
                .flatMapValues(line -> Arrays.asList(line.split(" ")))
                .groupBy((key, word) -> word)
                .count(Materialized.<String, Long>as(Stores.inMemoryKeyValueStore("counts")).withCachingDisabled())
                .toStream()
                .to("counts", Produced.with(Serdes.String(), Serdes.Long()));
        Properties props = new Properties();
        props.put(StreamsConfig.APPLICATION_ID_CONFIG, "word-count");
        props.put(StreamsConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(StreamsConfig.PROCESSING_GUARANTEE_CONFIG, guarantee);
        props.put(StreamsConfig.STATE_DIR_CONFIG, state.toString());
        props.put(StreamsConfig.COMMIT_INTERVAL_MS_CONFIG, 100);
        props.put(StreamsConfig.DEFAULT_KEY_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.DEFAULT_VALUE_SERDE_CLASS_CONFIG, Serdes.StringSerde.class);
        props.put(StreamsConfig.REPARTITION_PURGE_INTERVAL_MS_CONFIG, 1_000);
        props.put(StreamsConfig.REPLICATION_FACTOR_CONFIG, replicas);
        props.put(StreamsConfig.consumerPrefix(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG), "earliest");
        KafkaStreams streams = new KafkaStreams(builder.build(), props);
        streams.setGlobalStateRestoreListener(restores);
        streams.start();
        return streams;
    }

    /** Sends {@code count} lines of words; @return how often each word was sent, added to {@code counts} */
    private static void sendLines(String bootstrap, int from, int count, Map<String, Long> counts) throws Exception {
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(Map.of(
                ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap), new StringSerializer(), new StringSerializer())) {
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

    /** Reads the output topic until each word's latest count is the expected one, for up to 90 s. */
    private static Map<String, Long> awaitCounts(String bootstrap, Map<String, Long> expected) {
        Map<String, Long> latest = new HashMap<>();
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.GROUP_ID_CONFIG, "checker-"
                        + System.nanoTime(), ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest",
                ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed"), new StringDeserializer(),
                new LongDeserializer())) {
            consumer.subscribe(List.of("counts"));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            while (!latest.equals(expected) && System.nanoTime() < deadline) {
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    latest.put(record.key(), record.value());
                }
            }
        }
        return latest;
    }

    /**
     * Waits until Streams has purged what it consumed of its repartition topic (DeleteRecords up to its committed
     * offsets, every repartition.purge.interval.ms): every partition's log start has moved past 0.
     *
     * @return each partition's log start
     */
    private static Map<Integer, Long> awaitPurged(String bootstrap) throws Exception {
        Map<Integer, Long> starts = new HashMap<>();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            Map<TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> earliest = Map.of(
                    new TopicPartition(REPARTITION, 0), org.apache.kafka.clients.admin.OffsetSpec.earliest(),
                    new TopicPartition(REPARTITION, 1), org.apache.kafka.clients.admin.OffsetSpec.earliest());
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            do {
                admin.listOffsets(earliest).all().get(30, TimeUnit.SECONDS)
                        .forEach((partition, info) -> starts.put(partition.partition(), info.offset()));
                if (starts.values().stream().allMatch(start -> start > 0)) {
                    break;
                }
                Thread.sleep(200);
            } while (System.nanoTime() < deadline);
        }
        return starts;
    }

    /** What a consumer read of the changelog, read_committed as a restore reads it, from its start to its end. */
    private record Changelog(long records, Map<String, Long> latest) {
    }

    private static Changelog readChangelog(String bootstrap) {
        try (KafkaConsumer<String, Long> consumer = new KafkaConsumer<>(Map.of(
                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                "read_committed"), new StringDeserializer(), new LongDeserializer())) {
            List<TopicPartition> partitions = consumer.partitionsFor(CHANGELOG, Duration.ofSeconds(30)).stream()
                    .map(info -> new TopicPartition(CHANGELOG, info.partition())).toList();
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            Map<TopicPartition, Long> ends = consumer.endOffsets(partitions, Duration.ofSeconds(30));
            long records = 0;
            Map<String, Long> latest = new HashMap<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (partitions.stream().anyMatch(p -> consumer.position(p, Duration.ofSeconds(30)) < ends.get(p))) {
                assertThat(System.nanoTime()).as("read the changelog to its ends %s within 60 s", ends)
                        .isLessThan(deadline);
                for (ConsumerRecord<String, Long> record : consumer.poll(Duration.ofMillis(200))) {
                    records++;
                    latest.put(record.key(), record.value());
                }
            }
            return new Changelog(records, latest);
        }
    }

    /** Counts the records a Streams instance restores into its stores. */
    private static final class Restored implements StateRestoreListener {
        final AtomicLong records = new AtomicLong();

        @Override
        public void onRestoreStart(TopicPartition partition, String store, long startingOffset, long endingOffset) {
        }

        @Override
        public void onBatchRestored(TopicPartition partition, String store, long batchEndOffset, long restored) {
            records.addAndGet(restored);
        }

        @Override
        public void onRestoreEnd(TopicPartition partition, String store, long totalRestored) {
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"broker", "cluster"})
    void aWordCountIsExactAndRestoresItsStoreFromTheChangelog(String kind) throws Exception {
        wordCountRestoresItsStore(kind, StreamsConfig.AT_LEAST_ONCE);
    }

    /** exactly_once_v2: each task's output, changelog and offsets committed in one transaction. */
    @ParameterizedTest
    @ValueSource(strings = {"broker", "cluster"})
    void anExactlyOnceWordCountIsExactAndRestoresItsStoreFromTheChangelog(String kind) throws Exception {
        wordCountRestoresItsStore(kind, StreamsConfig.EXACTLY_ONCE_V2);
    }

    private void wordCountRestoresItsStore(String kind, String guarantee) throws Exception {
        try (Target target = Target.start(kind, dir.resolve("sluice"))) {
            String bootstrap = target.bootstrap();
            short replicas = (short) target.replicas();
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(new NewTopic("lines", 2, replicas), new NewTopic("counts", 2, replicas)))
                        .all().get(60, TimeUnit.SECONDS);
            }
            int lines = target.compacts() ? LINES_COMPACTED : LINES;
            Map<String, Long> expected = new HashMap<>();
            sendLines(bootstrap, 0, lines, expected);
            Map<String, Long> counted = Map.copyOf(expected);
            long updates = counted.values().stream().mapToLong(Long::longValue).sum();
            try (KafkaStreams streams = wordCount(bootstrap, replicas, dir.resolve("state-1"), guarantee,
                    new Restored())) {
                assertThat(awaitCounts(bootstrap, expected)).isEqualTo(expected);
                assertThat(awaitPurged(bootstrap)).as("the repartition topic's log start, each partition")
                        .allSatisfy((partition, start) -> assertThat(start).isPositive());
                // Leaving the group, so that the next instance need not wait out this one's session (45 s).
                streams.close(CloseOptions.groupMembershipOperation(
                        CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(30)));
            }
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                ConfigResource changelog = new ConfigResource(ConfigResource.Type.TOPIC, CHANGELOG);
                assertThat(admin.describeConfigs(List.of(changelog)).all().get(30, TimeUnit.SECONDS).get(changelog)
                        .get("cleanup.policy").value()).as("the changelog, as Streams created it").isEqualTo("compact");
            }
            // The cleaners ran meanwhile; one more round of each, now that the changelog takes no more updates.
            target.cleanRound();
            Changelog compacted = readChangelog(bootstrap);
            assertThat(compacted.latest()).as("each word's latest count in the changelog").isEqualTo(counted);
            if (target.compacts()) {
                assertThat(compacted.records()).as("records left in the changelog of %d updates", updates)
                        .isLessThan(updates / 2);
            }

            // The local state gone: the store comes back from the compacted changelog, and counting goes on from it.
            sendLines(bootstrap, lines, 200, expected);
            Restored restored = new Restored();
            try (KafkaStreams streams = wordCount(bootstrap, replicas, dir.resolve("state-2"), guarantee,
                    restored)) {
                assertThat(awaitCounts(bootstrap, expected)).isEqualTo(expected);
                // Leaving the group, so that the next instance need not wait out this one's session (45 s).
                streams.close(CloseOptions.groupMembershipOperation(
                        CloseOptions.GroupMembershipOperation.LEAVE_GROUP).withTimeout(Duration.ofSeconds(30)));
            }
            // Every record left in the changelog, and only those: the restore read it over the cleaner's gaps.
            assertThat(restored.records.get()).as("records restored").isEqualTo(compacted.records());
        }
    }
}
