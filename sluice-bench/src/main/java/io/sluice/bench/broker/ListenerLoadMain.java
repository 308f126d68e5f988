package io.sluice.bench.broker;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Properties;

/**
 * The race's client load, one run, for scripts that measure a broker from outside (scripts/broker-tls-cost.sh,
 * scripts/single-message-forces.sh): {@code <produce|consume|singles> <host:port> <client properties> <topic> <n>}.
 * Produces {@code n} 1 KiB records (acks=1) as the race does, reads a topic's first {@code n} records from partition 0
 * with an assigned consumer (no group, as the race reads), or runs the broker race's single-message scenario with
 * {@code n} producers for 20 s (over the race's 8 partitions, or as many as a sixth argument gives), through the
 * listener the properties reach (LabBrokerMain writes them; an empty file
 * for PLAINTEXT); prints {@code <records> records in <seconds> s, <records/s> records/s}, and for singles the p50 and
 * p99 of a record's round trip.
 */
public final class ListenerLoadMain {

    private ListenerLoadMain() {
    }

    /** @param args what, where, how to reach it, the topic and how many records */
    public static void main(String[] args) throws Exception {
        if (!(args.length == 5 && args[0].matches("produce|consume|singles")
                || args.length == 6 && args[0].equals("singles"))) {
            System.err.println("usage: ListenerLoadMain <produce|consume|singles> <host:port> <client properties>"
                    + " <topic> <records, or producers> [partitions, for singles]");
            System.exit(2);
        }
        Map<String, Object> settings = read(Path.of(args[2]));
        Load.Target target = new Load.Target() {
            @Override
            public String bootstrap() {
                return args[1];
            }

            @Override
            public double cpuSeconds() {
                return Double.NaN; // the script reads the broker's CPU itself
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
        long records = Long.parseLong(args[4]);
        if (args[0].equals("singles")) {
            int partitions = args.length == 6 ? Integer.parseInt(args[5]) : BrokerRaceRun.SINGLE_PARTITIONS;
            Load.Result result = Load.singleMessages(target, args[3], partitions, (int) records, 20, 1024);
            System.out.println(String.format(Locale.ROOT, "p50 %.2f ms, p99 %.2f ms", result.p50Millis(),
                    result.p99Millis()));
            System.out.println(String.format(Locale.ROOT, "%d records in %.3f s, %.1f records/s", result.records(),
                    result.seconds(), result.perSecond()));
            return;
        }
        Load.Result result = args[0].equals("produce") ? Load.produce(target, args[3], records, 1024, "1")
                : Load.consume(target, args[3], records);
        System.out.println(String.format(Locale.ROOT, "%d records in %.3f s, %.1f records/s", result.records(),
                result.seconds(), result.perSecond()));
        if (result.records() != records) {
            System.exit(1);
        }
    }

    private static Map<String, Object> read(Path file) throws IOException {
        Properties properties = new Properties();
        try (Reader reader = Files.newBufferedReader(file)) {
            properties.load(reader);
        }
        Map<String, Object> settings = new HashMap<>();
        for (String key : properties.stringPropertyNames()) {
            settings.put(key, properties.getProperty(key));
        }
        return settings;
    }
}
