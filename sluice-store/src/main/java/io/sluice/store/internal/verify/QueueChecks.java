package io.sluice.store.internal.verify;

import io.sluice.store.internal.index.QueueIndexFormat;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;

/**
 * The queue-index part of a {@link LogVerifier}'s checks: every queue's index files form a run, each entry up to the
 * index's end matches the record it points at, and the index reaches as far as the log holds the queue's records
 * (all of it below the durable position). Not thread-safe; one instance per run.
 */
final class QueueChecks {

    private final LogVerifier log;
    private final FileIO io;

    QueueChecks(LogVerifier log) {
        this.log = log;
        this.io = log.io();
    }

    /** A queue's index directory, {@code index/<topic>/<queueId>}. */
    private record QueueDirectory(String topic, String queueName, Path path) {
        String key() {
            return topic + "-" + queueName;
        }
    }

    /**
     * @param indexRoot the log's {@code index/} directory
     * @return how many entries were checked
     */
    long run(Path indexRoot) throws IOException {
        Map<String, QueueDirectory> directories = new TreeMap<>();
        if (io.isDirectory(indexRoot)) {
            for (Path topic : io.list(indexRoot)) {
                if (io.isDirectory(topic)) {
                    for (Path queue : io.list(topic)) {
                        if (io.isDirectory(queue)) {
                            QueueDirectory directory = new QueueDirectory(topic.getFileName().toString(),
                                    queue.getFileName().toString(), queue);
                            directories.put(directory.key(), directory);
                        }
                    }
                }
            }
        }
        for (Map.Entry<String, long[]> queue : log.queues().entrySet()) {
            if (!directories.containsKey(queue.getKey())) {
                log.report(log.claimed(Long.MAX_VALUE) && queue.getValue()[2] > queue.getValue()[0],
                        "queue " + queue.getKey() + " has records in the log but no index",
                        "queue " + queue.getKey() + " has no index yet: opening the store indexes its records");
            }
        }
        long checked = 0;
        for (QueueDirectory queue : directories.values()) {
            checked += checkQueue(queue);
        }
        return checked;
    }

    /** Where the walk over one queue's entries is. */
    private static final class Progress {
        long checked;
        /** The first offset with no valid entry, or -1 while the entries run on. */
        long end = -1;
        long runEnd;
        /** Entries that point past where the log ends. */
        long past;
        boolean gapsDone;
    }

    private long checkQueue(QueueDirectory queue) throws IOException {
        int queueId;
        try {
            queueId = Integer.parseInt(queue.queueName());
        } catch (NumberFormatException e) {
            log.fault("index directory " + queue.path() + " is not named by a queue id");
            return 0;
        }
        Progress progress = new Progress();
        int expectedFile = -1;
        for (Path file : io.list(queue.path())) {
            String name = file.getFileName().toString();
            long first = Long.parseLong(name);
            int number = log.geometry().fileStartingAt(first);
            if (number < 0 || (expectedFile >= 0 && number != expectedFile)) {
                log.fault("queue " + queue.key() + ": index file " + name + " is not where the next file should start");
                return progress.checked;
            }
            expectedFile = number + 1;
            try (StoreFile opened = io.open(file, FileIO.OpenMode.READ_ONLY); Arena arena = Arena.ofConfined()) {
                if (!checkFile(queue, queueId, first, log.map(opened, arena), progress)) {
                    return progress.checked;
                }
            }
        }
        long end = progress.end < 0 ? progress.runEnd : progress.end;
        if (progress.past > 0) {
            log.note("queue " + queue.key() + ": " + progress.past + " index entries point past where the log ends:"
                    + " opening the store drops them");
        }
        long[] expected = log.queues().get(queue.key());
        if (expected != null && end < expected[1]) {
            log.report(end < expected[2], "queue " + queue.key() + ": index ends at offset " + end + " but the log"
                    + " holds offsets up to " + expected[1] + ", and those below " + expected[2] + " were claimed"
                    + " durable", "queue " + queue.key() + ": index ends at offset " + end + ", the log at "
                    + expected[1] + ": opening the store indexes the rest");
        }
        return progress.checked;
    }

    /** @return false if a fault ends the queue's checks */
    private boolean checkFile(QueueDirectory queue, int queueId, long first, MemorySegment entries,
                              Progress progress) {
        for (long i = 0; i < entries.byteSize() / QueueIndexFormat.ENTRY_BYTES; i++) {
            long offset = first + i;
            long at = i * QueueIndexFormat.ENTRY_BYTES;
            if (!progress.gapsDone && QueueIndexFormat.isGap(entries, at, offset)) {
                continue;
            }
            progress.gapsDone = true;
            if (!QueueIndexFormat.isEntry(entries, at, offset)) {
                if (progress.end < 0) {
                    progress.end = offset;
                }
                continue;
            }
            progress.checked++;
            if (progress.end < 0) {
                progress.runEnd = offset + 1;
            }
            long position = entries.get(QueueIndexFormat.LONG, at + QueueIndexFormat.LOG_POSITION_OFFSET);
            if (progress.end >= 0) {
                if (log.claimed(position)) {
                    log.fault("queue " + queue.key() + ": index entry " + offset + " follows a hole at "
                            + progress.end + " below the durable position");
                } else {
                    progress.past++;
                }
                continue;
            }
            String fault = log.checkEntry(queue.topic(), queueId, offset, position,
                    entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.RECORD_SIZE_OFFSET),
                    entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.MESSAGE_COUNT_OFFSET),
                    entries.get(QueueIndexFormat.INT, at + QueueIndexFormat.INDEX_IN_RECORD_OFFSET),
                    entries.get(QueueIndexFormat.LONG, at + QueueIndexFormat.STORE_TIMESTAMP_OFFSET));
            if (fault == null) {
                continue;
            }
            if (!fault.startsWith("past:")) {
                log.fault("queue " + queue.key() + ": index entry " + offset + ": " + fault);
                return false;
            }
            progress.past++;
        }
        return true;
    }
}
