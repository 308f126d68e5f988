package io.sluice.sim;

import io.sluice.sim.QueueModel.Sent;
import io.sluice.store.FlushMode;
import io.sluice.store.LookupResult;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The {@link PowerLossSimulation}'s checks of what the store serves against the {@link QueueModel}: a message read
 * must be the one appended at its offset, and after an open every queue must hold a prefix of what was appended to
 * it from its first offset (under SYNC, every acknowledged message), its keys found by key lookup, and every topic
 * must keep its layout, the BATCHES topic its queue count and exactly the configs of its last change that returned
 * or of the one a power cut interrupted. A queue's first offset must never be below its start (deleted records do
 * not come back) nor, where retention takes records only below starts, above its highest first offset and the
 * deletion in doubt (no record at or above the start is lost). What an open shows lost is forgotten, so the run
 * continues from the recovered end. Counts the stored messages it compared.
 *
 * <p>Not thread-safe; one per run.
 */
final class ModelChecks {

    private final SplittableRandom random;
    private final SimSettings settings;
    private final QueueModel model;
    private long checked;

    ModelChecks(SplittableRandom random, SimSettings settings, QueueModel model) {
        this.random = random;
        this.settings = settings;
        this.model = model;
    }

    /** @return stored messages compared with what was appended */
    long checked() {
        return checked;
    }

    /** A message the store served must be the one appended at its offset. */
    void expectSame(String queue, List<Sent> list, StoredMessage message, String when) {
        long offset = message.queueOffset();
        if (offset >= list.size()) {
            throw new SimulationFailure(when + ": " + queue + " served offset " + offset + ", past the "
                    + list.size() + " messages ever appended");
        }
        byte[] body = message.bodyBytes();
        if (!Arrays.equals(body, list.get((int) offset).body)) {
            throw new SimulationFailure(when + ": " + queue + " offset " + offset + " holds " + body.length
                    + " bytes that are not the message appended there (" + list.get((int) offset).body.length
                    + " bytes, id " + list.get((int) offset).id + ")" + model.identify(body));
        }
        checked++;
    }

    /**
     * After an open: every queue must hold a prefix of what was appended, and under SYNC every acknowledged
     * message. What was lost is forgotten, so the next appends continue from the recovered end.
     */
    void checkAgainstModel(Store store, int epoch, boolean afterCrash) {
        for (Map.Entry<String, List<Sent>> entry : model.queues().entrySet()) {
            String queue = entry.getKey();
            List<Sent> list = entry.getValue();
            int dash = queue.lastIndexOf('-');
            String topic = queue.substring(0, dash);
            int queueId = Integer.parseInt(queue.substring(dash + 1));
            long min = store.minOffset(topic, queueId);
            long end = store.maxOffset(topic, queueId);
            long[] emptying = model.emptyingsInDoubt.get(queue);
            if (emptying != null && min == end && end <= Math.max(emptying[0], emptying[1])) {
                // Emptied by a call the power cut: the queue starts at the offset asked for or lower, holding nothing.
                QueueModel.startAt(list, end);
                model.start(queue, end);
                model.highestFirst(queue, end);
                continue;
            }
            if (end > list.size()) {
                throw new SimulationFailure("epoch " + epoch + ": " + queue + " ends at offset " + end + " but only "
                        + list.size() + " messages were ever appended to it");
            }
            checkFirstOffset(queue, min, end, model.startsInDoubt.get(queue),
                    "epoch " + epoch + (afterCrash ? " after a power cut" : " after a clean reopen"));
            long offset = min;
            while (offset < end) {
                try (ReadResult result = store.read(topic, queueId, offset, 500, 4 << 20)) {
                    if (result.messages().isEmpty()) {
                        throw new SimulationFailure("epoch " + epoch + ": " + queue + " returned no message at offset "
                                + offset + " below its end " + end + " (" + result.status() + ")");
                    }
                    for (StoredMessage message : result.messages()) {
                        long at = message.queueOffset();
                        long count = message.opaque() ? message.opaqueCount() : 1;
                        // A batch holding the first offset starts below it when records were deleted inside it.
                        if (at != offset && !(offset == min && at < offset && offset < at + count)) {
                            throw new SimulationFailure("epoch " + epoch + ": " + queue + " skipped from offset "
                                    + offset + " to " + at);
                        }
                        expectSame(queue, list, message, "epoch " + epoch + " after reopening");
                        Sent sent = list.get((int) at);
                        if (sent.key != null && random.nextInt(4) == 0) {
                            checkKeyFound(store, topic, sent, queue, epoch);
                        }
                        offset = at + count;
                    }
                }
            }
            Long inDoubt = model.startsInDoubt.get(queue);
            if (inDoubt != null && min >= inDoubt) {
                model.start(queue, Math.max(model.start(queue), inDoubt));
            }
            if (end < model.start(queue)) {
                model.start(queue, end); // its start came down with its end
            }
            // Until the next step the queue starts exactly here, whatever retention did before.
            model.highestFirst(queue, min);
            long cut = model.truncationsInDoubt.getOrDefault(queue, Long.MAX_VALUE);
            for (int i = (int) end; i < list.size(); i++) {
                if (list.get(i).acknowledged && settings.flushMode == FlushMode.SYNC && i < cut) {
                    throw new SimulationFailure("epoch " + epoch + ": " + queue + " lost acknowledged message at offset "
                            + i + " (id " + list.get(i).id + "); it ends at " + end + (afterCrash ? " after a power cut"
                            : " after a clean reopen"));
                }
            }
            list.subList((int) end, list.size()).clear();
        }
        model.truncationsInDoubt.clear();
        model.emptyingsInDoubt.clear();
        model.startsInDoubt.clear();
        checkTopics(store, epoch, afterCrash);
    }

