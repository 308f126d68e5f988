package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Client quotas through Kafka's Java client: AlterClientQuotas and DescribeClientQuotas (kafka-client-quotas) keep a
 * client id's byte rates, which then throttle its producer and consumer as Kafka's broker does (throttle_time_ms
 * answered, the connection held), while another client id goes unthrottled; the quotas outlive a restart.
 */
class ClientQuotasTest {

    @TempDir
    Path dir;

    /** Kafka measures a rate over its 11 one-second windows, at least 10 s of them: 1.25 MiB pass at once. */
    private static final int RATE = 128 * 1024;
    private static final int RECORD = 16 * 1024;
    private static final int RECORDS = 128; // 2 MiB

    private static Map<String, Object> common(Broker broker, String clientId) {
        Map<String, Object> config = new HashMap<>();
        config.put(CommonClientConfigs.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        config.put(CommonClientConfigs.CLIENT_ID_CONFIG, clientId);
        return config;
    }

    private static double metric(Map<MetricName, ? extends Metric> metrics, String name) {
        return metrics.entrySet().stream().filter(e -> e.getKey().name().equals(name)
                && !e.getKey().tags().containsKey("node-id")).mapToDouble(e -> ((Number) e.getValue().metricValue())
                .doubleValue()).max().orElse(Double.NaN);
    }

    /** @return the producer's largest throttle time seen, in ms */
    private static double produce(Broker broker, String clientId) throws Exception {
        Map<String, Object> config = common(broker, clientId);
        config.put(ProducerConfig.BATCH_SIZE_CONFIG, RECORD * 4);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                new ByteArraySerializer())) {
            for (int i = 0; i < RECORDS; i++) {
                producer.send(new ProducerRecord<>("quoted", new byte[RECORD])).get(60, TimeUnit.SECONDS);
            }
            return metric(producer.metrics(), "produce-throttle-time-max");
        }
    }

    /** @return the consumer's largest throttle time seen, in ms */
    private static double consume(Broker broker, String clientId) {
        Map<String, Object> config = common(broker, clientId);
        config.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        config.put(ConsumerConfig.MAX_PARTITION_FETCH_BYTES_CONFIG, RECORD * 8);
        try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(config, new ByteArrayDeserializer(),
                new ByteArrayDeserializer())) {
            consumer.assign(List.of(new TopicPartition("quoted", 0)));
            int read = 0;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
            // Until everything is read, or the broker throttled the consumer.
            while (read < RECORDS * 2 && System.nanoTime() < deadline
                    && !(metric(consumer.metrics(), "fetch-throttle-time-max") > 0)) {
                read += consumer.poll(Duration.ofMillis(200)).count();
            }
            double throttle = metric(consumer.metrics(), "fetch-throttle-time-max");
            assertThat(read == RECORDS * 2 || throttle > 0).as("read all, or throttled").isTrue();
            return throttle;
        }
    }

    @Test
    void aClientIdsByteRatesThrottleItsProducerAndConsumerAndOutliveARestart() throws Exception {
        Store store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(common(broker, "admin"))) {
            admin.createTopics(List.of(new NewTopic("quoted", 1, (short) 1))).all().get(20, TimeUnit.SECONDS);
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(
                    ClientQuotaEntity.CLIENT_ID, "slow")), List.of(
                    new ClientQuotaAlteration.Op("producer_byte_rate", (double) RATE),
                    new ClientQuotaAlteration.Op("consumer_byte_rate", (double) RATE)))))
                    .all().get(20, TimeUnit.SECONDS);
            assertThat(admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(20, TimeUnit.SECONDS))
                    .containsEntry(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "slow")), Map.of(
                            "producer_byte_rate", (double) RATE, "consumer_byte_rate", (double) RATE));
            long start = System.nanoTime();
            assertThat(produce(broker, "fast")).as("no quota, no throttle").isZero();
            long fast = System.nanoTime() - start;
            start = System.nanoTime();
            assertThat(produce(broker, "slow")).as("a throttle answered").isPositive();
            long slow = System.nanoTime() - start;
            assertThat(TimeUnit.NANOSECONDS.toMillis(slow)).as("0.75 MiB past the free 1.25 MiB at 128 KiB/s")
                    .isGreaterThan(3_000).isGreaterThan(TimeUnit.NANOSECONDS.toMillis(fast));
            assertThat(consume(broker, "fast-reader")).isZero();
            assertThat(consume(broker, "slow")).isPositive();
        }
        store.close();
        store = Store.open(dir, StoreConfig.builder().build());
        try (Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(common(broker, "admin"))) {
            assertThat(admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(20, TimeUnit.SECONDS))
                    .containsKey(new ClientQuotaEntity(Map.of(ClientQuotaEntity.CLIENT_ID, "slow")));
            assertThat(produce(broker, "slow")).as("still throttled after the restart").isPositive();
        } finally {
            store.close();
        }
    }

    @Test
    void anAddressOverItsConnectionRateQuotaIsRefusedOthersServed() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(common(broker, "admin"))) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(
                    ClientQuotaEntity.IP, "127.0.0.3")), List.of(new ClientQuotaAlteration.Op(
                    "connection_creation_rate", 1.0))))).all().get(20, TimeUnit.SECONDS);
            // The quota is taken at the next request; an admin request makes sure it was.
            admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(20, TimeUnit.SECONDS);
            List<java.net.Socket> sockets = new java.util.ArrayList<>();
            try {
                // Kafka measures the rate over at least 10 s: 30 at once are 3 a second.
                for (int i = 0; i < 30; i++) {
                    sockets.add(new java.net.Socket(java.net.InetAddress.getLoopbackAddress(), broker.port(),
                            java.net.InetAddress.getByName("127.0.0.3"), 0));
                }
                Thread.sleep(3_000);
                int closed = 0;
                for (java.net.Socket socket : sockets) {
                    socket.setSoTimeout(200);
                    try {
                        if (socket.getInputStream().read() < 0) {
                            closed++;
                        }
                    } catch (java.net.SocketTimeoutException open) {
                        // served: the broker waits for its request
                    }
                }
                assertThat(closed).as("connections of 127.0.0.3 past its quota of 1 a second")
                        .isGreaterThanOrEqualTo(10);
                // Another address is served as before.
                assertThat(produce(broker, "other-address")).isZero();
            } finally {
                for (java.net.Socket socket : sockets) {
                    socket.close();
                }
            }
        }
    }

    /**
     * {@code controller_mutation_rate}: a client id at 5 partitions a second (a bucket of 55) may create a topic of 100
     * partitions, which overdraws it; its next creation and deletion are refused THROTTLING_QUOTA_EXCEEDED with the
     * wait until the bucket is back at zero, and nothing changes, while another client id creates freely; the Admin
     * client's own retry (its default) waits, and the creation then goes through.
     */
    @Test
    void aClientIdsMutationRateRefusesTopicsPastItsQuota() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = Admin.create(common(broker, "admin"));
             Admin limited = Admin.create(common(broker, "limited"));
             Admin sameId = Admin.create(common(broker, "limited"))) {
            admin.alterClientQuotas(List.of(new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(
                    ClientQuotaEntity.CLIENT_ID, "limited")), List.of(new ClientQuotaAlteration.Op(
                    "controller_mutation_rate", 5.0))))).all().get(20, TimeUnit.SECONDS);
            sameId.describeCluster().clusterId().get(20, TimeUnit.SECONDS); // connected before the refusal
            var noRetry = new org.apache.kafka.clients.admin.CreateTopicsOptions().retryOnQuotaViolation(false);
            limited.createTopics(List.of(new NewTopic("wide", 100, (short) 1)), noRetry).all()
                    .get(20, TimeUnit.SECONDS);
            long refusedAt = System.nanoTime();
            var refused = limited.createTopics(List.of(new NewTopic("more", 1, (short) 1)), noRetry).all();
            assertThatThrownBy(() -> refused.get(20, TimeUnit.SECONDS)).cause()
                    .isInstanceOf(ThrottlingQuotaExceededException.class)
                    .satisfies(e -> assertThat(((ThrottlingQuotaExceededException) e).throttleTimeMs())
                            .as("45 tokens below zero at 5 a second").isBetween(7_000, 9_000));
            // The connection that was refused reads nothing until the wait is over (KIP-219); another of the same
            // client id is read, and refused too.
            assertThatThrownBy(() -> sameId.deleteTopics(List.of("wide"),
                    new org.apache.kafka.clients.admin.DeleteTopicsOptions().retryOnQuotaViolation(false)).all()
                    .get(20, TimeUnit.SECONDS)).cause().isInstanceOf(ThrottlingQuotaExceededException.class);
            assertThat(admin.listTopics().names().get(20, TimeUnit.SECONDS)).contains("wide")
                    .doesNotContain("more");
            admin.createTopics(List.of(new NewTopic("free", 40, (short) 1))).all().get(20, TimeUnit.SECONDS);
            // With its retry, the Admin client waits out the throttle and the creation goes through.
            limited.createTopics(List.of(new NewTopic("more", 1, (short) 1))).all().get(60, TimeUnit.SECONDS);
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - refusedAt)).isGreaterThan(6_000);
            assertThat(store.queueCount("more")).isEqualTo(1);
        }
    }
}
