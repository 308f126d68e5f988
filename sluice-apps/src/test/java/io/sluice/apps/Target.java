package io.sluice.apps;

import io.sluice.broker.Broker;
import io.sluice.broker.BrokerConfig;
import io.sluice.broker.CleanerSettings;
import io.sluice.cluster.ClusterBroker;
import io.sluice.cluster.ClusterSpec;
import io.sluice.store.FlushMode;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import java.io.IOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Path;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * What an application runs against: a Sluice broker alone, or a cluster of three on loopback (replication factor 3),
 * started in this JVM. Closing it stops every broker.
 *
 * <p>A broker alone compacts what an application writes to a compacted topic (a Streams changelog) within a test: its
 * store has small segments and its log cleaner runs every {@link #CLEANER_BACKOFF_MILLIS}. A cluster's replica
 * compacts only what its Raft log no longer names, below its latest snapshot, taken every 100,000 entries
 * (ClusterNode.Tuning), which a test's few hundred entries do not reach ({@link #compacts()}); snapshots every few
 * entries let it compact a part, but each forces the store, which slows the brokers.
 */
abstract class Target implements AutoCloseable {

    /** A broker alone's segments: 64 KiB, the least a store takes, so that a few hundred kilobytes fill several. */
    static final long SEGMENT_BYTES = 64 * 1024;
    /** The largest batch a broker alone takes, which must fit a segment: twice a producer's default batch.size. */
    static final int MAX_MESSAGE_BYTES = 32 * 1024;
    /** How long a broker alone's log cleaner waits after a round that cleaned nothing. */
    static final long CLEANER_BACKOFF_MILLIS = 200;

    /** @return the clients' bootstrap string */
    abstract String bootstrap();

    /** @return the replication factor of the topics an application creates here */
    abstract int replicas();

    /**
     * Runs a round of each broker's log cleaner at once (each replica compacts its own log), besides the rounds the
     * cleaners run by themselves.
     *
     * @return the partitions, over every broker, whose cleaning rewrote a segment
     */
    abstract int cleanRound();

    /** @return whether the cleaners compact the sealed segments of a compacted topic within a test, by themselves */
    abstract boolean compacts();

    @Override
    public abstract void close() throws IOException;

    /** Starts the kind named: {@code broker} or {@code cluster}. */
    static Target start(String kind, Path dir) throws IOException {
        return kind.equals("cluster") ? new Cluster(dir) : new Alone(dir);
    }

    /** A broker alone. */
    private static final class Alone extends Target {
        private final Store store;
        private final Broker broker;

        Alone(Path dir) throws IOException {
            this.store = Store.open(dir.resolve("store"), StoreConfig.builder().segmentSizeBytes(SEGMENT_BYTES)
                    .maxMessageBytes(MAX_MESSAGE_BYTES).build());
            this.broker = Broker.start(store, BrokerConfig.defaults().withPort(0)
                    .withCleaner(CleanerSettings.DEFAULTS.withBackoffMillis(CLEANER_BACKOFF_MILLIS)));
        }

        @Override
        int cleanRound() {
            return broker.cleaner().cleanRound();
        }

        @Override
        boolean compacts() {
            return true;
        }

        @Override
        String bootstrap() {
            return "127.0.0.1:" + broker.port();
        }

        @Override
        int replicas() {
            return 1;
        }

        @Override
        public void close() throws IOException {
            broker.close();
            store.close();
        }

        @Override
        public String toString() {
            return "a broker alone";
        }
    }

    /** Three brokers replicating every partition. */
    private static final class Cluster extends Target {
        private final ClusterSpec spec;
        private final ClusterBroker[] brokers = new ClusterBroker[3];

        Cluster(Path dir) throws IOException {
            StringBuilder text = new StringBuilder();
            for (int id = 1; id <= 3; id++) {
                text.append(id == 1 ? "" : ",").append(id).append("@127.0.0.1:").append(freePort()).append('/')
                        .append(freePort());
            }
            this.spec = ClusterSpec.parse(text.toString());
            try {
                for (int id = 1; id <= 3; id++) {
                    brokers[id - 1] = ClusterBroker.start(dir.resolve("b" + id), spec, id, StoreConfig.builder()
                            .writePath(WritePath.CHANNEL).flushMode(FlushMode.ASYNC).build(), BrokerConfig.defaults());
                }
            } catch (IOException | RuntimeException e) {
                close();
                throw e;
            }
        }

        @Override
        String bootstrap() {
            StringBuilder servers = new StringBuilder();
            for (ClusterSpec.Node node : spec.nodes()) {
                servers.append(servers.isEmpty() ? "" : ",").append(node.host()).append(':').append(node.clientPort());
            }
            return servers.toString();
        }

        @Override
        int replicas() {
            return 3;
        }

        @Override
        int cleanRound() {
            int rewritten = 0;
            for (ClusterBroker broker : brokers) {
                rewritten += broker.cleaner().cleanRound();
            }
            return rewritten;
        }

        @Override
        boolean compacts() {
            return false;
        }

        @Override
        public void close() throws IOException {
            IOException failed = null;
            for (ClusterBroker broker : brokers) {
                if (broker != null) {
                    try {
                        broker.close();
                    } catch (IOException e) {
                        failed = e;
                    }
                }
            }
            if (failed != null) {
                throw failed;
            }
        }

        @Override
        public String toString() {
            return "a cluster of three";
        }
    }

    private static final Set<Integer> HANDED_OUT = ConcurrentHashMap.newKeySet();

    /**
     * @return a port free on 127.0.0.1 now, below the range Linux gives outgoing connections (Ratis's reconnects to a
     *     stopped peer could take a port in that range before its node binds it)
     */
    static int freePort() throws IOException {
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int attempt = 0; attempt < 1_000; attempt++) {
            int port = random.nextInt(10_000, 32_000);
            if (!HANDED_OUT.add(port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket(port, 1, InetAddress.getLoopbackAddress())) {
                return socket.getLocalPort();
            } catch (IOException taken) {
                // In use by another process: another one.
            }
        }
        throw new IOException("no free port on 127.0.0.1 between 10000 and 32000");
    }
}
