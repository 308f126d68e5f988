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
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeSet;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.io.TempDir;

/**
 * Kills a child JVM that appends with SYNC flush (SIGKILL, at a random moment) again and again on the same
 * store, through every write path with every topic layout (16 rounds cover each pair once). After each kill: every
 * acknowledged message is present with its exact bytes from its queue's first offset on, queue offsets are dense,
 * the verifier finds nothing wrong, the topic whose configs the child kept replacing holds exactly those of its last
 * change that returned or of the one the kill interrupted, with its layout and queue count, and the queue whose
 * records the child kept deleting starts where its last deletion that returned or the one the kill interrupted put
 * it: never lower (deleted records do not come back), never higher (no record above it lost).
 * Rounds: {@code -Dsluice.crash.rounds} (25 by default); seed: {@code -Dsluice.crash.seed}.
 */
@Tag("slow")
@ExtendWith(NoLeaks.class)
class CrashTest {

    @TempDir
    Path dir;

    /** The highest consumer position any child registered (retention mode). */
    private long highestCommit = -1;
    /** The last change of the configs topic's configs that returned (0: its creation, before READY). */
    private long configsSet;
    /** The last change of them begun: the one the kill interrupted if above {@link #configsSet}. */
    private long configsBegun;
    /** Changes of them that returned, across the rounds. */
    private long configChanges;
    /**
     * By "topic:queue", the start of the child's last record deletion that returned and of the last it began (the one
     * the kill interrupted if higher).
     */
    private final Map<String, long[]> starts = new HashMap<>();
    /** Record deletions that returned, across the rounds. */
    private long deletions;

    @Test
    void acknowledgedMessagesSurviveSigkill() throws Exception {
        int rounds = Integer.getInteger("sluice.crash.rounds", 25);
        long seed = Long.getLong("sluice.crash.seed", System.nanoTime());
        System.out.println("CrashTest seed " + seed + ", " + rounds + " rounds");
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, Long> acknowledged = new HashMap<>();
        for (int round = 0; round < rounds; round++) {
            WritePath path = WritePath.values()[round % WritePath.values().length];
            TopicLayout layout = layoutOf(round);
            long killAfterMillis = 50 + random.nextLong(400);
            int acks = runAndKill(path, 4, seed + round, killAfterMillis, acknowledged, "plain", layout.name());
            System.out.printf("crash round %d: %s, %s layout, killed %d ms after ready, %d acks, %d acknowledged in all%n",
                    round, path, layout, killAfterMillis, acks, acknowledged.size());
            checkStore(acknowledged, "round " + round + " (" + path + ", " + layout + " layout, killed " + killAfterMillis
                    + " ms after ready, " + acks + " acks this round)", false);
        }
        // A layout whose appends all failed in the child would leave its rounds checking nothing.
        Set<String> acknowledgedTopics = new TreeSet<>();
        acknowledged.keySet().forEach(key -> acknowledgedTopics.add(key.split(":")[0]));
        Set<String> used = new TreeSet<>();
        for (int round = 0; round < rounds; round++) {
            used.add(CrashChild.topicOf(layoutOf(round)));
        }
        assertThat(acknowledgedTopics).as("topics with acknowledged appends").isEqualTo(used);
        assertThat(configChanges).as("config changes that returned").isPositive();
        assertThat(deletions).as("record deletions that returned").isPositive();
    }

    /** A round's layout: each layout for as many rounds as there are write paths, so 16 rounds cover every pair. */
    private static TopicLayout layoutOf(int round) {
        return TopicLayout.values()[round / WritePath.values().length % TopicLayout.values().length];
    }

