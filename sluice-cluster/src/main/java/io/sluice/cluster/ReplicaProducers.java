package io.sluice.cluster;

import io.sluice.broker.ProducerHistory;
import io.sluice.store.Store;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The idempotent producers of one replica's log ({@link ProducerHistory}), kept as the replica writes each entry's
 * batches so that, elected, it reads nothing back. After a start they come from what the last clean close kept, if
 * that ends where the log does, else from the store (its last {@link ProducerHistory#REBUILD_OFFSETS} offsets); a cut
 * of the log's tail or an install drops them, and they are rebuilt from the store where next asked for. The state
 * machine calls these under its lock, and this class's own is taken after it, never before.
 */
final class ReplicaProducers {

    private static final Logger LOG = LoggerFactory.getLogger(ReplicaProducers.class);

    /** The file a clean close keeps them in, in the group's state machine directory, beside the snapshots. */
    static final String FILE = "producers";

    private final Store store;
    private final PartitionStore batches;
    private final ClusterNode.PartitionId id;
    private final AtomicInteger rebuilds = new AtomicInteger();
    private ProducerHistory history;
    private ProducerHistory.Saved kept;
    private Path file;

    ReplicaProducers(Store store, PartitionStore batches, ClusterNode.PartitionId id) {
        this.store = store;
        this.batches = batches;
        this.id = id;
    }

    /** As the group starts: takes what the last clean close kept (the file goes, whatever it held). */
    synchronized void open(Path stateMachineDirectory) {
        file = stateMachineDirectory.resolve(FILE);
        try {
            kept = ProducerHistory.take(FileIO.DEFAULT, file);
        } catch (IOException e) {
            LOG.warn("{}: the producers kept at the last close cannot be read ({}); they are read back from the store",
                    id, e.toString());
        }
    }

    /** @return the producers as kept now, to note the batches being written in, or null if none are kept */
    synchronized ProducerHistory current() {
        return history;
    }

    /**
     * The store agrees with the log, which ends at {@code end}, at the first write after a start: the producers are
     * those the last clean close kept if they end there, else read back from the store.
     */
    synchronized void agreed(long end) {
        ProducerHistory.Saved saved = kept;
        kept = null;
        if (saved != null && saved.end() == end) {
            history = saved.history();
            LOG.info("{}: took the producers its last clean close kept ({} producers, up to offset {})", id,
                    history.size(), end);
        } else {
            if (saved != null) {
                LOG.info("{}: the producers its last close kept end at offset {}, its log at {}: read back instead",
                        id, saved.end(), end);
            }
            rebuild(end);
        }
    }

    /**
     * @param end where the log's batches end, or -1 before the store agrees with the log
     * @return the producers, rebuilt from the store if none are kept; null while the store does not show every batch
     */
    synchronized ProducerHistory history(long end) {
        if (history == null && end >= 0) {
            rebuild(end);
        }
        return history;
    }

    private void rebuild(long end) {
        history = batches.readProducers(end);
        if (history != null) {
            rebuilds.incrementAndGet();
        }
    }

    /** The log's tail was cut or replaced (an install): the producers are rebuilt where next asked for. */
    synchronized void drop() {
        history = null;
        kept = null;
    }

    /**
     * A clean close keeps the producers, so that the next start reads nothing back: the store is forced first, then
     * the file names the offset they are kept up to. A close that cannot force or write leaves no file.
     *
     * @param end where the log's batches end, or -1 before the store agreed with the log
     */
    synchronized void keep(long end) {
        if (history == null || end < 0 || file == null) {
            return;
        }
        try {
            store.sync();
            history.save(FileIO.DEFAULT, file, end);
        } catch (IOException | RuntimeException e) {
            LOG.warn("{}: the producers were not kept at close ({}); the next start reads them back", id, e.toString());
        }
    }

    /** @return how many times the producers were read back from the store since the start (an empty one too) */
    int rebuilds() {
        return rebuilds.get();
    }
}
