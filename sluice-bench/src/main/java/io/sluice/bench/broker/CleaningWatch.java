package io.sluice.bench.broker;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * What the compaction race reads of a child broker from outside while its cleaner works: the CPU time of the cleaner's
 * thread and of the whole process (/proc), the blocks the partition's directory takes on disk ({@code du}), how many
 * bytes of the partition's log lie in sealed segments (its files), and the cleaner's own report of a cleaning (its
 * log line, which the race turns on at INFO). One per broker kind; stateless.
 *
 * @param broker "sluice" or "kafka"
 * @param cleanerThread the start of the cleaner thread's name as the kernel keeps it (15 bytes at most)
 * @param loggerOptions the JVM options that have the broker log its cleaner's report of each cleaning
 */
record CleaningWatch(String broker, String cleanerThread, List<String> loggerOptions) {

    /** Sluice's one cleaner thread, {@code sluice-log-cleaner} (io.sluice.broker.kafka.LogCleaner). */
    static final CleaningWatch SLUICE = new CleaningWatch("sluice", "sluice-log-clea",
            List.of("-Dorg.slf4j.simpleLogger.log.io.sluice.broker.kafka.LogCleaner=info"));

    /**
     * Kafka's one cleaner thread (log.cleaner.threads=1), {@code kafka-log-cleaner-thread-0}. It logs its report
     * under its own class's name, which slf4j-simple does not count as under the outer class's.
     */
    static final CleaningWatch KAFKA = new CleaningWatch("kafka", "kafka-log-clean",
            List.of("-Dorg.slf4j.simpleLogger.log.org.apache.kafka.storage.internals.log.LogCleaner=info",
                    "-Dorg.slf4j.simpleLogger.log.org.apache.kafka.storage.internals.log.LogCleaner$CleanerThread"
                            + "=info"));

    private static final Pattern SLUICE_REPORT = Pattern.compile("cleaned (\\S+)-0 below offset (-?\\d+):"
            + " (\\d+) keys mapped, (\\d+) of (\\d+) segments rewritten, (\\d+) bytes of batches read,"
            + " (\\d+) -> (\\d+) bytes in the segments rewritten, (\\d+) ms");
    private static final Pattern KAFKA_REPORT = Pattern.compile("cleaned log (\\S+)-0 \\(dirty section = \\[(\\d+),"
            + " (\\d+)\\]\\)\\s+([\\d,.]+) MB of log processed in ([\\d,.]+) seconds");

    /** One look at the broker. */
    record Sample(long nanos, double cleanerCpuSeconds, int cleanerThreads, double processCpuSeconds,
                  long diskBytes) {
    }

    /**
     * The cleaner's own account of its cleanings of the partition: how many there were (Sluice: rounds that rewrote a
     * segment; Kafka: cleanings), what the first said, and how many rounds read the partition again without rewriting
     * anything (Sluice only; Kafka does not log a round that finds nothing due).
     */
    record Report(int cleanings, String first, int roundsWithoutRewrite) {
    }

    /** @return the directory of partition 0 of {@code topic} under a broker's directory as {@link Brokers} makes it */
    Path partitionDirectory(Path brokerDirectory, String topic) {
        return broker.equals("sluice") ? brokerDirectory.resolve("store").resolve("logs").resolve(topic).resolve("0")
                : brokerDirectory.resolve("logs").resolve(topic + "-0");
    }

    /** @return a look at the broker's process and the partition's directory now */
    Sample sample(long pid, Path partition) throws IOException, InterruptedException {
        Cpu.ThreadTime cleaner = Cpu.threadSeconds(pid, cleanerThread);
        double process = Cpu.seconds(pid);
        long disk = diskBytes(partition);
        return new Sample(System.nanoTime(), cleaner.seconds(), cleaner.threads(), process, disk);
    }

    /**
     * @return the bytes the files of {@code directory} take on disk (their blocks, holes not counted), leaving out
     *     Kafka's segments already replaced and waiting for file.delete.delay.ms to pass ({@code *.deleted})
     */
    static long diskBytes(Path directory) throws IOException, InterruptedException {
        Process du = new ProcessBuilder("du", "-s", "-B1", "--exclude=*.deleted", directory.toString())
                .redirectError(ProcessBuilder.Redirect.DISCARD).start();
        String out = new String(du.getInputStream().readAllBytes(), StandardCharsets.US_ASCII).strip();
        du.waitFor();
        // A file renamed or deleted while du walks makes it complain and exit 1, with the total still printed.
        if (out.isEmpty()) {
            throw new IOException("du printed nothing for " + directory);
        }
        return Long.parseLong(out.split("\\s+")[0]);
    }

    /**
     * The bytes of the partition's log that a cleaner may clean now: those in its sealed segments, every segment but
     * the active (last) one. Kafka: the sizes of those {@code .log} files. Sluice: a segment file is named by the log
     * position it starts at, so the active segment's name less the first one's (a sealed segment's bytes include the
     * filler that ends it when the next batch did not fit).
     */
    long sealedLogBytes(Path partition) throws IOException {
        if (broker.equals("sluice")) {
            List<Long> bases;
            try (Stream<Path> files = Files.list(partition.resolve("log"))) {
                bases = files.map(f -> f.getFileName().toString()).filter(n -> n.matches("\\d{20}"))
                        .map(Long::parseLong).sorted().toList();
            }
            return bases.isEmpty() ? 0 : bases.getLast() - bases.getFirst();
        }
        List<Path> segments;
        try (Stream<Path> files = Files.list(partition)) {
            segments = files.filter(f -> f.getFileName().toString().endsWith(".log")).sorted().toList();
        }
        long bytes = 0;
        for (Path segment : segments.subList(0, Math.max(0, segments.size() - 1))) {
            bytes += Files.size(segment);
        }
        return bytes;
    }

    /** @return what the broker's log says its cleaner did to partition 0 of {@code topic}; no cleaning yet: 0 */
    Report report(Path log, String topic) throws IOException {
        String text = Files.readString(log, StandardCharsets.UTF_8);
        int cleanings = 0;
        int idle = 0;
        String first = "";
        if (broker.equals("sluice")) {
            Matcher m = SLUICE_REPORT.matcher(text);
            while (m.find()) {
                if (!m.group(1).equals(topic)) {
                    continue;
                }
                if (Long.parseLong(m.group(4)) == 0) {
                    idle++;
                    continue;
                }
                if (cleanings++ == 0) {
                    first = String.format(Locale.ROOT, "%s of %s segments rewritten, %.1f MiB of batches read,"
                                    + " %.1f -> %.1f MiB, %,d keys, %s ms", m.group(4), m.group(5),
                            mib(m.group(6)), mib(m.group(7)), mib(m.group(8)), Long.parseLong(m.group(3)), m.group(9));
                }
            }
        } else {
            Matcher m = KAFKA_REPORT.matcher(text);
            while (m.find()) {
                if (m.group(1).equals(topic) && cleanings++ == 0) {
                    first = String.format(Locale.ROOT, "offsets [%s, %s), %s MB of log processed in %s s",
                            m.group(2), m.group(3), m.group(4), m.group(5));
                }
            }
        }
        return new Report(cleanings, first, idle);
    }

    private static double mib(String bytes) {
        return Long.parseLong(bytes) / (double) (1L << 20);
    }
}
