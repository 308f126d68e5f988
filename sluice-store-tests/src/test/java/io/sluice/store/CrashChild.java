package io.sluice.store;

import java.io.PrintStream;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The crash tests' child process: appends with SYNC flush from several threads forever and prints one line
 * per acknowledged message, {@code ACK <topic> <queue> <offset> <crc> END}, only after its future completed, and
 * in retention mode one line per consumer position it registered, {@code COMMIT <offset> END}, printed just before
 * registering it. Beside them one thread replaces the configs of {@link #CONFIGS_TOPIC} again and again, each change
 * numbered, printing {@code CONFIGS <seq> SETTING END} before the call and {@code CONFIGS <seq> SET END} once it
 * returned, and another deletes the records of queue {@link #DELETE_QUEUE} below an offset trailing its acknowledged
 * end ({@code Store.deleteRecords}), printing {@code DELETE <topic> <queue> <offset> DELETING END} before the call and
 * {@code DELETE <topic> <queue> <offset> DELETED END} once it returned. The parent kills it with SIGKILL at a random
 * moment.
 */
public final class CrashChild {

    private CrashChild() {
    }

    /** The consumer group whose position the child moves in retention mode. */
    static final String GROUP = "crash-reader";
    /** A topic with one declared queue and no messages, whose configs the child replaces (the registry's changes). */
    static final String CONFIGS_TOPIC = "crash-configs";
    /** The config that numbers each change of {@link #CONFIGS_TOPIC}'s configs. */
    static final String SEQUENCE_CONFIG = "seq";
    /** The queue whose records the child deletes (no consumer group reads it, so retention mode's check holds). */
    static final int DELETE_QUEUE = 1;
    /** How far the deletions trail the queue's acknowledged end, so that most acknowledged records stay to check. */
    static final long DELETE_TRAIL = 200;

    /**
     * @param args directory, write path, threads, seed, then "plain" or "retention" (keep the log to four
     *     segments with a retention pass every 20 ms, two segments mapped, and a consumer group on queue 0
     *     whose position trails the acknowledged end by 300 messages), then optionally a {@link TopicLayout}:
     *     append to the topic {@code crash-<layout>} created so, instead of the shared topic {@code crash}
     */
    public static void main(String[] args) {
        Path dir = Path.of(args[0]);
        WritePath path = WritePath.valueOf(args[1]);
        int threads = Integer.parseInt(args[2]);
        long seed = Long.parseLong(args[3]);
        boolean retention = args.length > 4 && args[4].equals("retention");
        TopicLayout layout = args.length > 5 ? TopicLayout.valueOf(args[5]) : null;
        String topic = layout == null ? "crash" : topicOf(layout);
        PrintStream out = new PrintStream(new java.io.FileOutputStream(java.io.FileDescriptor.out), true);
        StoreConfig.Builder config = TestStores.small(path, FlushMode.SYNC);
        if (retention) {
            config.retention(RetentionPolicy.defaults().withRetentionBytes(4 * 256 * 1024).withCheckIntervalMillis(20))
                    .maxMappedSegments(2);
        }
        Store store = Store.open(dir, config.build());
        if (layout != null) {
            store.createTopic(topic, layout);
        }
        // Created by the first child; each later one goes on from the change the last one left.
        store.createTopic(CONFIGS_TOPIC, TopicLayout.QUEUE, 1, configsOf(0));
        long firstChange = Long.parseLong(store.topicConfigs(CONFIGS_TOPIC).get(SEQUENCE_CONFIG)) + 1;
        out.println("READY");
        Thread.ofPlatform().daemon().start(() -> {
            for (long change = firstChange; ; change++) {
                synchronized (out) {
                    out.println("CONFIGS " + change + " SETTING END");
                }
                store.setTopicConfigs(CONFIGS_TOPIC, configsOf(change));
                synchronized (out) {
                    out.println("CONFIGS " + change + " SET END");
                }
                java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
            }
        });
        AtomicLong acknowledgedEnd = new AtomicLong();
        AtomicLong deletableEnd = new AtomicLong();
        Thread.ofPlatform().daemon().start(() -> {
            while (true) {
                long offset = deletableEnd.get() - DELETE_TRAIL;
                if (offset > store.minOffset(topic, DELETE_QUEUE)) {
                    synchronized (out) {
                        out.println("DELETE " + topic + " " + DELETE_QUEUE + " " + offset + " DELETING END");
                    }
                    store.deleteRecords(topic, DELETE_QUEUE, offset);
                    synchronized (out) {
                        out.println("DELETE " + topic + " " + DELETE_QUEUE + " " + offset + " DELETED END");
                    }
                }
                java.util.concurrent.locks.LockSupport.parkNanos(5_000_000);
            }
        });
        if (retention) {
            Thread.ofPlatform().daemon().start(() -> {
                while (true) {
                    long position = Math.max(store.committedOffset(GROUP, "crash", 0).orElse(0),
                            acknowledgedEnd.get() - 300);
                    // Printed before registering, so the parent knows every position that may have been saved.
                    synchronized (out) {
                        out.println("COMMIT " + Math.max(0, position) + " END");
                    }
                    store.commitOffset(GROUP, "crash", 0, Math.max(0, position));
                    java.util.concurrent.locks.LockSupport.parkNanos(10_000_000);
                }
            });
        }
        AtomicLong sequence = new AtomicLong();
        for (int t = 0; t < threads; t++) {
            int producer = t;
            Thread.ofPlatform().start(() -> {
                while (true) {
                    long i = sequence.getAndIncrement();
                    byte[] body = TestStores.body(seed, producer, i, 50 + (int) (i % 2000));
                    int queue = producer % 2;
                    long crc;
                    AppendResult result;
                    if (layout == TopicLayout.BATCHES) {
                        // A BATCHES topic takes Kafka record batches: one record, one offset, each.
                        byte[] batch = KafkaBatch.of(1_700_000_000_000L + i, java.util.List.of(body));
                        crc = batchCrc(batch);
                        result = store.appendOpaque(topic, queue, java.lang.foreign.MemorySegment.ofArray(batch), 1)
                                .join();
                    } else {
                        crc = TestStores.crc(body);
                        result = store.append(topic, queue,
                                Message.builder().keys(Long.toHexString(crc)).body(body).build()).join();
                    }
                    if (queue == 0) {
                        acknowledgedEnd.accumulateAndGet(result.firstQueueOffset() + 1, Math::max);
                    } else if (queue == DELETE_QUEUE) {
                        deletableEnd.accumulateAndGet(result.firstQueueOffset() + 1, Math::max);
                    }
                    synchronized (out) {
                        out.println("ACK " + topic + " " + queue + " " + result.firstQueueOffset() + " " + crc + " END");
                    }
                }
            });
        }
    }

    /**
     * @return the configs of {@link #CONFIGS_TOPIC}'s change {@code change}: its number, a retention time, and a note
     *     whose length varies with it, so the registry's size changes from one save to the next
     */
    static java.util.Map<String, String> configsOf(long change) {
        return java.util.Map.of(SEQUENCE_CONFIG, Long.toString(change), Store.RETENTION_MS,
                Long.toString(3_600_000 + change), "note", "n".repeat((int) (change * 37 % 6000)));
    }

    /** @return the topic the child appends to for a layout */
    static String topicOf(TopicLayout layout) {
        return "crash-" + layout.name().toLowerCase(java.util.Locale.ROOT);
    }

    /** @return the CRC32C of a stored batch's bytes after its baseOffset, which the store sets */
    static long batchCrc(byte[] batch) {
        return TestStores.crc(java.util.Arrays.copyOfRange(batch, 8, batch.length));
    }
}
