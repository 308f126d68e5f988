package io.sluice.broker;

import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;
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
