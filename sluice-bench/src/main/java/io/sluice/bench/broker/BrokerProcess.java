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
import java.util.concurrent.TimeUnit;
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

    private BrokerProcess(String name, Process process, int port, Path log) {
        this.name = name;
        this.process = process;
        this.port = port;
        this.log = log;
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
        List<String> jvm = new ArrayList<>(JVM);
        jvm.addAll(jvmOptions);
        Process p = new ProcessBuilder(command(jvm, mainClass, args)).redirectErrorStream(true)
                .redirectOutput(log.toFile()).start();
        BrokerProcess broker = new BrokerProcess(name, p, port, log);
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