    /** While the store runs: every queue's first offset lies between its start and its highest first offset. */
    void checkFirstOffsets(Store store, String when) {
        for (String queue : model.queues().keySet()) {
            int dash = queue.lastIndexOf('-');
            String topic = queue.substring(0, dash);
            int queueId = Integer.parseInt(queue.substring(dash + 1));
            checkFirstOffset(queue, store.minOffset(topic, queueId), Long.MAX_VALUE, null, when);
        }
    }

    /**
     * A queue's first offset is at least its start (records deleted by a call that returned never come back), or its
     * end if that is lower (a power cut took what lay past the end: the queue holds nothing, and its start comes down
     * to its end); and, where retention takes its records only below its start, at most its highest first offset or
     * the start the deletion in doubt asked for (no record at or above the start is lost).
     */
    private void checkFirstOffset(String queue, long first, long end, Long startInDoubt, String when) {
        long start = Math.min(model.start(queue), end);
        if (first < start) {
            throw new SimulationFailure(when + ": " + queue + " starts at offset " + first + ", below " + start
                    + " where its records were deleted: deleted records came back");
        }
        long highest = model.highestFirst(queue);
        if (highest != QueueModel.UNKNOWN && first > Math.max(highest, startInDoubt == null ? 0 : startInDoubt)) {
            throw new SimulationFailure(when + ": " + queue + " starts at offset " + first + ", above " + highest
                    + (startInDoubt == null ? "" : " and the " + startInDoubt + " of the deletion the cut interrupted")
                    + ", though retention takes its records only below its start " + start + ": records were lost");
        }
    }

    /**
     * Every topic keeps the layout it was created with, and the BATCHES topic its queue count and the configs of its
     * last change that returned, or of the change in doubt: the registry is replaced whole, never mixed, never older.
     */
    private void checkTopics(Store store, int epoch, boolean afterCrash) {
        String when = "epoch " + epoch + (afterCrash ? " after a power cut" : " after a clean reopen");
        for (int i = 0; i < SimWorkload.TOPICS.length; i++) {
            TopicLayout layout = store.layout(SimWorkload.TOPICS[i]);
            if (layout != SimWorkload.LAYOUTS[i]) {
                throw new SimulationFailure(when + ": topic " + SimWorkload.TOPICS[i] + " has layout " + layout
                        + ", created " + SimWorkload.LAYOUTS[i]);
            }
        }
        String topic = SimWorkload.BATCHES_TOPIC;
        if (store.queueCount(topic) != SimWorkload.QUEUES) {
            throw new SimulationFailure(when + ": topic " + topic + " has a queue count of " + store.queueCount(topic)
                    + ", declared " + SimWorkload.QUEUES);
        }
        Map<String, String> found = store.topicConfigs(topic);
        Map<String, String> inDoubt = model.topicConfigsInDoubt;
        if (!found.equals(model.topicConfigs) && !found.equals(inDoubt)) {
            throw new SimulationFailure(when + ": topic " + topic + " has configs " + describe(found) + ", where its"
                    + " last change that returned set " + describe(model.topicConfigs)
                    + (inDoubt == null ? "" : " and the change the cut interrupted " + describe(inDoubt)));
        }
        model.topicConfigs = found;
        model.topicConfigsInDoubt = null;
    }

    /** @return configs for a failure's report, a long value by its length */
    private static String describe(Map<String, String> configs) {
        StringBuilder text = new StringBuilder("{");
        configs.forEach((name, value) -> text.append(text.length() > 1 ? ", " : "").append(name).append('=')
                .append(value.length() > 40 ? value.length() + " chars" : value));
        return text.append('}').toString();
    }

    private static void checkKeyFound(Store store, String topic, Sent sent, String queue, int epoch) {
        try (LookupResult found = store.lookupByKey(topic, sent.key, 10, 0, Long.MAX_VALUE)) {
            boolean present = found.messages().stream().anyMatch(m -> Arrays.equals(m.bodyBytes(), sent.body));
            if (!present) {
                throw new SimulationFailure("epoch " + epoch + ": key " + sent.key + " of " + queue
                        + " is not found by key lookup, though its message is stored");
            }
        }
    }
}
