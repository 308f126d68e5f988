package io.sluice.bench.broker;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * The Sluice broker as the race runs it, in a child JVM of its own:
 * {@code <dir> <port> <async|sync> [<segment bytes> <cleaner backoff ms>]}; without the last two, the store's default
 * segment size and the cleaner's default backoff (Kafka's 15 s). Prints {@code ready} once listening; SIGTERM closes
 * broker and store.
 */
public final class SluiceBrokerMain {

    private SluiceBrokerMain() {
    }

    /** @param args store directory, port, flush mode; optionally segment size and the cleaner's backoff */
    public static void main(String[] args) throws Exception {
        boolean sync = args[2].equals("sync");
        StoreConfig.Builder config = StoreConfig.builder().flushMode(sync ? FlushMode.SYNC : FlushMode.ASYNC)
                .retention(Broker.kafkaRetention(RetentionPolicy.defaults()
                        .withRetentionHours(Broker.DEFAULT_RETENTION_HOURS)));
        BrokerConfig brokerConfig = BrokerConfig.defaults().withPort(Integer.parseInt(args[1]));
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
}
