package io.sluice.broker;

import io.sluice.store.KafkaBatch;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * The idempotent producers of one partition's log as a replica stored its batches, in log order: for each producer id,
 * its epoch and its last five batches (a producer has at most five in flight), as Kafka's replicas keep them. A
 * replica of a cluster keeps it as it writes each entry's batches, so the replica that becomes leader takes its
 * producers from here rather than reading its log back; a cut of the log's tail (Raft truncating uncommitted entries,
 * an install) drops it, and it is rebuilt from the log where next asked for.
 *
 * <p>Thread-safe.
 */
public final class ProducerHistory {

    /**
     * Producers remembered, the least recently seen forgotten first (a forgotten producer is an unknown one: it starts
     * again at sequence 0, in a new epoch).
     */
    public static final int MAX_PRODUCERS = 10_000;
    /** Batches remembered per producer: as many as a producer may have in flight. */
    public static final int RECENT_BATCHES = 5;

    private static final ValueLayout.OfInt INT = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    private static final ValueLayout.OfShort SHORT = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);
    /** Bit 5 of a batch's attributes: a control batch (a transaction marker). */
    public static final int CONTROL_FLAG = 0x20;
    /** Bit 4 of a batch's attributes: a batch of a transaction. */
    public static final int TRANSACTIONAL_FLAG = 0x10;
    private static final ValueLayout.OfLong LONG = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.BIG_ENDIAN);

    /**
     * One stored batch of a producer.
     *
     * @param firstSequence its first record's sequence
     * @param lastSequence its last record's sequence
     * @param baseOffset its first offset
     */
    public record Batch(int firstSequence, int lastSequence, long baseOffset) {
    }

    /**
     * A producer as the log shows it.
     *
     * @param epoch its epoch
     * @param recent its last batches of that epoch, oldest first, at most {@link #RECENT_BATCHES}
     */
    public record Producer(short epoch, List<Batch> recent) {
    }

    private static final class Kept {
        final short epoch;
        final ArrayDeque<Batch> recent = new ArrayDeque<>(RECENT_BATCHES);

        Kept(short epoch) {
            this.epoch = epoch;
        }
    }

    private final Map<Long, Kept> producers = new LinkedHashMap<>(16, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<Long, Kept> eldest) {
            return size() > MAX_PRODUCERS;
        }
    };

    /**
     * Notes a batch the log stored (or is storing: the caller drops the history if the store then fails it), in log
     * order: its producer's fields are read from its header. A batch with no
     * producer id, or shorter than a header, is passed over; one of an older epoch than its producer's is too (the
     * log holds it, but the producer has moved on).
     *
     * @param batch the batch's bytes, from its baseOffset on
     * @param baseOffset the first offset the log gave it
     */
    public synchronized void stored(MemorySegment batch, long baseOffset) {
        if (batch.byteSize() < KafkaBatch.HEADER_BYTES) {
            return;
        }
        long producerId = batch.get(LONG, KafkaBatch.PRODUCER_ID);
        short epoch = batch.get(SHORT, KafkaBatch.PRODUCER_EPOCH);
        if ((batch.get(SHORT, KafkaBatch.ATTRIBUTES) & CONTROL_FLAG) != 0) {
            marker(producerId, epoch);
            return;
        }
        int first = batch.get(INT, KafkaBatch.BASE_SEQUENCE);
        int last = first == -1 ? -1 : KafkaBatch.lastSequence(first, batch.get(INT, KafkaBatch.LAST_OFFSET_DELTA));
        stored(producerId, epoch, first, last, baseOffset);
    }

    /**
     * Notes a batch the log stored, in log order, by its producer's fields ({@link #stored(MemorySegment, long)}).
     *
     * @param producerId its producer id, -1 for none (the batch is passed over)
     */
    public synchronized void stored(long producerId, short epoch, int firstSequence, int lastSequence,
                                    long baseOffset) {
        if (producerId < 0) {
            return;
        }
        Kept entry = producers.get(producerId);
        if (entry == null || epoch > entry.epoch) {
            entry = new Kept(epoch);
            producers.put(producerId, entry);
        } else if (epoch < entry.epoch) {
            return;
        }
        if (entry.recent.size() == RECENT_BATCHES) {
            entry.recent.removeFirst();
        }
        entry.recent.addLast(new Batch(firstSequence, lastSequence, baseOffset));
    }

    /**
     * Notes a transaction marker (a control batch, written by the transaction coordinator) the log stored: it carries
     * no sequence, and a newer epoch than its producer's (a transaction aborted at its timeout fences the producer)
     * starts that epoch with no batch, so that the producer's next batch must be its first of the epoch.
     */
    public synchronized void marker(long producerId, short epoch) {
        if (producerId < 0) {
            return;
        }
        Kept entry = producers.get(producerId);
        if (entry == null || epoch > entry.epoch) {
            producers.put(producerId, new Kept(epoch));
        }
    }

    /** @return the producers as now, least recently seen first: a copy, which the log's later batches leave alone */
    public synchronized Map<Long, Producer> producers() {
        Map<Long, Producer> copy = new LinkedHashMap<>();
        for (Map.Entry<Long, Kept> entry : producers.entrySet()) {
            copy.put(entry.getKey(), new Producer(entry.getValue().epoch, new ArrayList<>(entry.getValue().recent)));
        }
        return copy;
    }

    /** Offsets read back to rebuild a partition's producers from its log: far more than five batches of any producer. */
    public static final long REBUILD_OFFSETS = 20_000;

    /** Reads a partition's stored batches. */
    @FunctionalInterface
    public interface LogReader {
        /** @return up to {@code maxMessages} stored messages from {@code offset} on (close it) */
        ReadResult read(long offset, int maxMessages, long maxBytes);
    }

    /**
     * Rebuilds the producers from the log's last {@link #REBUILD_OFFSETS} offsets below {@code end}: where no replica
     * kept them (a start, a cut of the log's tail).
     *
     * @param start the log's first offset
     * @param end the offset after the last batch to read
     */
    public static ProducerHistory readBack(LogReader log, long start, long end) {
        ProducerHistory history = new ProducerHistory();
        history.readOn(log, Math.max(start, end - REBUILD_OFFSETS), end);
        return history;
    }

    /**
     * Notes the log's batches from {@code from} on, below {@code end}, after those noted already: the tail of a log
     * whose producers were kept up to {@code from}.
     */
    public void readOn(LogReader log, long from, long end) {
        long offset = from;
        while (offset < end) {
            try (ReadResult read = log.read(offset, 1_000, 16L << 20)) {
                if (read.status() != ReadResult.Status.FOUND) {
                    break;
                }
                for (StoredMessage message : read.messages()) {
                    if (message.queueOffset() >= end) {
                        return;
                    }
                    if (message.opaque() && message.queueOffset() >= from) {
                        stored(message.body(), message.queueOffset());
                    }
                }
                offset = read.nextOffset();
            }
        }
    }

    /**
     * The producers a log showed below an offset, as kept across a clean restart.
     *
     * @param end the offset after the last batch they cover
     * @param history the producers
     */
    public record Saved(long end, ProducerHistory history) {
    }

    /**
     * Writes the producers, as the log shows them below {@code end}, to {@code file}, whole ({@link DurableFile}):
     * <pre>
     *   end=&lt;offset&gt;\n
     *   producer=&lt;id&gt; &lt;epoch&gt; &lt;first&gt;:&lt;last&gt;@&lt;base offset&gt; ...\n   (one line each, its batches oldest first)
     *   crc32c=&lt;hex of the CRC32C of everything before&gt;\n
     * </pre>
     * The caller forced the log's batches below {@code end} first: the file claims nothing the log may lose.
     */
    public synchronized void save(FileIO io, Path file, long end) throws IOException {
        StringBuilder body = new StringBuilder("end=").append(end).append('\n');
        for (Map.Entry<Long, Kept> entry : producers.entrySet()) {
            body.append("producer=").append(entry.getKey()).append(' ').append(entry.getValue().epoch);
            for (Batch batch : entry.getValue().recent) {
                body.append(' ').append(batch.firstSequence()).append(':').append(batch.lastSequence()).append('@')
                        .append(batch.baseOffset());
            }
            body.append('\n');
        }
        DurableFile.write(io, file, file.resolveSibling(file.getFileName() + ".tmp"), body + "crc32c="
                + crc(body.toString()) + "\n");
    }

    /**
     * Takes the producers {@link #save} kept in {@code file}: reads it, then deletes it, durably, so that it is used
     * by one start only (what the log holds changes from then on).
     *
     * @return what the file kept, or null if there is none or it is not whole
     */
    public static Saved take(FileIO io, Path file) throws IOException {
        if (!io.exists(file)) {
            return null;
        }
        Saved saved = parse(DurableFile.read(io, file));
        io.delete(file);
        io.syncDirectory(file.getParent());
        return saved;
    }

    /** @return what a file {@link #save} wrote holds, or null if it is not such a file, whole */
    static Saved parse(String text) {
        int crcAt = text.lastIndexOf("crc32c=");
        if (crcAt < 0 || !text.substring(crcAt).equals("crc32c=" + crc(text.substring(0, crcAt)) + "\n")) {
            return null;
        }
        String[] lines = text.substring(0, crcAt).split("\n");
        try {
            if (!lines[0].startsWith("end=")) {
                return null;
            }
            long end = Long.parseLong(lines[0].substring("end=".length()));
            ProducerHistory history = new ProducerHistory();
            for (int i = 1; i < lines.length; i++) {
                String[] words = lines[i].substring("producer=".length()).split(" ");
                Kept kept = new Kept(Short.parseShort(words[1]));
                for (int w = 2; w < words.length; w++) {
                    int colon = words[w].indexOf(':');
                    int at = words[w].indexOf('@');
                    kept.recent.addLast(new Batch(Integer.parseInt(words[w].substring(0, colon)),
                            Integer.parseInt(words[w].substring(colon + 1, at)),
                            Long.parseLong(words[w].substring(at + 1))));
                }
                history.producers.put(Long.parseLong(words[0]), kept);
            }
            return new Saved(end, history);
        } catch (RuntimeException e) {
            return null;
        }
    }

    private static String crc(String body) {
        CRC32C crc = new CRC32C();
        crc.update(body.getBytes(StandardCharsets.US_ASCII));
        return Long.toHexString(crc.getValue());
    }

    /** @return how many producers are remembered */
    public synchronized int size() {
        return producers.size();
    }
}
