package io.sluice.bench.broker;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * The transaction race's client: stock transactional Kafka producers, each with a transactional id of its own and a
 * partition of its own, sending a transaction's records as fast as the producer takes them and committing it, over
 * and over; and a read_committed consumer. The same settings against either broker.
 */
final class TransactionLoad {

    private TransactionLoad() {
    }

    /**
     * Runs {@code producers} transactional producers over a topic of as many partitions, {@code records} records of
     * {@code size} bytes in all, {@code perTransaction} to a transaction (acks=all, as a transactional producer
     * must). Latency is a transaction's, from its begin to its commit's return.
     */
    static Load.Result produce(Load.Target broker, String topic, int producers, long records, int perTransaction,
                               int size) throws Exception {
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap()))) {
            admin.createTopics(List.of(new NewTopic(topic, producers, broker.replicationFactor()))).all()
                    .get(60, TimeUnit.SECONDS);
        }
        byte[] value = new byte[size];
        new SplittableRandom(size).nextBytes(value);
        long transactionsEach = Math.max(1, records / producers / perTransaction);
        Histogram latency = new Histogram(TimeUnit.SECONDS.toMicros(60), 3);
        AtomicLong committed = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        List<KafkaProducer<byte[], byte[]>> clients = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
            config.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, topic + "-" + p);
            config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            config.put(ProducerConfig.BATCH_SIZE_CONFIG, 16_384);
            config.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, "none");
            KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer());
            producer.initTransactions();
            clients.add(producer);
        }
        double clientBefore = Cpu.self();
        double brokerBefore = broker.cpuSeconds();
        long start = System.nanoTime();
        List<Thread> threads = new ArrayList<>();
        for (int p = 0; p < producers; p++) {
            KafkaProducer<byte[], byte[]> producer = clients.get(p);
            int partition = p;
            threads.add(Thread.ofPlatform().name("transactions-" + p).start(() -> {
                try {
                    for (long t = 0; t < transactionsEach; t++) {
                        long began = System.nanoTime();
                        producer.beginTransaction();
                        for (int i = 0; i < perTransaction; i++) {
                            producer.send(new ProducerRecord<>(topic, partition, null, value));
                        }
                        producer.commitTransaction();
                        synchronized (latency) {
                            latency.recordValue(Math.max(1, (System.nanoTime() - began) / 1_000));
                        }
                        committed.addAndGet(perTransaction);
                    }
                } catch (Exception e) {
                    failure.compareAndSet(null, e);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long end = System.nanoTime();
        double brokerCpu = broker.cpuSeconds() - brokerBefore;
        double clientCpu = Cpu.self() - clientBefore;
        clients.forEach(KafkaProducer::close);
        if (failure.get() != null) {
            throw failure.get();
        }
        return new Load.Result(committed.get(), (end - start) / 1e9, latency.getValueAtPercentile(50) / 1e3,
                latency.getValueAtPercentile(99) / 1e3, clientCpu, brokerCpu);
    }

    /** Reads a topic's {@code records} from its start with a read_committed consumer (from the page cache). */
    static Load.Result consumeCommitted(Load.Target broker, String topic, int partitions, long records)
            throws Exception {
        Map<String, Object> config = new HashMap<>();
        config.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, broker.bootstrap());
        config.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        config.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, "read_committed");
        double clientBefore = Cpu.self();
        double brokerBefore = broker.cpuSeconds();
        long received = 0;
        long start;
        long end;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> parts = new ArrayList<>();
            for (int p = 0; p < partitions; p++) {
                parts.add(new TopicPartition(topic, p));
            }
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            parts.forEach(consumer::position);
            start = System.nanoTime();
            long deadline = start + TimeUnit.SECONDS.toNanos(300);
            while (received < records && System.nanoTime() < deadline) {
                received += consumer.poll(Duration.ofMillis(500)).count();
            }
            end = System.nanoTime();
        }
        return new Load.Result(received, (end - start) / 1e9, Double.NaN, Double.NaN, Cpu.self() - clientBefore,
                broker.cpuSeconds() - brokerBefore);
    }
}
