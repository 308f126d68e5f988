package io.sluice.broker;

import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.HashMap;
import java.util.Map;

/**
 * A broker alone in a process of its own, for tests that kill it: {@code BrokerChild <store dir> <port> [option=value
 * ...]} opens the store with the broker's ASYNC settings, starts the broker on 127.0.0.1:port (on the listeners
 * {@code security.listeners} names, if given), prints {@code ready} and serves until killed. Options:
 * {@code segmentSizeBytes}, {@code maxMessageBytes} and {@code maxOpenLogs} (the store's), {@code
 * cleanerBackoffMillis} (the log cleaner's pause between rounds that cleaned nothing), and {@code security.<name>}
 * (Kafka's setting {@code <name>}, such as {@code security.listeners} or {@code security.super.users}: listeners,
 * SASL and authorizer settings, as {@link BrokerConfig#withSecurity} takes them; the value may hold '=').
 */
public final class BrokerChild {

    private BrokerChild() {
    }

    /**
     * Starts one in a process of its own (a 256 MiB heap, C1 only, warnings logged) and waits until it is ready.
     *
     * @param store the store directory
     * @param port the broker's port
     * @param log where its output goes
     * @param options {@code option=value} arguments, as {@link #main} takes them
     * @return the running process
     * @throws AssertionError if it ends or is not ready within 60 s, with its output
     */
    static Process start(Path store, int port, Path log, String... options) throws Exception {
        String launcher = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(launcher, "-Xmx256m",
                "-XX:TieredStopAtLevel=1", "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
                "--enable-native-access=ALL-UNNAMED", "-cp", System.getProperty("java.class.path"),
                BrokerChild.class.getName(), store.toString(), Integer.toString(port)));
        command.addAll(List.of(options));
        Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (!Files.readString(log).contains("ready")) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new AssertionError("the broker did not start:\n" + Files.readString(log));
            }
            Thread.sleep(20);
        }
        return process;
    }

    public static void main(String[] args) throws Exception {
        StoreConfig.Builder store = Broker.asyncFlushing(StoreConfig.builder().flushMode(FlushMode.ASYNC)
                .writePath(Broker.ASYNC_WRITE_PATH));
        BrokerConfig broker = BrokerConfig.defaults().withPort(Integer.parseInt(args[1]));
        Map<String, String> security = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            String name = args[i].substring(0, args[i].indexOf('='));
            String text = args[i].substring(name.length() + 1);
            if (name.startsWith("security.")) {
                security.put(name.substring("security.".length()), text);
                continue;
            }
            long value = Long.parseLong(text);
            switch (name) {
                case "segmentSizeBytes" -> store.segmentSizeBytes(value);
                case "maxMessageBytes" -> store.maxMessageBytes(Math.toIntExact(value));
                case "maxOpenLogs" -> store.maxOpenLogs(Math.toIntExact(value));
                case "cleanerBackoffMillis" -> broker = broker.withCleaner(
                        CleanerSettings.DEFAULTS.withBackoffMillis(value));
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (!security.isEmpty()) {
            broker = broker.withSecurity(security);
        }
        Store opened = Store.open(Path.of(args[0]), store.build());
        Broker.start(opened, broker);
        System.out.println("ready");
        System.out.flush();
        Thread.currentThread().join();
    }
}
