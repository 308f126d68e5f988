package io.sluice.sim;

import io.sluice.sim.QueueModel.Sent;
import io.sluice.store.AppendResult;
import io.sluice.store.KafkaBatch;
import io.sluice.store.LookupResult;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.Store;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;

/**
 * What the {@link PowerLossSimulation}'s producers and consumers do to the store: appends (single messages, batches,
 * Kafka record batches to the BATCHES topic), truncations and emptyings of the BATCHES topic's queues, record
 * deletions below an offset (Kafka's DeleteRecords) in every topic, reads, key lookups, offset commits, and changes of
 * the BATCHES topic's configs. Every append is recorded in the {@link QueueModel} before the call, and its future kept
 * until {@link #settle} finds it done; every record deletion and config change is recorded as in doubt before the
 * call and as the queue's start, or the topic's configs, once it returns.
 *
 * <p>Not thread-safe; one per run.
 */
final class SimWorkload {

    /** One topic per layout: SHARED, TOPIC, QUEUE and BATCHES (whose appends are Kafka record batches). */
    static final String[] TOPICS = {"s", "t", "q", "k"};
    /** The layouts of {@link #TOPICS}, in order. */
    static final TopicLayout[] LAYOUTS = {
        TopicLayout.SHARED, TopicLayout.TOPIC, TopicLayout.QUEUE, TopicLayout.BATCHES};
    static final String BATCHES_TOPIC = "k";
    static final int QUEUES = 2;
    /** The config whose value numbers each change of the BATCHES topic's configs, from 0 at its creation. */
    static final String SEQUENCE_CONFIG = "seq";

    /** An append whose future has not been looked at yet. */
    private record Pending(CompletableFuture<AppendResult> future, String queue, List<Sent> messages, long offset) {
    }

    private final SplittableRandom random;
    private final SimSettings settings;
    private final SimClock clock;
    private final QueueModel model;
    private final ModelChecks checks;
    private final List<Pending> pending = new ArrayList<>();
    private long nextId;
    private long nextConfigSequence;
    private long appends;
    private long acknowledged;

    SimWorkload(SplittableRandom random, SimSettings settings, SimClock clock, QueueModel model, ModelChecks checks) {
        this.random = random;
        this.settings = settings;
        this.clock = clock;
        this.model = model;
        this.checks = checks;
    }

    /** @return messages appended */
    long appends() {
        return appends;
    }

    /** @return appends acknowledged */
    long acknowledged() {
        return acknowledged;
    }

    /**
     * Creates the topics of a new store (SHARED, the default layout, needs none). The BATCHES topic is declared with
     * its queue count and configs, as a broker creates its topics.
     */
    void createTopics(Store store) {
        store.createTopic("t", TopicLayout.TOPIC);
        store.createTopic("q", TopicLayout.QUEUE);
        Map<String, String> configs = nextConfigs();
        store.createTopic(BATCHES_TOPIC, TopicLayout.BATCHES, QUEUES, configs);
        model.topicConfigs = configs;
    }

    /**
     * Replaces the BATCHES topic's configs with a new map: in doubt until the call returns, the topic's configs once
     * it has. The limits it draws are ones retention acts on within a run (a few simulated seconds, a few segments).
     */
    void changeConfigs(Store store) {
        Map<String, String> configs = nextConfigs();
        model.topicConfigsInDoubt = configs;
        store.setTopicConfigs(BATCHES_TOPIC, configs);
        model.topicConfigs = configs;
        model.topicConfigsInDoubt = null;
        if (!store.topicConfigs(BATCHES_TOPIC).equals(configs)) {
            throw new SimulationFailure("the BATCHES topic's configs read " + store.topicConfigs(BATCHES_TOPIC)
                    + " after they were set to " + configs);
        }
    }

