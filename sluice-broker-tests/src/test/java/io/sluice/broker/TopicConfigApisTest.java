package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterConfigOp;
import org.apache.kafka.clients.admin.AlterConfigsOptions;
import org.apache.kafka.clients.admin.Config;
import org.apache.kafka.clients.admin.ConfigEntry;
import org.apache.kafka.clients.admin.CreateTopicsResult;
import org.apache.kafka.clients.admin.DescribeConfigsOptions;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.InvalidRecordException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.errors.InvalidTimestampException;
import org.apache.kafka.common.errors.NotEnoughReplicasException;
import org.apache.kafka.common.errors.RecordTooLargeException;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.errors.UnknownTopicOrPartitionException;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Topic configs through the stock Admin client and producers: taken and refused with Kafka 4.3.1's errors and messages
 * (each expected message below is what Kafka 4.3.1's broker answered the same request), described with their sources
 * and synonyms, changed incrementally or whole, kept across a restart, and enforced on produce.
 */
class TopicConfigApisTest {

    @TempDir
    Path dir;

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    private static KafkaProducer<byte[], byte[]> producer(Broker broker, String acks) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        props.put(ProducerConfig.ACKS_CONFIG, acks);
        props.put(ProducerConfig.RETRIES_CONFIG, 0);
        props.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, false);
        props.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 20_000);
        props.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000);
        props.put(ProducerConfig.MAX_REQUEST_SIZE_CONFIG, 8 << 20);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        return new KafkaProducer<>(props, new ByteArraySerializer(), new ByteArraySerializer());
    }

    private static void create(Admin admin, String topic, Map<String, String> configs) throws Exception {
        admin.createTopics(List.of(new NewTopic(topic, 1, (short) 1).configs(configs))).all()
                .get(20, TimeUnit.SECONDS);
    }

    private static Throwable createRefusal(Admin admin, String topic, Map<String, String> configs) {
        try {
            create(admin, topic, configs);
            throw new AssertionError("topic " + topic + " with " + configs + " was created");
        } catch (ExecutionException e) {
            return e.getCause();
        } catch (Exception e) {
            throw new AssertionError(e);
        }
    }

    private static Config describe(Admin admin, String topic) throws Exception {
        ConfigResource resource = new ConfigResource(ConfigResource.Type.TOPIC, topic);
        return admin.describeConfigs(List.of(resource), new DescribeConfigsOptions().includeSynonyms(true)).all()
                .get(20, TimeUnit.SECONDS).get(resource);
    }

    private static void alter(Admin admin, String topic, AlterConfigOp... ops) throws Exception {
        admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, topic), List.of(ops)))
                .all().get(20, TimeUnit.SECONDS);
    }

    private static AlterConfigOp op(String name, String value, AlterConfigOp.OpType type) {
        return new AlterConfigOp(new ConfigEntry(name, value), type);
    }

    @Test
    void configsAreCheckedAsKafkaChecksThem() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            assertThat(createRefusal(admin, "u", Map.of("foo.bar", "1")))
                    .isInstanceOf(InvalidConfigurationException.class)
                    .hasMessage("Unknown topic config name: foo.bar");
            assertThat(createRefusal(admin, "b", Map.of("retention.ms", "abc")))
                    .isInstanceOf(InvalidConfigurationException.class)
                    .hasMessage("Invalid value abc for configuration retention.ms: Not a number of type LONG");
            assertThat(createRefusal(admin, "e", Map.of("cleanup.policy", "bogus")))
                    .isInstanceOf(InvalidConfigurationException.class)
                    .hasMessage("Invalid value bogus for configuration cleanup.policy: String must be one of: compact,"
                            + " delete");
            assertThat(createRefusal(admin, "m", Map.of("segment.bytes", "10")))
                    .isInstanceOf(InvalidConfigurationException.class)
                    .hasMessage("Invalid value 10 for configuration segment.bytes: Value must be at least 1048576");
            assertThat(createRefusal(admin, "g", Map.of("compression.gzip.level", "0")))
                    .hasMessage("Invalid value 0 for configuration compression.gzip.level: Value must be between 1 and"
                            + " 9 or equal to -1");
            assertThat(createRefusal(admin, "l", Map.of("min.compaction.lag.ms", "100",
                    "max.compaction.lag.ms", "50"))).isInstanceOf(InvalidConfigurationException.class)
                    .hasMessage("conflict topic config setting min.compaction.lag.ms (100) > max.compaction.lag.ms"
                            + " (50)");
            assertThat(createRefusal(admin, "r", Map.of("remote.storage.enable", "true")))
                    .isInstanceOf(InvalidConfigurationException.class).hasMessageContaining("Tiered Storage");
            assertThat(createRefusal(admin, "d", Map.of("message.downconversion.enable", "true")))
                    .as("a config Kafka 4 no longer has").isInstanceOf(InvalidConfigurationException.class);
            for (String topic : List.of("u", "b", "e", "m", "g", "l", "r", "d")) {
                assertThat(store.queueCount(topic)).as("nothing created for %s", topic).isZero();
            }
            create(admin, "fine", Map.of("cleanup.policy", " compact , delete ", "retention.bytes", "-5",
                    "preallocate", "TRUE", "leader.replication.throttled.replicas", "0:1,1:2"));
            assertThat(createRefusal(admin, "fine", Map.of("foo", "1"))).as("an existing topic, whatever its configs")
                    .isInstanceOf(TopicExistsException.class);
        }
    }

    @Test
    void configsAreDescribedWithTheirSourcesAndKeptAcrossARestart() throws Exception {
        StoreConfig config = StoreConfig.builder().maxMessageBytes(2 << 20).build();
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            CreateTopicsResult created = admin.createTopics(List.of(new NewTopic("orders", 2, (short) 1)
                    .configs(Map.of("cleanup.policy", "compact", "retention.ms", "1000"))));
            created.all().get(20, TimeUnit.SECONDS);
            Config returned = created.config("orders").get(20, TimeUnit.SECONDS);
            assertThat(returned.get("retention.ms").value()).isEqualTo("1000");
            assertThat(returned.get("retention.ms").source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
            assertThat(returned.entries()).hasSize(33);
        }
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            Config orders = describe(admin, "orders");
            assertThat(orders.entries()).as("Kafka 4.3.1's 33 topic configs").hasSize(33);
            ConfigEntry cleanup = orders.get("cleanup.policy");
            assertThat(cleanup.value()).isEqualTo("compact");
            assertThat(cleanup.source()).isEqualTo(ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG);
            assertThat(cleanup.type()).isEqualTo(ConfigEntry.ConfigType.LIST);
            assertThat(cleanup.synonyms()).extracting(ConfigEntry.ConfigSynonym::name, ConfigEntry.ConfigSynonym::value,
                    ConfigEntry.ConfigSynonym::source).containsExactly(
                    org.assertj.core.groups.Tuple.tuple("cleanup.policy", "compact",
                            ConfigEntry.ConfigSource.DYNAMIC_TOPIC_CONFIG),
                    org.assertj.core.groups.Tuple.tuple("log.cleanup.policy", "delete",
                            ConfigEntry.ConfigSource.DEFAULT_CONFIG));
            ConfigEntry max = orders.get("max.message.bytes");
            assertThat(max.value()).isEqualTo(String.valueOf(2 << 20));
            assertThat(max.source()).as("the broker's own setting").isEqualTo(
                    ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
            assertThat(orders.get("min.insync.replicas").source()).isEqualTo(ConfigEntry.ConfigSource.DEFAULT_CONFIG);
            assertThat(orders.get("message.timestamp.type").value()).isEqualTo("CreateTime");
            assertThat(store.topicConfigs("orders")).isEqualTo(Map.of("cleanup.policy", "compact",
                    "retention.ms", "1000"));
        }
    }

    @Test
    void configsChangeIncrementallyOrWholeAndBadChangesChangeNothing() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            create(admin, "t", Map.of("cleanup.policy", "compact", "retention.ms", "1000"));
            alter(admin, "t", op("cleanup.policy", "delete", AlterConfigOp.OpType.APPEND),
                    op("retention.ms", null, AlterConfigOp.OpType.DELETE),
                    op("max.message.bytes", "2000000", AlterConfigOp.OpType.SET));
            assertThat(store.topicConfigs("t")).isEqualTo(Map.of("cleanup.policy", "compact,delete",
                    "max.message.bytes", "2000000"));
            assertThat(describe(admin, "t").get("retention.ms").source()).as("back to the broker's")
                    .isEqualTo(ConfigEntry.ConfigSource.STATIC_BROKER_CONFIG);
            alter(admin, "t", op("cleanup.policy", "compact", AlterConfigOp.OpType.SUBTRACT));
            assertThat(store.topicConfigs("t")).containsEntry("cleanup.policy", "delete");

            Map<String, String> before = store.topicConfigs("t");
            assertThatThrownBy(() -> alter(admin, "t", op("retention.ms", "x", AlterConfigOp.OpType.SET)))
                    .hasCauseInstanceOf(InvalidConfigurationException.class)
                    .cause().hasMessage("Invalid value x for configuration retention.ms: Not a number of type LONG");
            assertThatThrownBy(() -> alter(admin, "t", op("nope", "1", AlterConfigOp.OpType.SET)))
                    .cause().hasMessage("Unknown topic config name: nope");
            assertThatThrownBy(() -> alter(admin, "t", op("retention.ms", "5", AlterConfigOp.OpType.APPEND)))
                    .hasCauseInstanceOf(InvalidConfigurationException.class)
                    .cause().hasMessage("Can't APPEND to key retention.ms because its type is not LIST.");
            assertThatThrownBy(() -> alter(admin, "t", op("retention.ms", "5", AlterConfigOp.OpType.SET),
                    op("retention.ms", "6", AlterConfigOp.OpType.SET)))
                    .hasCauseInstanceOf(InvalidRequestException.class)
                    .cause().hasMessage("Error due to duplicate config keys");
            assertThatThrownBy(() -> alter(admin, "nosuch", op("retention.ms", "5", AlterConfigOp.OpType.SET)))
                    .hasCauseInstanceOf(UnknownTopicOrPartitionException.class)
                    .cause().hasMessage("The topic 'nosuch' does not exist.");
            admin.incrementalAlterConfigs(Map.of(new ConfigResource(ConfigResource.Type.TOPIC, "t"),
                    List.of(op("retention.ms", "5", AlterConfigOp.OpType.SET))), new AlterConfigsOptions()
                    .validateOnly(true)).all().get(20, TimeUnit.SECONDS);
            assertThat(store.topicConfigs("t")).as("refused and validate-only changes change nothing")
                    .isEqualTo(before);
            assertThatThrownBy(() -> admin.incrementalAlterConfigs(Map.of(new ConfigResource(
                    ConfigResource.Type.BROKER, "0"), List.of(op("log.retention.ms", "5", AlterConfigOp.OpType.SET))))
                    .all().get(20, TimeUnit.SECONDS)).hasCauseInstanceOf(InvalidRequestException.class)
                    .cause().hasMessageContaining("cannot be changed while it runs");
        }
    }

    @Test
    void producesAreHeldToTheTopicsConfigs() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker);
             KafkaProducer<byte[], byte[]> one = producer(broker, "1");
             KafkaProducer<byte[], byte[]> all = producer(broker, "all")) {
            create(admin, "small", Map.of("max.message.bytes", "10000"));
            assertThatThrownBy(() -> one.send(new ProducerRecord<>("small", new byte[20_000])).get())
                    .hasCauseInstanceOf(RecordTooLargeException.class);
            one.send(new ProducerRecord<>("small", new byte[5_000])).get();

            create(admin, "isr", Map.of("min.insync.replicas", "2"));
            one.send(new ProducerRecord<>("isr", new byte[10])).get();
            assertThatThrownBy(() -> all.send(new ProducerRecord<>("isr", new byte[10])).get())
                    .hasCauseInstanceOf(NotEnoughReplicasException.class);

            create(admin, "keyed", Map.of("cleanup.policy", "compact"));
            assertThatThrownBy(() -> one.send(new ProducerRecord<>("keyed", new byte[10])).get())
                    .hasCauseInstanceOf(InvalidRecordException.class);
            one.send(new ProducerRecord<>("keyed", "k".getBytes(StandardCharsets.UTF_8), new byte[10])).get();

            create(admin, "timely", Map.of("message.timestamp.after.max.ms", "60000",
                    "message.timestamp.before.max.ms", "60000"));
            long now = System.currentTimeMillis();
            for (long off : new long[] {3_600_000, -3_600_000}) {
                assertThatThrownBy(() -> one.send(new ProducerRecord<>("timely", 0, now + off, null, new byte[1]))
                        .get()).hasCauseInstanceOf(InvalidTimestampException.class);
            }
            one.send(new ProducerRecord<>("timely", 0, now, null, new byte[1])).get();
            one.send(new ProducerRecord<>("small", 0, now + 3_000_000, null, new byte[1])).get();
            assertThatThrownBy(() -> one.send(new ProducerRecord<>("small", 0, now + 7_200_000, null, new byte[1]))
                    .get()).as("Kafka's default: an hour ahead at most")
                    .hasCauseInstanceOf(InvalidTimestampException.class);

            create(admin, "stamped", Map.of("message.timestamp.type", "LogAppendTime"));
            RecordMetadata stamped = one.send(new ProducerRecord<>("stamped", 0, 5L, null,
                    "v".getBytes(StandardCharsets.UTF_8))).get();
            assertThat(stamped.timestamp()).as("the broker's time, answered").isGreaterThanOrEqualTo(now);
            try (KafkaConsumer<byte[], byte[]> consumer = new KafkaConsumer<>(Map.of(
                    ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                    ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest"), new ByteArrayDeserializer(),
                    new ByteArrayDeserializer())) {
                consumer.assign(List.of(new TopicPartition("stamped", 0)));
                List<ConsumerRecord<byte[], byte[]>> read = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
                while (read.isEmpty() && System.nanoTime() < deadline) {
                    consumer.poll(Duration.ofMillis(200)).forEach(read::add);
                }
                assertThat(read).hasSize(1);
                assertThat(read.getFirst().timestampType()).isEqualTo(TimestampType.LOG_APPEND_TIME);
                assertThat(read.getFirst().timestamp()).isEqualTo(stamped.timestamp());
            }
        }
    }

    /** flush.messages=1 forces each append before it is answered, whatever the broker's flush mode. */
    @Test
    void aTopicsFlushMessagesForcesItsAppendsUnderAnAsyncFlushMode() throws Exception {
        StoreConfig config = StoreConfig.builder().writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC)
                .commitIntervalMillis(3_600_000).flushIntervalMillis(3_600_000).commitMinBytes(Long.MAX_VALUE)
                .flushDirtyBytes(Long.MAX_VALUE).checkpointIntervalMillis(3_600_000).build();
        try (Store store = Store.open(dir, config);
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker);
             KafkaProducer<byte[], byte[]> one = producer(broker, "1")) {
            create(admin, "lazy", Map.of());
            create(admin, "eager", Map.of("flush.messages", "1"));
            one.send(new ProducerRecord<>("lazy", new byte[100])).get();
            one.send(new ProducerRecord<>("eager", new byte[100])).get();
            var lazy = store.ownLogStatuses().get("lazy/0");
            assertThat(lazy.flushedPosition()).as("left to the flush mode").isLessThan(lazy.writePosition());
            var eager = store.ownLogStatuses().get("eager/0");
            assertThat(eager.flushedPosition()).as("forced before the answer").isEqualTo(eager.writePosition());
        }
    }
}
