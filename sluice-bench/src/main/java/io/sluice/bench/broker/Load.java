package io.sluice.bench.broker;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The race's client: the stock Kafka producer and consumer with the same settings against either broker, as
 * Kafka's ProducerPerformance drives one (records sent as fast as the producer takes them, latency from send to
 * acknowledgement), and the CPU this process used meanwhile.
 */
final class Load {

    /** What one run measured. */
    record Result(long records, double seconds, double p50Millis, double p99Millis, double clientCpuSeconds,
                  double brokerCpuSeconds) {
        double perSecond() {
            return records / seconds;
        }

        /** @return broker CPU seconds per million records */
        double brokerCpuPerMillion() {
            return brokerCpuSeconds / records * 1e6;
        }

        double clientCpuPerMillion() {
            return clientCpuSeconds / records * 1e6;
        }
    }

    private Load() {
    }

    /** What the load runs against: one broker, or a cluster of them. */
    interface Target {
        /** @return the client bootstrap string */
        String bootstrap();

        /** @return CPU seconds the target's processes have used */
        double cpuSeconds() throws IOException;

        /** @return the replication factor of the topics the load creates */
        short replicationFactor();

        /**
         * @return the client settings beyond the bootstrap that reach the target's listener (security protocol, trust
         *     store, SASL login); none for a PLAINTEXT listener
         */
        default Map<String, Object> clientSettings() {
            return Map.of();
        }
    }

