package io.sluice.cli;

import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import io.sluice.store.StoredMessage;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.SplittableRandom;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import java.util.zip.CRC32C;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice demo}: produce, close, reopen, read back and verify, with throughput. */
@Command(name = "demo", description = "End-to-end demo: produce messages, reopen the store, read every message back,"
        + " check its bytes, verify the files, and print throughput and where the data lives.")
final class DemoCommand implements Callable<Integer> {

    @Option(names = "--dir", defaultValue = "sluice-data/demo", description = "Store directory (recreated).")
    Path dir;

    @Option(names = "--count", defaultValue = "500000", description = "Messages (default 500000).")
    int count;

    @Option(names = "--size", defaultValue = "1024", description = "Body bytes (default 1024).")
    int size;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException {
        PrintWriter out = spec.commandLine().getOut();
        recreate(dir);
        StoreConfig config = StoreConfig.builder().segmentSizeBytes(256L << 20).build();
        int queues = 4;
        long expectedChecksum = 0;
        long started = System.nanoTime();
        try (Store store = Store.open(dir, config)) {
            SplittableRandom random = new SplittableRandom(2026);
            byte[] body = new byte[size];
            for (int i = 0; i < count; i++) {
                random.nextBytes(body);
                expectedChecksum += crc(body);
                store.append("demo", i % queues, Message.builder().keys("key-" + i).body(body).build());
            }
        }
        double produceSeconds = (System.nanoTime() - started) / 1e9;
        out.printf("produced %,d messages of %,d bytes in %.2f s: %,.0f msg/s, %.0f MB/s (ASYNC, MMAP), store closed%n",
                count, size, produceSeconds, count / produceSeconds, count * (double) size / produceSeconds / 1e6);

        started = System.nanoTime();
        long readChecksum = 0;
        long read = 0;
        try (Store store = Store.open(dir, config)) {
            for (int queue = 0; queue < queues; queue++) {
                long offset = 0;
                while (true) {
                    try (ReadResult result = store.read("demo", queue, offset, 1000, 8 << 20)) {
                        if (result.messages().isEmpty()) {
                            break;
                        }
                        for (StoredMessage m : result.messages()) {
                            readChecksum += crc(m.bodyBytes());
                            read++;
                        }
                        offset = result.nextOffset();
                    }
                }
            }
        }
        double readSeconds = (System.nanoTime() - started) / 1e9;
        out.printf("reopened and read back %,d messages in %.2f s: %,.0f msg/s, %.0f MB/s%n", read, readSeconds,
                read / readSeconds, read * (double) size / readSeconds / 1e6);
        StoreVerifier.Report report = StoreVerifier.verify(dir);
        boolean ok = read == count && readChecksum == expectedChecksum && report.ok();
        out.printf("checked: %s messages, body checksums %s, verify %s (%d segments, %,d records, %,d index entries)%n",
                read == count ? "all" : "MISSING " + (count - read), readChecksum == expectedChecksum ? "match" : "DIFFER",
                report.ok() ? "clean" : report.faults(), report.segments(), report.records(), report.indexEntries());
        out.printf("data lives in %s (log/ holds the commit-log segments, index/<topic>/<queue>/ the queue indexes)%n",
                dir.toAbsolutePath());
        out.println(ok ? "DEMO OK" : "DEMO FAILED");
        out.flush();
        return ok ? 0 : 1;
    }

    private static long crc(byte[] bytes) {
        CRC32C crc = new CRC32C();
        crc.update(bytes);
        return crc.getValue();
    }

    /** Deletes a previous store (only if it is one, or the directory is empty), so each run starts fresh. */
    static void recreate(Path dir) throws IOException {
        if (Files.exists(dir)) {
            boolean empty;
            try (Stream<Path> entries = Files.list(dir)) {
                empty = entries.findAny().isEmpty();
            }
            if (!empty && !Files.exists(dir.resolve("sluice.meta"))) {
                throw new IllegalArgumentException(dir + " exists and is not a Sluice store; choose another --dir");
            }
            try (Stream<Path> walk = Files.walk(dir)) {
                for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                    Files.delete(p);
                }
            }
        }
        Files.createDirectories(dir);
    }
}
