package io.sluice.bench.broker;

import java.nio.file.Path;
import java.util.concurrent.CountDownLatch;

/**
 * One contender of the broker race, started as the race starts it, for scripts that measure it from outside:
 * {@code <sluice|kafka> <dir>}. Prints {@code bootstrap <host:port> pid <broker pid>} once the broker answers;
 * SIGTERM stops the broker.
 */
public final class LabBrokerMain {

    private LabBrokerMain() {
    }

    /** @param args which broker, and a fresh directory for it */
    public static void main(String[] args) throws Exception {
        if (args.length != 2 || !args[0].matches("sluice|kafka")) {
            System.err.println("usage: LabBrokerMain <sluice|kafka> <dir>");
            System.exit(2);
        }
        Path dir = Path.of(args[1]);
        BrokerProcess broker = args[0].equals("sluice") ? Brokers.sluice(dir, false) : Brokers.kafka(dir, false);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            broker.close();
            stopped.countDown();
        }));
        System.out.println("bootstrap " + broker.bootstrap() + " pid " + broker.pid());
        System.out.flush();
        stopped.await();
    }
}