    /** @return the settings of an admin client of {@code target} */
    static Map<String, Object> adminConfig(Target target) {
        Map<String, Object> config = new HashMap<>(target.clientSettings());
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, target.bootstrap());
        return config;
    }

    static void createTopic(Target target, String topic) throws Exception {
        createTopic(target, topic, 1);
    }

    static void createTopic(Target target, String topic, int partitions) throws Exception {
        try (Admin admin = Admin.create(adminConfig(target))) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, target.replicationFactor()))).all()
                    .get(60, TimeUnit.SECONDS);
        }
    }

    static Map<String, Object> producerConfig(String bootstrap, String acks) {
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, acks);
        // Kafka 4's defaults, spelled out: 16 KiB batches, 5 ms linger, no compression.
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 16_384);
        config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
        return config;
    }

    /** @return the race's producer settings for {@code target}, through its listener */
    static Map<String, Object> producerConfig(Target target, String acks) {
        Map<String, Object> config = producerConfig(target.bootstrap(), acks);
        config.putAll(target.clientSettings());
        return config;
    }

    /** Sends {@code records} values of {@code size} bytes as fast as the producer takes them. */
    static Result produce(Target broker, String topic, long records, int size, String acks) throws Exception {
        return produce(broker, topic, records, Long.MAX_VALUE, size, acks);
    }

    /**
     * Sends values of {@code size} bytes as fast as the producer takes them for {@code seconds}, and at least
     * {@code records} of them: a warm-up that lasts until each broker's code is compiled, on a fast machine or a slow
     * one.
     */
    static Result produceFor(Target broker, String topic, double seconds, long records, int size, String acks)
            throws Exception {
        return produce(broker, topic, records, System.nanoTime() + (long) (seconds * 1e9), size, acks);
    }

    private static Result produce(Target broker, String topic, long records, long until, int size, String acks)
            throws Exception {
        createTopic(broker, topic);
        byte[] value = new byte[size];
        new SplittableRandom(size).nextBytes(value);
        Histogram latency = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        AtomicLong acknowledged = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        double clientBefore = Cpu.self();
        double brokerBefore = broker.cpuSeconds();
        long start;
        long end;
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, acks),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            start = System.nanoTime();
            for (long i = 0; i < records || until != Long.MAX_VALUE && System.nanoTime() < until; i++) {
                long sent = System.nanoTime();
                producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, error) -> {
                    if (error != null) {
                        failure.compareAndSet(null, error);
                    } else {
                        latency.recordValue(Math.max(1, (System.nanoTime() - sent) / 1_000));
                        acknowledged.incrementAndGet();
                    }
                });
            }
            producer.flush();
            end = System.nanoTime();
        }
        double brokerCpu = broker.cpuSeconds() - brokerBefore;
        double clientCpu = Cpu.self() - clientBefore;
        if (failure.get() != null) {
            throw failure.get();
        }
        return new Result(acknowledged.get(), (end - start) / 1e9, latency.getValueAtPercentile(50) / 1e3,
                latency.getValueAtPercentile(99) / 1e3, clientCpu, brokerCpu);
    }

    /** The most partitions a topic of {@link #singleMessages} has: more are spread over several topics. */
    static final int SINGLES_TOPIC_PARTITIONS = 2_000;

    /**
     * Single messages, each acknowledged before the next: {@code producers} independent producers (a connection each),
     * each sending one record of {@code size} bytes (acks=all, no linger) and waiting for its acknowledgement before
     * it sends the next, for {@code seconds}. Against a broker that forces before it answers, this is the JMQ4
     * article's "single message, sync flush": throughput is acknowledgements per second, and only a broker that forces
     * many producers' records at once can go past one force per record. Producer p sends its k-th record to
     * partition (p + k * producers) modulo {@code partitions}, so that every partition is written when there are more
     * partitions than producers (with as many or fewer, and producers a multiple of them, each producer keeps to one
     * partition). Over {@value #SINGLES_TOPIC_PARTITIONS} partitions, the partitions are those of several topics
     * ({@code topic-0}, {@code topic-1}, ... of at most that many each: Kafka's controller takes at most 10,000
     * records in one request). Each producer first sends one unmeasured record to each topic (its connection and
     * metadata), so the clock starts with every producer connected.
     */
    static Result singleMessages(Target broker, String topic, int partitions, int producers, double seconds, int size)
            throws Exception {
        List<String> topics = new ArrayList<>();
        if (partitions <= SINGLES_TOPIC_PARTITIONS) {
            topics.add(topic);
        } else {
            for (int i = 0; i * SINGLES_TOPIC_PARTITIONS < partitions; i++) {
                topics.add(topic + "-" + i);
            }
        }
        for (int i = 0; i < topics.size(); i++) {
            createTopic(broker, topics.get(i), Math.min(SINGLES_TOPIC_PARTITIONS,
                    partitions - i * SINGLES_TOPIC_PARTITIONS));
        }
        byte[] value = new byte[size];
        new SplittableRandom(size).nextBytes(value);
        Map<String, Object> config = producerConfig(broker, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        config.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, 1);
        List<KafkaProducer<byte[], byte[]>> clients = new ArrayList<>();
        try {
            for (int i = 0; i < producers; i++) {
                clients.add(new KafkaProducer<>(config, new ByteArraySerializer(), new ByteArraySerializer()));
            }
            List<Future<RecordMetadata>> first = new ArrayList<>();
            for (int i = 0; i < producers; i++) {
                for (int t = 0; t < topics.size(); t++) {
                    int topicPartitions = Math.min(SINGLES_TOPIC_PARTITIONS, partitions - t * SINGLES_TOPIC_PARTITIONS);
                    first.add(clients.get(i).send(new ProducerRecord<>(topics.get(t), i % topicPartitions, null,
                            value)));
                }
            }
            for (Future<RecordMetadata> f : first) {
                f.get(60, TimeUnit.SECONDS);
            }
            AtomicReference<Exception> failure = new AtomicReference<>();
            Histogram[] latencies = new Histogram[producers];
            long[] acknowledged = new long[producers];
            double clientBefore = Cpu.self();
            double brokerBefore = broker.cpuSeconds();
            long start = System.nanoTime();
            long until = start + (long) (seconds * 1e9);
            List<Thread> senders = new ArrayList<>();
            for (int i = 0; i < producers; i++) {
                int producer = i;
                latencies[i] = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
                senders.add(Thread.ofVirtual().start(() -> {
                    try {
                        for (long k = 0; System.nanoTime() < until && failure.get() == null; k++) {
                            int slot = (int) ((producer + k * producers) % partitions);
                            long sent = System.nanoTime();
                            clients.get(producer).send(new ProducerRecord<>(topics.get(slot
                                    / SINGLES_TOPIC_PARTITIONS), slot % SINGLES_TOPIC_PARTITIONS, null, value))
                                    .get(60, TimeUnit.SECONDS);
                            latencies[producer].recordValue(Math.max(1, (System.nanoTime() - sent) / 1_000));
                            acknowledged[producer]++;
                        }
                    } catch (Exception e) {
                        failure.compareAndSet(null, e);
                    }
                }));
            }
            for (Thread sender : senders) {
                sender.join();
            }
            long end = System.nanoTime();
            double brokerCpu = broker.cpuSeconds() - brokerBefore;
            double clientCpu = Cpu.self() - clientBefore;
            if (failure.get() != null) {
                throw failure.get();
            }
            Histogram latency = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
            long total = 0;
            for (int i = 0; i < producers; i++) {
                latency.add(latencies[i]);
                total += acknowledged[i];
            }
            return new Result(total, (end - start) / 1e9, latency.getValueAtPercentile(50) / 1e3,
                    latency.getValueAtPercentile(99) / 1e3, clientCpu, brokerCpu);
        } finally {
            for (KafkaProducer<byte[], byte[]> client : clients) {
                client.close(Duration.ofSeconds(30));
            }
        }
    }

    /**
     * A producer (acks=1) that sends {@code rate} records of {@code size} bytes a second from a thread of its own until
     * closed, each timed from when it was due to be sent (so a send that blocks delays the ones after it and counts in
     * their latency) to its acknowledgement. The latencies are kept with their due times, so a caller picks the
     * window it reports afterwards ({@link #latencies}).
     */
    static final class PacedProducer implements AutoCloseable {
        private final Thread thread;
        private final AtomicReference<Exception> failure = new AtomicReference<>();
        private final AtomicLong sent = new AtomicLong();
        private final AtomicLong acknowledged = new AtomicLong();
        private volatile boolean stopping;
        /** Pairs of (due time, latency) in nanoseconds, in acknowledgement order; guarded by itself. */
        private final List<long[]> timings = new ArrayList<>();

        PacedProducer(Target broker, String topic, int rate, int size) throws Exception {
            createTopic(broker, topic);
            byte[] value = new byte[size];
            new SplittableRandom(size).nextBytes(value);
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, "1"),
                    new ByteArraySerializer(), new ByteArraySerializer());
            thread = Thread.ofPlatform().name("paced-producer").start(() -> {
                try (producer) {
                    long start = System.nanoTime();
                    for (long i = 0; !stopping && failure.get() == null; i++) {
                        long due = start + i * 1_000_000_000L / rate;
                        // Sleep, never spin: on a machine of two cores a spinning client would take CPU from the
                        // broker it measures. A send late by the sleep's overshoot counts it in its latency.
                        for (long now = System.nanoTime(); now < due; now = System.nanoTime()) {
                            Thread.sleep(Duration.ofNanos(due - now));
                        }
                        producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                                return;
                            }
                            long latency = System.nanoTime() - due;
                            synchronized (timings) {
                                timings.add(new long[] {due, latency});
                            }
                            acknowledged.incrementAndGet();
                        });
                        sent.incrementAndGet();
                    }
                    producer.flush();
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            });
        }

        /**
         * @param fromNanos the first due time counted ({@link System#nanoTime})
         * @param toNanos the first due time not counted
         * @return the latencies of the records due in that window, in microseconds
         */
        Histogram latencies(long fromNanos, long toNanos) {
            Histogram histogram = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
            synchronized (timings) {
                for (long[] timing : timings) {
                    if (timing[0] >= fromNanos && timing[0] < toNanos) {
                        histogram.recordValue(Math.max(1, Math.min(timing[1] / 1_000,
                                histogram.getHighestTrackableValue())));
                    }
                }
            }
            return histogram;
        }

        /** @return records sent so far */
        long sent() {
            return sent.get();
        }

        /** @return records acknowledged so far */
        long acknowledged() {
            return acknowledged.get();
        }

        /** Stops sending, waits until every record sent was answered, and throws the first failure if any. */
        @Override
        public void close() throws IOException {
            stopping = true;
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while the paced producer stopped", e);
            }
            if (failure.get() != null) {
                throw new IOException("the paced producer failed: " + failure.get(), failure.get());
            }
        }
    }

    static KafkaConsumer<byte[], byte[]> consumer(String bootstrap) {
        return consumer(bootstrap, Map.of());
    }

    /** @return the race's consumer of {@code target}, through its listener */
    static KafkaConsumer<byte[], byte[]> consumer(Target target) {
        return consumer(target.bootstrap(), target.clientSettings());
    }

    private static KafkaConsumer<byte[], byte[]> consumer(String bootstrap, Map<String, Object> settings) {
        Map<String, Object> config = new HashMap<>(settings);
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        return new KafkaConsumer<>(config, new ByteArrayDeserializer(), new ByteArrayDeserializer());
    }

    /** Reads a topic's {@code records} from its start (from the page cache: they were just written). */
    static Result consume(Target broker, String topic, long records) throws Exception {
        return consume(broker, topic, records, 0);
    }

    /**
     * @return whether a run took all of its {@code records}: a produce exactly, a read a whole number of times over
     *     (a measured read may take the topic more than once)
     */
    static boolean complete(Result result, long records, boolean read) {
        return read ? result.records() > 0 && result.records() % records == 0 : result.records() == records;
    }

    /**
     * @return how a run's records are told in its check: "2000 of 2000 records received", or for a read that took
     *     the topic more than once "22000 records received (11 whole reads of 2000)"
     */
    static String tally(Result result, long records, boolean read) {
        String verb = read ? "received" : "acknowledged";
        return read && result.records() > records && result.records() % records == 0
                ? result.records() + " records " + verb + " (" + result.records() / records + " whole reads of "
                        + records + ")"
                : result.records() + " of " + records + " records " + verb;
    }

    /**
     * @return how long a measured read lasts at least (a read of a run's records takes under a second on a fast
     *     broker); with --quick, one read
     */
    static int measuredReadSeconds(boolean quick) {
        return quick ? 0 : 5;
    }

    /**
     * Reads a topic's {@code records} from its start, and again from its start while less than {@code minSeconds}
     * have passed (a pass at a time, each in full), so that a fast read is timed over more than a moment.
     */
    static Result consume(Target broker, String topic, long records, int minSeconds) throws Exception {
        double clientBefore = Cpu.self();
        double brokerBefore = broker.cpuSeconds();
        long received = 0;
        long start;
        long end;
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker)) {
            TopicPartition partition = new TopicPartition(topic, 0);
            consumer.assign(List.of(partition));
            consumer.seekToBeginning(List.of(partition));
            consumer.position(partition);
            start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(300);
            long least = start + TimeUnit.SECONDS.toNanos(minSeconds);
            long pass = 0;
            while (System.nanoTime() < deadline) {
                pass += consumer.poll(Duration.ofMillis(500)).count();
                if (pass >= records) {
                    received += pass;
                    pass = 0;
                    if (System.nanoTime() >= least) {
                        break;
                    }
                    consumer.seekToBeginning(List.of(partition));
                }
            }
            received += pass;
            end = System.nanoTime();
        }
        return new Result(received, (end - start) / 1e9, Double.NaN, Double.NaN, Cpu.self() - clientBefore,
                broker.cpuSeconds() - brokerBefore);
    }

    /**
     * End-to-end latency: a producer (acks=1) sends {@code rate} records of {@code size} bytes a second for
     * {@code seconds}, each carrying its send time, while a consumer reads them; latency is from send to receipt.
     */
    static Result endToEnd(Target broker, String topic, int rate, int seconds, int size) throws Exception {
        createTopic(broker, topic);
        Histogram latency = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        long total = (long) rate * seconds;
        AtomicLong received = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        Thread reader = Thread.ofPlatform().name("e2e-consumer").start(() -> {
            try (KafkaConsumer<byte[], byte[]> consumer = consumer(broker)) {
                TopicPartition partition = new TopicPartition(topic, 0);
                consumer.assign(List.of(partition));
                consumer.seek(partition, 0);
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds + 60L);
                while (received.get() < total && System.nanoTime() < deadline) {
                    for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(100))) {
                        long sent = ByteBuffer.wrap(record.value()).getLong();
                        latency.recordValue(Math.max(1, (System.nanoTime() - sent) / 1_000));
                        received.incrementAndGet();
                    }
                }
            } catch (Exception e) {
                failure.compareAndSet(null, e);
            }
        });
        Thread.sleep(1_000); // let the consumer connect and start polling
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(producerConfig(broker, "1"),
                new ByteArraySerializer(), new ByteArraySerializer())) {
            long start = System.nanoTime();
            for (long i = 0; i < total; i++) {
                long due = start + i * 1_000_000_000L / rate;
                while (System.nanoTime() < due) {
                    Thread.onSpinWait();
                    if (due - System.nanoTime() > 200_000) {
                        Thread.sleep(0, 100_000);
                    }
                }
                byte[] value = new byte[size];
                ByteBuffer.wrap(value).putLong(System.nanoTime());
                producer.send(new ProducerRecord<>(topic, 0, null, value));
            }
            producer.flush();
        }
        reader.join(TimeUnit.SECONDS.toMillis(seconds + 90L));
        if (failure.get() != null) {
            throw failure.get();
        }
        return new Result(received.get(), seconds, latency.getValueAtPercentile(50) / 1e3,
                latency.getValueAtPercentile(99) / 1e3, Double.NaN, Double.NaN);
    }
}
