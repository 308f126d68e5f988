package io.sluice.store.internal.engine;

import io.sluice.store.Calibration;
import io.sluice.store.StoreConfig;
import io.sluice.store.internal.cache.MemoryBudget;
import io.sluice.store.internal.recovery.StoreDirectory;
import io.sluice.store.internal.retention.ConsumerOffsets;
import io.sluice.store.io.Scheduler;

/**
 * What the store lends each of its logs ({@link LogStore}): what spans logs is the store's, one of each.
 *
 * @param config the store's configuration
 * @param directory the store's directory (its index and key geometry)
 * @param scheduler runs every log's background work
 * @param cacheBudget the read-cache memory every log's cache takes from
 * @param mappedReadMaxBytes the store's calibrated read crossover ({@link Calibration#readCrossoverBytes})
 * @param consumers the store's consumer positions (retention keeps what a group has not read)
 * @param changed told when a log changed (appended, forced), so a checkpoint gets scheduled
 * @param readOnly every log opens for reading only
 * @param logStarts the queues' first offsets raised on request ({@code Store.deleteRecords}): a log applies them to
 *     its queues as it opens
 * @param forceTogether makes the SYNC rounds of the store's logs together, or null when each log makes its own
 */
record LogResources(StoreConfig config, StoreDirectory directory, Scheduler scheduler, MemoryBudget cacheBudget,
                    long mappedReadMaxBytes, ConsumerOffsets consumers, Runnable changed, boolean readOnly,
                    io.sluice.store.internal.recovery.LogStarts logStarts,
                    io.sluice.store.internal.flush.ForceTogether forceTogether) {
}