    /**
     * @return the next configs of the BATCHES topic: its sequence number, retention limits or none, a cleanup policy
     *     or none, and sometimes a long note that takes the registry past one page
     */
    private Map<String, String> nextConfigs() {
        Map<String, String> configs = new TreeMap<>();
        configs.put(SEQUENCE_CONFIG, Long.toString(nextConfigSequence++));
        switch (random.nextInt(4)) {
            case 0 -> configs.put(Store.RETENTION_MS, "-1");
            case 1 -> configs.put(Store.RETENTION_MS, Long.toString(500 + random.nextInt(5000)));
            default -> { }
        }
        switch (random.nextInt(4)) {
            case 0 -> configs.put(Store.RETENTION_BYTES, "-1");
            case 1 -> configs.put(Store.RETENTION_BYTES,
                    Long.toString((2 + random.nextInt(6)) * settings.segmentBytes));
            default -> { }
        }
        switch (random.nextInt(4)) {
            case 0 -> configs.put(Store.CLEANUP_POLICY, "delete");
            case 1 -> configs.put(Store.CLEANUP_POLICY, "compact");
            case 2 -> configs.put(Store.CLEANUP_POLICY, "compact,delete");
            default -> { }
        }
        if (random.nextInt(4) == 0) {
            char[] note = new char[random.nextInt(2 * SimFileSystem.PAGE_BYTES)];
            for (int i = 0; i < note.length; i++) {
                note[i] = (char) ('a' + random.nextInt(26));
            }
            configs.put("note", new String(note));
        }
        return configs;
    }

    /** The process is gone: its appends will never complete. */
    void forgetPending() {
        pending.clear();
    }

    /**
     * Looks at finished futures: acknowledged appends must carry the offsets the model expects.
     *
     * @param powerCut whether the power was cut (appends may then fail)
     */
    void settle(boolean powerCut) {
        for (int i = 0; i < pending.size(); i++) {
            Pending waiting = pending.get(i);
            if (!waiting.future.isDone()) {
                continue;
            }
            pending.remove(i--);
            if (waiting.future.isCompletedExceptionally()) {
                if (!powerCut) {
                    throw new SimulationFailure("an append to " + waiting.queue + " failed before any power cut",
                            waiting.future.exceptionNow());
                }
                continue;
            }
            AppendResult result = waiting.future.resultNow();
            if (result.firstQueueOffset() != waiting.offset) {
                throw new SimulationFailure("an append to " + waiting.queue + " was acknowledged at offset "
                        + result.firstQueueOffset() + " where " + waiting.offset + " was expected");
            }
            for (Sent sent : waiting.messages) {
                sent.acknowledged = true;
            }
            acknowledged += waiting.messages.size();
        }
    }

