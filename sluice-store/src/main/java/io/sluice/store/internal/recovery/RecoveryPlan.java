package io.sluice.store.internal.recovery;

import io.sluice.store.RecoveryReport;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreException;
import io.sluice.store.internal.index.IndexGeometry;
import io.sluice.store.internal.index.KeyGeometry;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.io.FileIO;
import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * What opening a store for writing would do to each log, worked out by a dry run of every log's {@link Recovery}
 * that changes nothing ({@code Store.planRecovery}, {@code sluice recover --dry-run}). Stateless.
 */
public final class RecoveryPlan {

    private RecoveryPlan() {
    }

    /**
     * @param directory the store's directory
     * @param config how the store would be opened
     * @return the plan, by log name ("" for the shared log)
     * @throws StoreException if there is no store there, it is open, or it cannot be read
     */
    public static Map<String, RecoveryReport> of(Path directory, StoreConfig config) {
        FileIO io = config.fileIO();
        try (StoreDirectory storeDirectory = StoreDirectory.open(directory, io,
                IndexGeometry.growingTo(config.queueIndexEntriesPerFile()),
                KeyGeometry.growingTo(config.keyIndexSlotsPerFile(), config.keyIndexEntriesPerFile()), true);
             Closeable lock = io.tryLock(directory.resolve(StoreDirectory.LOCK_FILE))) {
            if (lock == null) {
                throw new StoreException("store " + directory + " is open (in this or another process): a recovery"
                        + " plan of a store in use would describe files that are changing");
            }
            StoreConfig settled = StoreSettings.settle(config, storeDirectory, true);
            Checkpoint checkpoint = Checkpoint.read(io, directory);
            boolean clean = checkpoint != null && storeDirectory.wasCleanlyShutDown();
            Map<String, RecoveryReport> plan = new LinkedHashMap<>();
            for (Map.Entry<String, LogDirectories.LogRoot> log
                    : LogDirectories.of(io, directory, TopicRegistry.load(io, directory)).entrySet()) {
                Checkpoint.Log positions = checkpoint == null ? null : checkpoint.log(log.getKey());
                long durable = checkpoint == null ? Recovery.UNKNOWN
                        : positions == null ? 0 : positions.durablePosition();
                long start = positions == null ? -1 : positions.start();
                Recovery.Result result = new Recovery(settled, new Recovery.Target(log.getValue().directory(), durable,
                        start, clean, false, true, log.getValue().format()), storeDirectory.indexGeometry(),
                        storeDirectory.keyGeometry(), new DurabilityLedger(io)).run();
                result.close();
                plan.put(log.getKey(), result.report());
            }
            return plan;
        } catch (IOException e) {
            throw new StoreException("cannot plan the recovery of " + directory + ": " + e.getMessage(), e);
        }
    }
}
