package io.sluice.cli;

import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.broker.kafka.KafkaBatches;
import io.sluice.store.StoredMessage;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/** {@code sluice consume}: prints a queue's messages from an offset to its current end. */
@Command(name = "consume", description = "Print a queue's messages from --from to the end.")
final class ConsumeCommand implements Callable<Integer> {

    @Mixin
    ExistingStore location;

    @Option(names = "--topic", required = true, description = "Topic name.")
    String topic;

    @Option(names = "--queue", required = true, description = "Queue id.")
    int queue;

    @Option(names = "--from", defaultValue = "0", description = "First offset (default 0).")
    long from;

    @Option(names = "--max", defaultValue = "9223372036854775807", description = "Most messages to print.")
    long max;

    @Option(names = "--group", description = "Consumer group: start at its registered position (if later than"
            + " --from) and register the position after the last message printed, which retention then respects.")
    String group;

    @Option(names = "--json", description = "One JSON object per message on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        Path dir = location.require();
        PrintWriter out = spec.commandLine().getOut();
        long printed = 0;
        // Reading only: nothing is created, recovered or deleted. Registering a group's position writes, so then the
        // store is opened for writing, with its own settings (retention and segment size are the store's).
        try (Store store = group == null ? Store.openReadOnly(dir, StoreConfig.defaults())
                : Store.open(dir, StoreConfig.defaults())) {
            long start = from;
            if (group != null) {
                start = Math.max(start, store.committedOffset(group, topic, queue).orElse(0));
            }
            long offset = Math.max(start, store.minOffset(topic, queue));
            long next = offset;
            while (printed < max) {
                try (ReadResult result = store.read(topic, queue, offset, 1000, 16 << 20)) {
                    if (result.messages().isEmpty()) {
                        break;
                    }
                    for (StoredMessage m : result.messages()) {
                        if (m.opaque()) {
                            // A Kafka producer's batch, kept as sent: its records, from the offset asked for.
                            for (KafkaBatches.DecodedRecord r : KafkaBatches.decode(m.bodyBuffer())) {
                                if (r.offset() < offset || printed >= max) {
                                    continue;
                                }
                                printed++;
                                print(out, m, r);
                                next = r.offset() + 1;
                            }
                            continue;
                        }
                        if (printed++ >= max) {
                            break;
                        }
                        print(out, m);
                        next = m.queueOffset() + 1;
                    }
                    offset = result.nextOffset();
                }
            }
            if (group != null) {
                store.commitOffset(group, topic, queue, next);
            }
        }
        out.flush();
        return 0;
    }

    /** A record of a Kafka batch: its key as the key, its headers (as UTF-8) as properties. */
    private void print(PrintWriter out, StoredMessage batch, KafkaBatches.DecodedRecord r) {
        byte[] value = r.value() == null ? new byte[0] : r.value();
        if (json) {
            java.util.Map<String, String> headers = new java.util.LinkedHashMap<>();
            r.headers().forEach((name, bytes) -> headers.put(name, bytes == null ? ""
                    : new String(bytes, java.nio.charset.StandardCharsets.UTF_8)));
            out.println(Bodies.put(new Json().put("topic", batch.topic()).put("queue", batch.queueId())
                    .put("offset", r.offset()).put("logPosition", batch.logPosition())
                    .put("storeTimestamp", batch.storeTimestamp()).put("bornTimestamp", r.timestamp())
                    .put("keys", r.key() == null ? java.util.List.of()
                            : java.util.List.of(new String(r.key(), java.nio.charset.StandardCharsets.UTF_8)))
                    .put("tag", "").put("properties", headers), value));
        } else {
            out.printf("%d\t%s%n", r.offset(), Bodies.forLine(value));
        }
    }

    private void print(PrintWriter out, StoredMessage m) {
        if (json) {
            out.println(Bodies.put(new Json().put("topic", m.topic()).put("queue", m.queueId())
                    .put("offset", m.queueOffset()).put("logPosition", m.logPosition())
                    .put("storeTimestamp", m.storeTimestamp()).put("bornTimestamp", m.bornTimestamp())
                    .put("keys", m.keys()).put("tag", m.tag()).put("properties", m.properties()), m.bodyBytes()));
        } else {
            out.printf("%d\t%s%n", m.queueOffset(), Bodies.forLine(m.bodyBytes()));
        }
    }
}
