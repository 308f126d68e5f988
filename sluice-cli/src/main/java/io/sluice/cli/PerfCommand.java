package io.sluice.cli;

import io.sluice.store.CacheStats;
import io.sluice.store.FlushMode;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.TopicLayout;
import io.sluice.store.StoredMessage;
import io.sluice.store.TransferResult;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.UncheckedIOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;
import org.HdrHistogram.Histogram;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sluice perf}: append throughput and latency for one store in this process, then optionally read it
 * all back with one consumer. ASYNC latency is the append call; SYNC latency is until the ack. The clock starts
 * after one acknowledged warm-up append, once the store's first segment exists.
 */
@Command(name = "perf", description = "Measure append throughput and latency (HdrHistogram), and read-back speed.")
final class PerfCommand implements Callable<Integer> {

    @Mixin
    StoreOptions store;

    @Option(names = "--size", defaultValue = "1024", description = "Body bytes (default 1024).")
    int size;

    @Option(names = "--seconds", defaultValue = "10", description = "Append phase length (default 10).")
    int seconds;

    @Option(names = "--producers", defaultValue = "1", description = "Producer threads (default 1; virtual under SYNC).")
    int producers;

    @Option(names = "--queues", defaultValue = "1", description = "Queues the producers spread over (default 1).")
    int queues;

    @Option(names = "--read", description = "Read everything back afterwards with one consumer.")
    boolean read;

    @Option(names = "--read-tail", description = "With --read: read only the newest messages, as many as half"
            + " the read cache holds (the tail consumers read), after " + TAIL_WARM_UP_PASSES + " untimed passes,"
            + " and report the cache's hit rate.")
    boolean readTail;

    static final int TAIL_WARM_UP_PASSES = 5;

    @Option(names = "--layout", defaultValue = "shared", converter = StoreOptions.LayoutConverter.class,
            description = "Layout of the perf topic: shared (default), topic or queue (a log per queue, so producers"
            + " on different queues append to different logs).")
    TopicLayout layout;

    @Option(names = "--transfer", description = "Afterwards, reopen the store and send every queue to a loopback"
            + " socket with transferTo (sendfile), timed.")
    boolean transfer;

    @Option(names = "--keyed", description = "Message i of producer p carries the key p-i; afterwards, time --lookups"
            + " lookups of random keys.")
    boolean keyed;

    @Option(names = "--lookups", defaultValue = "100000", description = "Key lookups timed after a --keyed run (default 100000).")
    int lookups;

