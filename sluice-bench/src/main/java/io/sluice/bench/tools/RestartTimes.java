package io.sluice.bench.tools;

import java.io.DataInputStream;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.message.MetadataResponseData;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * How long a cluster broker takes, after a SIGKILL, from its process's start to serving: three brokers
 * ({@code sluice broker --cluster}) of the CLI jars given, a topic of 6 partitions filled with 100,000 records of
 * 1 KiB, a stock producer sending 2,000 records a second throughout; each round kills broker 2 and starts it again as
 * the round's variant (the variants alternate, so each meets the same load and data), and times the listener's first
 * accepted connection and the first Metadata answer (v1, every topic) that names a leader for every partition.
 * Prints each round and the medians per variant.
 *
 * <p>Arguments: a work directory, the rounds per variant, then variants as {@code name=jar[,jvm option...]}; the
 * first variant's jar runs brokers 1 and 3. Run by scripts/cluster-restart.sh.
 */
public final class RestartTimes {

    private static final String SPEC = "1@127.0.0.1:39092/39192,2@127.0.0.1:39093/39193,3@127.0.0.1:39094/39194";

    record Variant(String name, String jar, List<String> jvm) {
    }

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        int rounds = Integer.parseInt(args[1]);
        List<Variant> variants = new ArrayList<>();
        for (int i = 2; i < args.length; i++) {
            String[] nameAndRest = args[i].split("=", 2);
            String[] parts = nameAndRest[1].split(",");
            variants.add(new Variant(nameAndRest[0], parts[0], List.of(parts).subList(1, parts.length)));
        }
        Process[] brokers = new Process[4];
        for (int id = 1; id <= 3; id++) {
            brokers[id] = start(dir, id, variants.getFirst());
        }
        AtomicBoolean stop = new AtomicBoolean();
        AtomicReference<Exception> failed = new AtomicReference<>();
        Thread producer = null;
        try {
            awaitServing(39092, System.currentTimeMillis(), 120, false);
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap()))) {
                admin.createTopics(List.of(new NewTopic("restart", 6, (short) 3))).all().get(60, TimeUnit.SECONDS);
            }
            try (KafkaProducer<byte[], byte[]> fill = producer()) {
                for (int i = 0; i < 100_000; i++) {
                    fill.send(new ProducerRecord<>("restart", new byte[1024]));
                }
            }
            producer = Thread.ofPlatform().start(() -> steady(stop, failed));
            Map<String, List<long[]>> times = new LinkedHashMap<>();
            for (int round = 0; round < rounds * variants.size(); round++) {
                Variant variant = variants.get(round % variants.size());
                Thread.sleep(10_000); // the last restart caught up
                brokers[2].destroyForcibly().waitFor(30, TimeUnit.SECONDS);
                long began = System.currentTimeMillis();
                brokers[2] = start(dir, 2, variant);
                long[] served = awaitServing(39093, began, 120, true);
                times.computeIfAbsent(variant.name(), name -> new ArrayList<>()).add(served);
                System.out.printf("round %d %s: listening after %d ms, every partition led in Metadata after %d ms%n",
                        round + 1, variant.name(), served[0], served[1]);
            }
            times.forEach((name, list) -> System.out.printf("%s: median listening %d ms, median serving %d ms (%d"
                    + " restarts)%n", name, median(list, 0), median(list, 1), list.size()));
        } finally {
            stop.set(true);
            if (producer != null) {
                producer.join(30_000);
            }
            for (int id = 1; id <= 3; id++) {
                if (brokers[id] != null) {
                    brokers[id].destroy();
                    brokers[id].waitFor(30, TimeUnit.SECONDS);
                }
            }
        }
        if (failed.get() != null) {
            throw new IllegalStateException("the steady producer failed", failed.get());
        }
    }

    private static long median(List<long[]> list, int field) {
        List<Long> values = new ArrayList<>();
        list.forEach(time -> values.add(time[field]));
        Collections.sort(values);
        return values.get(values.size() / 2);
    }

    private static String bootstrap() {
        return "127.0.0.1:39092,127.0.0.1:39093,127.0.0.1:39094";
    }

    private static KafkaProducer<byte[], byte[]> producer() {
        Properties properties = new Properties();
        properties.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap());
        properties.put(ProducerConfig.ACKS_CONFIG, "all");
        properties.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
        return new KafkaProducer<>(properties, new ByteArraySerializer(), new ByteArraySerializer());
    }

    /** Sends 2,000 records a second until told to stop. */
    private static void steady(AtomicBoolean stop, AtomicReference<Exception> failed) {
        try (KafkaProducer<byte[], byte[]> producer = producer()) {
            long next = System.nanoTime();
            while (!stop.get()) {
                for (int i = 0; i < 20; i++) {
                    producer.send(new ProducerRecord<>("restart", new byte[1024]), (metadata, error) -> {
                        if (error != null) {
                            failed.compareAndSet(null, error);
                        }
                    });
                }
                next += TimeUnit.MILLISECONDS.toNanos(10);
                long wait = next - System.nanoTime();
                if (wait > 0) {
                    Thread.sleep(TimeUnit.NANOSECONDS.toMillis(wait));
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Process start(Path dir, int id, Variant variant) throws IOException {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java")
                .toString(), "--enable-native-access=ALL-UNNAMED", "--sun-misc-unsafe-memory-access=allow"));
        command.addAll(variant.jvm());
        command.addAll(List.of("-jar", variant.jar(), "broker", "--dir", dir.resolve("n" + id).toString(),
                "--node-id", String.valueOf(id), "--cluster", SPEC));
        Path log = dir.resolve("n" + id + ".log");
        return new ProcessBuilder(command).redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    /**
     * @return milliseconds from {@code began} to the port's first accepted connection, and to the first Metadata
     *     answer naming a leader for every partition of every topic (at least one partition), or any answer if not
     *     {@code led}
     */
    private static long[] awaitServing(int port, long began, int seconds, boolean led) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
        long listening = -1;
        while (System.nanoTime() < deadline) {
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
                if (listening < 0) {
                    listening = System.currentTimeMillis() - began;
                }
                socket.setSoTimeout(10_000);
                if (everyPartitionLed(socket) || !led) {
                    return new long[] {listening, System.currentTimeMillis() - began};
                }
            } catch (IOException notYet) {
                // not listening yet, or closed while starting
            }
            Thread.sleep(20);
        }
        throw new IllegalStateException("port " + port + " did not serve within " + seconds + " s");
    }

    private static boolean everyPartitionLed(Socket socket) throws IOException {
        // Metadata v1 for every topic (a null array), correlation id 1, client id "r".
        ByteBuffer request = ByteBuffer.allocate(19).putInt(15).putShort((short) 3).putShort((short) 1).putInt(1)
                .putShort((short) 1).put((byte) 'r').putInt(-1);
        socket.getOutputStream().write(request.array());
        DataInputStream in = new DataInputStream(socket.getInputStream());
        byte[] frame = new byte[in.readInt()];
        in.readFully(frame);
        ByteBufferAccessor reader = new ByteBufferAccessor(ByteBuffer.wrap(frame));
        reader.readInt(); // correlation id
        MetadataResponseData response = new MetadataResponseData(reader, (short) 1);
        int partitions = 0;
        for (var topic : response.topics()) {
            for (var partition : topic.partitions()) {
                partitions++;
                if (partition.errorCode() != 0 || partition.leaderId() < 0) {
                    return false;
                }
            }
        }
        return partitions > 0;
    }
}
