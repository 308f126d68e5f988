package io.sluice.sim;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the {@link PowerLossSimulation} appended to each queue, message for message, as the store should hold it: the
 * model its checks compare the store with. Each body starts with a stamp of its run and id, so a body the store
 * serves can be traced to the message it is. Also each queue's start (below it records were deleted on request and
 * must never come back) and the highest first offset it may show, the BATCHES topic's configs as the last change that
 * returned set them, and what a power cut left in doubt: truncations, emptyings, record deletions and a config change
 * it interrupted, whose outcome the next open decides.
 *
 * <p>Not thread-safe; one per run.
 */
final class QueueModel {

    /** One appended message as the model remembers it. */
    static final class Sent {
        final long id;
        final byte[] body;
        final String key;
        boolean acknowledged;

        Sent(long id, byte[] body, String key) {
            this.id = id;
            this.body = body;
            this.key = key;
        }
    }

    /** {@link #highestFirst} of a queue retention may have taken records of for their age or its log's size. */
    static final long UNKNOWN = Long.MAX_VALUE;

    /** What the model holds for an offset below an emptied queue's new start: never read, never acknowledged. */
    private static final Sent REMOVED = new Sent(-1, new byte[8], null);

    private final long seed;
    /** By queue ({@code <topic>-<queue id>}), what it holds from offset 0. */
    private final Map<String, List<Sent>> queues = new LinkedHashMap<>();
    /** Queues whose truncation a power cut interrupted, and where it cut: what lies past it may be gone. */
    final Map<String, Long> truncationsInDoubt = new LinkedHashMap<>();
    /** Queues being emptied when the power was cut: the offset asked for, and the queue's first offset before. */
    final Map<String, long[]> emptyingsInDoubt = new LinkedHashMap<>();
    /**
     * By queue, the offset it starts at as far as the store has promised: the offset of its last record deletion that
     * returned, or where it was last emptied. Its first offset may never be lower: deleted records must not come back.
     */
    private final Map<String, Long> starts = new HashMap<>();
    /**
     * By queue, the highest first offset it may show: its start, or where retention had taken it when it was last
     * seen; {@link #UNKNOWN} while retention may take its records for their age or its log's size. Higher, and
     * records at or above its start were lost.
     */
    private final Map<String, Long> highestFirsts = new HashMap<>();
    /** Queues whose record deletion the power cut before it returned, and the offset it asked for. */
    final Map<String, Long> startsInDoubt = new LinkedHashMap<>();
    /** The BATCHES topic's configs, as set by the last change that returned (or by its creation). */
    Map<String, String> topicConfigs = Map.of();
    /** A change of the BATCHES topic's configs the power cut before it returned, or null. */
    Map<String, String> topicConfigsInDoubt;

    QueueModel(long seed) {
        this.seed = seed;
        for (String topic : SimWorkload.TOPICS) {
            for (int queue = 0; queue < SimWorkload.QUEUES; queue++) {
                queues.put(topic + "-" + queue, new ArrayList<>());
                starts.put(topic + "-" + queue, 0L);
                highestFirsts.put(topic + "-" + queue, 0L);
            }
        }
    }

    /** @return what {@code queue} holds, from offset 0; the caller changes it as the store's queue changes */
    List<Sent> queue(String queue) {
        return queues.get(queue);
    }

    /** @return every queue and what it holds */
    Map<String, List<Sent>> queues() {
        return queues;
    }

    /** @return the offset below which {@code queue}'s records are gone for good */
    long start(String queue) {
        return starts.get(queue);
    }

    /** Records that {@code queue} starts at {@code start} for good. */
    void start(String queue, long start) {
        starts.put(queue, start);
    }

    /** @return the highest first offset {@code queue} may show, or {@link #UNKNOWN} */
    long highestFirst(String queue) {
        return highestFirsts.get(queue);
    }

    /** Records the highest first offset {@code queue} may show, or {@link #UNKNOWN}. */
    void highestFirst(String queue, long offset) {
        highestFirsts.put(queue, offset);
    }

    /** @return the offset after {@code queue}'s last acknowledged message, 0 if none was */
    long acknowledgedEnd(String queue) {
        List<Sent> list = queues.get(queue);
        for (int i = list.size() - 1; i >= 0; i--) {
            if (list.get(i).acknowledged) {
                return i + 1;
            }
        }
        return 0;
    }

    /** @return the stamp the body of message {@code id} starts with */
    long stamp(long id) {
        return seed * 1_000_003 + id;
    }

    /** An emptied queue starting at {@code at}: the offsets below it hold nothing that can be read. */
    static void startAt(List<Sent> list, long at) {
        list.clear();
        for (long i = 0; i < at; i++) {
            list.add(REMOVED);
        }
    }

    /** @return which message of the model {@code body} is, by its stamp, for a failure's report */
    String identify(byte[] body) {
        if (body.length < 8) {
            return "";
        }
        long stamp = ByteBuffer.wrap(body).getLong();
        for (Map.Entry<String, List<Sent>> entry : queues.entrySet()) {
            for (Sent sent : entry.getValue()) {
                if (stamp(sent.id) == stamp) {
                    return "; it is message id " + sent.id + " of " + entry.getKey();
                }
            }
        }
        return "; it matches no message of this run's current history (resurrected or corrupt)";
    }
}
