package io.sluice.bench.broker;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.Uuid;

/** Starts the two contenders of the broker race on fresh directories. */
final class Brokers {

    private Brokers() {
    }

    /** @return a port free on 127.0.0.1 now */
    static int freePort() throws IOException {
        return freePorts(1)[0];
    }

    /**
     * @param count how many
     * @return that many distinct ports free on 127.0.0.1 now: each is held until all are picked, as the kernel may
     *     hand out a port again once its socket is closed
     */
    static int[] freePorts(int count) throws IOException {
        ServerSocket[] sockets = new ServerSocket[count];
        try {
            int[] ports = new int[count];
            for (int i = 0; i < count; i++) {
                sockets[i] = new ServerSocket(0, 1, java.net.InetAddress.getLoopbackAddress());
                ports[i] = sockets[i].getLocalPort();
            }
            return ports;
        } finally {
            for (ServerSocket socket : sockets) {
                if (socket != null) {
                    socket.close();
                }
            }
        }
    }

    /**
     * What a race sets on either broker beyond the broker race's settings: the same on both.
     *
     * @param segmentBytes the log segments' size (Sluice: the store's segment size; Kafka: log.segment.bytes); 0 for
     *     each broker's default (Sluice 1 GiB, Kafka 1 GiB)
     * @param cleanerBackoffMillis the log cleaner's pause when it found nothing to clean (log.cleaner.backoff.ms;
     *     Sluice: its cleaner's setting of that name); 0 for the default, 15 s on both
     * @param jvmOptions options added to the broker's JVM (logger levels, a flight recording)
     */
    record Tuning(long segmentBytes, long cleanerBackoffMillis, List<String> jvmOptions) {
        /** The broker race's settings: each broker's defaults. */
        static final Tuning DEFAULTS = new Tuning(0, 0, List.of());

        Tuning {
            jvmOptions = List.copyOf(jvmOptions);
            if ((segmentBytes > 0) != (cleanerBackoffMillis > 0)) {
                // SluiceBrokerMain takes both or neither.
                throw new IllegalArgumentException("set both the segment size and the cleaner's backoff, or neither");
            }
        }
    }

    /**
     * The Sluice broker over a fresh store.
     *
     * @param durable run the store SYNC (every acknowledged batch forced to disk), else ASYNC
     */
    static BrokerProcess sluice(Path dir, boolean durable) throws IOException, InterruptedException {
        return sluice(dir, durable, Tuning.DEFAULTS);
    }

    /**
     * The Sluice broker over a fresh store, tuned.
     *
     * @param durable run the store SYNC (every acknowledged batch forced to disk), else ASYNC
     */
    static BrokerProcess sluice(Path dir, boolean durable, Tuning tuning) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        int port = freePort();
        List<String> args = new ArrayList<>(List.of(dir.resolve("store").toString(), String.valueOf(port),
                durable ? "sync" : "async"));
        if (tuning.segmentBytes() > 0) {
            args.add(String.valueOf(tuning.segmentBytes()));
            args.add(String.valueOf(tuning.cleanerBackoffMillis()));
        }
        return BrokerProcess.start("sluice", dir.resolveSibling(dir.getFileName() + ".log"), port,
                tuning.jvmOptions(), SluiceBrokerMain.class.getName(), args.toArray(String[]::new));
    }

    /**
     * Apache Kafka, one KRaft node (broker and controller) on 127.0.0.1, formatted afresh.
     *
     * @param durable flush every message (log.flush.interval.messages=1), else Kafka's default of leaving
     *     flushing to the OS
     */
    static BrokerProcess kafka(Path dir, boolean durable) throws IOException, InterruptedException {
        return kafka(dir, durable, Tuning.DEFAULTS);
    }

    /**
     * Apache Kafka, one KRaft node, tuned.
     *
     * @param durable flush every message (log.flush.interval.messages=1), else leave flushing to the OS
     */
    static BrokerProcess kafka(Path dir, boolean durable, Tuning tuning) throws IOException, InterruptedException {
        Files.createDirectories(dir);
        int[] ports = freePorts(2);
        int port = ports[0];
        int controller = ports[1];
        Path properties = dir.resolve("server.properties");
        Files.write(properties, List.of(
                "process.roles=broker,controller",
                "node.id=1",
                "controller.quorum.voters=1@127.0.0.1:" + controller,
                "listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controller,
                "advertised.listeners=PLAINTEXT://127.0.0.1:" + port,
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT",
                "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                "log.dirs=" + dir.resolve("logs"),
                "num.partitions=1",
                "offsets.topic.replication.factor=1",
                "transaction.state.log.replication.factor=1",
                "transaction.state.log.min.isr=1",
                "share.coordinator.state.topic.replication.factor=1",
                "share.coordinator.state.topic.min.isr=1",
                "group.initial.rebalance.delay.ms=0",
                durable ? "log.flush.interval.messages=1" : "# flushing left to the OS, Kafka's default",
                tuning.segmentBytes() > 0 ? "log.segment.bytes=" + tuning.segmentBytes() : "# 1 GiB segments",
                tuning.cleanerBackoffMillis() > 0 ? "log.cleaner.backoff.ms=" + tuning.cleanerBackoffMillis()
                        : "# the cleaner's backoff: 15 s"));
        Path formatLog = dir.resolve("format.log");
        int formatted = BrokerProcess.runToEnd(formatLog, List.of("-Xmx256m"), "kafka.tools.StorageTool", "format",
                "-t", Uuid.randomUuid().toString(), "-c", properties.toString());
        if (formatted != 0) {
            throw new IOException("formatting Kafka's storage failed (exit " + formatted + "): "
                    + Files.readString(formatLog));
        }
        return BrokerProcess.start("kafka", dir.resolve("kafka.log"), port, tuning.jvmOptions(), "kafka.Kafka",
                properties.toString());
    }
}
