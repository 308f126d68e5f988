package io.sluice.store;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.time.InstantSource;
import java.util.Objects;

/**
 * The store's configuration: immutable, built with {@link #builder()}, validated by {@link Builder#build()}.
 * A rule that fails throws {@link IllegalArgumentException} naming the field.
 *
 * @param segmentSizeBytes size of each commit-log segment file; 64 KiB to 1 TiB, a multiple of 4 KiB
 * @param writePath how appends reach the segment files
 * @param flushMode what an acknowledgement promises
 * @param segmentAllocation how new segment files reserve their blocks
 * @param flushIntervalMillis ASYNC: force at least this often while bytes are dirty
 * @param flushDirtyBytes ASYNC: force as soon as this many bytes are dirty
 * @param commitIntervalMillis WRITE_BUFFER and DIRECT: write buffered bytes to the file at least this often
 * @param commitMinBytes WRITE_BUFFER and DIRECT: write buffered bytes to the file as soon as this many have gathered
 * @param writeBufferBytes WRITE_BUFFER and DIRECT: size of one pooled buffer page; a multiple of 4 KiB
 * @param writeBufferCount WRITE_BUFFER and DIRECT: number of pooled buffer pages
 * @param maxMessageBytes largest encoded message accepted (body, keys, tag and properties)
 * @param maxQueuesPerTopic appends take queue ids below this, in every layout: a bound on what a topic costs (in
 *     QUEUE layout each queue is a log with its own files)
 * @param queueIndexEntriesPerFile entries in each queue-index file
 * @param keyIndexSlotsPerFile hash slots in each key-index file (4 bytes each)
 * @param keyIndexEntriesPerFile entries in each key-index file (32 bytes each); a file is created when the
 *     first keyed message arrives and when the previous one fills
 * @param checkpointIntervalMillis how often the checkpoint (and the queue indexes) are forced
 * @param maxMappedSegments how many of the newest segments stay mapped; older ones are unmapped and read
 *     with positional reads into pooled direct buffers, so mapped memory stays bounded however long the log
 * @param maxOpenLogs how many logs of their own (TOPIC, QUEUE and BATCHES layouts) stay open at once, holding their
 *     files and mappings: past it, the least recently used idle one is closed (forced first) and opened again on its
 *     next use, so the store's descriptors and mappings stay bounded however many partitions it holds (the shared log
 *     is always open besides); {@link #OPEN_LOGS_AUTO} (the default) picks from the process's descriptor limit, see
 *     {@link #resolvedMaxOpenLogs()}
 * @param cacheBytes WRITE_BUFFER and DIRECT: memory of the tail-aware read cache; 0 for none, else at least
 *     one page ({@code writeBufferBytes})
 * @param cacheHotWindowMillis read-cache pages read within this window are hot and evicted after cold ones
 * @param warmUp how segment memory is readied ahead of use
 * @param writebackDistanceBytes ASYNC on the page-cache paths (MMAP, WRITE_BUFFER, CHANNEL): start writeback
 *     ({@code sync_file_range}) of dirty log pages this far behind the committed position, so dirty pages
 *     never pile up to the kernel's limits; 0 turns it off; {@link #WRITEBACK_AUTO} (the default) picks by
 *     measurement, see {@link #resolvedWritebackDistanceBytes()}
 * @param retention when old segments are deleted and when appends are refused for lack of disk
 * @param truncateOnCorruption open a store with mid-log corruption by truncating the log there, losing
 *     what follows, instead of refusing
 * @param fileIO the file seam; {@link FileIO#DEFAULT} unless testing faults
 * @param clock the source of store timestamps
 * @param writeBufferWaitMillis WRITE_BUFFER and DIRECT: how long an append waits for a write-buffer page that
 *     open read results pin before it fails (committed pages are freed at once, without waiting)
 * @param overrideStoreSettings segment size and retention are the store's own settings, saved at creation and used
 *     by every later open; true makes this configuration's replace them (and saves them)
 * @param ioThreads threads of the store's background pool (flush, checkpoint, retention, segment preparation),
 *     shared by every log of the store
 * @param forceTogether when several logs must be forced at once (appends to them waiting under SYNC, or a checkpoint
 *     finding them changed), one sync of the store's file system ({@code syncfs}) makes them all durable, instead of
 *     a force per log; one log alone is forced by itself. Off by default: a sync of the file system writes every
 *     dirty page on it, other programs' too, so it suits a file system the store has to itself
 * @param scheduler runs the store's background work instead of a pool of its own (a simulation's
 *     deterministic scheduler), or null; the store does not shut a given scheduler down
 */
