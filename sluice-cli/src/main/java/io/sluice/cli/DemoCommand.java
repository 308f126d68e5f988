package io.sluice.cli;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.cluster.ClusterBroker;
import io.sluice.store.Store;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Stream;
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
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sluice demo}: a broker in process over a fresh store; produce and consume through the Kafka protocol with
 * the stock Java clients; check every record; reopen the store, verify its files and read one batch back.
 */
@Command(name = "demo", description = "End-to-end demo: start a Sluice broker in this process, produce records"
        + " through the Kafka protocol with the stock Java producer, consume them all back with the stock consumer,"
        + " check every record's partition, offset, key and bytes, verify the store's files, and print the rates.")
final class DemoCommand implements Callable<Integer> {

    private static final String TOPIC = "demo";
    private static final int PARTITIONS = 4;
    private static final long SEED = 2026;

    @Option(names = "--dir", defaultValue = "sluice-data/demo", description = "Store directory (recreated).")
    Path dir;

    @Option(names = "--count", defaultValue = "500000", description = "Records (default 500000).")
    int count;

    @Option(names = "--size", defaultValue = "1024", description = "Value bytes (default 1024).")
    int size;

    @Option(names = "--acks", defaultValue = "all", description = "The producer's acks: 0, 1 or all (default all;"
            + " the demo's store runs ASYNC, so a batch is answered once in the page cache).")
    String acks;

    @Spec
    CommandSpec spec;

    /** Record {@code i}'s value: seeded bytes, so the consumer can check them without keeping them. */
    private byte[] value(long i) {
        byte[] value = new byte[size];
        new SplittableRandom(SEED ^ (i * 0x9E3779B97F4A7C15L)).nextBytes(value);
        return value;
    }

    @Override
    public Integer call() throws Exception {
        PrintWriter out = spec.commandLine().getOut();
        recreate(dir);
        StoreConfig config = StoreConfig.builder().segmentSizeBytes(256L << 20).retention(Broker.kafkaRetention(
                RetentionPolicy.defaults().withRetentionHours(Broker.DEFAULT_RETENTION_HOURS))).build();
        long produced;
        long consumed = 0;
        long wrong = 0;
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            String bootstrap = "127.0.0.1:" + broker.port();
            out.printf("broker listening on %s over the store in %s%n", bootstrap, dir.toAbsolutePath());
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
                admin.createTopics(List.of(new NewTopic(TOPIC, PARTITIONS, (short) 1))).all().get(30, TimeUnit.SECONDS);
            }
            long started = System.nanoTime();
            produced = produce(bootstrap);
            double seconds = (System.nanoTime() - started) / 1e9;
            out.printf("produced %,d records of %,d bytes with acks=%s in %.2f s: %,.0f records/s, %.0f MB/s%n",
                    produced, size, acks, seconds, produced / seconds, produced * (double) size / seconds / 1e6);
            out.flush();
            started = System.nanoTime();
            long[] result = consume(bootstrap);
            consumed = result[0];
            wrong = result[1];
            seconds = (System.nanoTime() - started) / 1e9;
            out.printf("consumed %,d records in %.2f s: %,.0f records/s, %.0f MB/s (batches sent by sendfile)%n",
                    consumed, seconds, consumed / seconds, consumed * (double) size / seconds / 1e6);
        }
        StoreVerifier.Report report = StoreVerifier.verify(dir);
        long stored = 0;
        try (Store store = Store.open(dir, config)) {
            for (int p = 0; p < PARTITIONS; p++) {
                stored += store.maxOffset(TOPIC, p);
            }
        }
        boolean ok = produced == count && consumed == count && wrong == 0 && stored == count && report.ok();
        out.printf("checked: %s records consumed, %s with the wrong partition, offset, key or bytes; store reopened"
                        + " with %,d records; verify %s (%d segments, %,d records, %,d index entries)%n",
                consumed == count ? "all" : "MISSING " + (count - consumed), wrong == 0 ? "none" : String.valueOf(wrong),
                stored, report.ok() ? "clean" : report.faults(), report.segments(), report.records(),
                report.indexEntries());
        out.printf("data lives in %s (one log per partition under logs/%s/; read it with sluice consume --dir %s"
                + " --topic %s --queue 0)%n", dir.toAbsolutePath(), TOPIC, dir, TOPIC);
        out.println(ok ? "DEMO OK" : "DEMO FAILED");
        out.flush();
        return ok ? 0 : 1;
    }

    /** Sends record i to partition i mod 4 with key key-i; @return records acknowledged */
    private long produce(String bootstrap) throws Exception {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ProducerConfig.ACKS_CONFIG, acks);
        settings.put(ProducerConfig.LINGER_MS_CONFIG, 5);
        settings.put(ProducerConfig.BATCH_SIZE_CONFIG, 64 * 1024);
        AtomicLong acknowledged = new AtomicLong();
        AtomicReference<Exception> failure = new AtomicReference<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(settings, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (long i = 0; i < count; i++) {
                producer.send(new ProducerRecord<>(TOPIC, (int) (i % PARTITIONS),
                        ("key-" + i).getBytes(StandardCharsets.UTF_8), value(i)), (metadata, error) -> {
                            if (error != null) {
                                failure.compareAndSet(null, error);
                            } else {
                                acknowledged.incrementAndGet();
                            }
                        });
            }
            producer.flush();
        }
        if (failure.get() != null) {
            throw failure.get();
        }
        return acks.equals("0") ? count : acknowledged.get();
    }

    /** Reads every partition from its start; @return {records, records that are not what was sent} */
    private long[] consume(String bootstrap) {
        Map<String, Object> settings = new HashMap<>();
        settings.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        settings.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        settings.put(ConsumerConfig.MAX_POLL_RECORDS_CONFIG, 5_000);
        long received = 0;
        long wrong = 0;
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(settings, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            List<TopicPartition> partitions = new ArrayList<>();
            for (int p = 0; p < PARTITIONS; p++) {
                partitions.add(new TopicPartition(TOPIC, p));
            }
            consumer.assign(partitions);
            consumer.seekToBeginning(partitions);
            long idleSince = System.nanoTime();
            while (received < count && System.nanoTime() - idleSince < TimeUnit.SECONDS.toNanos(30)) {
                for (ConsumerRecord<byte[], byte[]> record : consumer.poll(Duration.ofMillis(500))) {
                    long i = record.offset() * PARTITIONS + record.partition();
                    if (!Arrays.equals(record.value(), value(i))
                            || !Arrays.equals(record.key(), ("key-" + i).getBytes(StandardCharsets.UTF_8))) {
                        wrong++;
                    }
                    received++;
                    idleSince = System.nanoTime();
                }
            }
        }
        return new long[] {received, wrong};
    }

    /** Deletes a previous store (only if it is one, or the directory is empty), so each run starts fresh. */
    static void recreate(Path dir) throws IOException {
        if (Files.exists(dir)) {
            boolean empty;
            try (Stream<Path> entries = Files.list(dir)) {
                empty = entries.findAny().isEmpty();
            }
            if (!empty && !Files.exists(dir.resolve("sluice.meta"))) {
                throw new IllegalArgumentException(dir + " exists and is not a Sluice store; choose another --dir");
            }
            Optional<String> node = ClusterBroker.nodeOwning(dir);
            if (node.isPresent()) {
                throw new IllegalArgumentException(dir + " is the store of cluster broker " + node.get()
                        + ", which a fresh run would delete; choose another --dir");
            }
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Files.createDirectories(dir);
    }
}
