package io.sluice.bench.tools;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.LocalTime;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.ByteArraySerializer;

/**
 * Failovers of three local Sluice brokers, each broken down: a stock producer (acks=all, linger 5 ms) sends a record
 * every millisecond to one partition of replication factor 3; 3 s after every replica is in sync, the partition's
 * leader is killed with SIGKILL. Printed are the wall-clock times of the kill and of the first acknowledgement of a
 * record sent after it (the failover time, as the cluster race measures it), its parts (to the first log line of a
 * broker saying it leads the partition's Raft group, to the producer's metadata naming that leader, to the
 * acknowledgement), and for each surviving broker the slowest of the probes taken every 20 ms until then (a new
 * connection and an ApiVersions round trip). The brokers' logs in the directory printed first have their Raft role
 * changes, timestamped, to read against those times. The killed broker is started again before the next kill. Run by
 * scripts/cluster-failover.sh; BROKER_OPTS adds JVM options to the brokers ({node} and {dir} in them are replaced by
 * the node's id and the directory).
 *
 * <p>Arguments: directory, bench jar, kills.
 */
public class FailoverTimeline {
    static final int[] PORTS = {19092, 19093, 19094, 19192, 19193, 19194};
    static final String SPEC = "1@127.0.0.1:19092/19192,2@127.0.0.1:19093/19193,3@127.0.0.1:19094/19194";
    static final Process[] NODES = new Process[3];
    /** How many times each node's log said it was ready before its latest start. */
    static final int[] READY = new int[3];

