package io.sluice.bench.broker;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * The Sluice broker as the race runs it, in a child JVM of its own: {@code <dir> <port> <async|sync>}. Prints
 * {@code ready} once listening; SIGTERM closes broker and store.
 */
public final class SluiceBrokerMain {

    private SluiceBrokerMain() {
    }

    /** @param args store directory, port, flush mode */
    public static void main(String[] args) throws Exception {
        boolean sync = args[2].equals("sync");
        StoreConfig.Builder config = StoreConfig.builder().flushMode(sync ? FlushMode.SYNC : FlushMode.ASYNC)
                .retention(Broker.kafkaRetention(RetentionPolicy.defaults()
                        .withRetentionHours(Broker.DEFAULT_RETENTION_HOURS)));
        Store store = Store.open(Path.of(args[0]), (sync ? config
                : Broker.asyncFlushing(config.writePath(Broker.ASYNC_WRITE_PATH))).build());
        Broker broker = Broker.start(store, BrokerConfig.defaults().withPort(Integer.parseInt(args[1])));
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
