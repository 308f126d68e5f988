package io.sluice.broker.kafka;

import io.sluice.broker.CleanerSettings;
import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.BatchCleaner;
import io.sluice.store.CompactionReport;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.function.LongSupplier;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MutableRecordBatch;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.utils.BufferSupplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The log cleaner: keeps, in each partition of a topic whose cleanup.policy names {@code compact}, the latest record
 * of each key, as Kafka's log cleaner does, on this broker's replicas (each replica compacts its own).
 *
 * <p>A partition is cleaned once its dirty bytes (those past where the last cleaning ended) are at least
 * min.cleanable.dirty.ratio of its bytes, or its first dirty batch is older than max.compaction.lag.ms. A cleaning
 * reads the dirty batches up to the first uncleanable offset (the last stable offset, below the high watermark;
 * the first batch newer than min.compaction.lag.ms; or where the {@link OffsetMap} fills) and maps each key to its
 * latest offset; then the store rewrites each sealed segment below that offset ({@code Store.compact}) with what
 * Kafka's cleaner keeps of each batch ({@code MemoryRecords.filterTo}): records whose key has no later offset,
 * tombstones until their batch's delete horizon (set at the first cleaning to the time plus delete.retention.ms)
 * has passed, no record without a key, and no record of an aborted transaction. A transaction's marker stays while a
 * record of its transaction does, and goes delete.retention.ms after its own time once none does.
 *
 * <p>Where each partition's last cleaning ended is kept in memory: after a restart, the first cleaning of each
 * compacted partition reads its whole log (and rewrites only the segments it changes).
 *
 * <p>One thread; thread-safe.
 */
