package io.sluice.bench.race;

import io.sluice.bench.lab.Lab;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * Runs one scenario against one freshly opened target: producers on virtual threads send for a fixed time,
 * each recording the latency of every acknowledged send; then the target is asked to count and read back what
 * it stored, and the run fails if that differs from what was acknowledged. Used from one thread.
 */
public final class Race {

    private Race() {
    }

    /**
     * One workload: the durability, the body size, the producer count, and how many messages each send
     * carries (1 under SYNC: send one, wait for its ack).
     */
    public record Scenario(Durability durability, int bodyBytes, int producers, int batch) {
        /** @return a short label, e.g. {@code SYNC 1KiB x64} */
        public String label() {
            return durability + " " + (bodyBytes >= 1024 ? bodyBytes / 1024 + "KiB" : bodyBytes + "B") + " x"
                    + producers + (batch > 1 ? " batch " + batch : "");
        }
    }

    /** Opens a target on a fresh directory. */
    @FunctionalInterface
    public interface Opener {
        /** @return the opened target */
        Target open() throws Exception;
    }

    /**
     * What one run measured: acknowledged messages over the measured seconds, latency of each send in
     * nanoseconds, and process CPU seconds per wall second (cores busy).
     */
    public record Outcome(long messages, double seconds, Histogram latencyNanos, double cpuCores, int bodyBytes) {
        /** @return acknowledged messages per second */
        public double messagesPerSecond() {
            return messages / seconds;
        }

        /** @return body megabytes (10^6) per second */
        public double megabytesPerSecond() {
            return messages * (double) bodyBytes / seconds / 1e6;
        }

        /** @return a latency percentile in microseconds */
        public double micros(double percentile) {
            return latencyNanos.getValueAtPercentile(percentile) / 1000.0;
        }

        /** @return the largest latency in microseconds */
        public double maxMicros() {
            return latencyNanos.getMaxValue() / 1000.0;
        }
    }

    /**
     * Opens the target, sends for {@code warmUpSeconds} (not measured) and then for {@code seconds}, verifies
     * the count and a read-back of every queue, and closes it.
     */
    public static Outcome run(Lab lab, String name, Opener opener, Scenario scenario, double warmUpSeconds,
                              double seconds) throws Exception {
        try (Target target = opener.open()) {
            Phase warmUp = phase(target, scenario, warmUpSeconds);
            long cpuBefore = cpuNanos();
            Phase measured = phase(target, scenario, seconds);
            long cpu = cpuNanos() - cpuBefore;
            long acknowledged = warmUp.messages + measured.messages;
            long stored = target.count(acknowledged);
            lab.check(stored == acknowledged, name + " " + scenario.label() + ": stores " + stored
                    + " messages, as many as were acknowledged (" + acknowledged + ")");
            for (int queue = 0; queue < Target.QUEUES; queue++) {
                if (!warmUp.sentTo(queue) && !measured.sentTo(queue)) {
                    // No producer of this queue got a send in (a contended lock can starve one briefly).
                    continue;
                }
                byte[] first = target.first(queue);
                lab.check(first != null && first.length == scenario.bodyBytes
                                && ByteBuffer.wrap(first).getInt(0) % Target.QUEUES == queue
                                && ByteBuffer.wrap(first).getLong(4) == 0,
                        name + " " + scenario.label() + ": queue " + queue + " reads back its first message");
            }
            double wall = measured.nanos / 1e9;
            return new Outcome(measured.messages, wall, measured.latency, cpu / 1e9 / wall, scenario.bodyBytes);
        }
    }

    /** One phase: messages acknowledged in all and per producer, its length, and the merged latencies. */
    private record Phase(long messages, long[] perProducer, long nanos, Histogram latency) {
        boolean sentTo(int queue) {
            for (int producer = queue; producer < perProducer.length; producer += Target.QUEUES) {
                if (perProducer[producer] > 0) {
                    return true;
                }
            }
            return false;
        }
    }

    private static Phase phase(Target target, Scenario scenario, double seconds) throws Exception {
        int producers = scenario.producers;
        Histogram[] latencies = new Histogram[producers];
        long[] sent = new long[producers];
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> threads = new ArrayList<>(producers);
        long start = System.nanoTime();
        long end = start + (long) (seconds * 1e9);
        for (int p = 0; p < producers; p++) {
            int producer = p;
            latencies[p] = new Histogram(60_000_000_000L, 3);
            threads.add(Thread.ofVirtual().name("producer-" + p).start(() -> {
                try {
                    sent[producer] = produce(target, scenario, producer, end, latencies[producer]);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }));
        }
        for (Thread thread : threads) {
            thread.join();
        }
        long nanos = System.nanoTime() - start;
        if (failure.get() != null) {
            throw new IllegalStateException("a producer failed: " + failure.get(), failure.get());
        }
        Histogram merged = new Histogram(60_000_000_000L, 3);
        for (Histogram latency : latencies) {
            merged.add(latency);
        }
        return new Phase(Arrays.stream(sent).sum(), sent, nanos, merged);
    }

    /**
     * One producer: bodies carry the producer number and the producer's own sequence in their first 12 bytes,
     * so the first message of each queue must be some producer's sequence 0 for that queue. Bodies are reused
     * once acknowledged.
     */
    private static long produce(Target target, Scenario scenario, int producer, long end, Histogram latency)
            throws Exception {
        int queue = producer % Target.QUEUES;
        List<byte[]> batch = new ArrayList<>(scenario.batch);
        List<ByteBuffer> stamps = new ArrayList<>(scenario.batch);
        for (int i = 0; i < scenario.batch; i++) {
            byte[] body = new byte[scenario.bodyBytes];
            batch.add(body);
            stamps.add(ByteBuffer.wrap(body).putInt(0, producer));
        }
        long sequence = 0;
        long messages = 0;
        while (System.nanoTime() - end < 0) {
            for (ByteBuffer stamp : stamps) {
                stamp.putLong(4, sequence++);
            }
            long sendStart = System.nanoTime();
            target.send(queue, batch);
            latency.recordValue(Math.min(System.nanoTime() - sendStart, latency.getHighestTrackableValue()));
            messages += batch.size();
        }
        return messages;
    }

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }
}
