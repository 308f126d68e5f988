package io.sluice.store.internal.recovery;

import io.sluice.store.StoreCorruptedException;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The queues whose first offset was raised on request ({@code Store.deleteRecords}, Kafka's DeleteRecords): each
 * queue's first offset, below which its records read as deleted whatever the log still holds. The file
 * {@code log-starts} is replaced atomically on each change, before the change is answered. Little-endian:
 * <pre>
 * offset size field
 *   0     4   magic    0x534C4C53 ("SLLS")
 *   4     2   version  1
 *   6     2   reserved 0
 *   8     4   count
 *  12     -   entries  count times: u16 topic length, topic (ASCII), u32 queue id, u64 first offset
 *   -     4   crc      CRC32C of every byte before it
 * </pre>
 * A damaged file refuses the open: records it says were deleted must not come back.
 *
 * <p>Thread-safe; changes are made under the caller's lock.
 */
public final class LogStarts {

    /** The file's name in the store directory. */
    public static final String FILE_NAME = "log-starts";
    static final int MAGIC = 0x534C4C53;
    static final short VERSION = 1;

    /** A queue of a topic. */
    public record Queue(String topic, int queueId) {
    }

    private final Map<Queue, Long> starts = new ConcurrentHashMap<>();

    private LogStarts() {
    }

    /** @return the log starts in {@code directory}; none if there is no file */
    public static LogStarts load(FileIO io, Path directory) throws IOException {
        LogStarts loaded = new LogStarts();
        Path path = directory.resolve(FILE_NAME);
        if (!io.exists(path)) {
            return loaded;
        }
        byte[] bytes = FileTree.readAll(io, path);
        try {
            SealedFile.Contents contents = SealedFile.open(bytes, MAGIC, VERSION);
            ByteBuffer buffer = contents.entries();
            for (int i = 0; i < contents.count(); i++) {
                byte[] topic = new byte[Short.toUnsignedInt(buffer.getShort())];
                buffer.get(topic);
                int queueId = buffer.getInt();
                long start = buffer.getLong();
                if (queueId < 0 || start < 0) {
                    throw new IllegalStateException("queue " + queueId + " starting at " + start);
                }
                loaded.starts.put(new Queue(new String(topic, StandardCharsets.US_ASCII), queueId), start);
            }
            if (buffer.hasRemaining()) {
                throw new IllegalStateException(buffer.remaining() + " bytes past the last entry");
            }
        } catch (RuntimeException e) {
            throw new StoreCorruptedException("log starts " + path + " are damaged (" + e.getMessage() + "): they say"
                    + " which records were deleted, so the store cannot open without them", path, -1);
        }
        return loaded;
    }

    /** @return every queue's raised first offset, by topic and queue id (so that walking them is repeatable) */
    public Map<Queue, Long> all() {
        Map<Queue, Long> all = sorted();
        all.putAll(starts);
        return java.util.Collections.unmodifiableMap(all);
    }

    /** @return the queue's raised first offset, or 0 if it was never raised */
    public long start(String topic, int queueId) {
        return starts.getOrDefault(new Queue(topic, queueId), 0L);
    }

    /**
     * Records a queue's first offset and saves the file atomically; in force ({@link #start}) once saved.
     *
     * @throws io.sluice.store.internal.io.AtomicFile.UncertainReplaceException if saving failed at or after the rename
     */
    public void raise(FileIO io, Path directory, String topic, int queueId, long start) throws IOException {
        put(io, directory, new Queue(topic, queueId), start);
    }

    /**
     * Lowers a queue's first offset to {@code start} if it is higher (0 forgets the queue), and saves the file
     * atomically: for a queue that now ends below its start (its tail was lost, or it was emptied at a lower offset),
     * whose next records must not read as deleted.
     *
     * @return true if the queue's first offset was lowered
     * @throws io.sluice.store.internal.io.AtomicFile.UncertainReplaceException if saving failed at or after the rename
     */
    public boolean lower(FileIO io, Path directory, String topic, int queueId, long start) throws IOException {
        if (start(topic, queueId) <= start) {
            return false;
        }
        put(io, directory, new Queue(topic, queueId), start);
        return true;
    }

    private void put(FileIO io, Path directory, Queue queue, long start) throws IOException {
        Map<Queue, Long> next = sorted();
        next.putAll(starts);
        if (start == 0) {
            next.remove(queue);
        } else {
            next.put(queue, start);
        }
        save(io, directory, next);
        if (start == 0) {
            starts.remove(queue);
        } else {
            starts.put(queue, start);
        }
    }

    private static Map<Queue, Long> sorted() {
        return new TreeMap<>(java.util.Comparator.comparing(Queue::topic).thenComparingInt(Queue::queueId));
    }

    /** Forgets every queue of a topic (deleted) and saves the file, if it named any. */
    public void forget(FileIO io, Path directory, String topic) throws IOException {
        if (starts.keySet().stream().noneMatch(queue -> queue.topic().equals(topic))) {
            return;
        }
        Map<Queue, Long> next = sorted();
        next.putAll(starts);
        next.keySet().removeIf(queue -> queue.topic().equals(topic));
        save(io, directory, next);
        starts.keySet().removeIf(queue -> queue.topic().equals(topic));
    }

    private static void save(FileIO io, Path directory, Map<Queue, Long> snapshot) throws IOException {
        int bytes = 0;
        for (Queue queue : snapshot.keySet()) {
            bytes += 2 + queue.topic().length() + 4 + 8;
        }
        SealedFile.save(io, directory, FILE_NAME, MAGIC, VERSION, snapshot.size(), bytes, buffer -> snapshot
                .forEach((queue, start) -> {
                    byte[] name = queue.topic().getBytes(StandardCharsets.US_ASCII);
                    buffer.putShort((short) name.length).put(name).putInt(queue.queueId()).putLong(start);
                }));
    }
}
