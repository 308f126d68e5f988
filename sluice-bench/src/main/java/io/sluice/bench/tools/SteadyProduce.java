package io.sluice.bench.tools;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * A stock producer as the cluster race's (acks=all, linger 5 ms, 16 KiB batches, 1 KiB values, one partition,
 * replication factor 3) sending a given number of records, printing the acknowledged rate every 10 s and the whole
 * run's. Run by scripts/cluster-steady.sh with the bench lab's classpath.
 *
 * <p>Arguments: bootstrap servers, topic, records, and optionally the replication factor (3 unless given).
 */
public class SteadyProduce {
    public static void main(String[] args) throws Exception {
        String bootstrap = args[0];
        String topic = args[1];
        long records = Long.parseLong(args[2]);
        short replicas = args.length > 3 ? Short.parseShort(args[3]) : 3;
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic(topic, 1, replicas))).all().get(60, TimeUnit.SECONDS);
        }
        Map<String, Object> config = new HashMap<>();
        config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        config.put(ProducerConfig.ACKS_CONFIG, "all");
        config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, 16_384);
        byte[] value = new byte[1024];
        new Random(1).nextBytes(value);
        AtomicLong acked = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            long start = System.nanoTime();
            long last = start;
            long lastAcked = 0;
            for (long i = 0; i < records; i++) {
                producer.send(new ProducerRecord<>(topic, 0, null, value), (metadata, error) -> {
                    if (error == null) {
                        acked.incrementAndGet();
                    } else {
                        failure.compareAndSet(null, error);
                    }
                });
                long now = System.nanoTime();
                if (now - last > 10_000_000_000L) {
                    long ack = acked.get();
                    System.out.printf("%.0f s: %.0f records/s%n", (now - start) / 1e9, (ack - lastAcked) / ((now - last) / 1e9));
                    System.out.flush();
                    last = now;
                    lastAcked = ack;
                }
            }
            producer.flush();
            System.out.printf("total: %.0f records/s%n", records / ((System.nanoTime() - start) / 1e9));
        }
        if (failure.get() != null) {
            throw failure.get();
        }
    }
}