public final class LogCleaner implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(LogCleaner.class);
    private static final int READ_MESSAGES = 1_000;
    private static final long READ_BYTES = 8L << 20;

    /**
     * Where a partition's last cleaning ended, the bytes below it, and the latest delete horizon of a tombstone it
     * kept (0 if none): once that passes, the partition is due again, to let the tombstone go.
     */
    private record Cleaned(long endOffset, long bytes, long horizon) {
    }

    private final Partitions partitions;
    private final ClusterView cluster;
    private final TopicConfigs configs;
    private final ProducerStates producerStates;
    private final LongSupplier clock;
    private final CleanerSettings settings;
    private final Map<String, Cleaned> cleaned = new ConcurrentHashMap<>();
    private final ScheduledExecutorService thread;
    private OffsetMap map;
    private ByteBuffer output = ByteBuffer.allocate(64 * 1024);
    // The I/O budget: bytes read and written since the window opened.
    private long windowStartNanos = System.nanoTime();
    private long windowBytes;

    LogCleaner(Partitions partitions, ClusterView cluster, TopicConfigs configs, ProducerStates producerStates,
               LongSupplier clock, CleanerSettings settings) {
        this.partitions = partitions;
        this.cluster = cluster;
        this.configs = configs;
        this.producerStates = producerStates;
        this.clock = clock;
        this.settings = settings;
        this.thread = Executors.newSingleThreadScheduledExecutor(Thread.ofPlatform().name("sluice-log-cleaner")
                .daemon().factory());
    }

    /** Starts the rounds, if the cleaner is enabled. */
    void start() {
        if (settings.enabled()) {
            thread.schedule(this::rounds, settings.backoffMillis(), TimeUnit.MILLISECONDS);
        }
    }

    /** Runs rounds back to back while they clean something, then waits the backoff. */
    private void rounds() {
        try {
            // On at once while rounds get on (more may be due), a bounded number of times between two backoffs.
            for (int round = 0; round < 100 && !thread.isShutdown() && cleanRound() > 0; round++) {
                LOG.debug("log cleaner round {} got on", round);
            }
        } catch (RuntimeException e) {
            LOG.warn("a log cleaner round failed: {}", e.toString(), e);
        } finally {
            if (!thread.isShutdown()) {
                thread.schedule(this::rounds, Math.max(1, settings.backoffMillis()), TimeUnit.MILLISECONDS);
            }
        }
    }

    /**
     * Cleans, once, every partition of a compacted topic hosted here that is due.
     *
     * @return the partitions whose cleaning got on: rewrote a segment, or cleaned further than before (a round whose
     *     key map filled stops there, and the next goes on from there)
     */
    public synchronized int cleanRound() {
        int rewritten = 0;
        for (String topic : partitions.topics().keySet()) {
            Map<String, String> overrides;
            try {
                overrides = cluster.topicConfigs(topic);
            } catch (RuntimeException e) {
                continue; // deleted meanwhile
            }
            if (overrides == null || !((List<?>) configs.parsed(overrides, "cleanup.policy")).contains("compact")) {
                continue;
            }
            Policy policy = new Policy((Double) configs.parsed(overrides, "min.cleanable.dirty.ratio"),
                    (Long) configs.parsed(overrides, "min.compaction.lag.ms"),
                    (Long) configs.parsed(overrides, "max.compaction.lag.ms"),
                    (Long) configs.parsed(overrides, "delete.retention.ms"));
            int count = partitions.count(topic);
            for (int index = 0; index < count && !thread.isShutdown(); index++) {
                Partition partition = partitions.partition(topic, index);
                if (partition == null || !partition.hostedHere()) {
                    continue;
                }
                try {
                    Cleaned before = cleaned.get(partition.topic() + "\u0000" + partition.index());
                    CompactionReport report = clean(partition, policy);
                    if (report != null && (report.segmentsRewritten() > 0
                            || report.endOffset() > (before == null ? -1 : before.endOffset()))) {
                        rewritten++;
                    }
                } catch (RuntimeException e) {
                    LOG.warn("cleaning {}-{} failed: {}", topic, index, e.toString());
                }
            }
        }
        cleaned.keySet().removeIf(key -> partitions.count(key.substring(0, key.lastIndexOf('\u0000'))) == 0);
        return rewritten;
    }

    /** A compacted topic's cleaning settings. */
    private record Policy(double minDirtyRatio, long minLagMs, long maxLagMs, long deleteRetentionMs) {
    }

    /** @return what the cleaning did, or null if the partition was not due */
    private CompactionReport clean(Partition partition, Policy policy) {
        String key = partition.topic() + "\u0000" + partition.index();
        long start = partition.logStartOffset();
        Cleaned last = cleaned.get(key);
        if (last == null || last.endOffset() < start) {
            last = new Cleaned(start, 0, 0);
        }
        long dirtyBytes = partition.bytesFrom(last.endOffset());
        long now = clock.getAsLong();
        boolean tombstonesDue = last.horizon() > 0 && now >= last.horizon();
        if (dirtyBytes <= 0 && !tombstonesDue) {
            return null;
        }
        double ratio = dirtyBytes / (double) (dirtyBytes + last.bytes());
        if (ratio < policy.minDirtyRatio() && !tombstonesDue
                && !overdue(partition, last.endOffset(), now - policy.maxLagMs())) {
            return null;
        }
        long started = System.nanoTime();
        long highWatermark = partition.highWatermark();
        ProducerStates.ForCleaning transactions = producerStates.forCleaning(partition, highWatermark);
        long uncleanable = transactions.lastStable();
        Map<Long, List<PartitionTransactions.Aborted>> aborted = new HashMap<>();
        for (PartitionTransactions.Aborted each : transactions.aborted()) {
            aborted.computeIfAbsent(each.producerId(), ignored -> new ArrayList<>()).add(each);
        }
        if (map == null) {
            map = new OffsetMap(settings.dedupeBufferBytes());
        }
        map.clear();
        uncleanable = buildMap(partition, last.endOffset(), uncleanable, now - policy.minLagMs(), aborted);
        if (uncleanable <= last.endOffset() && !tombstonesDue) {
            return null;
        }
        Filter filter = new Filter(now, policy.deleteRetentionMs(), aborted);
        CompactionReport report = partition.compact(uncleanable, filter);
        if (report.endOffset() >= 0) {
            cleaned.put(key, new Cleaned(report.endOffset(), report.bytesKept(), filter.horizon));
        }
        if (report.segmentsRead() > 0) {
            LOG.info("cleaned {}-{} below offset {}: {} keys mapped, {} of {} segments rewritten, {} bytes of batches"
                    + " read, {} -> {} bytes in the segments rewritten, {} ms", partition.topic(), partition.index(),
                    report.endOffset(), map.size(), report.segmentsRewritten(), report.segmentsRead(),
                    report.bytesRead(), report.bytesBefore(), report.bytesAfter(),
                    (System.nanoTime() - started) / 1_000_000);
        }
        return report;
    }

    /** @return true if the first dirty batch is older than {@code before} (max.compaction.lag.ms passed) */
    private static boolean overdue(Partition partition, long dirtyFrom, long before) {
        try (ReadResult read = partition.read(dirtyFrom, 1, 1)) {
            for (StoredMessage message : read.messages()) {
                MutableRecordBatch batch = batchOf(message);
                return batch.maxTimestamp() < before;
            }
        }
        return false;
    }

    /**
     * Maps each key of the batches from {@code from} to its latest offset, stopping at {@code end}, at the first
     * batch newer than {@code newest}, or where the map cannot take a batch's keys.
     *
     * @return the offset the map covers up to: the first uncleanable offset
     */
    private long buildMap(Partition partition, long from, long end, long newest,
                          Map<Long, List<PartitionTransactions.Aborted>> aborted) {
        long offset = from;
        long mapped = from;
        while (offset < end) {
            try (ReadResult read = partition.read(offset, READ_MESSAGES, READ_BYTES)) {
                if (read.status() != ReadResult.Status.FOUND || read.messages().isEmpty()) {
                    return mapped;
                }
                for (StoredMessage message : read.messages()) {
                    MutableRecordBatch batch = batchOf(message);
                    if (batch.baseOffset() >= end || batch.lastOffset() >= end || batch.maxTimestamp() > newest) {
                        return mapped;
                    }
                    throttle(message.body().byteSize());
                    if (!batch.isControlBatch() && !isAborted(batch, aborted)) {
                        Integer count = batch.countOrNull();
                        if (map.full(count == null ? 1 : count)) {
                            return mapped;
                        }
                        for (Record record : batch) {
                            if (record.hasKey()) {
                                map.put(record.key(), record.offset());
                            }
                        }
                    }
                    mapped = batch.lastOffset() + 1;
                }
                offset = read.nextOffset();
            }
        }
        return mapped;
    }

    private static MutableRecordBatch batchOf(StoredMessage message) {
        return MemoryRecords.readableRecords(message.body().asByteBuffer()).batches().iterator().next();
    }

    private static boolean isAborted(RecordBatch batch, Map<Long, List<PartitionTransactions.Aborted>> aborted) {
        if (!batch.isTransactional()) {
            return false;
        }
        List<PartitionTransactions.Aborted> ofProducer = aborted.get(batch.producerId());
        if (ofProducer != null) {
            for (PartitionTransactions.Aborted each : ofProducer) {
                if (batch.baseOffset() >= each.firstOffset() && batch.baseOffset() < each.lastOffset()) {
                    return true;
                }
            }
        }
        return false;
    }

    /** Waits as long as the I/O budget asks, once {@code bytes} more were read or written. */
    private void throttle(long bytes) {
        double limit = settings.ioMaxBytesPerSecond();
        if (limit == Double.MAX_VALUE) {
            return;
        }
        windowBytes += bytes;
        long elapsedNanos = System.nanoTime() - windowStartNanos;
        double dueNanos = windowBytes / limit * 1e9;
        if (dueNanos > elapsedNanos) {
            try {
                TimeUnit.NANOSECONDS.sleep((long) (dueNanos - elapsedNanos));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
        if (elapsedNanos > 1_000_000_000L) {
            windowStartNanos = System.nanoTime();
            windowBytes = 0;
        }
    }

    /** What a cleaning keeps of each batch: Kafka's cleaner's choice, made by {@code MemoryRecords.filterTo}. */
    private final class Filter extends MemoryRecords.RecordFilter implements BatchCleaner {
        private final Map<Long, List<PartitionTransactions.Aborted>> aborted;
        /**
         * Whether the transaction each producer has open at this point of the pass (batches come in log order, from
         * the log start) kept a record: its marker must stay if it did.
         */
        private final Map<Long, Boolean> transactionKept = new HashMap<>();
        /** The latest delete horizon of a tombstone or marker kept, 0 if none was. */
        long horizon;
        /** The batch being filtered again so that it does not grow: a tombstone without a horizon goes by its time. */
        private boolean byTime;

        Filter(long now, long deleteRetentionMs, Map<Long, List<PartitionTransactions.Aborted>> aborted) {
            super(now, deleteRetentionMs);
            this.aborted = aborted;
        }

        @Override
        public MemorySegment clean(MemorySegment stored) {
            ByteBuffer in = stored.asByteBuffer();
            throttle(in.remaining());
            MemoryRecords records = MemoryRecords.readableRecords(in);
            MutableRecordBatch batch = records.batches().iterator().next();
            if (batch.isControlBatch()) {
                return marker(stored, batch);
            }
            if (isAborted(batch, aborted)) {
                transaction(batch, false);
                return null;
            }
            MemorySegment kept = filtered(stored, records, in);
            transaction(batch, kept != null);
            return kept;
        }

        private void transaction(RecordBatch batch, boolean kept) {
            if (batch.isTransactional()) {
                transactionKept.merge(batch.producerId(), kept, Boolean::logicalOr);
            }
        }

        /**
         * A transaction's marker: kept while a record of its transaction is (a reader of those records needs the
         * marker to know how the transaction ended); once none is, kept until its own time plus delete.retention.ms,
         * then dropped, as Kafka's cleaner removes the markers of empty transactions. Kafka counts that time from the
         * cleaning that found the transaction empty (it sets the batch's delete horizon); setting one here would make
         * the marker batch larger than its place in the segment, so its time counts, which lets it go no sooner than
         * delete.retention.ms after the transaction ended.
         */
        private MemorySegment marker(MemorySegment stored, RecordBatch batch) {
            if (Boolean.TRUE.equals(transactionKept.remove(batch.producerId()))) {
                return stored;
            }
            long due = saturatedAdd(batch.maxTimestamp(), deleteRetentionMs);
            if (currentTime >= due) {
                return null;
            }
            horizon = Math.max(horizon, due);
            return stored;
        }

        /** @return what filterTo keeps of a data batch: itself, a cleaned copy, or null for nothing */
        private MemorySegment filtered(MemorySegment stored, MemoryRecords records, ByteBuffer in) {
            if (output.capacity() < in.remaining()) {
                output = ByteBuffer.allocate(Math.max(in.remaining(), output.capacity() * 2));
            }
            byTime = false;
            ByteBuffer written = filter(records);
            if (written != null && written.remaining() > stored.byteSize()) {
                // Setting a kept tombstone's delete horizon rebases the records' timestamps on it, which can make the
                // batch larger, and a segment's copy must fit in the segment. Again without setting one: tombstones
                // go once their own time is delete.retention.ms past.
                byTime = true;
                written = filter(MemoryRecords.readableRecords(stored.asByteBuffer()));
                if (written != null && written.remaining() > stored.byteSize()) {
                    return stored; // kept whole until its tombstones' time has passed
                }
            }
            if (written == null) {
                return null;
            }
            if (written.remaining() == stored.byteSize() && written.equals(stored.asByteBuffer())) {
                return stored;
            }
            throttle(written.remaining());
            return MemorySegment.ofBuffer(written);
        }

        /** @return what filterTo keeps of the batch, flipped for reading, or null if it keeps no record */
        private ByteBuffer filter(MemoryRecords records) {
            output.clear();
            MemoryRecords.FilterResult result = records.filterTo(this, output, BufferSupplier.NO_CACHING);
            if (result.messagesRetained() == 0) {
                return null;
            }
            ByteBuffer written = result.outputBuffer();
            if (written != output && written.capacity() > output.capacity()) {
                output = written; // filterTo grew it
            }
            written.flip();
            return written;
        }

        @Override
        protected BatchRetentionResult checkBatchRetention(RecordBatch batch) {
            return new BatchRetentionResult(BatchRetention.DELETE_EMPTY, false);
        }

        @Override
        protected boolean shouldRetainRecord(RecordBatch batch, Record record) {
            if (!record.hasKey()) {
                return false; // as Kafka's cleaner: a compacted topic's record without a key goes
            }
            long latest = map.get(record.key());
            if (latest >= 0 && record.offset() < latest) {
                return false;
            }
            if (!record.hasValue()) {
                // A tombstone stays until its batch's delete horizon, which filterTo sets at its first cleaning.
                OptionalLong set = batch.deleteHorizonMs();
                long due = set.isPresent() ? set.getAsLong()
                        : byTime ? saturatedAdd(batch.maxTimestamp(), deleteRetentionMs)
                        : saturatedAdd(currentTime, deleteRetentionMs);
                boolean keep = set.isEmpty() && !byTime || currentTime < due;
                if (keep) {
                    horizon = Math.max(horizon, Math.max(1, due));
                }
                return keep;
            }
            return true;
        }
    }

    private static long saturatedAdd(long a, long b) {
        long sum = a + b;
        return ((a ^ sum) & (b ^ sum)) < 0 ? Long.MAX_VALUE : sum;
    }

    @Override
    public void close() {
        thread.shutdownNow();
        try {
            thread.awaitTermination(10, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