    public static void main(String[] args) throws Exception {
        Path dir = Path.of(args[0]);
        String jar = args[1];
        int kills = Integer.parseInt(args[2]);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            // SIGTERM first, so that the brokers close (and write what they record at exit), then SIGKILL.
            for (Process node : NODES) {
                if (node != null) {
                    node.destroy();
                }
            }
            for (Process node : NODES) {
                try {
                    if (node != null && !node.waitFor(15, TimeUnit.SECONDS)) {
                        node.destroyForcibly();
                    }
                } catch (InterruptedException e) {
                    node.destroyForcibly();
                }
            }
        }));
        for (int id = 1; id <= 3; id++) {
            start(dir, jar, id);
        }
        for (int id = 1; id <= 3; id++) {
            awaitReady(dir, id);
        }
        String bootstrap = "127.0.0.1:19092,127.0.0.1:19093,127.0.0.1:19094";
        List<Double> millis = new ArrayList<>();
        try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap))) {
            admin.createTopics(List.of(new NewTopic("failover", 1, (short) 3))).all().get(60, TimeUnit.SECONDS);
            Map<String, Object> config = new HashMap<>();
            config.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
            config.put(ProducerConfig.ACKS_CONFIG, "all");
            config.put(ProducerConfig.LINGER_MS_CONFIG, 5);
            config.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, 120_000);
            AtomicLong firstAckAfter = new AtomicLong(Long.MAX_VALUE);
            AtomicLong killedAt = new AtomicLong(Long.MAX_VALUE);
            AtomicBoolean stop = new AtomicBoolean();
            try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(config, new ByteArraySerializer(),
                    new ByteArraySerializer())) {
                Thread sender = Thread.ofPlatform().start(() -> {
                    byte[] value = "failover".getBytes();
                    while (!stop.get()) {
                        long sent = System.nanoTime();
                        producer.send(new ProducerRecord<>("failover", 0, null, value), (metadata, error) -> {
                            if (error == null && sent > killedAt.get()
                                    && firstAckAfter.compareAndSet(Long.MAX_VALUE, System.nanoTime())) {
                                System.out.println(LocalTime.now() + " first ack after the kill");
                            } else if (error != null) {
                                System.out.println(LocalTime.now() + " send failed: " + error);
                            }
                        });
                        try {
                            Thread.sleep(1);
                        } catch (InterruptedException e) {
                            return;
                        }
                    }
                });
                for (int i = 0; i < kills; i++) {
                    int leader = awaitInSync(admin);
                    Thread.sleep(3_000);
                    firstAckAfter.set(Long.MAX_VALUE);
                    killedAt.set(System.nanoTime());
                    LocalTime killTime = LocalTime.now();
                    NODES[leader - 1].destroyForcibly();
                    System.out.println(killTime + " killed node " + leader);
                    int killed = leader;
                    AtomicLong toldAt = new AtomicLong(Long.MAX_VALUE);
                    Thread.ofPlatform().start(() -> watchLeader(producer, killed, toldAt, firstAckAfter));
                    for (int id = 1; id <= 3; id++) {
                        if (id != leader) {
                            int node = id;
                            Thread.ofPlatform().start(() -> probe(node, firstAckAfter));
                        }
                    }
                    long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
                    while (firstAckAfter.get() == Long.MAX_VALUE) {
                        if (System.nanoTime() > deadline) {
                            throw new IllegalStateException("no acknowledgement within 60 s of the kill");
                        }
                        Thread.sleep(2);
                    }
                    double ms = (firstAckAfter.get() - killedAt.get()) / 1e6;
                    millis.add(ms);
                    System.out.printf("failover %d: %.0f ms%n", i + 1, ms);
                    LocalTime elected = electedAfter(dir, killTime);
                    if (elected != null && toldAt.get() != Long.MAX_VALUE) {
                        double election = java.time.Duration.between(killTime, elected).toNanos() / 1e6;
                        double told = (toldAt.get() - killedAt.get()) / 1e6;
                        System.out.printf("  kill to the partition's new leader %.0f ms, to the producer's metadata"
                                + " naming it %.0f ms (%.0f after the election), to the first ack %.0f ms (%.0f after"
                                + " that)%n", election, told, told - election, ms, ms - told);
                    }
                    NODES[leader - 1].waitFor();
                    start(dir, jar, leader);
                    awaitReady(dir, leader);
                }
                stop.set(true);
                sender.join();
            }
        }
        Collections.sort(millis);
        int n = millis.size();
        System.out.printf("failovers (ms, sorted): %s; median %.0f ms%n", millis,
                n % 2 == 1 ? millis.get(n / 2) : (millis.get(n / 2 - 1) + millis.get(n / 2)) / 2);
    }

    static void start(Path dir, String jar, int id) throws Exception {
        Path log = dir.resolve("node-" + id + ".log");
        READY[id - 1] = readyCount(log, id);
        List<String> command = new ArrayList<>(List.of("java", "-Xms1g", "-Xmx1g", "-XX:+UseG1GC",
                "-XX:MaxGCPauseMillis=20", "--enable-native-access=ALL-UNNAMED"));
        String extra = System.getenv("BROKER_OPTS");
        if (extra != null && !extra.isBlank()) {
            for (String option : extra.trim().split("\\s+")) {
                command.add(option.replace("{node}", String.valueOf(id)).replace("{dir}", dir.toString()));
            }
        }
        command.addAll(List.of(
"-Dorg.slf4j.simpleLogger.showDateTime=true",
                "-Dorg.slf4j.simpleLogger.dateTimeFormat=HH:mm:ss.SSS",
                "-Dorg.slf4j.simpleLogger.log.org.apache.ratis.server.impl=info",
                "-cp", jar, "io.sluice.cluster.ClusterBroker", dir.resolve("node-" + id).toString(), SPEC,
                String.valueOf(id), "failover", "async"));
        NODES[id - 1] = new ProcessBuilder(command)
                .redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
    }

    static void awaitReady(Path dir, int id) throws Exception {
        Path log = dir.resolve("node-" + id + ".log");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (readyCount(log, id) == READY[id - 1]) {
            if (!NODES[id - 1].isAlive() || System.nanoTime() > deadline) {
                throw new IllegalStateException("node " + id + " did not start: " + Files.readString(log));
            }
            Thread.sleep(100);
        }
    }

    /**
     * Until the first acknowledgement after a kill, times a new connection and an ApiVersions round trip to a
     * broker every 20 ms, and prints the slowest.
     */
    static void probe(int id, AtomicLong firstAckAfter) {
        long worst = 0;
        String worstAt = "";
        int probes = 0;
        while (firstAckAfter.get() == Long.MAX_VALUE) {
            long start = System.nanoTime();
            long connected = start;
            try (java.net.Socket socket = new java.net.Socket("127.0.0.1", PORTS[id - 1])) {
                connected = System.nanoTime();
                java.io.DataOutputStream out = new java.io.DataOutputStream(socket.getOutputStream());
                out.writeInt(10);
                out.writeShort(18);
                out.writeShort(0);
                out.writeInt(1);
                out.writeShort(-1);
                out.flush();
                java.io.DataInputStream in = new java.io.DataInputStream(socket.getInputStream());
                in.readFully(new byte[in.readInt()]);
            } catch (Exception e) {
                System.out.println(LocalTime.now() + " probe of node " + id + " failed: " + e);
            }
            long took = System.nanoTime() - start;
            probes++;
            if (took > worst) {
                worst = took;
                worstAt = LocalTime.now() + String.format(" (connect %.0f ms)", (connected - start) / 1e6);
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                return;
            }
        }
        System.out.printf("probe of node %d: %d probes, slowest %.0f ms ending %s%n", id, probes, worst / 1e6, worstAt);
    }

    /** Records when the producer's metadata first names a leader of the partition other than the one killed. */
    static void watchLeader(KafkaProducer<byte[], byte[]> producer, int killed, AtomicLong toldAt,
                            AtomicLong firstAckAfter) {
        while (firstAckAfter.get() == Long.MAX_VALUE) {
            Node leader = producer.partitionsFor("failover").getFirst().leader();
            if (leader != null && leader.id() >= 1 && leader.id() != killed) {
                toldAt.compareAndSet(Long.MAX_VALUE, System.nanoTime());
                return;
            }
            try {
                Thread.sleep(1);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    /**
     * @return when a broker's log first says it became the leader of partition failover-0's Raft group after
     *     {@code kill}, or null
     */
    static LocalTime electedAfter(Path dir, LocalTime kill) throws Exception {
        String group = org.apache.ratis.protocol.RaftGroupId.valueOf(java.util.UUID.nameUUIDFromBytes(
                "failover\u0000failover\u00000".getBytes(java.nio.charset.StandardCharsets.UTF_8))).toString();
        LocalTime first = null;
        for (int id = 1; id <= 3; id++) {
            Path log = dir.resolve("node-" + id + ".log");
            for (String line : Files.readAllLines(log)) {
                if (line.length() > 12 && line.endsWith("@" + group + "-LeaderStateImpl")
                        && line.contains("start n")) {
                    LocalTime at = LocalTime.parse(line.substring(0, 12));
                    if (at.isAfter(kill) && (first == null || at.isBefore(first))) {
                        first = at;
                    }
                }
            }
        }
        return first;
    }

    static int readyCount(Path log, int id) throws Exception {
        return Files.exists(log) ? Files.readString(log).split("ready " + id + " ", -1).length - 1 : 0;
    }

    /** @return the leader of the partition once all three replicas are in sync */
    static int awaitInSync(Admin admin) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        while (System.nanoTime() < deadline) {
            TopicDescription topic = admin.describeTopics(List.of("failover")).allTopicNames().get(10,
                    TimeUnit.SECONDS).get("failover");
            TopicPartitionInfo partition = topic.partitions().getFirst();
            Node leader = partition.leader();
            if (leader != null && leader.id() >= 1 && partition.isr().size() == 3) {
                return leader.id();
            }
            Thread.sleep(100);
        }
        throw new IllegalStateException("the replicas were not in sync within 120 s");
    }
}
