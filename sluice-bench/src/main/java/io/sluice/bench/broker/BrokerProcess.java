package io.sluice.bench.broker;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;

/**
 * A broker in a child JVM (the Sluice broker or Apache Kafka), on 127.0.0.1: started, waited for until it answers
 * an admin request, measured (its CPU time from /proc/&lt;pid&gt;/stat), stopped with SIGTERM.
 */
final class BrokerProcess implements Load.Target, AutoCloseable {

    /** Heap and collector for either broker, as kafka-server-start.sh sets them. */
    static final List<String> JVM = List.of("-Xms1g", "-Xmx1g", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent");

    private final String name;
    private final Process process;
    private final int port;
    private final Path log;
    /** The secured listeners' ports by name ({@link SecuredListeners#NAMES}); empty for one PLAINTEXT listener. */
    private final Map<String, Integer> ports;
    private final SecuredListeners listeners;

    private BrokerProcess(String name, Process process, int port, Path log, Map<String, Integer> ports,
                          SecuredListeners listeners) {
        this.name = name;
        this.process = process;
        this.port = port;
        this.log = log;
        this.ports = Map.copyOf(ports);
        this.listeners = listeners;
    }

    /** Runs a Java main class of this classpath in a child JVM and waits for it to exit; @return its exit code */
    static int runToEnd(Path log, List<String> jvm, String mainClass, String... args) throws IOException,
            InterruptedException {
        Process p = new ProcessBuilder(command(jvm, mainClass, args)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IOException(mainClass + " did not finish within 120 s; see " + log);
        }
        return p.exitValue();
    }

    private static List<String> command(List<String> jvm, String mainClass, String... args) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvm);
        command.add("--enable-native-access=ALL-UNNAMED");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass);
        command.addAll(List.of(args));
        return command;
    }

    /** Starts a broker's main class and waits (up to 90 s) until it serves an admin request on {@code port}. */
    static BrokerProcess start(String name, Path log, int port, String mainClass, String... args)
            throws IOException, InterruptedException {
        return start(name, log, port, List.of(), mainClass, args);
    }

    /**
     * Starts a broker's main class with {@code jvmOptions} added to {@link #JVM} and waits (up to 90 s) until it
     * serves an admin request on {@code port}.
     */
    static BrokerProcess start(String name, Path log, int port, List<String> jvmOptions, String mainClass,
                               String... args) throws IOException, InterruptedException {
        return start(name, log, port, Map.of(), null, jvmOptions, mainClass, args);
    }

    /**
     * Starts a broker's main class that serves the secured listeners on {@code ports} ({@code port}, where readiness
     * is checked, being the PLAINTEXT one), with {@code jvmOptions} added to {@link #JVM}, and waits (up to 90 s)
     * until it serves an admin request.
     *
     * @param listeners the listeners' settings, or null for one PLAINTEXT listener on {@code port} (then
     *     {@code ports} is empty)
     */
    static BrokerProcess start(String name, Path log, int port, Map<String, Integer> ports,
                               SecuredListeners listeners, List<String> jvmOptions, String mainClass, String... args)
            throws IOException, InterruptedException {
        List<String> jvm = new ArrayList<>(JVM);
        jvm.addAll(jvmOptions);
        Process p = new ProcessBuilder(command(jvm, mainClass, args)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        BrokerProcess broker = new BrokerProcess(name, p, port, log, ports, listeners);
        try {
            broker.awaitReady(log);
        } catch (IOException | RuntimeException e) {
            broker.close();
            throw e;
        }
        return broker;
    }

    private void awaitReady(Path log) throws IOException, InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(90);
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IOException(name + " exited with " + process.exitValue() + " while starting: "
                        + tail(log));
            }
            try (Socket socket = new Socket()) {
                socket.connect(new InetSocketAddress("127.0.0.1", port), 200);
            } catch (IOException notYet) {
                Thread.sleep(100);
                continue;
            }
            try (Admin admin = Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap(),
                    AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 5_000,
                    AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 4_000))) {
                if (!admin.describeCluster().nodes().get(10, TimeUnit.SECONDS).isEmpty()) {
                    return;
                }
            } catch (Exception notYet) {
                Thread.sleep(200);
            }
        }
        throw new IOException(name + " did not become ready within 90 s: " + tail(log));
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 15), lines.size()));
    }

    String name() {
        return name;
    }

    @Override
    public String bootstrap() {
        return "127.0.0.1:" + port;
    }

    @Override
    public short replicationFactor() {
        return 1;
    }

    /**
     * @param listener one of {@link SecuredListeners#NAMES}
     * @return this broker as the load sees it through that listener: its address and client settings, this
     *     process's CPU
     */
    Load.Target over(String listener) {
        if (listeners == null) {
            throw new IllegalStateException(name + " serves one PLAINTEXT listener only");
        }
        Integer listenerPort = ports.get(listener);
        if (listenerPort == null) {
            throw new IllegalArgumentException(name + " has no listener " + listener);
        }
        Map<String, Object> settings = listeners.clientSettings(listener);
        BrokerProcess broker = this;
        return new Load.Target() {
            @Override
            public String bootstrap() {
                return "127.0.0.1:" + listenerPort;
            }

            @Override
            public double cpuSeconds() throws IOException {
                return broker.cpuSeconds();
            }

            @Override
            public short replicationFactor() {
                return 1;
            }

            @Override
            public Map<String, Object> clientSettings() {
                return settings;
            }
        };
    }

    /**
     * Polls until the broker answers an admin request through {@code listener} (up to 60 s): a SCRAM credential just
     * made reaches a Kafka broker's cache through its metadata log a moment after the controller answered.
     *
     * @throws IOException if it did not, with the last failure
     */
    void awaitAnswering(String listener) throws IOException, InterruptedException {
        Load.Target target = over(listener);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        Exception last = null;
        while (System.nanoTime() < deadline) {
            Map<String, Object> config = Load.adminConfig(target);
            config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 10_000);
            config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 8_000);
            try (Admin admin = Admin.create(config)) {
                admin.describeCluster().nodes().get(15, TimeUnit.SECONDS);
                return;
            } catch (ExecutionException | TimeoutException e) {
                last = e;
                Thread.sleep(200);
            }
        }
        throw new IOException(name + " did not answer over " + listener + " within 60 s: " + last, last);
    }

    /** @return the port of each secured listener, by name; empty for one PLAINTEXT listener */
    Map<String, Integer> ports() {
        return ports;
    }

    /** @return the file the broker's standard output and error go to */
    Path log() {
        return log;
    }

    /** @return the broker's process id */
    long pid() {
        return process.pid();
    }

    /** @return the CPU time (user + system) the broker's process has used, in seconds */
    @Override
    public double cpuSeconds() throws IOException {
        return Cpu.seconds(process.pid());
    }

    /** Kills the broker's process with SIGKILL (a crash: no shutdown hook runs) and waits for it to be gone. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor(30, TimeUnit.SECONDS);
    }

    @Override
    public void close() {
        process.destroy();
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            process.destroyForcibly();
            Thread.currentThread().interrupt();
        }
    }
}
