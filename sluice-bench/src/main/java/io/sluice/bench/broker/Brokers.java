package io.sluice.bench.broker;

import java.io.IOException;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
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
     * @param picked free ports, at least one for each of {@link SecuredListeners#NAMES}
     * @return the first of them by listener name
     */
    private static Map<String, Integer> listenerPorts(int[] picked) {
        Map<String, Integer> ports = new LinkedHashMap<>();
        for (int i = 0; i < SecuredListeners.NAMES.size(); i++) {
            ports.put(SecuredListeners.NAMES.get(i), picked[i]);
        }
        return ports;
    }

    /**
     * What a race sets on either broker beyond the broker race's settings: the same on both.
     *
     * @param segmentBytes the log segments' size (Sluice: the store's segment size; Kafka: log.segment.bytes); 0 for
     *     each broker's default (Sluice 1 GiB, Kafka 1 GiB)
     * @param cleanerBackoffMillis the log cleaner's pause when it found nothing to clean (log.cleaner.backoff.ms;
     *     Sluice: its cleaner's setting of that name); 0 for the default, 15 s on both
     * @param jvmOptions options added to the broker's JVM (logger levels, a flight recording)
     * @param listeners the PLAINTEXT, SSL and SASL_SSL listeners to serve, or null for one PLAINTEXT listener
     */
    record Tuning(long segmentBytes, long cleanerBackoffMillis, List<String> jvmOptions, SecuredListeners listeners) {
        /** The broker race's settings: each broker's defaults. */
        static final Tuning DEFAULTS = new Tuning(0, 0, List.of());

        /** Tuned with one PLAINTEXT listener. */
        Tuning(long segmentBytes, long cleanerBackoffMillis, List<String> jvmOptions) {
            this(segmentBytes, cleanerBackoffMillis, jvmOptions, null);
        }

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
        Map<String, Integer> ports = tuning.listeners() == null ? Map.of()
                : listenerPorts(freePorts(SecuredListeners.NAMES.size()));
        int port = tuning.listeners() == null ? freePort() : ports.get("PLAINTEXT");
        List<String> args = new ArrayList<>(List.of(dir.resolve("store").toString(), String.valueOf(port),
                durable ? "sync" : "async"));
        if (tuning.segmentBytes() > 0) {
            args.add(String.valueOf(tuning.segmentBytes()));
            args.add(String.valueOf(tuning.cleanerBackoffMillis()));
        }
        if (tuning.listeners() != null) {
            Path security = dir.resolve("security.properties");
            List<String> lines = new ArrayList<>();
            tuning.listeners().brokerSettings(ports).forEach((key, value) -> lines.add(key + "=" + value));
            Files.write(security, lines);
            args.add(SluiceBrokerMain.SECURITY_OPTION + security);
        }
        return BrokerProcess.start("sluice", dir.resolveSibling(dir.getFileName() + ".log"), port, ports,
                tuning.listeners(), tuning.jvmOptions(), SluiceBrokerMain.class.getName(), args.toArray(String[]::new));
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
        // The controller's port is picked with the listeners', so that none is handed out twice.
        int[] picked = freePorts(tuning.listeners() == null ? 2 : SecuredListeners.NAMES.size() + 1);
        int controller = picked[picked.length - 1];
        Map<String, Integer> ports = tuning.listeners() == null ? Map.of() : listenerPorts(picked);
        int port = tuning.listeners() == null ? picked[0] : ports.get("PLAINTEXT");
        List<String> listeners = new ArrayList<>();
        if (tuning.listeners() == null) {
            listeners.add("listeners=PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controller);
            listeners.add("advertised.listeners=PLAINTEXT://127.0.0.1:" + port);
            listeners.add("listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT");
        } else {
            Map<String, String> settings = tuning.listeners().brokerSettings(ports);
            String served = settings.remove("listeners");
            listeners.add("listeners=" + served + ",CONTROLLER://127.0.0.1:" + controller);
            listeners.add("advertised.listeners=" + served);
            listeners.add("listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,"
                    + "SASL_SSL:SASL_SSL");
            settings.forEach((key, value) -> listeners.add(key + "=" + value));
        }
        Path properties = dir.resolve("server.properties");
        List<String> lines = new ArrayList<>(List.of(
                "process.roles=broker,controller",
                "node.id=1",
                "controller.quorum.voters=1@127.0.0.1:" + controller,
                "controller.listener.names=CONTROLLER",
                "inter.broker.listener.name=PLAINTEXT"));
        lines.addAll(listeners);
        lines.addAll(List.of(
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
        Files.write(properties, lines);
        Path formatLog = dir.resolve("format.log");
        int formatted = BrokerProcess.runToEnd(formatLog, List.of("-Xmx256m"), "kafka.tools.StorageTool", "format",
                "-t", Uuid.randomUuid().toString(), "-c", properties.toString());
        if (formatted != 0) {
            throw new IOException("formatting Kafka's storage failed (exit " + formatted + "): "
                    + Files.readString(formatLog));
        }
        return BrokerProcess.start("kafka", dir.resolve("kafka.log"), port, ports, tuning.listeners(),
                tuning.jvmOptions(), "kafka.Kafka", properties.toString());
    }
}