    /** Appends one to five messages to a queue, most often to the hot topic's. */
    void append(Store store) {
        String queue = pickQueue();
        int dash = queue.lastIndexOf('-');
        String topic = queue.substring(0, dash);
        int queueId = Integer.parseInt(queue.substring(dash + 1));
        boolean batch = topic.equals(BATCHES_TOPIC);
        int count = settings.fixedBodyBytes == 0 && random.nextInt(8) == 0 ? 2 + random.nextInt(4) : 1;
        if (batch) {
            count = settings.fixedBodyBytes > 0 ? 1 : 1 + random.nextInt(5);
        }
        List<Sent> sent = new ArrayList<>();
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            long id = nextId++;
            // Log-uniform sizes from 8 bytes to 3 KiB (many small messages, a few large ones), or one fixed size.
            // (Up to 600 bytes in a record batch, which holds up to five of them.)
            byte[] body = new byte[settings.fixedBodyBytes > 0 ? settings.fixedBodyBytes
                    : 8 + (int) Math.exp(random.nextDouble() * Math.log(batch ? 600 : 3000))];
            random.nextBytes(body);
            ByteBuffer.wrap(body).putLong(model.stamp(id));
            String key = !batch && settings.fixedBodyBytes == 0 && random.nextInt(3) == 0 ? "k" + id : null;
            sent.add(new Sent(id, body, key));
            Message.Builder message = Message.builder().body(body);
            if (key != null) {
                message.keys(key);
            }
            messages.add(message.build());
        }
        List<Sent> list = model.queue(queue);
        long offset = list.size();
        CompletableFuture<AppendResult> future;
        if (batch) {
            // The bodies become the values of one record batch, which every offset it covers is checked against.
            byte[] bytes = KafkaBatch.of(clock.millis(), sent.stream().map(m -> m.body).toList());
            byte[] stored = bytes.clone();
            ByteBuffer.wrap(stored).putLong(0, offset);
            sent.replaceAll(m -> new Sent(m.id, stored, null));
            list.addAll(sent); // recorded before the call: if the power is cut inside it, the bytes may be on disk
            future = store.appendOpaque(topic, queueId, MemorySegment.ofArray(bytes), count);
        } else {
            // Recorded before the call: if the power is cut inside it, the bytes may have reached the disk.
            list.addAll(sent);
            future = count == 1 ? store.append(topic, queueId, messages.getFirst())
                    : store.appendBatch(topic, queueId, messages);
        }
        appends += count;
        pending.add(new Pending(future, queue, sent, offset));
    }

    /**
     * Truncates a queue of the BATCHES topic at one of its batches (as a Raft follower does): the model forgets what
     * lay past the cut, and what is appended next takes its offsets.
     */
    void truncate(Store store) {
        int queueId = random.nextInt(QUEUES);
        String queue = BATCHES_TOPIC + "-" + queueId;
        List<Sent> list = model.queue(queue);
        long min = store.minOffset(BATCHES_TOPIC, queueId);
        List<Integer> starts = new ArrayList<>();
        for (int offset = (int) min; offset < list.size(); offset++) {
            if (ByteBuffer.wrap(list.get(offset).body).getLong(0) == offset) {
                starts.add(offset);
            }
        }
        if (starts.isEmpty()) {
            return;
        }
        // Mostly a short tail, as Raft cuts; sometimes deep, across segments.
        int cut = random.nextInt(4) == 0 ? starts.get(random.nextInt(starts.size()))
                : starts.get(Math.max(0, starts.size() - 1 - random.nextInt(Math.min(starts.size(), 4))));
        model.truncationsInDoubt.put(queue, (long) cut);
        store.truncateQueue(BATCHES_TOPIC, queueId, cut);
        model.truncationsInDoubt.remove(queue);
        list.subList(cut, list.size()).clear();
        if (store.maxOffset(BATCHES_TOPIC, queueId) != cut) {
            throw new SimulationFailure(queue + " ends at " + store.maxOffset(BATCHES_TOPIC, queueId)
                    + " after its truncation at " + cut);
        }
    }

    /**
     * Empties a queue of the BATCHES topic and starts it at an offset past its end or below it (as a Raft follower
     * starts at its leader's first offset): the model forgets every batch, and what is appended next takes the offset.
     */
    void empty(Store store) {
        int queueId = random.nextInt(QUEUES);
        String queue = BATCHES_TOPIC + "-" + queueId;
        List<Sent> list = model.queue(queue);
        long at = random.nextBoolean() ? list.size() + random.nextInt(50) : random.nextInt(list.size() + 1);
        model.emptyingsInDoubt.put(queue, new long[] {at, store.minOffset(BATCHES_TOPIC, queueId)});
        store.emptyQueueAt(BATCHES_TOPIC, queueId, at);
        model.emptyingsInDoubt.remove(queue);
        QueueModel.startAt(list, at);
        model.start(queue, at);
        model.highestFirst(queue, at);
        if (store.minOffset(BATCHES_TOPIC, queueId) != at || store.maxOffset(BATCHES_TOPIC, queueId) != at) {
            throw new SimulationFailure(queue + " holds offsets " + store.minOffset(BATCHES_TOPIC, queueId) + " to "
                    + store.maxOffset(BATCHES_TOPIC, queueId) + " after it was emptied at " + at);
        }
    }

    /**
     * Deletes a queue's records below an offset at or below its acknowledged end, as Kafka's DeleteRecords does
     * (Streams purging a repartition topic, an operator freeing space): mostly a little way past its first offset,
     * sometimes every acknowledged record, sometimes at or below its first offset (which changes nothing). A BATCHES
     * queue's start may fall inside a batch. In doubt until the call returns; the queue's start once it has.
     */
    void deleteRecords(Store store) {
        String queue = pickQueue();
        int dash = queue.lastIndexOf('-');
        String topic = queue.substring(0, dash);
        int queueId = Integer.parseInt(queue.substring(dash + 1));
        long first = store.minOffset(topic, queueId);
        long end = Math.max(first, model.acknowledgedEnd(queue));
        // Rarely every record, so that most stay for the checks to read.
        long offset = switch (random.nextInt(20)) {
            case 0 -> end;
            case 1, 2, 3 -> random.nextLong(first + 1);
            default -> first + random.nextLong(Math.min(end - first, 5) + 1);
        };
        if (offset > first) {
            model.startsInDoubt.put(queue, offset); // the log-starts file is saved within the call
        }
        long after = store.deleteRecords(topic, queueId, offset);
        model.startsInDoubt.remove(queue);
        if (after != Math.max(first, offset) || store.minOffset(topic, queueId) != after) {
            throw new SimulationFailure(queue + " starts at " + store.minOffset(topic, queueId) + " (the call said "
                    + after + ") after its records below " + offset + " were deleted; it started at " + first);
        }
        model.start(queue, Math.max(model.start(queue), offset));
        if (model.highestFirst(queue) != QueueModel.UNKNOWN) {
            model.highestFirst(queue, Math.max(model.highestFirst(queue), after));
        }
        if (after > 0) {
            try (ReadResult below = store.read(topic, queueId, after - 1, 10, 1 << 20)) {
                if (below.status() != ReadResult.Status.OFFSET_TOO_SMALL || !below.messages().isEmpty()) {
                    throw new SimulationFailure(queue + " served offset " + (after - 1) + " (" + below.status()
                            + ", " + below.messages().size() + " messages) after its records below " + after
                            + " were deleted");
                }
            }
        }
    }

    /**
     * Before a step: forgets the highest first offset of the queues whose records retention may take for their age
     * or their log's size, since a pass in the step may move it anywhere.
     */
    void beforeStep() {
        for (String queue : model.queues().keySet()) {
            if (retentionLimits(queue.substring(0, queue.lastIndexOf('-')))) {
                model.highestFirst(queue, QueueModel.UNKNOWN);
            }
        }
    }

    /**
     * After a step the power survived: as {@link #beforeStep}, and a queue retention takes records of only below its
     * start again (its topic's limits were lifted) has its highest first offset where retention left it.
     */
    void afterStep(Store store) {
        for (String queue : model.queues().keySet()) {
            String topic = queue.substring(0, queue.lastIndexOf('-'));
            if (retentionLimits(topic)) {
                model.highestFirst(queue, QueueModel.UNKNOWN);
            } else if (model.highestFirst(queue) == QueueModel.UNKNOWN) {
                int queueId = Integer.parseInt(queue.substring(topic.length() + 1));
                model.highestFirst(queue, store.minOffset(topic, queueId));
            }
        }
    }

    /**
     * @return true if retention may take records of {@code topic} for their age or its log's size (the seed's
     *     policy, or the BATCHES topic's configs as last set or as the change in doubt sets them), not only those
     *     below a queue's start
     */
    boolean retentionLimits(String topic) {
        if (settings.retention) {
            return true;
        }
        return topic.equals(BATCHES_TOPIC) && (limits(model.topicConfigs)
                || model.topicConfigsInDoubt != null && limits(model.topicConfigsInDoubt));
    }

    /** @return true if configs set an age or size limit that retention applies (their cleanup policy deletes) */
    private static boolean limits(Map<String, String> configs) {
        String cleanup = configs.get(Store.CLEANUP_POLICY);
        if (cleanup != null && !List.of(cleanup.split(",")).contains("delete")) {
            return false;
        }
        return isLimit(configs.get(Store.RETENTION_MS)) || isLimit(configs.get(Store.RETENTION_BYTES));
    }

    private static boolean isLimit(String value) {
        return value != null && Long.parseLong(value) >= 0;
    }

    /** Most appends go to the seed's hot topic, so its log rolls through several segments per epoch. */
    private String pickQueue() {
        String topic = random.nextInt(10) < 7 ? TOPICS[settings.hotTopic] : TOPICS[random.nextInt(TOPICS.length)];
        return topic + "-" + random.nextInt(QUEUES);
    }

    /** Reads a random range of a random queue while the store runs: what is visible must match the model. */
    void readSomething(Store store) {
        String queue = pickQueue();
        List<Sent> list = model.queue(queue);
        if (list.isEmpty()) {
            return;
        }
        int dash = queue.lastIndexOf('-');
        String topic = queue.substring(0, dash);
        int queueId = Integer.parseInt(queue.substring(dash + 1));
        long from = random.nextInt(list.size());
        try (ReadResult result = store.read(topic, queueId, from, 1 + random.nextInt(20), 1 << 20)) {
            for (StoredMessage message : result.messages()) {
                checks.expectSame(queue, list, message, "a read while running");
            }
        }
        Sent probe = list.get((int) from);
        if (probe.key != null && random.nextBoolean()) {
            try (LookupResult found = store.lookupByKey(topic, probe.key, 10, 0, Long.MAX_VALUE)) {
                for (StoredMessage message : found.messages()) {
                    checks.expectSame(queue, list, message, "a key lookup while running");
                }
            }
        }
    }

    /** Commits an offset of a queue, for group "g". */
    void commitOffset(Store store) {
        String queue = pickQueue();
        List<Sent> list = model.queue(queue);
        int dash = queue.lastIndexOf('-');
        store.commitOffset("g", queue.substring(0, dash), Integer.parseInt(queue.substring(dash + 1)),
                list.isEmpty() ? 0 : random.nextInt(list.size() + 1));
    }
}
