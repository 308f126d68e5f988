package io.sluice.bench.broker;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.CountDownLatch;

/**
 * The Sluice broker as the race runs it, in a child JVM of its own:
 * {@code <dir> <port> <async|sync> [<segment bytes> <cleaner backoff ms>] [--security=<file>]}; without the segment
 * size and backoff, the store's default segment size and the cleaner's default backoff (Kafka's 15 s); with
 * {@code --security}, the listeners and their security from a file of Kafka's keys ({@link BrokerConfig#withSecurity},
 * whose {@code listeners} then decide the ports). Prints {@code ready} once listening; SIGTERM closes broker and store.
 */
public final class SluiceBrokerMain {

    /** The last argument's prefix that names a properties file of Kafka's listener and security keys. */
    static final String SECURITY_OPTION = "--security=";

    private SluiceBrokerMain() {
    }

    /**
     * @param arguments store directory, port, flush mode; optionally segment size and the cleaner's backoff; optionally
     *     the security file
     */
    public static void main(String[] arguments) throws Exception {
        String[] args = arguments;
        Map<String, String> security = Map.of();
        if (args.length > 0 && args[args.length - 1].startsWith(SECURITY_OPTION)) {
            security = readProperties(Path.of(args[args.length - 1].substring(SECURITY_OPTION.length())));
            args = Arrays.copyOf(args, args.length - 1);
        }
        boolean sync = args[2].equals("sync");
        StoreConfig.Builder config = StoreConfig.builder().flushMode(sync ? FlushMode.SYNC : FlushMode.ASYNC)
                .retention(Broker.kafkaRetention(RetentionPolicy.defaults()
                        .withRetentionHours(Broker.DEFAULT_RETENTION_HOURS)));
        BrokerConfig brokerConfig = BrokerConfig.defaults().withPort(Integer.parseInt(args[1]));
        if (!security.isEmpty()) {
            brokerConfig = brokerConfig.withSecurity(security);
        }
        if (args.length == 5) {
            config.segmentSizeBytes(Long.parseLong(args[3]));
            brokerConfig = brokerConfig.withCleaner(
                    CleanerSettings.DEFAULTS.withBackoffMillis(Long.parseLong(args[4])));
        }
        Store store = Store.open(Path.of(args[0]), (sync ? config
                : Broker.asyncFlushing(config.writePath(Broker.ASYNC_WRITE_PATH))).build());
        Broker broker = Broker.start(store, brokerConfig);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                broker.close();
            } catch (Exception e) {
                System.err.println("closing the broker failed: " + e);
            } finally {
                store.close();
                stopped.countDown();
            }
        }));
        System.out.println("ready");
        System.out.flush();
        stopped.await();
    }

    private static Map<String, String> readProperties(Path file) throws IOException {
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            properties.load(reader);
        }
        Map<String, String> settings = new HashMap<>();
        for (String key : properties.stringPropertyNames()) {
            settings.put(key, properties.getProperty(key));
        }
        return settings;
    }
}
