package io.sluice.store.internal.engine;

import io.sluice.store.ReadResult;
import io.sluice.store.RecoveryReport;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreStatus;
import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.LogFormat;
import io.sluice.store.internal.recovery.Checkpoint;
import io.sluice.store.internal.retention.RetentionService;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * A log of its own that exists but is not open ({@link Logs}): not opened yet since the store opened after a clean
 * shutdown, or closed while idle. It holds what the store needs of the log without its files: the checkpoint's entry,
 * how to open it again, and what the store shows of it meanwhile (its status, queues, what retention could delete).
 *
 * <p>The durable position is the log's end. A log closed while idle was forced whole first (records, index entries,
 * directories); a log not opened since a clean shutdown was forced whole by that shutdown. So it opens again as after a
 * clean shutdown (recovery's row 1: nothing read but each queue's last entry), and a checkpoint that records the
 * position claims nothing unforced. In a store opened for reading only nothing is forced: the log opens again as it
 * first did ({@link #clean} false there after a crash).
 *
 * @param directory the log's directory
 * @param format what its records are
 * @param durablePosition its end, everything below it forced (or, read-only, what it first opened with)
 * @param start its first position
 * @param clean it opens without recovery, ending at {@code durablePosition}
 * @param report what its first open since the store opened found, or null if it has not opened since
 * @param contents the identity of its bytes, kept across closes and changed by what rewrites them (a compaction's
 *     swap; a truncation opens a new log): a slice chosen before a close is sent from the log opened again only if it
 *     still holds the same bytes; null if it has not opened since the store opened
 * @param outlook what retention could delete from it, or null if not known (it has not opened since)
 * @param segmentCount its segment files holding records, or -1 if not known yet
 * @param queues its queues by topic, or null if not known yet
 * @param offsets its queues' offsets by topic and queue id, as they stood when it closed, or null if not known (it
 *     has not opened since the store opened)
 * @param keyed it has a key file (a key lookup asks it)
 */
record ClosedLog(Path directory, LogFormat format, long durablePosition, long start, boolean clean,
                 RecoveryReport report, Object contents, RetentionService.Outlook outlook, int segmentCount,
                 Map<String, Set<Integer>> queues, Map<String, Map<Integer, Offsets>> offsets, boolean keyed) {

    /**
     * A queue of a closed log as it stood when the log closed, which it cannot leave while closed: a read that finds
     * nothing to read there is answered without opening the log (a consumer polling an idle partition).
     *
     * @param min its first offset
     * @param end the offset after its last readable message
     * @param next the offset its next append gets
     */
    record Offsets(long min, long end, long next) {

        /** A queue the closed log does not hold. */
        static final Offsets NO_QUEUE = new Offsets(0, 0, 0);

        /**
         * @return why a read from {@code fromOffset} finds nothing (as {@code LogReader} says it), or null if it finds
         *     messages and needs the log
         */
        ReadResult.Status nothingAt(long fromOffset) {
            if (this == NO_QUEUE) {
                return ReadResult.Status.NO_SUCH_QUEUE;
            }
            if (fromOffset < min) {
                return ReadResult.Status.OFFSET_TOO_SMALL;
            }
            if (fromOffset >= end) {
                return fromOffset == end ? ReadResult.Status.NO_NEW_MESSAGES : ReadResult.Status.OFFSET_OVERFLOW;
            }
            return null;
        }

        /** @return the offset to read from next after a read that found nothing for {@code status} */
        long continueAt(ReadResult.Status status) {
            return status == ReadResult.Status.NO_SUCH_QUEUE ? 0
                    : status == ReadResult.Status.OFFSET_TOO_SMALL ? min : end;
        }
    }

    /** A log the store has not opened since it opened after a clean shutdown: it is as the checkpoint records it. */
    static ClosedLog notOpenedYet(Path directory, LogFormat format, long durablePosition, long start) {
        return new ClosedLog(directory, format, durablePosition, start, true, null, null, null, -1, null, null, true);
    }

    /** @return true if the log has opened since the store opened (its first open's checks are done) */
    boolean openedBefore() {
        return report != null;
    }

    /** @return the checkpoint's entry for it */
    Checkpoint.Log checkpointEntry() {
        return new Checkpoint.Log(durablePosition, start);
    }

    /** @return what its open found; for one not opened since the store opened, what a clean open finds */
    RecoveryReport recovery() {
        return report != null ? report : new RecoveryReport(RecoveryReport.Mode.CLEAN, durablePosition, -1,
                durablePosition, 0, -1, 0, 0, List.of(), null);
    }

    /**
     * @return this, with its segment count and queues read from its directory if they are not known (a log not opened
     *     since the store opened): a listing, not an open
     */
    ClosedLog listed(FileIO io) throws IOException {
        if (segmentCount >= 0 && queues != null) {
            return this;
        }
        int segments = 0;
        Path logDirectory = directory.resolve("log");
        if (io.isDirectory(logDirectory)) {
            for (Path file : io.list(logDirectory)) {
                // One starting at or past the end was prepared and never written: the log's next open deletes it.
                if (CommitLog.isSegmentName(file)
                        && Long.parseLong(file.getFileName().toString()) < Math.max(durablePosition, 1)) {
                    segments++;
                }
            }
        }
        Map<String, Set<Integer>> found = new TreeMap<>();
        Path indexDirectory = directory.resolve("index");
        if (io.isDirectory(indexDirectory)) {
            for (Path topicDirectory : io.list(indexDirectory)) {
                if (!io.isDirectory(topicDirectory)) {
                    continue;
                }
                Set<Integer> ids = new TreeSet<>();
                for (Path queueDirectory : io.list(topicDirectory)) {
                    String name = queueDirectory.getFileName().toString();
                    // The rule QueueIndexes applies as it opens a log's indexes.
                    if (!name.isEmpty() && name.length() <= 10 && name.chars().allMatch(Character::isDigit)
                            && io.isDirectory(queueDirectory)) {
                        ids.add(Integer.parseInt(name));
                    }
                }
                if (!ids.isEmpty()) {
                    found.put(topicDirectory.getFileName().toString(), ids);
                }
            }
        }
        Path keyDirectory = directory.resolve("keys");
        boolean hasKeys = io.isDirectory(keyDirectory) && !io.list(keyDirectory).isEmpty();
        return new ClosedLog(directory, format, durablePosition, start, clean, report, contents, outlook, segments,
                found, offsets, hasKeys);
    }

    /**
     * @param consumerPositions the store's registered consumer positions
     * @param appendsRefused the store's last retention pass refused appends
     * @return its status while closed: open (it opens on use), its positions those of a log forced whole, nothing
     *     mapped or buffered
     */
    StoreStatus status(StoreConfig config, int consumerPositions, boolean appendsRefused) {
        return new StoreStatus(StoreStatus.State.OPEN, null, durablePosition, durablePosition, durablePosition,
                Math.max(0, start), Math.max(0, segmentCount), config.writePath(), config.flushMode(),
                consumerPositions, appendsRefused, null, null, 0, 0);
    }
}
