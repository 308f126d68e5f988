package io.sluice.broker;

import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.nio.file.Path;

/**
 * A broker alone in a process of its own, for tests that kill it: {@code BrokerChild <store dir> <port>} opens the
 * store with the broker's ASYNC settings, starts the broker on 127.0.0.1:port, prints {@code ready} and serves until
 * killed.
 */
public final class BrokerChild {

    private BrokerChild() {
    }

    public static void main(String[] args) throws Exception {
        Store store = Store.open(Path.of(args[0]), Broker.asyncFlushing(StoreConfig.builder().flushMode(io.sluice.store.FlushMode.ASYNC).writePath(Broker.ASYNC_WRITE_PATH)).build());
        Broker.start(store, BrokerConfig.defaults().withPort(Integer.parseInt(args[1])));
        System.out.println("ready");
        System.out.flush();
        Thread.currentThread().join();
    }
}