    @Option(names = "--json", description = "One JSON object on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    /** Messages each producer appended (written by that producer's thread, read after it was joined). */
    private long[] appendedBy;

    @Override
    public Integer call() throws Exception {
        DemoCommand.recreate(store.dir);
        StoreConfig config = store.config();
        Histogram latency = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        LongAdder appended = new LongAdder();
        double appendSeconds;
        double readGigabytesPerSecond = Double.NaN;
        long readMessages = 0;
        long readDigest = 0;
        Histogram lookupLatency = null;
        long[] transferResult = null;
        String cacheLine = null;
        try (Store s = Store.open(store.dir, config)) {
            // One acknowledged append before the clock starts, so the first segment exists (a fresh store
            // creates it on first use, and zero-filling 1 GiB takes seconds) and only steady state is timed.
            s.createTopic("perf", layout);
            s.append("perf-warmup", 0, Message.of(new byte[1])).join();
            for (int queue = 0; queue < queues; queue++) {
                // In the QUEUE layout each queue's log (and its first segment) is created by its first append.
                s.append("perf", queue, Message.of(new byte[1])).join();
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(seconds);
            long started = System.nanoTime();
            appendedBy = new long[producers];
            List<Thread> threads = new ArrayList<>();
            List<Histogram> histograms = new ArrayList<>();
            for (int p = 0; p < producers; p++) {
                Histogram own = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
                histograms.add(own);
                int queue = p % queues;
                int id = p;
                Runnable producer = () -> produce(s, id, queue, deadline, own, appended, config.flushMode());
                threads.add(config.flushMode() == FlushMode.SYNC ? Thread.ofVirtual().start(producer)
                        : Thread.ofPlatform().start(producer));
            }
            for (Thread t : threads) {
                t.join();
            }
            appendSeconds = (System.nanoTime() - started) / 1e9;
            histograms.forEach(latency::add);
            if (keyed) {
                lookupLatency = timeLookups(s);
            }
            if (read) {
                if (readTail) {
                    // The tail is small (half the cache): read it a few times first, so the timed pass runs
                    // compiled code rather than the interpreter.
                    for (int pass = 0; pass < TAIL_WARM_UP_PASSES; pass++) {
                        readAll(s);
                    }
                }
                CacheStats before = s.status().cache();
                long readStarted = System.nanoTime();
                long[] result = readAll(s);
                readMessages = result[0];
                readGigabytesPerSecond = result[1] / ((System.nanoTime() - readStarted) / 1e9) / 1e9;
                readDigest = result[2];
                CacheStats after = s.status().cache();
                if (after != null) {
                    long hits = after.hits() - before.hits();
                    long misses = after.misses() - before.misses();
                    cacheLine = String.format("read cache during the read: %,d hits, %,d misses (hit rate %.1f%%),"
                            + " %,d pages loaded, %,d prefetched", hits, misses,
                            hits + misses == 0 ? 0 : 100.0 * hits / (hits + misses), after.loads() - before.loads(),
                            after.prefetches() - before.prefetches());
                }
            }
        }
        if (transfer) {
            // Reopened, so the close has forced everything: the transfer reads settled page-cache pages, not
            // pages still under writeback from the append phase.
            try (Store s = Store.open(store.dir, config)) {
                transferResult = transferAll(s);
            }
        }
        report(appended.sum(), appendSeconds, latency, readMessages, readGigabytesPerSecond, readDigest);
        if (cacheLine != null) {
            spec.commandLine().getOut().println(cacheLine);
            spec.commandLine().getOut().flush();
        }
        if (transferResult != null) {
            spec.commandLine().getOut().printf("transferTo a loopback socket: %,d bytes in %.2f s = %.2f GB/s (receiver"
                    + " counted %,d bytes)%n", transferResult[0], transferResult[1] / 1e9,
                    transferResult[0] / (transferResult[1] / 1e9) / 1e9, transferResult[2]);
            spec.commandLine().getOut().flush();
        }
        if (lookupLatency != null) {
            spec.commandLine().getOut().printf("key lookups: %,d random keys among %,d keyed messages: p50 %.1f  p99 %.1f"
                    + "  p99.9 %.1f  max %.1f us%n", lookupLatency.getTotalCount(), appended.sum(),
                    lookupLatency.getValueAtPercentile(50) / 1000.0, lookupLatency.getValueAtPercentile(99) / 1000.0,
                    lookupLatency.getValueAtPercentile(99.9) / 1000.0, lookupLatency.getMaxValue() / 1000.0);
            spec.commandLine().getOut().flush();
        }
        DemoCommand.recreate(store.dir);
        return 0;
    }

    /**
     * Sends every queue from offset 0 to a loopback socket that a second thread drains and counts.
     *
     * @return {bytes sent, nanoseconds, bytes the receiver counted}
     */
    private long[] transferAll(Store s) throws Exception {
        try (ServerSocketChannel server = ServerSocketChannel.open()) {
            server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
            CompletableFuture<Long> received = CompletableFuture.supplyAsync(() -> {
                try (SocketChannel peer = server.accept()) {
                    ByteBuffer buffer = ByteBuffer.allocateDirect(1 << 20);
                    long total = 0;
                    for (int n = peer.read(buffer); n >= 0; n = peer.read(buffer.clear())) {
                        total += n;
                    }
                    return total;
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            });
            long sent = 0;
            long started = System.nanoTime();
            try (SocketChannel socket = SocketChannel.open(server.getLocalAddress())) {
                for (int queue = 0; queue < queues; queue++) {
                    long end = s.maxOffset("perf", queue);
                    for (long offset = 0; offset < end; ) {
                        TransferResult result = s.transferTo("perf", queue, offset, 64L << 20, socket);
                        sent += result.bytes();
                        offset = result.nextOffset();
                    }
                }
            }
            long nanos = System.nanoTime() - started;
            return new long[] {sent, nanos, received.get()};
        }
    }

    /** @return lookup latencies of random keys; every lookup must find exactly its one message */
    private Histogram timeLookups(Store s) {
        Histogram histogram = new Histogram(TimeUnit.SECONDS.toNanos(10), 3);
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        for (int n = 0; n < lookups; n++) {
            int producer = random.nextInt(producers);
            // Producers stop at the same deadline with different counts: pick among this one's own keys.
            String key = producer + "-" + random.nextLong(Math.max(1, appendedBy[producer]));
            long t0 = System.nanoTime();
            try (var found = s.lookupByKey("perf", key, 4, 0, Long.MAX_VALUE)) {
                histogram.recordValue(Math.min(System.nanoTime() - t0, histogram.getHighestTrackableValue()));
                if (found.messages().size() != 1 || !found.messages().getFirst().keys().contains(key)) {
                    throw new IllegalStateException("lookup of " + key + " found " + found.messages().size()
                            + " messages instead of exactly its own");
                }
            }
        }
        return histogram;
    }

    private void produce(Store s, int producer, int queue, long deadline, Histogram latency, LongAdder appended,
                         FlushMode mode) {
        byte[] body = new byte[size];
        java.util.Arrays.fill(body, (byte) 7);
        Message message = Message.builder().bornTimestamp(0).body(body).build();
        long count = 0;
        while ((count & 255) != 0 || System.nanoTime() < deadline) {
            Message next = keyed ? Message.builder().bornTimestamp(0).keys(producer + "-" + count).body(body).build()
                    : message;
            long t0 = System.nanoTime();
            var future = s.append("perf", queue, next);
            if (mode == FlushMode.SYNC) {
                future.join();
            }
            latency.recordValue(Math.min(System.nanoTime() - t0, latency.getHighestTrackableValue()));
            count++;
        }
        appended.add(count);
        appendedBy[producer] = count;
    }

    /**
     * @return [messages, body bytes, XOR of every body's longs]; the XOR is reported so the JIT cannot drop
     *     the reads
     */
    private long[] readAll(Store s) {
        long messages = 0;
        long bytes = 0;
        long sink = 0;
        for (int queue = 0; queue < queues; queue++) {
            long offset = 0;
            if (readTail) {
                // The newest messages that fit in half the read cache: what tail consumers read.
                long perQueue = s.config().cacheBytes() / 2 / queues / (size + 64);
                offset = Math.max(0, s.maxOffset("perf", queue) - perQueue);
            }
            while (true) {
                try (ReadResult r = s.read("perf", queue, offset, 4096, 32 << 20)) {
                    if (r.messages().isEmpty()) {
                        break;
                    }
                    for (StoredMessage m : r.messages()) {
                        MemorySegment body = m.body();
                        long n = body.byteSize() / 8;
                        for (long i = 0; i < n; i++) {
                            sink ^= body.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i);
                        }
                        bytes += body.byteSize();
                        messages++;
                    }
                    offset = r.nextOffset();
                }
            }
        }
        return new long[] {messages, bytes, sink};
    }

    private void report(long messages, double appendSeconds, Histogram latency, long readMessages, double readGbps,
                        long readDigest) {
        PrintWriter out = spec.commandLine().getOut();
        double rate = messages / appendSeconds;
        double us = 1000.0;
        if (json) {
            out.println(new Json().put("flush", store.flush).put("writePath", store.writePath).put("size", size)
                    .put("producers", producers).put("messages", messages).put("seconds", appendSeconds)
                    .put("messagesPerSecond", Math.round(rate)).put("megabytesPerSecond", Math.round(rate * size / 1e6))
                    .put("p50us", latency.getValueAtPercentile(50) / us).put("p99us", latency.getValueAtPercentile(99) / us)
                    .put("p999us", latency.getValueAtPercentile(99.9) / us).put("maxUs", latency.getMaxValue() / us)
                    .put("readMessages", readMessages).put("readGBps", Double.isNaN(readGbps) ? null : readGbps)
                    .put("readDigest", Long.toHexString(readDigest)));
        } else {
            out.printf("%s %s, %d B bodies, %d producer(s): %,d messages in %.2f s = %,.0f msg/s (%.0f MB/s)%n",
                    store.flush, store.writePath, size, producers, messages, appendSeconds, rate, rate * size / 1e6);
            out.printf("latency us: p50 %.1f  p99 %.1f  p99.9 %.1f  max %.1f%n", latency.getValueAtPercentile(50) / us,
                    latency.getValueAtPercentile(99) / us, latency.getValueAtPercentile(99.9) / us, latency.getMaxValue() / us);
            if (!Double.isNaN(readGbps)) {
                out.printf("read back %,d messages with 1 consumer: %.2f GB/s of bodies (digest %x)%n", readMessages,
                        readGbps, readDigest);
            }
        }
        out.flush();
    }
}
