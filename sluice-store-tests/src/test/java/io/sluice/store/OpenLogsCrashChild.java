package io.sluice.store;

import java.io.PrintStream;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

/**
 * {@link OpenLogsCrashTest}'s child process: a store that keeps {@link #BUDGET} logs of their own open, appending with
 * SYNC flush from several threads, each to a queue drawn at random among {@link #QUEUES} of a QUEUE topic and as many
 * of a BATCHES topic, so that logs close and open again all the time; a reader thread reads queues at random too. It
 * prints {@code ACK <topic> <queue> <offset> <crc> END} for each append once its future completed. The parent kills it
 * with SIGKILL at a random moment.
 */
public final class OpenLogsCrashChild {

    /** Logs of their own the child keeps open. */
    static final int BUDGET = 4;
    /** Queues of each topic. */
    static final int QUEUES = 12;
    /** The topics: store records (keyed), and Kafka record batches. */
    static final List<String> TOPICS = List.of("many", "batches");

    private OpenLogsCrashChild() {
    }

    /** @param args directory, write path, threads, seed */
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        WritePath path = WritePath.valueOf(args[1]);
        int threads = Integer.parseInt(args[2]);
        long seed = Long.parseLong(args[3]);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);
        Store store = Store.open(dir, config(path));
        store.createTopic("many", TopicLayout.QUEUE, QUEUES);
        store.createTopic("batches", TopicLayout.BATCHES, QUEUES);
        out.println("READY");
        Thread.ofPlatform().daemon().start(() -> {
            SplittableRandom random = new SplittableRandom(seed);
            while (true) {
                String topic = TOPICS.get(random.nextInt(TOPICS.size()));
                try (ReadResult read = store.read(topic, random.nextInt(QUEUES), 0, 100, 1 << 20)) {
                    read.messages().size(); // what was read is the parent's to check, after the kill
                }
            }
        });
        for (int t = 0; t < threads; t++) {
            int producer = t;
            Thread.ofPlatform().start(() -> {
                SplittableRandom random = new SplittableRandom(seed ^ (producer + 1) * 0x9E3779B97F4A7C15L);
                for (long i = 0; ; i++) {
                    byte[] body = TestStores.body(seed, producer, i, 50 + (int) (i % 700));
                    String topic = TOPICS.get(random.nextInt(TOPICS.size()));
                    int queue = random.nextInt(QUEUES);
                    long crc;
                    AppendResult result;
                    if (topic.equals("batches")) {
                        byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, List.of(body));
                        crc = CrashChild.batchCrc(batch);
                        result = store.appendOpaque(topic, queue, MemorySegment.ofArray(batch), 1).join();
                    } else {
                        crc = TestStores.crc(body);
                        result = store.append(topic, queue,
                                Message.builder().keys(Long.toHexString(crc)).body(body).build()).join();
                    }
                    synchronized (out) {
                        out.println("ACK " + topic + " " + queue + " " + result.firstQueueOffset() + " " + crc + " END");
                    }
                }
            });
        }
    }

    /** @return the configuration the child and the parent open the store with */
    static StoreConfig config(WritePath path) {
        return TestStores.small(path, FlushMode.SYNC).maxOpenLogs(BUDGET).build();
    }
}
