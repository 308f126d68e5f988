package io.sluice.store;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a child JVM with SIGKILL, at a random moment, while it appends with SYNC flush to 24 logs of their own and
 * keeps only four open, so that logs are being forced, closed and opened again when it dies
 * ({@link OpenLogsCrashChild}); again and again on the same store, through every write path. After each kill every
 * acknowledged append is there with its exact bytes, offsets are dense, the verifier finds nothing wrong, and the
 * store recovered every log with at most its budget open. Rounds: {@code -Dsluice.crash.openlogs.rounds} (8 by
 * default); seed: {@code -Dsluice.crash.seed}.
 */
@Tag("slow")
@ExtendWith(NoLeaks.class)
class OpenLogsCrashTest {

    @TempDir
    Path dir;

    @Test
    void acknowledgedAppendsSurviveSigkillWhileLogsCloseAndOpen() throws Exception {
        int rounds = Integer.getInteger("sluice.crash.openlogs.rounds", 8);
        long seed = Long.getLong("sluice.crash.seed", System.nanoTime());
        System.out.println("OpenLogsCrashTest seed " + seed + ", " + rounds + " rounds");
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, Long> acknowledged = new HashMap<>();
        for (int round = 0; round < rounds; round++) {
            WritePath path = WritePath.values()[round % WritePath.values().length];
            long killAfterMillis = 200 + random.nextLong(1000);
            int acks = runAndKill(path, seed + round, killAfterMillis, acknowledged);
            String label = "round " + round + " (" + path + ", killed " + killAfterMillis + " ms after ready, " + acks
                    + " acks this round, " + acknowledged.size() + " in all)";
            System.out.println(label);
            check(path, acknowledged, label);
        }
        assertThat(acknowledged).as("acknowledged appends across the rounds").hasSizeGreaterThan(100);
    }

    private int runAndKill(WritePath path, long seed, long killAfterMillis, Map<String, Long> acknowledged)
            throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = List.of(java, "-ea", "--enable-native-access=ALL-UNNAMED", "-Xmx256m", "-cp",
                System.getProperty("java.class.path"), OpenLogsCrashChild.class.getName(), dir.toString(), path.name(),
                "4", Long.toString(seed));
        Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        int acks = 0;
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(child.getInputStream(),
                StandardCharsets.US_ASCII))) {
            assertThat(lines.readLine()).as("child started").isEqualTo("READY");
            Thread killer = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(killAfterMillis);
                } catch (InterruptedException e) {
                    return;
                }
                // SIGKILL; the handle leaves our pipe open, so every acknowledgement printed before is read.
                child.toHandle().destroyForcibly();
            });
            String line;
            while ((line = lines.readLine()) != null) {
                String[] parts = line.split(" ");
                if (parts.length != 6 || !parts[0].equals("ACK") || !parts[5].equals("END")) {
                    continue; // the line the kill cut short
                }
                Long previous = acknowledged.put(parts[1] + ":" + parts[2] + ":" + parts[3], Long.parseLong(parts[4]));
                assertThat(previous).as("%s:%s:%s acknowledged twice", parts[1], parts[2], parts[3]).isNull();
                acks++;
            }
            killer.join();
        }
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return acks;
    }

    /** Every queue: offsets dense from 0, every acknowledged offset there with its bytes. */
    private void check(WritePath path, Map<String, Long> acknowledged, String label) throws IOException {
        try (Store store = Store.open(dir, OpenLogsCrashChild.config(path))) {
            assertThat(store.openLogCount()).as(label + ": logs open after recovering every one")
                    .isLessThanOrEqualTo(OpenLogsCrashChild.BUDGET + 1);
            for (String topic : OpenLogsCrashChild.TOPICS) {
                for (int queue = 0; queue < OpenLogsCrashChild.QUEUES; queue++) {
                    checkQueue(store, topic, queue, acknowledged, label);
                }
            }
        }
        assertThat(StoreVerifier.verify(dir).faults()).as(label + ": verify").isEmpty();
    }

    private static void checkQueue(Store store, String topic, int queue, Map<String, Long> acknowledged, String label) {
        long max = store.maxOffset(topic, queue);
        long offset = 0;
        while (offset < max) {
            try (ReadResult read = store.read(topic, queue, offset, 500, 4 << 20)) {
                for (StoredMessage message : read.messages()) {
                    assertThat(message.queueOffset()).as(label + ": dense offsets in " + topic + ":" + queue)
                            .isEqualTo(offset);
                    Long expected = acknowledged.get(topic + ":" + queue + ":" + offset);
                    if (expected != null) {
                        long crc = topic.equals("batches") ? CrashChild.batchCrc(message.bodyBytes())
                                : TestStores.crc(message.bodyBytes());
                        assertThat(crc).as(label + ": bytes of " + topic + ":" + queue + ":" + offset)
                                .isEqualTo(expected);
                    }
                    offset++;
                }
            }
        }
        String prefix = topic + ":" + queue + ":";
        for (String key : acknowledged.keySet()) {
            if (key.startsWith(prefix)) {
                assertThat(Long.parseLong(key.substring(prefix.length()))).as(label + ": acknowledged " + key
                        + " present").isLessThan(max);
            }
        }
    }
}
