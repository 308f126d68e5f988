package io.sluice.cli;

import io.sluice.broker.BrokerConfig;
import io.sluice.cluster.ClusterBroker;
import io.sluice.cluster.ClusterSpec;
import java.io.IOException;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code sluice cluster}: a cluster of brokers in this one process, on 127.0.0.1, for a try-out: each with its store
 * and Raft logs under {@code <dir>/node-<id>}, replicating partitions with Raft. Real deployments run one
 * {@code sluice broker --cluster ...} per machine (or process) instead.
 */
@Command(name = "cluster", description = "Start a cluster of brokers on 127.0.0.1 in this process, to try replication"
        + " (client ports from --port, Raft ports from --raft-port), until stopped (Ctrl-C closes it cleanly).")
final class ClusterCommand implements Callable<Integer> {

    @Mixin
    StoreOptions store;

    @Option(names = "--nodes", defaultValue = "3", description = "Brokers to start (default 3).")
    int nodes;

    @Option(names = "--port", defaultValue = "9092", description = "Client port of the first broker; the others"
            + " follow (default 9092).")
    int port;

    @Option(names = "--raft-port", defaultValue = "9192", description = "Raft port of the first broker; the others"
            + " follow (default 9192).")
    int raftPort;

    @Spec
    CommandSpec spec;

    @Override
    public Integer call() throws IOException, InterruptedException {
        if (nodes < 1 || nodes > ClusterSpec.MAX_NODES) {
            throw new IllegalArgumentException("--nodes must be between 1 and " + ClusterSpec.MAX_NODES + ", was "
                    + nodes);
        }
        StringBuilder text = new StringBuilder();
        for (int id = 1; id <= nodes; id++) {
            text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(port + id - 1).append('/')
                    .append(raftPort + id - 1);
        }
        ClusterSpec cluster = ClusterSpec.parse(text.toString());
        BrokerCommand settings = new BrokerCommand();
        settings.store = store;
        List<ClusterBroker> brokers = new ArrayList<>();
        try {
            for (ClusterSpec.Node node : cluster.nodes()) {
                brokers.add(ClusterBroker.start(store.dir.resolve("node-" + node.id()), cluster, node.id(),
                        settings.storeConfig(), BrokerConfig.defaults()));
            }
        } catch (IOException | RuntimeException e) {
            closeAll(brokers);
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            closeAll(brokers);
            stopped.countDown();
        }, "sluice-cluster-shutdown"));
        PrintWriter out = spec.commandLine().getOut();
        StringBuilder bootstrap = new StringBuilder();
        for (ClusterSpec.Node node : cluster.nodes()) {
            bootstrap.append(bootstrap.isEmpty() ? "" : ",").append(node.host()).append(':').append(node.clientPort());
        }
        out.printf("Sluice cluster of %d brokers under %s (flush %s): --bootstrap-server %s%n", nodes, store.dir,
                store.flush.name().toLowerCase(Locale.ROOT), bootstrap);
        out.printf("the same as separate processes: sluice broker --dir <dir> --node-id <id> --cluster %s%n", cluster);
        out.flush();
        stopped.await();
        return 0;
    }

    private static void closeAll(List<ClusterBroker> brokers) {
        for (ClusterBroker broker : brokers.reversed()) {
            try {
                broker.close();
            } catch (IOException | RuntimeException e) {
                System.err.println("sluice cluster: closing a broker failed: " + e);
            }
        }
    }
}