public record StoreConfig(long segmentSizeBytes, WritePath writePath, FlushMode flushMode,
                          SegmentAllocation segmentAllocation, long flushIntervalMillis, long flushDirtyBytes,
                          long commitIntervalMillis, long commitMinBytes, int writeBufferBytes,
                          int writeBufferCount, int maxMessageBytes, int maxQueuesPerTopic, int queueIndexEntriesPerFile,
                          int keyIndexSlotsPerFile, int keyIndexEntriesPerFile, long checkpointIntervalMillis,
                          int maxMappedSegments, int maxOpenLogs, long cacheBytes, long cacheHotWindowMillis, WarmUp warmUp, long writebackDistanceBytes, RetentionPolicy retention,
                          boolean truncateOnCorruption, FileIO fileIO,
                          InstantSource clock, long writeBufferWaitMillis, boolean overrideStoreSettings, int ioThreads,
                          boolean forceTogether, Scheduler scheduler) {

    /** Smallest segment size accepted (tests use it to exercise segment rolls). */
    public static final long MIN_SEGMENT_SIZE_BYTES = 64 * 1024;
    /** Largest segment size accepted. */
    public static final long MAX_SEGMENT_SIZE_BYTES = 1L << 40;
    /** Default segment size: 1 GiB. */
    public static final long DEFAULT_SEGMENT_SIZE_BYTES = 1L << 30;
    /** Room a record needs beyond its messages, for the record header and a topic name. */
    public static final int RECORD_OVERHEAD_BYTES = 512;
    /** {@code writebackDistanceBytes} value that lets the store choose by write path. */
    public static final long WRITEBACK_AUTO = -1;
    /** The writeback distance {@link #WRITEBACK_AUTO} picks on the MMAP path. */
    public static final long DEFAULT_WRITEBACK_DISTANCE_BYTES = 8L << 20;
    /** Alignment of {@link WritePath#DIRECT} writes: file offsets, lengths and buffer addresses. */
    public static final int DIRECT_BLOCK_BYTES = 4096;
    /** {@code maxOpenLogs} value that lets the store choose from the process's descriptor limit. */
    public static final int OPEN_LOGS_AUTO = 0;
    /** The logs of their own {@link #OPEN_LOGS_AUTO} keeps open where the descriptor limit cannot be read. */
    public static final int DEFAULT_MAX_OPEN_LOGS = 1024;
    /** The most logs of their own {@link #OPEN_LOGS_AUTO} keeps open (about 70 KB of memory each). */
    public static final int MAX_AUTO_OPEN_LOGS = 4096;
    /** The fewest logs of their own {@link #OPEN_LOGS_AUTO} keeps open, whatever the descriptor limit. */
    public static final int MIN_AUTO_OPEN_LOGS = 16;

    /** Validates every field and the rules between fields. */
    public StoreConfig {
        requireRange("segmentSizeBytes", segmentSizeBytes, MIN_SEGMENT_SIZE_BYTES, MAX_SEGMENT_SIZE_BYTES);
        if (segmentSizeBytes % 4096 != 0) {
            throw new IllegalArgumentException("segmentSizeBytes must be a multiple of 4096, was " + segmentSizeBytes);
        }
        Objects.requireNonNull(writePath, "writePath");
        Objects.requireNonNull(flushMode, "flushMode");
        Objects.requireNonNull(segmentAllocation, "segmentAllocation");
        requireRange("flushIntervalMillis", flushIntervalMillis, 1, 3_600_000);
        requireRange("flushDirtyBytes", flushDirtyBytes, 1, Long.MAX_VALUE);
        requireRange("commitIntervalMillis", commitIntervalMillis, 1, 3_600_000);
        requireRange("commitMinBytes", commitMinBytes, 1, Long.MAX_VALUE);
        requireRange("writeBufferBytes", writeBufferBytes, 4096, 1 << 30);
        requireRange("writeBufferCount", writeBufferCount, 2, 1024);
        requireRange("maxMessageBytes", maxMessageBytes, 1, 1 << 30);
        requireRange("maxQueuesPerTopic", maxQueuesPerTopic, 1, Integer.MAX_VALUE);
        requireRange("queueIndexEntriesPerFile", queueIndexEntriesPerFile, 64, 64 * 1024 * 1024);
        requireRange("keyIndexSlotsPerFile", keyIndexSlotsPerFile, 16, 1 << 28);
        requireRange("keyIndexEntriesPerFile", keyIndexEntriesPerFile, 16, 1 << 27);
        requireRange("checkpointIntervalMillis", checkpointIntervalMillis, 1, 3_600_000);
        requireRange("maxMappedSegments", maxMappedSegments, 1, Integer.MAX_VALUE);
        requireRange("maxOpenLogs", maxOpenLogs, OPEN_LOGS_AUTO, Integer.MAX_VALUE);
        requireRange("cacheBytes", cacheBytes, 0, Long.MAX_VALUE);
        requireRange("cacheHotWindowMillis", cacheHotWindowMillis, 1, 3_600_000);
        if (writePath.buffered() && cacheBytes > 0 && cacheBytes < writeBufferBytes) {
            throw new IllegalArgumentException("cacheBytes (" + cacheBytes + ") must be 0 (no read cache) or at least"
                    + " one page (writeBufferBytes, " + writeBufferBytes + ")");
        }
        Objects.requireNonNull(warmUp, "warmUp");
        requireRange("writebackDistanceBytes", writebackDistanceBytes, WRITEBACK_AUTO, Long.MAX_VALUE);
        Objects.requireNonNull(retention, "retention");
        Objects.requireNonNull(fileIO, "fileIO");
        Objects.requireNonNull(clock, "clock");
        requireRange("writeBufferWaitMillis", writeBufferWaitMillis, 0, 3_600_000);
        requireRange("ioThreads", ioThreads, 1, 256);
        if ((long) maxMessageBytes + RECORD_OVERHEAD_BYTES > segmentSizeBytes) {
            throw new IllegalArgumentException("maxMessageBytes (" + maxMessageBytes + ") plus "
                    + RECORD_OVERHEAD_BYTES + " bytes of record overhead must fit in segmentSizeBytes ("
                    + segmentSizeBytes + ")");
        }
        if (writePath.buffered() && writeBufferBytes % DIRECT_BLOCK_BYTES != 0) {
            throw new IllegalArgumentException("writeBufferBytes must be a multiple of " + DIRECT_BLOCK_BYTES
                    + ", was " + writeBufferBytes);
        }
        if (writePath.buffered() && (long) maxMessageBytes + RECORD_OVERHEAD_BYTES > largestBufferedRecord(
                writePath, writeBufferBytes)) {
            throw new IllegalArgumentException("maxMessageBytes (" + maxMessageBytes + ") plus "
                    + RECORD_OVERHEAD_BYTES + " bytes of record overhead must fit in writeBufferBytes ("
                    + writeBufferBytes + (writePath == WritePath.DIRECT ? " less one " + DIRECT_BLOCK_BYTES
                    + "-byte block" : "") + ") on the " + writePath + " path");
        }
    }

    /**
     * @return the largest record a write-buffer page of {@code writeBufferBytes} always has room for: a
     *     {@link WritePath#DIRECT} page may start up to one block before the record, to keep its writes aligned
     */
    static long largestBufferedRecord(WritePath path, int writeBufferBytes) {
        return path == WritePath.DIRECT ? writeBufferBytes - DIRECT_BLOCK_BYTES : writeBufferBytes;
    }

    /**
     * @return the writeback distance in force: the configured one, or for {@link #WRITEBACK_AUTO} 8 MiB on
     *     MMAP (sustained ASYNC appends ran about three times faster with it) and off elsewhere (no gain on
     *     WRITE_BUFFER, a loss on CHANNEL; the figures: docs/benchmarks.md, "Sustained appends")
     */
    public long resolvedWritebackDistanceBytes() {
        if (writebackDistanceBytes != WRITEBACK_AUTO) {
            return writebackDistanceBytes;
        }
        return writePath == WritePath.MMAP ? DEFAULT_WRITEBACK_DISTANCE_BYTES : 0;
    }

    /**
     * @return how many logs of their own stay open at once: the configured number, or for {@link #OPEN_LOGS_AUTO} a
     *     quarter of the process's descriptor limit (an open log holds a descriptor per segment file, two once its next
     *     segment is prepared, and sometimes one more for {@code sendfile}; the rest is left to sockets and everything
     *     else), between {@value #MIN_AUTO_OPEN_LOGS} and {@value #MAX_AUTO_OPEN_LOGS}; {@value #DEFAULT_MAX_OPEN_LOGS}
     *     where the limit cannot be read
     */
    public int resolvedMaxOpenLogs() {
        if (maxOpenLogs != OPEN_LOGS_AUTO) {
            return maxOpenLogs;
        }
        long limit = descriptorLimit();
        if (limit <= 0) {
            return DEFAULT_MAX_OPEN_LOGS;
        }
        return Math.clamp(limit / 4, MIN_AUTO_OPEN_LOGS, MAX_AUTO_OPEN_LOGS);
    }

    /** @return the process's descriptor limit (the soft one, which the JVM raises to the hard one), or -1 if unknown */
    private static long descriptorLimit() {
        try {
            if (java.lang.management.ManagementFactory.getOperatingSystemMXBean()
                    instanceof com.sun.management.UnixOperatingSystemMXBean unix) {
                return unix.getMaxFileDescriptorCount();
            }
        } catch (RuntimeException | LinkageError e) {
            // No management support in this runtime: the fixed default.
        }
        return -1;
    }

    private static void requireRange(String field, long value, long min, long max) {
        if (value < min || value > max) {
            throw new IllegalArgumentException(field + " must be between " + min + " and " + max + ", was " + value);
        }
    }

    /** @return a builder holding the defaults */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the defaults */
    public static StoreConfig defaults() {
        return builder().build();
    }

    /**
     * @return the largest record this store can hold: a segment's size, and on a buffered write path what a
     *     write-buffer page always has room for
     */
    public long largestRecordBytes() {
        return Math.min(segmentSizeBytes, writePath.buffered() ? largestBufferedRecord(writePath, writeBufferBytes)
                : Integer.MAX_VALUE);
    }

    /** @return a builder initialised from this configuration */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.segmentSizeBytes = segmentSizeBytes;
        b.writePath = writePath;
        b.flushMode = flushMode;
        b.segmentAllocation = segmentAllocation;
        b.flushIntervalMillis = flushIntervalMillis;
        b.flushDirtyBytes = flushDirtyBytes;
        b.commitIntervalMillis = commitIntervalMillis;
        b.commitMinBytes = commitMinBytes;
        b.writeBufferBytes = writeBufferBytes;
        b.writeBufferCount = writeBufferCount;
        b.maxMessageBytes = maxMessageBytes;
        b.maxQueuesPerTopic = maxQueuesPerTopic;
        b.queueIndexEntriesPerFile = queueIndexEntriesPerFile;
        b.keyIndexSlotsPerFile = keyIndexSlotsPerFile;
        b.keyIndexEntriesPerFile = keyIndexEntriesPerFile;
        b.checkpointIntervalMillis = checkpointIntervalMillis;
        b.maxMappedSegments = maxMappedSegments;
        b.maxOpenLogs = maxOpenLogs;
        b.cacheBytes = cacheBytes;
        b.cacheHotWindowMillis = cacheHotWindowMillis;
        b.warmUp = warmUp;
        b.writebackDistanceBytes = writebackDistanceBytes;
        b.retention = retention;
        b.truncateOnCorruption = truncateOnCorruption;
        b.fileIO = fileIO;
        b.clock = clock;
        b.writeBufferWaitMillis = writeBufferWaitMillis;
        b.overrideStoreSettings = overrideStoreSettings;
        b.ioThreads = ioThreads;
        b.forceTogether = forceTogether;
        b.scheduler = scheduler;
        return b;
    }

    /** Collects settings; {@link #build()} validates them. Not thread-safe. */
    public static final class Builder {
        private long segmentSizeBytes = DEFAULT_SEGMENT_SIZE_BYTES;
        private WritePath writePath = WritePath.MMAP;
        private FlushMode flushMode = FlushMode.ASYNC;
        private SegmentAllocation segmentAllocation = SegmentAllocation.AUTO;
        private long flushIntervalMillis = 500;
        private long flushDirtyBytes = 16 * 1024;
        private long commitIntervalMillis = 200;
        private long commitMinBytes = 16 * 1024;
        private int writeBufferBytes = 16 * 1024 * 1024;
        private int writeBufferCount = 4;
        private int maxMessageBytes = 4 * 1024 * 1024;
        private int maxQueuesPerTopic = 4096;
        private int queueIndexEntriesPerFile = 300_000;
        private int keyIndexSlotsPerFile = 2 * 1024 * 1024;
        private int keyIndexEntriesPerFile = 8 * 1024 * 1024;
        private long checkpointIntervalMillis = 1000;
        private int maxMappedSegments = 16;
        private int maxOpenLogs = OPEN_LOGS_AUTO;
        private long cacheBytes = 256L << 20;
        private long cacheHotWindowMillis = 10_000;
        private WarmUp warmUp = WarmUp.defaults();
        private long writebackDistanceBytes = WRITEBACK_AUTO;
        private RetentionPolicy retention = RetentionPolicy.defaults();
        private boolean truncateOnCorruption;
        private FileIO fileIO = FileIO.DEFAULT;
        private InstantSource clock = InstantSource.system();
        private long writeBufferWaitMillis = 30_000;
        private boolean overrideStoreSettings;
        private int ioThreads = 4;
        private boolean forceTogether;
        private Scheduler scheduler;

        private Builder() {
        }

        /** @param v segment file size in bytes @return this */
        public Builder segmentSizeBytes(long v) { segmentSizeBytes = v; return this; }
        /** @param v the write path @return this */
        public Builder writePath(WritePath v) { writePath = v; return this; }
        /** @param v the flush mode @return this */
        public Builder flushMode(FlushMode v) { flushMode = v; return this; }
        /** @param v how segments reserve blocks @return this */
        public Builder segmentAllocation(SegmentAllocation v) { segmentAllocation = v; return this; }
        /** @param v ASYNC flush interval @return this */
        public Builder flushIntervalMillis(long v) { flushIntervalMillis = v; return this; }
        /** @param v ASYNC dirty-bytes threshold @return this */
        public Builder flushDirtyBytes(long v) { flushDirtyBytes = v; return this; }
        /** @param v WRITE_BUFFER commit interval @return this */
        public Builder commitIntervalMillis(long v) { commitIntervalMillis = v; return this; }
        /** @param v WRITE_BUFFER commit threshold @return this */
        public Builder commitMinBytes(long v) { commitMinBytes = v; return this; }
        /** @param v WRITE_BUFFER page size @return this */
        public Builder writeBufferBytes(int v) { writeBufferBytes = v; return this; }
        /** @param v WRITE_BUFFER page count @return this */
        public Builder writeBufferCount(int v) { writeBufferCount = v; return this; }
        /** @param v largest encoded message @return this */
        public Builder maxMessageBytes(int v) { maxMessageBytes = v; return this; }
        /** @param v appends take queue ids below this @return this */
        public Builder maxQueuesPerTopic(int v) { maxQueuesPerTopic = v; return this; }
        /** @param v entries per queue-index file @return this */
        public Builder queueIndexEntriesPerFile(int v) { queueIndexEntriesPerFile = v; return this; }
        /** @param v hash slots per key-index file @return this */
        public Builder keyIndexSlotsPerFile(int v) { keyIndexSlotsPerFile = v; return this; }
        /** @param v entries per key-index file @return this */
        public Builder keyIndexEntriesPerFile(int v) { keyIndexEntriesPerFile = v; return this; }
        /** @param v checkpoint interval @return this */
        public Builder checkpointIntervalMillis(long v) { checkpointIntervalMillis = v; return this; }
        /** @param v newest segments kept mapped @return this */
        public Builder maxMappedSegments(int v) { maxMappedSegments = v; return this; }
        /** @param v logs of their own kept open at once, or OPEN_LOGS_AUTO @return this */
        public Builder maxOpenLogs(int v) { maxOpenLogs = v; return this; }
        /** @param v read-cache memory, 0 for none @return this */
        public Builder cacheBytes(long v) { cacheBytes = v; return this; }
        /** @param v read-cache hot window @return this */
        public Builder cacheHotWindowMillis(long v) { cacheHotWindowMillis = v; return this; }
        /** @param v how segment memory is readied @return this */
        public Builder warmUp(WarmUp v) { warmUp = v; return this; }
        /** @param v writeback distance behind the committed position, 0 for off, or WRITEBACK_AUTO @return this */
        public Builder writebackDistanceBytes(long v) { writebackDistanceBytes = v; return this; }
        /** @param v the retention policy @return this */
        public Builder retention(RetentionPolicy v) { retention = v; return this; }
        /** @param v truncate at mid-log corruption instead of refusing @return this */
        public Builder truncateOnCorruption(boolean v) { truncateOnCorruption = v; return this; }
        /** @param v the file seam @return this */
        public Builder fileIO(FileIO v) { fileIO = v; return this; }
        /** @param v the clock for store timestamps @return this */
        public Builder clock(InstantSource v) { clock = v; return this; }
        /** @param v how long an append waits for a page readers pin @return this */
        public Builder writeBufferWaitMillis(long v) { writeBufferWaitMillis = v; return this; }
        /** @param v replace an existing store's segment size and retention with these @return this */
        public Builder overrideStoreSettings(boolean v) { overrideStoreSettings = v; return this; }
        /** @param v threads of the store's background pool @return this */
        public Builder ioThreads(int v) { ioThreads = v; return this; }
        /** @param v force the logs that must be forced at once with one sync of the file system @return this */
        public Builder forceTogether(boolean v) { forceTogether = v; return this; }
        /** @param v a scheduler to run background work on instead of the store's own pool, or null @return this */
        public Builder scheduler(Scheduler v) { scheduler = v; return this; }

        /** @return the validated configuration */
        public StoreConfig build() {
            return new StoreConfig(segmentSizeBytes, writePath, flushMode, segmentAllocation, flushIntervalMillis,
                    flushDirtyBytes, commitIntervalMillis, commitMinBytes, writeBufferBytes, writeBufferCount,
                    maxMessageBytes, maxQueuesPerTopic, queueIndexEntriesPerFile, keyIndexSlotsPerFile, keyIndexEntriesPerFile,
                    checkpointIntervalMillis, maxMappedSegments, maxOpenLogs, cacheBytes, cacheHotWindowMillis, warmUp, writebackDistanceBytes, retention, truncateOnCorruption, fileIO,
                    clock, writeBufferWaitMillis, overrideStoreSettings, ioThreads, forceTogether, scheduler);
        }
    }
}
