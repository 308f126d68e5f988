import java.time.Duration;
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

/**
 * Leaves a transaction open, for scripts/kafka-tools-smoke.sh: a transactional producer writes records to a partition
 * and exits without committing or aborting, so that kafka-transactions has an Ongoing transaction to list, describe and
 * abort. Kafka's console producer cannot do this (it is not transactional). Run with Java's source launcher on Kafka's
 * tools classpath:
 *
 * <pre>java -cp "$tools_cp" OpenTransaction.java BOOTSTRAP TRANSACTIONAL_ID TOPIC PARTITION RECORDS</pre>
 *
 * <p>Prints the producer's offsets, one line each: {@code sent TOPIC-PARTITION@OFFSET}.
 */
public final class OpenTransaction {

    /** Long enough that the broker does not abort the transaction at its timeout while the script runs. */
    private static final int TRANSACTION_TIMEOUT_MS = 600_000;

    private OpenTransaction() {
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 5) {
            System.err.println("usage: OpenTransaction BOOTSTRAP TRANSACTIONAL_ID TOPIC PARTITION RECORDS");
            System.exit(2);
        }
        String topic = args[2];
        int partition = Integer.parseInt(args[3]);
        int records = Integer.parseInt(args[4]);
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[1]);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, TRANSACTION_TIMEOUT_MS);
        props.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, 30_000);
        KafkaProducer<String, String> producer = new KafkaProducer<>(props, new StringSerializer(),
                new StringSerializer());
        producer.initTransactions();
        producer.beginTransaction();
        for (int i = 0; i < records; i++) {
            var sent = producer.send(new ProducerRecord<>(topic, partition, null, "open-" + i)).get();
            System.out.println("sent " + sent.topic() + "-" + sent.partition() + "@" + sent.offset());
        }
        // A close with time to spare aborts an open transaction; a close with none leaves it open at the broker.
        producer.close(Duration.ZERO);
    }
}
