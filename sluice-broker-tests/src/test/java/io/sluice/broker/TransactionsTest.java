package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.AbortTransactionSpec;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.ProducerState;
import org.apache.kafka.clients.admin.TransactionDescription;
import org.apache.kafka.clients.admin.TransactionListing;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.IsolationLevel;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.InvalidProducerEpochException;
import org.apache.kafka.common.errors.ProducerFencedException;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Transactions through Kafka's own Java clients against a broker alone: a read_committed consumer sees committed
 * records once and aborted ones never, a read_uncommitted one sees both; a second producer with the same transactional
 * id fences the first; a transaction left open is aborted at its timeout; offsets sent with a transaction commit with
 * it; everything holds across a restart; the admin client lists and describes transactions and producers.
 */
class TransactionsTest {

    @TempDir
    Path dir;

    private static Admin admin(Broker broker) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port(),
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 10_000, AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 20_000));
    }

    private static KafkaProducer<String, String> producer(Broker broker, String transactionalId, int timeoutMs) {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, timeoutMs);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 20_000);
        props.put(ProducerConfig.LINGER_MS_CONFIG, 0);
        return new KafkaProducer<>(props, new StringSerializer(), new StringSerializer());
    }

    private static KafkaConsumer<String, String> consumer(Broker broker, IsolationLevel isolation, String group) {
        Properties props = new Properties();
        props.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + broker.port());
        props.put(ConsumerConfig.ISOLATION_LEVEL_CONFIG, isolation.toString());
        props.put(ConsumerConfig.AUTO_OFFSET_RESET_CONFIG, "earliest");
        props.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, false);
        if (group != null) {
            props.put(ConsumerConfig.GROUP_ID_CONFIG, group);
        }
        return new KafkaConsumer<>(props, new StringDeserializer(), new StringDeserializer());
    }

    /** @return the values of every record up to the partitions' end as the consumer sees it */
    private static List<String> readAll(Broker broker, IsolationLevel isolation, Collection<TopicPartition> parts) {
        try (KafkaConsumer<String, String> consumer = consumer(broker, isolation, null)) {
            consumer.assign(parts);
            consumer.seekToBeginning(parts);
            Map<TopicPartition, Long> ends = consumer.endOffsets(parts);
            List<String> values = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (parts.stream().anyMatch(tp -> consumer.position(tp) < ends.get(tp))) {
                assertThat(System.nanoTime()).as("read to the end in time").isLessThan(deadline);
                for (ConsumerRecord<String, String> record : consumer.poll(Duration.ofMillis(200))) {
                    values.add(record.value());
                }
            }
            return values;
        }
    }

    private static void createTopic(Broker broker, String topic, int partitions) throws Exception {
        try (Admin admin = admin(broker)) {
            admin.createTopics(List.of(new NewTopic(topic, partitions, (short) 1))).all().get(20, TimeUnit.SECONDS);
        }
    }

    @Test
    void committedRecordsAreReadOnceAndAbortedOnesNeverByAReadCommittedConsumer() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "t", 2);
            List<TopicPartition> parts = List.of(new TopicPartition("t", 0), new TopicPartition("t", 1));
            try (KafkaProducer<String, String> producer = producer(broker, "tx-1", 60_000)) {
                producer.initTransactions();
                for (int round = 0; round < 4; round++) {
                    producer.beginTransaction();
                    for (int i = 0; i < 10; i++) {
                        producer.send(new ProducerRecord<>("t", i % 2, null, "r" + round + "-" + i));
                    }
                    if (round % 2 == 0) {
                        producer.commitTransaction();
                    } else {
                        producer.flush(); // else the client drops what it has not sent yet
                        producer.abortTransaction();
                    }
                }
            }
            List<String> committed = readAll(broker, IsolationLevel.READ_COMMITTED, parts);
            assertThat(committed).hasSize(20).allMatch(v -> v.startsWith("r0-") || v.startsWith("r2-"))
                    .doesNotHaveDuplicates();
            assertThat(readAll(broker, IsolationLevel.READ_UNCOMMITTED, parts)).hasSize(40);
        }
        // Across a restart: the aborted ranges are read back from the log.
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            List<TopicPartition> parts = List.of(new TopicPartition("t", 0), new TopicPartition("t", 1));
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, parts)).hasSize(20)
                    .allMatch(v -> v.startsWith("r0-") || v.startsWith("r2-"));
            try (KafkaProducer<String, String> producer = producer(broker, "tx-1", 60_000)) {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("t", 0, null, "after-restart"));
                producer.commitTransaction();
            }
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, parts)).hasSize(21).contains("after-restart");
        }
    }

    @Test
    void anOpenTransactionHoldsReadCommittedConsumersBackAndASecondProducerFencesTheFirst() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            createTopic(broker, "f", 1);
            TopicPartition tp = new TopicPartition("f", 0);
            KafkaProducer<String, String> first = producer(broker, "tx-f", 60_000);
            try {
                first.initTransactions();
                first.beginTransaction();
                first.send(new ProducerRecord<>("f", 0, null, "open")).get(10, TimeUnit.SECONDS);
                try (KafkaConsumer<String, String> consumer = consumer(broker, IsolationLevel.READ_COMMITTED, null)) {
                    assertThat(consumer.endOffsets(List.of(tp)).get(tp)).as("the last stable offset").isZero();
                }
                try (KafkaConsumer<String, String> consumer = consumer(broker, IsolationLevel.READ_UNCOMMITTED, null)) {
                    assertThat(consumer.endOffsets(List.of(tp)).get(tp)).isEqualTo(1);
                }
                Collection<TransactionListing> listed = admin.listTransactions().all().get(10, TimeUnit.SECONDS);
                assertThat(listed).anySatisfy(t -> {
                    assertThat(t.transactionalId()).isEqualTo("tx-f");
                    assertThat(t.state().toString()).isEqualTo("Ongoing");
                });
                TransactionDescription described = admin.describeTransactions(List.of("tx-f")).description("tx-f")
                        .get(10, TimeUnit.SECONDS);
                assertThat(described.state().toString()).isEqualTo("Ongoing");
                assertThat(described.topicPartitions()).containsExactly(tp);
                List<ProducerState> producers = admin.describeProducers(List.of(tp)).partitionResult(tp)
                        .get(10, TimeUnit.SECONDS).activeProducers();
                assertThat(producers).singleElement().satisfies(p -> {
                    assertThat(p.producerId()).isEqualTo(described.producerId());
                    assertThat(p.currentTransactionStartOffset()).hasValue(0);
                });

                // The same transactional id again: the first producer's transaction is aborted, and it is fenced.
                try (KafkaProducer<String, String> second = producer(broker, "tx-f", 60_000)) {
                    second.initTransactions();
                    second.beginTransaction();
                    second.send(new ProducerRecord<>("f", 0, null, "second"));
                    second.commitTransaction();
                }
                // As from Kafka 4.3.1: the partition refuses the old epoch, and the coordinator fences the producer.
                assertThatThrownBy(() -> first.send(new ProducerRecord<>("f", 0, null, "zombie"))
                        .get(10, TimeUnit.SECONDS)).hasCauseInstanceOf(InvalidProducerEpochException.class);
                assertThatThrownBy(first::abortTransaction).isInstanceOf(ProducerFencedException.class);
            } finally {
                first.close(Duration.ofSeconds(5));
            }
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, List.of(tp))).containsExactly("second");
        }
    }

    @Test
    void aMarkerOfAnOlderEpochIsRefusedAndLeavesTheProducersOpenTransactionAlone() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             Admin admin = admin(broker)) {
            createTopic(broker, "m", 1);
            TopicPartition tp = new TopicPartition("m", 0);
            try (KafkaProducer<String, String> earlier = producer(broker, "tx-m", 60_000)) {
                earlier.initTransactions(); // epoch 0
            }
            try (KafkaProducer<String, String> producer = producer(broker, "tx-m", 60_000)) {
                producer.initTransactions(); // epoch 1
                producer.beginTransaction();
                for (int i = 0; i < 3; i++) {
                    producer.send(new ProducerRecord<>("m", 0, null, "v" + i)).get(10, TimeUnit.SECONDS);
                }
                ProducerState open = admin.describeProducers(List.of(tp)).partitionResult(tp)
                        .get(10, TimeUnit.SECONDS).activeProducers().getFirst();
                assertThat(open.producerEpoch()).isEqualTo(1);
                // kafka-transactions abort with an epoch the producer has left behind (WriteTxnMarkers): refused, as
                // Kafka 4.3.1 refuses it, so that it cannot end the producer's transaction of epoch 1.
                AbortTransactionSpec stale = new AbortTransactionSpec(tp, open.producerId(), (short) 0, 0);
                assertThatThrownBy(() -> admin.abortTransaction(stale).all().get(10, TimeUnit.SECONDS))
                        .isInstanceOf(ExecutionException.class).hasCauseInstanceOf(InvalidProducerEpochException.class);
                assertThat(admin.describeProducers(List.of(tp)).partitionResult(tp).get(10, TimeUnit.SECONDS)
                        .activeProducers().getFirst().currentTransactionStartOffset()).hasValue(0);
                producer.send(new ProducerRecord<>("m", 0, null, "v3")).get(10, TimeUnit.SECONDS);
                producer.commitTransaction();
            }
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, List.of(tp)))
                    .containsExactly("v0", "v1", "v2", "v3");
        }
    }

    @Test
    void aTransactionLeftOpenIsAbortedAtItsTimeout() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "o", 1);
            TopicPartition tp = new TopicPartition("o", 0);
            KafkaProducer<String, String> producer = producer(broker, "tx-o", 1_000);
            try {
                producer.initTransactions();
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("o", 0, null, "left")).get(10, TimeUnit.SECONDS);
                try (KafkaConsumer<String, String> consumer = consumer(broker, IsolationLevel.READ_COMMITTED, null)) {
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                    while (consumer.endOffsets(List.of(tp)).get(tp) == 0) {
                        assertThat(System.nanoTime()).as("aborted at its timeout").isLessThan(deadline);
                        Thread.sleep(200);
                    }
                    // The abort marker follows the record: the stable end is past both.
                    assertThat(consumer.endOffsets(List.of(tp)).get(tp)).isEqualTo(2);
                }
            } finally {
                producer.close(Duration.ofSeconds(5));
            }
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, List.of(tp))).isEmpty();
        }
    }

    @Test
    void offsetsSentWithATransactionCommitWithItAndNotWithAnAbort() throws Exception {
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0))) {
            createTopic(broker, "in", 1);
            createTopic(broker, "out", 1);
            TopicPartition in = new TopicPartition("in", 0);
            try (KafkaProducer<String, String> plain = producer(broker, "tx-seed", 60_000)) {
                plain.initTransactions();
                plain.beginTransaction();
                for (int i = 0; i < 10; i++) {
                    plain.send(new ProducerRecord<>("in", 0, null, "v" + i));
                }
                plain.commitTransaction();
            }
            try (KafkaConsumer<String, String> consumer = consumer(broker, IsolationLevel.READ_COMMITTED, "g");
                 KafkaProducer<String, String> producer = producer(broker, "tx-etl", 60_000)) {
                consumer.subscribe(List.of("in"));
                producer.initTransactions();
                List<ConsumerRecord<String, String>> records = new ArrayList<>();
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
                while (records.size() < 10) {
                    assertThat(System.nanoTime()).as("consumed in time").isLessThan(deadline);
                    consumer.poll(Duration.ofMillis(200)).forEach(records::add);
                }
                ConsumerGroupMetadata group = consumer.groupMetadata();
                // First an aborted transaction up to offset 5: its offset must not count.
                producer.beginTransaction();
                producer.send(new ProducerRecord<>("out", 0, null, "aborted"));
                producer.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(5)), group);
                producer.abortTransaction();
                assertThat(consumer.committed(java.util.Set.of(in)).get(in)).isNull();
                producer.beginTransaction();
                for (ConsumerRecord<String, String> record : records) {
                    producer.send(new ProducerRecord<>("out", 0, null, record.value().toUpperCase()));
                }
                producer.sendOffsetsToTransaction(Map.of(in, new OffsetAndMetadata(10)), group);
                producer.commitTransaction();
                assertThat(consumer.committed(java.util.Set.of(in)).get(in).offset()).isEqualTo(10);
            }
            assertThat(readAll(broker, IsolationLevel.READ_COMMITTED, List.of(new TopicPartition("out", 0))))
                    .containsExactly("V0", "V1", "V2", "V3", "V4", "V5", "V6", "V7", "V8", "V9");
        }
        try (Store store = Store.open(dir, StoreConfig.builder().build());
             Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(0));
             KafkaConsumer<String, String> consumer = consumer(broker, IsolationLevel.READ_COMMITTED, "g")) {
            TopicPartition in = new TopicPartition("in", 0);
            assertThat(consumer.committed(java.util.Set.of(in)).get(in).offset()).as("kept across a restart")
                    .isEqualTo(10);
        }
    }
}