    /**
     * The same kills while retention deletes segments every 20 ms and a consumer group's position trails the
     * acknowledged end: messages may go only by retention (below each queue's first offset), never below
     * the group's saved position, and everything from the first offset on is intact.
     * Rounds: {@code -Dsluice.crash.retention.rounds} (8 by default), more until retention has deleted something.
     */
    @Test
    void retentionUnderSigkillLosesNothingAConsumerStillNeeds() throws Exception {
        int rounds = Integer.getInteger("sluice.crash.retention.rounds", 8);
        long seed = Long.getLong("sluice.crash.seed", System.nanoTime());
        System.out.println("CrashTest retention seed " + seed + ", " + rounds + " rounds");
        SplittableRandom random = new SplittableRandom(seed);
        Map<String, Long> acknowledged = new HashMap<>();
        boolean deleted = false;
        // Retention deletes only once the log outgrows its bytes limit, which takes more rounds on a busy machine
        // (fewer appends before each kill): rounds go on, up to three times as many, until it has deleted.
        for (int round = 0; round < rounds || !deleted && round < 3 * rounds; round++) {
            WritePath path = WritePath.values()[round % WritePath.values().length];
            long killAfterMillis = 300 + random.nextLong(500);
            int acks = runAndKill(path, 4, seed + round, killAfterMillis, acknowledged, "retention", null);
            String label = "retention round " + round + " (" + path + ", killed " + killAfterMillis + " ms after ready, "
                    + acks + " acks this round)";
            checkStore(acknowledged, label, true);
            try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
                long min = store.minOffset("crash", 0);
                deleted |= min > 0;
                OptionalLong saved = store.committedOffset(CrashChild.GROUP, "crash", 0);
                if (saved.isPresent()) {
                    assertThat(min).as(label + ": first offset against the group's saved position")
                            .isLessThanOrEqualTo(saved.getAsLong());
                    // After the crash the group resumes at or before a position it registered: it may read
                    // messages again, never skip one.
                    assertThat(saved.getAsLong()).as(label + ": saved position against the highest registered")
                            .isLessThanOrEqualTo(highestCommit);
                }
                System.out.printf("%s: queue 0 keeps offsets %d.. (group at %s)%n", label, min, saved);
            }
        }
        assertThat(deleted).as("retention deleted something in some round").isTrue();
        assertThat(configChanges).as("config changes that returned").isPositive();
        assertThat(deletions).as("record deletions that returned").isPositive();
    }

    private int runAndKill(WritePath path, int threads, long seed, long killAfterMillis, Map<String, Long> acknowledged,
                           String mode, String layout) throws IOException, InterruptedException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new java.util.ArrayList<>(List.of(java, "-ea", "--enable-native-access=ALL-UNNAMED",
                "-Xmx256m", "-cp", System.getProperty("java.class.path"), CrashChild.class.getName(),
                dir.toString(), path.name(), Integer.toString(threads), Long.toString(seed), mode));
        if (layout != null) {
            command.add(layout);
        }
        Process child = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        int acks = 0;
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(child.getInputStream(), StandardCharsets.US_ASCII))) {
            String ready = lines.readLine();
            assertThat(ready).as("child started").isEqualTo("READY");
            Thread killer = Thread.ofPlatform().start(() -> {
                try {
                    Thread.sleep(killAfterMillis);
                } catch (InterruptedException e) {
                    return;
                }
                // SIGKILL on Linux; the handle, unlike Process.destroyForcibly, leaves our pipe open so every
                // acknowledgement the child printed before dying is still read.
                child.toHandle().destroyForcibly();
            });
            String line;
            while ((line = lines.readLine()) != null) {
                String[] parts = line.split(" ");
                if (parts.length == 4 && parts[0].equals("CONFIGS") && parts[3].equals("END")) {
                    long change = Long.parseLong(parts[1]);
                    if (parts[2].equals("SET")) {
                        configsSet = change;
                        configChanges++;
                    } else {
                        configsBegun = change;
                    }
                    continue;
                }
                if (parts.length == 6 && parts[0].equals("DELETE") && parts[5].equals("END")) {
                    long[] start = starts.computeIfAbsent(parts[1] + ":" + parts[2], key -> new long[2]);
                    long offset = Long.parseLong(parts[3]);
                    if (parts[4].equals("DELETED")) {
                        start[0] = Math.max(start[0], offset);
                        deletions++;
                    } else {
                        start[1] = Math.max(start[1], offset);
                    }
                    continue;
                }
                if (parts.length == 3 && parts[0].equals("COMMIT") && parts[2].equals("END")) {
                    highestCommit = Math.max(highestCommit, Long.parseLong(parts[1]));
                    continue;
                }
                if (parts.length != 6 || !parts[0].equals("ACK") || !parts[5].equals("END")) {
                    continue; // the line the kill cut short
                }
                String key = parts[1] + ":" + parts[2] + ":" + parts[3];
                Long previous = acknowledged.put(key, Long.parseLong(parts[4]));
                assertThat(previous).as("offset %s acknowledged twice", key).isNull();
                acks++;
            }
            killer.join();
        }
        assertThat(child.waitFor(30, TimeUnit.SECONDS)).isTrue();
        return acks;
    }

    /** @param retained true if retention may have deleted the oldest messages: check from each queue's first offset */
    private void checkStore(Map<String, Long> acknowledged, String round, boolean retained) throws IOException {
        Set<String> topics = new TreeSet<>();
        acknowledged.keySet().forEach(key -> topics.add(key.split(":")[0]));
        try (Store store = Store.open(dir, TestStores.small(WritePath.MMAP, FlushMode.SYNC).build())) {
            Map<String, Long> first = new HashMap<>();
            for (String topic : topics) {
                for (int queue = 0; queue < 2; queue++) {
                    first.put(topic + ":" + queue, checkQueue(store, topic, queue, acknowledged, round, retained));
                }
            }
            checkConfigs(store, round);
            // Each message's key is its body's CRC in hex: a sample of acknowledged ones must be found by key.
            int sampled = 0;
            for (Map.Entry<String, Long> ack : acknowledged.entrySet()) {
                String[] parts = ack.getKey().split(":");
                if (Long.parseLong(parts[2]) < first.get(parts[0] + ":" + parts[1])) {
                    continue; // deleted by retention
                }
                if (parts[0].equals(CrashChild.topicOf(TopicLayout.BATCHES))) {
                    continue; // a batch log has no key index
                }
                if (sampled++ == 200) {
                    break;
                }
                try (LookupResult found = store.lookupByKey(parts[0], Long.toHexString(ack.getValue()), 10, 0,
                        Long.MAX_VALUE)) {
                    assertThat(found.messages()).as(round + ": lookup of " + ack.getKey()).anySatisfy(m -> {
                        assertThat(m.queueId()).isEqualTo(Integer.parseInt(parts[1]));
                        assertThat(m.queueOffset()).isEqualTo(Long.parseLong(parts[2]));
                    });
                }
            }
        }
        StoreVerifier.Report report = StoreVerifier.verify(dir);
        assertThat(report.faults()).as(round + ": verify").isEmpty();
    }

    /**
     * The configs topic keeps its layout and queue count, and holds exactly the configs of its last change that
     * returned or of the one the kill interrupted: the registry is replaced whole, never mixed, never older. The next
     * child goes on from what it holds.
     */
    private void checkConfigs(Store store, String round) {
        String topic = CrashChild.CONFIGS_TOPIC;
        assertThat(store.layout(topic)).as(round + ": layout of " + topic).isEqualTo(TopicLayout.QUEUE);
        assertThat(store.queueCount(topic)).as(round + ": queue count of " + topic).isEqualTo(1);
        Map<String, String> found = store.topicConfigs(topic);
        List<Map<String, String>> allowed = configsBegun > configsSet
                ? List.of(CrashChild.configsOf(configsSet), CrashChild.configsOf(configsBegun))
                : List.of(CrashChild.configsOf(configsSet));
        assertThat(found).as(round + ": configs of " + topic + " (change " + found.get(CrashChild.SEQUENCE_CONFIG)
                + "; last returned " + configsSet + ", last begun " + configsBegun + ")").isIn(allowed);
        System.out.printf("%s: configs at change %s (last returned %d, last begun %d)%n", round,
                found.get(CrashChild.SEQUENCE_CONFIG), configsSet, configsBegun);
        configsSet = Long.parseLong(found.get(CrashChild.SEQUENCE_CONFIG));
        configsBegun = configsSet;
    }

    /**
     * Reads a queue from its first offset: offsets dense, acknowledged bytes intact, every acknowledged offset
     * at or after the first present. The first offset is at least the start of the child's last record deletion that
     * returned and, without retention, at most that of the last it began. The next round goes on from it.
     *
     * @return the queue's first offset
     */
    private long checkQueue(Store store, String topic, int queue, Map<String, Long> acknowledged, String round,
                            boolean retained) {
        long max = store.maxOffset(topic, queue);
        long first = store.minOffset(topic, queue);
        long[] start = starts.computeIfAbsent(topic + ":" + queue, key -> new long[2]);
        String told = " (last deletion that returned below " + start[0] + ", last begun below " + start[1] + ")";
        assertThat(first).as(round + ": first offset of " + topic + ":" + queue + told)
                .isGreaterThanOrEqualTo(start[0]);
        if (!retained) {
            assertThat(first).as(round + ": first offset of " + topic + ":" + queue + " without retention" + told)
                    .isLessThanOrEqualTo(Math.max(start[0], start[1]));
        }
        if (queue == CrashChild.DELETE_QUEUE) {
            System.out.printf("%s: %s:%d starts at %d%s%n", round, topic, queue, first, told);
        }
        if (first >= start[1]) {
            start[0] = Math.max(start[0], start[1]); // the deletion the kill interrupted had been saved
        }
        start[1] = start[0];
        long offset = first;
        while (offset < max) {
            try (ReadResult result = store.read(topic, queue, offset, 500, 4 << 20)) {
                for (StoredMessage m : result.messages()) {
                    assertThat(m.queueOffset()).as(round + ": dense offsets").isEqualTo(offset);
                    Long expected = acknowledged.get(topic + ":" + queue + ":" + offset);
                    if (expected != null) {
                        long crc = topic.equals(CrashChild.topicOf(TopicLayout.BATCHES))
                                ? CrashChild.batchCrc(m.bodyBytes()) : TestStores.crc(m.bodyBytes());
                        assertThat(crc).as(round + ": bytes of " + topic + ":" + queue + ":" + offset)
                                .isEqualTo(expected);
                    }
                    offset++;
                }
            }
        }
        String prefix = topic + ":" + queue + ":";
        for (String key : acknowledged.keySet()) {
            if (key.startsWith(prefix)) {
                assertThat(Long.parseLong(key.substring(prefix.length()))).as(round + ": acknowledged " + key
                        + " present").isLessThan(max);
            }
        }
        return first;
    }

}
