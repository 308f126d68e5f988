package io.sluice.bench.broker;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;

/**
 * One contender of the broker race, started as the race starts it, for scripts that measure it from outside:
 * {@code <sluice|kafka> <dir> [--tls | --durable]}. Prints {@code bootstrap <host:port> pid <broker pid>} once the
 * broker answers; SIGTERM stops the broker. With {@code --durable}, started as the broker race's durable scenarios
 * start it (Sluice SYNC, Kafka with {@code log.flush.interval.messages=1}). With {@code --tls}, started as the TLS
 * race starts it (PLAINTEXT, SSL and SASL_SSL
 * listeners, certificates made in {@code <dir>/certificates}, the SCRAM user made), it first prints a line
 * {@code listener <name> <host:port> <client properties file>} for each listener, the file holding what a Kafka tool
 * needs to reach it ({@code --command-config}).
 */
public final class LabBrokerMain {

    private LabBrokerMain() {
    }

    /** @param args which broker, a fresh directory for it, and optionally {@code --tls} or {@code --durable} */
    public static void main(String[] args) throws Exception {
        if (args.length < 2 || args.length > 3 || !args[0].matches("sluice|kafka")
                || args.length == 3 && !args[2].matches("--tls|--durable")) {
            System.err.println("usage: LabBrokerMain <sluice|kafka> <dir> [--tls | --durable]");
            System.exit(2);
        }
        Path dir = Path.of(args[1]);
        boolean tls = args.length == 3 && args[2].equals("--tls");
        boolean durable = args.length == 3 && args[2].equals("--durable");
        SecuredListeners listeners = tls ? SecuredListeners.of(LabCertificates.make(dir.resolve("certificates")))
                : null;
        Brokers.Tuning tuning = new Brokers.Tuning(0, 0, List.of(), listeners);
        // The certificates and client files beside the broker's directory, not in it.
        Path brokerDir = tls ? dir.resolve("broker") : dir;
        BrokerProcess broker = args[0].equals("sluice") ? Brokers.sluice(brokerDir, durable, tuning)
                : Brokers.kafka(brokerDir, durable, tuning);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            broker.close();
            stopped.countDown();
        }));
        if (tls) {
            try (Admin admin = Admin.create(Load.adminConfig(broker.over("PLAINTEXT")))) {
                admin.alterUserScramCredentials(List.of(new UserScramCredentialUpsertion(listeners.user(),
                        new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, SecuredListeners.SCRAM_ITERATIONS),
                        listeners.userPassword()))).all().get(60, TimeUnit.SECONDS);
            }
            broker.awaitAnswering("SASL_SSL");
            for (String listener : SecuredListeners.NAMES) {
                Path file = dir.resolve("client-" + listener + ".properties");
                List<String> lines = new ArrayList<>();
                for (Map.Entry<String, Object> setting : listeners.clientSettings(listener).entrySet()) {
                    // Properties files take a backslash as an escape: the JAAS line has none, paths on Linux none.
                    lines.add(setting.getKey() + "=" + setting.getValue());
                }
                Files.write(file, lines);
                System.out.println("listener " + listener + " " + broker.over(listener).bootstrap() + " " + file);
            }
        }
        System.out.println("bootstrap " + broker.bootstrap() + " pid " + broker.pid());
        System.out.flush();
        stopped.await();
    }
}
