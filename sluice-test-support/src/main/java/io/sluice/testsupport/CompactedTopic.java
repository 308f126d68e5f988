package io.sluice.testsupport;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * A compacted topic for the client tests: many updates over few keys and a few keys deleted, in partition 0 of a
 * topic of one partition, each offset's key and value a function of the offset alone. A client that reads the
 * partition back once the log cleaner ran knows from that what every offset held and which offset is each key's
 * latest. The "compacted" checks of {@code python/confluent_kafka_clients.py}, {@code python/kafka_python_clients.py}
 * and {@code go/franzgo} compute the same; keep them in step.
 *
 * <p>With {@code updates} updates over {@code keys} keys and {@code deleted} keys deleted, the partition holds
 * {@code updates + 2 * deleted} records. From offset {@code updates / 2} on, {@code 2 * deleted} records delete keys:
 * offset {@code updates / 2 + 2j} has key {@code d<j>} and value {@code doomed}, the next one key {@code d<j>} and no
 * value (a tombstone). Every other offset {@code o} has value {@code v<o>} followed by {@link #PADDING} x's, which
 * fill the store's segments so that the cleaner has sealed ones to compact, and key {@code k<o % keys>} before the
 * deletions, {@code k<o % (keys / 2)>} after them: half the keys have their latest record early in the log, where the
 * cleaner keeps it among the gaps of what it dropped, the other half late, where the producer's last batches are.
 *
 * <p>Immutable; {@link #create} and {@link #produce} may be called from any thread.
 */
public final class CompactedTopic {

    /** The x's that follow each update's {@code v<o>}. */
    public static final int PADDING = 400;
    /** The configs the topic is created with: compacted, and due for cleaning at the least dirt. */
    public static final Map<String, String> CONFIGS = Map.of("cleanup.policy", "compact",
            "min.cleanable.dirty.ratio", "0.01");

    private static final String PAD = "x".repeat(PADDING);
    private static final long TIMEOUT_SECONDS = 120;

    private final int updates;
    private final int keys;
    private final int deleted;

    /**
     * @param updates how many updates, 2 or more
     * @param keys over how many keys, 2 or more
     * @param deleted how many keys are deleted, 0 or more
     */
    public CompactedTopic(int updates, int keys, int deleted) {
        if (updates < 2 || keys < 2 || deleted < 0) {
            throw new IllegalArgumentException("not a compacted topic: " + updates + " updates over " + keys
                    + " keys, " + deleted + " deleted");
        }
        this.updates = updates;
        this.keys = keys;
        this.deleted = deleted;
    }

    /** @return the records produced, updates and deletions: the partition's end offset */
    public long records() {
        return updates + 2L * deleted;
    }

    /** @return the key of the record at {@code offset} */
    public String key(long offset) {
        long deletion = offset - updates / 2;
        if (deletion < 0) {
            return "k" + offset % keys;
        }
        return deletion < 2L * deleted ? "d" + deletion / 2 : "k" + offset % (keys / 2);
    }

    /** @return the value of the record at {@code offset}, null for a tombstone */
    public String value(long offset) {
        long deletion = offset - updates / 2;
        if (deletion >= 0 && deletion < 2L * deleted) {
            return deletion % 2 == 0 ? "doomed" : null;
        }
        return "v" + offset + PAD;
    }

    /** @return the arguments that tell a client's "compacted" check what was produced */
    public List<String> arguments() {
        return List.of("--records", Integer.toString(updates), "--keys", Integer.toString(keys), "--deleted",
                Integer.toString(deleted));
    }

    /**
     * Creates the topic, one partition with {@code replicas} replicas, with {@link #CONFIGS}.
     *
     * @param bootstrap the brokers to ask
     * @param topic the topic's name
     * @param replicas its replication factor
     * @throws Exception if the creation fails or takes longer than two minutes
     */
    public static void create(String bootstrap, String topic, int replicas) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 60_000))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, (short) replicas).configs(CONFIGS))).all()
                    .get(TIMEOUT_SECONDS, TimeUnit.SECONDS);
        }
    }

    /**
     * Produces every record, in offset order, with Kafka's Java producer (idempotent, acks=all, one request in flight),
     * and checks that each was stored at its offset. One request at a time makes each batch an entry of its own in a
     * cluster's Raft log, hundreds of them, so that the replicas snapshot and purge their logs, below which they
     * compact; with more in flight, how many entries there are depends on the run's speed.
     *
     * @param bootstrap the brokers to send to
     * @param topic the topic, created by {@link #create} and empty
     * @throws IllegalStateException if a record was stored at another offset
     * @throws Exception if a send fails or takes longer than two minutes
     */
    public void produce(String bootstrap, String topic) throws Exception {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        properties.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        properties.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, (int) TimeUnit.SECONDS.toMillis(TIMEOUT_SECONDS));
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(properties, new StringSerializer(),
                new StringSerializer())) {
            List<Future<RecordMetadata>> sent = new ArrayList<>();
            for (long offset = 0; offset < records(); offset++) {
                sent.add(producer.send(new ProducerRecord<>(topic, 0, key(offset), value(offset))));
            }
            for (int offset = 0; offset < sent.size(); offset++) {
                long stored = stored(sent.get(offset));
                if (stored != offset) {
                    throw new IllegalStateException("record " + offset + " of " + topic + " stored at offset "
                            + stored);
                }
            }
        }
    }

    private static long stored(Future<RecordMetadata> sent)
            throws InterruptedException, ExecutionException, TimeoutException {
        return sent.get(TIMEOUT_SECONDS, TimeUnit.SECONDS).offset();
    }

    @Override
    public String toString() {
        return updates + " updates over " + keys + " keys, " + deleted + " keys deleted";
    }
}
