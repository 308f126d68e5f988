package io.sluice.cli;

import io.sluice.store.LookupResult;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoredMessage;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/** {@code sluice lookup}: prints the messages of a topic that carry a key, newest first, found through the key index. */
@Command(name = "lookup", description = "Print a topic's messages carrying --key, newest first (key index, no scan).")
final class LookupCommand implements Callable<Integer> {

    @Mixin
    ExistingStore location;

    @Option(names = "--topic", required = true, description = "Topic name.")
    String topic;

    @Option(names = "--key", required = true, description = "The key.")
    String key;

    @Option(names = "--max", defaultValue = "32", description = "Most messages to print (default 32).")
    int max;

    @Option(names = "--from-millis", defaultValue = "0", description = "Earliest store time, epoch ms (default 0).")
    long fromMillis;

    @Option(names = "--to-millis", defaultValue = "9223372036854775807", description = "Latest store time, epoch ms.")
    long toMillis;

    @Option(names = "--json", description = "One JSON object per message on stdout.")
    boolean json;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() {
        Path dir = location.require();
        PrintWriter out = spec.commandLine().getOut();
        try (Store store = Store.openReadOnly(dir, StoreConfig.defaults());
             LookupResult found = lookup(store)) {
            for (StoredMessage m : found.messages()) {
                if (json) {
                    out.println(Bodies.put(new Json().put("topic", m.topic()).put("queue", m.queueId())
                            .put("offset", m.queueOffset()).put("logPosition", m.logPosition())
                            .put("storeTimestamp", m.storeTimestamp()).put("keys", m.keys()), m.bodyBytes()));
                } else {
                    out.printf("%d\t%d\t%s%n", m.queueId(), m.queueOffset(), Bodies.forLine(m.bodyBytes()));
                }
            }
        }
        out.flush();
        return 0;
    }

    private LookupResult lookup(Store store) {
        try {
            return store.lookupByKey(topic, key, max, fromMillis, toMillis);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }
}
