package io.sluice.bench.broker;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.LogDirDescription;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ReplicaInfo;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The compaction race's client: loads a compacted topic with updates to a fixed set of keys, starts its cleaning, and
 * reads it back to check that each key's latest value survived. The same stock clients and settings against either
 * broker.
 *
 * <p>Each record's key is {@code key-NNNNN}, drawn from a seeded random sequence; its value is its sequence number
 * (8 bytes, big-endian) and a filler to the record size. The producer notes, for each key, the sequence number of its
 * record with the highest acknowledged offset: the value a compacted log must keep for that key (read by offset, so
 * the check holds whatever order the acknowledgements came in).
 */
final class CompactionLoad {

    /** Held back from cleaning while loading: a day, far longer than a load. */
    static final long HOLD_BACK_LAG_MILLIS = TimeUnit.DAYS.toMillis(1);

    private CompactionLoad() {
    }

    /** What the load wrote: records acknowledged, how long it took, and each key's latest sequence number. */
    record Updates(long records, double seconds, long[] latestSequence) {
    }

    /** What was read back after cleaning. */
    record ReadBack(long records, int keys, long mismatched, String firstMismatch) {
    }

    /** @return the key numbered {@code keyIndex} */
    static byte[] key(int keyIndex) {
        return String.format("key-%05d", keyIndex).getBytes(StandardCharsets.US_ASCII);
    }

    private static Admin admin(Load.Target broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()));
    }

    /**
     * Creates a compacted topic of one partition that nothing is cleaned of yet (min.compaction.lag.ms a day).
     */
    static void createCompacted(Load.Target broker, String topic) throws Exception {
        try (Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic(topic, 1, broker.replicationFactor()).configs(Map.of(
                    "cleanup.policy", "compact",
                    "min.compaction.lag.ms", String.valueOf(HOLD_BACK_LAG_MILLIS))))).all().get(60, TimeUnit.SECONDS);
        }
    }

    /**
     * Sends {@code records} updates of {@code size} bytes over {@code keys} keys as fast as the producer takes them
     * (acks=1, Kafka's default batching: 16 KiB, linger 5 ms, no compression).
     */
    static Updates produce(Load.Target broker, String topic, long records, int keys, int size, long seed)
            throws Exception {
        byte[][] keyBytes = new byte[keys][];
        for (int k = 0; k < keys; k++) {
            keyBytes[k] = key(k);
        }
        byte[] filler = new byte[size];
        new SplittableRandom(seed ^ size).nextBytes(filler);
        SplittableRandom random = new SplittableRandom(seed);
        long[] latestOffset = new long[keys];
        long[] latestSequence = new long[keys];
        Arrays.fill(latestOffset, -1);
        Arrays.fill(latestSequence, -1);
        AtomicLong acknowledged = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        long start = System.nanoTime();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(Load.producerConfig(broker.bootstrap(), "1"),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            for (long sequence = 0; sequence < records && failure.get() == null; sequence++) {
                int k = random.nextInt(keys);
                byte[] value = filler.clone();
                ByteBuffer.wrap(value).putLong(sequence);
                long sent = sequence;
                producer.send(new ProducerRecord<>(topic, 0, keyBytes[k], value), (metadata, error) -> {
                    if (error != null) {
                        failure.compareAndSet(null, error);
                        return;
                    }
                    // Callbacks run on the producer's one I/O thread; the arrays are read after close.
                    if (metadata.offset() > latestOffset[k]) {
                        latestOffset[k] = metadata.offset();
                        latestSequence[k] = sent;
                    }
                    acknowledged.incrementAndGet();
                });
            }
            producer.flush();
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        if (failure.get() != null) {
            throw failure.get();
        }
        return new Updates(acknowledged.get(), seconds, latestSequence);
    }

    /**
     * Lets the cleaner at the topic: min.compaction.lag.ms 0 and min.cleanable.dirty.ratio {@code dirtyRatio}, by
     * IncrementalAlterConfigs.
     */
    static void startCleaning(Load.Target broker, String topic, double dirtyRatio) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        Collection<AlterConfigOp> changes = List.of(
                new AlterConfigOp(new ConfigEntry("min.compaction.lag.ms", "0"), AlterConfigOp.OpType.SET),
                new AlterConfigOp(new ConfigEntry("min.cleanable.dirty.ratio", String.valueOf(dirtyRatio)),
                        AlterConfigOp.OpType.SET));
        try (Admin admin = admin(broker)) {
            admin.incrementalAlterConfigs(Map.of(resource, changes)).all().get(60, TimeUnit.SECONDS);
        }
    }

    /** @return the bytes of partition 0 of {@code topic} as the broker reports them (DescribeLogDirs), -1 if none */
    static long logBytes(Load.Target broker, String topic) throws Exception {
        TopicPartition partition = new TopicPartition(topic, 0);
        try (Admin admin = admin(broker)) {
            List<Integer> nodes = admin.describeCluster().nodes().get(60, TimeUnit.SECONDS).stream()
                    .map(node -> node.id()).toList();
            for (Map<String, LogDirDescription> byDirectory : admin.describeLogDirs(nodes).allDescriptions()
                    .get(60, TimeUnit.SECONDS).values()) {
                for (LogDirDescription directory : byDirectory.values()) {
                    ReplicaInfo replica = directory.replicaInfos().get(partition);
                    if (replica != null) {
                        return replica.size();
                    }
                }
            }
        }
        return -1;
    }

    /**
     * Reads partition 0 of {@code topic} from its start to its end, and compares, for each key, the value of its last
     * record (by offset) with the one the load says must be there.
     */
    static ReadBack readBack(Load.Target broker, String topic, Updates updates, int size) throws Exception {
        long[] expected = updates.latestSequence();
        long[] found = new long[expected.length];
        Arrays.fill(found, -1);
        long records = 0;
        long badValues = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = Load.consumer(broker.bootstrap())) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            long end = consumer.endOffsets(List.of(partition)).get(partition);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
            while (consumer.position(partition) < end && System.nanoTime() < deadline) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    records++;
                    int k = Integer.parseInt(new String(record.key(), 4, record.key().length - 4,
                            StandardCharsets.US_ASCII));
                    if (record.value() == null || record.value().length != size) {
                        badValues++;
                        continue;
                    }
                    found[k] = ByteBuffer.wrap(record.value()).getLong();
                }
            }
        }
        long mismatched = badValues;
        String first = badValues > 0 ? badValues + " values of the wrong size" : "";
        int keys = 0;
        for (int k = 0; k < expected.length; k++) {
            if (expected[k] < 0) {
                continue; // never drawn
            }
            keys++;
            if (found[k] != expected[k]) {
                mismatched++;
                if (first.isEmpty()) {
                    first = new String(key(k), StandardCharsets.US_ASCII) + ": read " + found[k] + ", expected "
                            + expected[k];
                }
            }
        }
        return new ReadBack(records, keys, mismatched, first);
    }
}
