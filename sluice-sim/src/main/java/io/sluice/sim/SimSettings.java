package io.sluice.sim;

import io.sluice.store.FlushMode;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.StoreConfig;
import io.sluice.store.WritePath;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.time.InstantSource;
import java.util.SplittableRandom;

/**
 * The store settings one seed of the {@link PowerLossSimulation} runs with: write path, flush mode and windows,
 * retention, segment and write-buffer sizes, the checkpoint's interval, and the topic most appends go to. Drawn from
 * the seed's generator when the run starts, in a fixed order, so a seed always runs with the same ones.
 */
final class SimSettings {

    final WritePath writePath;
    final FlushMode flushMode;
    final boolean retention;
    /** The topic ({@link SimWorkload#TOPICS}) most appends go to. */
    final int hotTopic;
    final long checkpointIntervalMillis;
    /** A fixed body size (records then line up across a cut, as they do in most real workloads), or 0. */
    final int fixedBodyBytes;
    /** ASYNC: how much may stay unforced, and for how long (large windows leave more for a power cut to tear). */
    final long flushDirtyBytes;
    final long flushIntervalMillis;
    /** The store's segment size: 64 KiB, or 256 KiB (logs of their own then grow 64, 128, 256 KiB). */
    final long segmentBytes;
    /** Write-buffer page size: 128 KiB pages start at their log's 64 KiB segment size and grow with it. */
    final int writeBufferBytes;
    /**
     * Logs of their own kept open (of the five the workload writes): 1, 2 or 4 close idle logs and open them again
     * all through a run, power cuts falling in both; or the store's choice, which keeps all five open. Taken from
     * the seed, not its generator, so that every other draw stays as it was.
     */
    final int maxOpenLogs;
    /**
     * Logs forced together by one sync of the file system ({@code StoreConfig.forceTogether}) in half the seeds, taken
     * from the seed, not its generator, so that every other draw stays as it was.
     */
    final boolean forceTogether;

    SimSettings(long seed, SplittableRandom random) {
        this.writePath = WritePath.values()[(int) Math.floorMod(seed, (long) WritePath.values().length)];
        this.flushMode = random.nextBoolean() ? FlushMode.SYNC : FlushMode.ASYNC;
        this.retention = random.nextInt(3) == 0;
        this.hotTopic = random.nextInt(SimWorkload.TOPICS.length);
        this.checkpointIntervalMillis = 10 + random.nextInt(300);
        this.fixedBodyBytes = random.nextInt(3) == 0 ? 8 + random.nextInt(1000) : 0;
        this.flushDirtyBytes = new long[] {16 << 10, 64 << 10, 1 << 20}[random.nextInt(3)];
        this.flushIntervalMillis = new long[] {20, 200, 1000}[random.nextInt(3)];
        this.segmentBytes = random.nextBoolean() ? StoreConfig.MIN_SEGMENT_SIZE_BYTES : 4 * StoreConfig.MIN_SEGMENT_SIZE_BYTES;
        this.writeBufferBytes = random.nextBoolean() ? 16 * 1024 : 128 * 1024;
        this.maxOpenLogs = new int[] {1, 2, 4, StoreConfig.OPEN_LOGS_AUTO}[
                (int) Math.floorMod(seed / WritePath.values().length, 4L)];
        this.forceTogether = Math.floorMod(seed / (WritePath.values().length * 4L), 2L) == 1;
    }

    /** @return the settings in a line, the start of the run's scenario */
    String describe() {
        return new StringBuilder().append(writePath).append(' ').append(flushMode).append(retention ? " retention" : "")
                .append(" hot=").append(SimWorkload.TOPICS[hotTopic]).append(" checkpoint=")
                .append(checkpointIntervalMillis).append("ms").append(fixedBodyBytes > 0 ? " body=" + fixedBodyBytes : "")
                .append(flushMode == FlushMode.ASYNC ? " flush=" + flushDirtyBytes + "B/" + flushIntervalMillis + "ms" : "")
                .append(forceTogether ? " together" : "")
                .append(" segment=").append(segmentBytes / 1024).append("K")
                .append(writePath.buffered() ? " page=" + writeBufferBytes / 1024 + "K" : "")
                .append(maxOpenLogs != StoreConfig.OPEN_LOGS_AUTO ? " open-logs=" + maxOpenLogs : "").toString();
    }

    /**
     * @param random the seed's generator, which chooses the cache's size anew at each open
     * @return the configuration of one open of the store
     */
    StoreConfig config(SplittableRandom random, FileIO fs, Scheduler scheduler, InstantSource clock) {
        StoreConfig.Builder builder = StoreConfig.builder()
                .segmentSizeBytes(segmentBytes)
                .writePath(writePath)
                .flushMode(flushMode).forceTogether(forceTogether)
                .maxMessageBytes(4096)
                .writeBufferBytes(writeBufferBytes)
                .writeBufferCount(4)
                .cacheBytes(random.nextBoolean() ? 0 : 2L * writeBufferBytes)
                .queueIndexEntriesPerFile(64)
                .keyIndexSlotsPerFile(16)
                .keyIndexEntriesPerFile(64)
                .flushIntervalMillis(flushIntervalMillis)
                .flushDirtyBytes(flushDirtyBytes)
                .commitIntervalMillis(10)
                .checkpointIntervalMillis(checkpointIntervalMillis)
                .maxOpenLogs(maxOpenLogs)
                .fileIO(fs)
                .scheduler(scheduler)
                .clock(clock);
        if (retention) {
            builder.retention(RetentionPolicy.defaults().withRetentionBytes(3 * StoreConfig.MIN_SEGMENT_SIZE_BYTES)
                    .withCheckIntervalMillis(50));
        }
        return builder.build();
    }
}
