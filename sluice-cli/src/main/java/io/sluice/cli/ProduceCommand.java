package io.sluice.cli;

import io.sluice.store.AppendResult;
import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.TopicLayout;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayDeque;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sluice produce}: appends generated messages, or one message per line of standard input. */
@Command(name = "produce", description = "Append messages: --count N generated bodies of --size bytes, or stdin lines.")
final class ProduceCommand implements Callable<Integer> {

    /** Appends kept in flight so SYNC group commit has company to batch with. */
    private static final int IN_FLIGHT = 1024;

    @Mixin
    StoreOptions store;

    @Option(names = "--topic", required = true, description = "Topic name.")
    String topic;

    @Option(names = "--queue", defaultValue = "0", description = "Queue id (default 0).")
    int queue;

    @Option(names = "--count", description = "Generate this many messages instead of reading stdin.")
    Long count;

    @Option(names = "--size", defaultValue = "1024", description = "Body size of generated messages (default 1024).")
    int size;

    @Option(names = "--layout", converter = StoreOptions.LayoutConverter.class, description = "For a new topic:"
            + " shared (one log for all such topics, the default), topic (a log of its own) or queue (a log per queue).")
    TopicLayout layout;

    @Option(names = "--keyed", description = "Message i (from 0, in this run) carries the key key-<i>.")
    boolean keyed;

    @Option(names = "--json", description = "One JSON object per line on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    private Message message(long i, byte[] body) {
        return keyed ? Message.builder().keys("key-" + i).body(body).build() : Message.of(body);
    }

    @Override
    public Integer call() throws Exception {
        if (count != null && count < 0 || size < 0) {
            throw new ParameterException(spec.commandLine(), "--count and --size must not be negative");
        }
        store.refuseClusterStore("appending outside them");
        PrintWriter out = spec.commandLine().getOut();
        AtomicLong acknowledged = new AtomicLong();
        long started = System.nanoTime();
        ScheduledExecutorService reporter = Executors.newSingleThreadScheduledExecutor(
                r -> Thread.ofPlatform().daemon(true).name("produce-progress").unstarted(r));
        reporter.scheduleAtFixedRate(() -> report(out, "progress", acknowledged.get(), started, null), 1, 1,
                TimeUnit.SECONDS);
        Throwable failure = null;
        try (Store s = Store.open(store.dir, store.config())) {
            if (layout != null) {
                s.createTopic(topic, layout);
            }
            ArrayDeque<CompletableFuture<AppendResult>> inFlight = new ArrayDeque<>();
            if (count != null) {
                SplittableRandom random = new SplittableRandom(42);
                byte[] body = new byte[size];
                for (long i = 0; i < count; i++) {
                    random.nextBytes(body);
                    track(inFlight, s.append(topic, queue, message(i, body.clone())), acknowledged);
                }
            } else {
                BufferedReader lines = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
                String line;
                for (long i = 0; (line = lines.readLine()) != null; i++) {
                    track(inFlight, s.append(topic, queue, message(i, line.getBytes(StandardCharsets.UTF_8))),
                            acknowledged);
                }
            }
            while (!inFlight.isEmpty()) {
                inFlight.poll().join();
                acknowledged.incrementAndGet();
            }
        } catch (RuntimeException e) {
            failure = e instanceof java.util.concurrent.CompletionException && e.getCause() != null ? e.getCause() : e;
        } finally {
            reporter.shutdownNow();
        }
        // Always the final count of acknowledged messages, also when an append failed part-way.
        report(out, "summary", acknowledged.get(), started, failure);
        if (failure == null) {
            return 0;
        }
        spec.commandLine().getErr().println("sluice produce: " + failure.getMessage() + " (" + acknowledged.get()
                + " messages were acknowledged before it)");
        return failure instanceof IllegalArgumentException ? 2 : 1;
    }

    private static void track(ArrayDeque<CompletableFuture<AppendResult>> inFlight, CompletableFuture<AppendResult> future,
                              AtomicLong acknowledged) {
        inFlight.add(future);
        while (inFlight.size() > IN_FLIGHT || (!inFlight.isEmpty() && inFlight.peek().isDone())) {
            inFlight.poll().join();
            acknowledged.incrementAndGet();
        }
    }

    private synchronized void report(PrintWriter out, String kind, long acked, long started, Throwable failure) {
        double seconds = (System.nanoTime() - started) / 1e9;
        double rate = seconds > 0 ? acked / seconds : 0;
        if (json) {
            Json line = new Json().put("event", kind).put("acknowledged", acked)
                    .put("seconds", Math.round(seconds * 1000) / 1000.0).put("messagesPerSecond", Math.round(rate))
                    .put("topic", topic).put("queue", queue).put("dir", store.dir.toAbsolutePath().toString());
            out.println(failure == null ? line : line.put("error", String.valueOf(failure.getMessage())));
        } else if (kind.equals("summary")) {
            out.printf("%s %,d messages to %s-%d in %.2f s (%,.0f msg/s, %s, %s) into %s%n",
                    failure == null ? "produced" : "acknowledged", acked, topic, queue, seconds, rate, store.flush,
                    store.writePath, store.dir.toAbsolutePath());
        } else {
            out.printf("acknowledged %,d (%,.0f msg/s)%n", acked, rate);
        }
        out.flush();
    }
}
