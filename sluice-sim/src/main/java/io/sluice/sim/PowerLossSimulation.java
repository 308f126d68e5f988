package io.sluice.sim;

import io.sluice.store.AppendResult;
import io.sluice.store.FlushMode;
import io.sluice.store.KafkaBatch;
import io.sluice.store.LookupResult;
import io.sluice.store.Message;
import io.sluice.store.ReadResult;
import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import io.sluice.store.StoreVerifier;
import io.sluice.store.StoredMessage;
import io.sluice.store.TopicLayout;
import io.sluice.store.WritePath;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletableFuture;

/**
 * One seeded run of the store on a {@link SimFileSystem} with a {@link ManualScheduler}: producers append to
 * topics of every layout (the BATCHES topic's queues truncated and emptied now and then, as a Raft replica does),
 * background tasks run in a seeded order, and the power is cut at a seeded file system
 * operation (inside a checkpoint, a roll, retention, recovery itself...). After each cut the store is opened
 * on what survived and checked:
 * <ul>
 * <li>it opens (a state a power cut can produce is never refused);</li>
 * <li>every queue holds a prefix of what was appended to it, message for message: nothing corrupt, reordered
 *     or resurrected from before an earlier cut is served;</li>
 * <li>under SYNC, every acknowledged message is there;</li>
 * <li>the verifier finds no fault once the store was closed;</li>
 * <li>keys of stored messages are found by key lookup.</li>
 * </ul>
 * Everything runs on the calling thread, so a seed reproduces its run exactly.
 *
 * <p>Not thread-safe; one instance per run.
 */
public final class PowerLossSimulation {

    /** Where the store lives in the simulated file system. */
    static final Path ROOT = Path.of("/sim/store");
    /** One topic per layout: SHARED, TOPIC, QUEUE and BATCHES (whose appends are Kafka record batches). */
    private static final String[] TOPICS = {"s", "t", "q", "k"};
    private static final String BATCHES_TOPIC = "k";
    private static final int QUEUES = 2;
    private static final int EPOCHS = 3;

    /**
     * What one seed did.
     *
     * @param seed the seed
     * @param scenario write path, flush mode and crash models
     * @param appends messages appended
     * @param acknowledged appends acknowledged
     * @param checked stored messages compared with what was appended
     * @param failure what went wrong, or null
     */
    public record Outcome(long seed, String scenario, long appends, long acknowledged, long checked, String failure) {
        /** @return true if every check held */
        public boolean passed() {
            return failure == null;
        }
    }

    /** A check that did not hold. */
    static final class SimulationFailure extends RuntimeException {
        private static final long serialVersionUID = 1L;

        SimulationFailure(String message) {
            super(message);
        }

        SimulationFailure(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** One appended message as the model remembers it. */
    private static final class Sent {
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

    /** An append whose future has not been looked at yet. */
    private record Pending(CompletableFuture<AppendResult> future, String queue, List<Sent> messages, long offset) {
    }

    private final long seed;
    private final SplittableRandom random;
    private final WritePath writePath;
    private final FlushMode flushMode;
    private final boolean retention;
    private final int hotTopic;
    private final long checkpointIntervalMillis;
    /** A fixed body size (records then line up across a cut, as they do in most real workloads), or 0. */
    private final int fixedBodyBytes;
    /** ASYNC: how much may stay unforced, and for how long (large windows leave more for a power cut to tear). */
    private final long flushDirtyBytes;
    private final long flushIntervalMillis;
    /** The store's segment size: 64 KiB, or 256 KiB (logs of their own then grow 64, 128, 256 KiB). */
    private final long segmentBytes;
    /** Write-buffer page size: 128 KiB pages start at their log's 64 KiB segment size and grow with it. */
    private final int writeBufferBytes;
    private final SimClock clock = new SimClock(1_700_000_000_000L);
    private final Map<String, List<Sent>> model = new LinkedHashMap<>();
    private final List<Pending> pending = new ArrayList<>();
    /** Queues whose truncation a power cut interrupted, and where it cut: what lies past it may be gone. */
    private final Map<String, Long> truncationsInDoubt = new LinkedHashMap<>();
    /** Queues being emptied when the power was cut: the offset asked for, and the queue's first offset before. */
    private final Map<String, long[]> emptyingsInDoubt = new LinkedHashMap<>();
    /** What the model holds for an offset below an emptied queue's new start: never read, never acknowledged. */
    private static final Sent REMOVED = new Sent(-1, new byte[8], null);
    private final StringBuilder scenario = new StringBuilder();
    private final List<SimFileSystem> released = new ArrayList<>();
    private SimFileSystem fs = new SimFileSystem();
    private ManualScheduler scheduler;
    private Store store;
    private long nextId;
    private long appends;
    private long acknowledged;
    private long checked;

    private PowerLossSimulation(long seed) {
        this.seed = seed;
        this.random = new SplittableRandom(seed);
        this.writePath = WritePath.values()[(int) Math.floorMod(seed, (long) WritePath.values().length)];
        this.flushMode = random.nextBoolean() ? FlushMode.SYNC : FlushMode.ASYNC;
        this.retention = random.nextInt(3) == 0;
        this.hotTopic = random.nextInt(TOPICS.length);
        this.checkpointIntervalMillis = 10 + random.nextInt(300);
        this.fixedBodyBytes = random.nextInt(3) == 0 ? 8 + random.nextInt(1000) : 0;
        this.flushDirtyBytes = new long[] {16 << 10, 64 << 10, 1 << 20}[random.nextInt(3)];
        this.flushIntervalMillis = new long[] {20, 200, 1000}[random.nextInt(3)];
        this.segmentBytes = random.nextBoolean() ? StoreConfig.MIN_SEGMENT_SIZE_BYTES : 4 * StoreConfig.MIN_SEGMENT_SIZE_BYTES;
        this.writeBufferBytes = random.nextBoolean() ? 16 * 1024 : 128 * 1024;
        scenario.append(writePath).append(' ').append(flushMode).append(retention ? " retention" : "")
                .append(" hot=").append(TOPICS[hotTopic]).append(" checkpoint=").append(checkpointIntervalMillis)
                .append("ms").append(fixedBodyBytes > 0 ? " body=" + fixedBodyBytes : "")
                .append(flushMode == FlushMode.ASYNC ? " flush=" + flushDirtyBytes + "B/" + flushIntervalMillis + "ms" : "")
                .append(" segment=").append(segmentBytes / 1024).append("K")
                .append(writePath.buffered() ? " page=" + writeBufferBytes / 1024 + "K" : "");
        for (String topic : TOPICS) {
            for (int queue = 0; queue < QUEUES; queue++) {
                model.put(topic + "-" + queue, new ArrayList<>());
            }
        }
    }

    /**
     * Runs one seed.
     *
     * @param seed the seed; the same seed runs the same way
     * @return what happened
     */
    public static Outcome run(long seed) {
        PowerLossSimulation simulation = new PowerLossSimulation(seed);
        String failure = null;
        try {
            simulation.execute();
        } catch (SimulationFailure e) {
            failure = e.getMessage() + (e.getCause() != null ? ": " + describe(e.getCause()) : "");
        } catch (RuntimeException | Error e) {
            failure = "unexpected " + describe(e);
        } finally {
            simulation.cleanUp();
        }
        return new Outcome(seed, simulation.scenario.toString(), simulation.appends, simulation.acknowledged,
                simulation.checked, failure);
    }

    private static String describe(Throwable e) {
        StringBuilder text = new StringBuilder(e.toString());
        for (StackTraceElement frame : e.getStackTrace()) {
            if (frame.getClassName().startsWith("io.sluice")) {
                text.append(" at ").append(frame);
                break;
            }
        }
        return text.toString();
    }

    private StoreConfig config() {
        StoreConfig.Builder builder = StoreConfig.builder()
                .segmentSizeBytes(segmentBytes)
                .writePath(writePath)
                .flushMode(flushMode)
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
                .fileIO(fs)
                .scheduler(scheduler)
                .clock(clock);
        if (retention) {
            builder.retention(RetentionPolicy.defaults().withRetentionBytes(3 * StoreConfig.MIN_SEGMENT_SIZE_BYTES)
                    .withCheckIntervalMillis(50));
        }
        return builder.build();
    }

    private void execute() {
        for (int epoch = 0; epoch < EPOCHS; epoch++) {
            open(epoch);
            CrashModel model = CrashModel.pick(random);
            scenario.append(", ").append(model.name());
            // Some cuts come soon after the open, while the log is still over what the last cut left behind.
            fs.armPowerCut(1 + random.nextInt(random.nextInt(3) == 0 ? 200 : 4000), random, model);
            int steps = 300 + random.nextInt(1200);
            for (int step = 0; step < steps && fs.afterPowerCut() == null; step++) {
                step();
            }
            if (fs.afterPowerCut() == null) {
                // The cut did not fall within the steps: cut now.
                abandon(fs.crash(random, model));
            } else {
                abandon(fs.afterPowerCut());
            }
        }
        open(EPOCHS);
        closeCleanly("final close");
        StoreVerifier.Report report = verify();
        if (!report.ok()) {
            throw new SimulationFailure("the verifier found faults after a clean close: " + report.faults());
        }
    }

    /**
     * Opens the store on the current file system (recovering it) and checks it against the model. After a power
     * cut, the image is verified first (the verifier must fault nothing a power cut can leave), and sometimes the
     * power is cut again during recovery itself.
     */
    private void open(int epoch) {
        if (epoch > 0) {
            StoreVerifier.Report crashed = verify();
            if (!crashed.ok()) {
                throw new SimulationFailure("epoch " + epoch + ": the verifier faults what a power cut left: "
                        + crashed.faults());
            }
            if (random.nextInt(4) == 0 && cutDuringRecovery(epoch)) {
                return;
            }
        }
        scheduler = new ManualScheduler(clock);
        try {
            store = Store.open(ROOT, config());
        } catch (RuntimeException e) {
            throw new SimulationFailure("epoch " + epoch + ": the store refused to open after a power cut", e);
        }
        afterOpen(epoch);
    }

    /**
     * Opens with a power cut armed a few operations in: if it strikes during recovery, opens again on what
     * survived; if recovery finished first, carries on with the store it opened.
     *
     * @return true if the store is open and checked
     */
    private boolean cutDuringRecovery(int epoch) {
        CrashModel model = CrashModel.pick(random);
        fs.armPowerCut(1 + random.nextInt(80), random, model);
        scheduler = new ManualScheduler(clock);
        try {
            store = Store.open(ROOT, config());
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure("epoch " + epoch + ": the store refused to open after a power cut", e);
            }
        }
        if (fs.afterPowerCut() == null) {
            fs.disarmPowerCut();
            afterOpen(epoch);
            return true;
        }
        scenario.append(", cut in recovery (").append(model.name()).append(')');
        abandon(fs.afterPowerCut());
        return false;
    }

    private void afterOpen(int epoch) {
        if (epoch == 0) {
            store.createTopic("t", TopicLayout.TOPIC);
            store.createTopic("q", TopicLayout.QUEUE);
            store.createTopic(BATCHES_TOPIC, TopicLayout.BATCHES);
        }
        // A rebuild means recovery found an index missing entries the checkpoint claimed were forced: a broken
        // durability claim that the rebuild merely papers over.
        if (Boolean.getBoolean("sluice.sim.reports")) {
            store.recoveryReports().forEach((log, report) -> System.out.println("seed " + seed + " epoch " + epoch
                    + " log '" + log + "' " + report));
        }
        store.recoveryReports().forEach((log, report) -> {
            if (report.mode() == io.sluice.store.RecoveryReport.Mode.REBUILD) {
                throw new SimulationFailure("epoch " + epoch + ": log '" + log + "' had to rebuild its indexes after a"
                        + " power cut: the checkpoint claimed entries that were not durable");
            }
        });
        checkAgainstModel(epoch, true);
    }

    /** The power is back: the old process is gone; its store is closed only to free its memory. */
    private void abandon(SimFileSystem after) {
        Store dead = store;
        store = null;
        scheduler.discardAll();
        if (dead != null) {
            try {
                dead.close();
            } catch (RuntimeException e) {
                // The file system is gone: closing only frees the dead process's memory.
            }
        }
        pending.clear();
        released.add(fs);
        fs = after;
    }

    private void cleanUp() {
        if (store != null) {
            try {
                store.close();
            } catch (RuntimeException e) {
                // reported already, or the run failed before
            }
        }
        released.forEach(SimFileSystem::release);
        fs.release();
    }

    private void closeCleanly(String what) {
        try {
            store.close();
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure(what + " failed", e);
            }
        } finally {
            store = null;
        }
        settle();
    }

    private void step() {
        int roll = random.nextInt(100);
        try {
            if (roll < 45) {
                append();
            } else if (roll < 70) {
                scheduler.runOne(random);
            } else if (roll < 85) {
                scheduler.advance(1 + random.nextInt(40));
            } else if (roll < 92) {
                readSomething();
            } else if (roll < 95) {
                commitOffset();
            } else if (roll < 97) {
                store.enforceRetention();
            } else if (roll < 98) {
                reopen();
            } else if (roll < 99) {
                if (random.nextInt(4) == 0) {
                    empty();
                } else {
                    truncate();
                }
            } else {
                scheduler.runAll(random);
            }
        } catch (RuntimeException e) {
            if (fs.afterPowerCut() == null) {
                throw new SimulationFailure("step failed before any power cut", e);
            }
        }
        settle();
    }

    private void reopen() {
        closeCleanly("a clean close");
        if (fs.afterPowerCut() != null) {
            return;
        }
        scheduler = new ManualScheduler(clock);
        store = Store.open(ROOT, config());
        checkAgainstModel(-1, false);
    }

    /** Looks at finished futures: acknowledged appends must carry the offsets the model expects. */
    private void settle() {
        for (int i = 0; i < pending.size(); i++) {
            Pending waiting = pending.get(i);
            if (!waiting.future.isDone()) {
                continue;
            }
            pending.remove(i--);
            if (waiting.future.isCompletedExceptionally()) {
                if (fs.afterPowerCut() == null) {
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

    private void append() {
        String queue = pickQueue();
        int dash = queue.lastIndexOf('-');
        String topic = queue.substring(0, dash);
        int queueId = Integer.parseInt(queue.substring(dash + 1));
        boolean batch = topic.equals(BATCHES_TOPIC);
        int count = fixedBodyBytes == 0 && random.nextInt(8) == 0 ? 2 + random.nextInt(4) : 1;
        if (batch) {
            count = fixedBodyBytes > 0 ? 1 : 1 + random.nextInt(5);
        }
        List<Sent> sent = new ArrayList<>();
        List<Message> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            long id = nextId++;
            // Log-uniform sizes from 8 bytes to 3 KiB (many small messages, a few large ones), or one fixed size.
            // (Up to 600 bytes in a record batch, which holds up to five of them.)
            byte[] body = new byte[fixedBodyBytes > 0 ? fixedBodyBytes
                    : 8 + (int) Math.exp(random.nextDouble() * Math.log(batch ? 600 : 3000))];
            random.nextBytes(body);
            ByteBuffer.wrap(body).putLong(seed * 1_000_003 + id);
            String key = !batch && fixedBodyBytes == 0 && random.nextInt(3) == 0 ? "k" + id : null;
            sent.add(new Sent(id, body, key));
            Message.Builder message = Message.builder().body(body);
            if (key != null) {
                message.keys(key);
            }
            messages.add(message.build());
        }
        List<Sent> list = model.get(queue);
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
    private void truncate() {
        int queueId = random.nextInt(QUEUES);
        String queue = BATCHES_TOPIC + "-" + queueId;
        List<Sent> list = model.get(queue);
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
        truncationsInDoubt.put(queue, (long) cut);
        store.truncateQueue(BATCHES_TOPIC, queueId, cut);
        truncationsInDoubt.remove(queue);
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
    private void empty() {
        int queueId = random.nextInt(QUEUES);
        String queue = BATCHES_TOPIC + "-" + queueId;
        List<Sent> list = model.get(queue);
        long at = random.nextBoolean() ? list.size() + random.nextInt(50) : random.nextInt(list.size() + 1);
        emptyingsInDoubt.put(queue, new long[] {at, store.minOffset(BATCHES_TOPIC, queueId)});
        store.emptyQueueAt(BATCHES_TOPIC, queueId, at);
        emptyingsInDoubt.remove(queue);
        startModelAt(list, at);
        if (store.minOffset(BATCHES_TOPIC, queueId) != at || store.maxOffset(BATCHES_TOPIC, queueId) != at) {
            throw new SimulationFailure(queue + " holds offsets " + store.minOffset(BATCHES_TOPIC, queueId) + " to "
                    + store.maxOffset(BATCHES_TOPIC, queueId) + " after it was emptied at " + at);
        }
    }

    private static void startModelAt(List<Sent> list, long at) {
        list.clear();
        for (long i = 0; i < at; i++) {
            list.add(REMOVED);
        }
    }

    /** Most appends go to the seed's hot topic, so its log rolls through several segments per epoch. */
    private String pickQueue() {
        String topic = random.nextInt(10) < 7 ? TOPICS[hotTopic] : TOPICS[random.nextInt(TOPICS.length)];
        return topic + "-" + random.nextInt(QUEUES);
    }

    /** Reads a random range of a random queue while the store runs: what is visible must match the model. */
    private void readSomething() {
        String queue = pickQueue();
        List<Sent> list = model.get(queue);
        if (list.isEmpty()) {
            return;
        }
        int dash = queue.lastIndexOf('-');
        String topic = queue.substring(0, dash);
        int queueId = Integer.parseInt(queue.substring(dash + 1));
        long from = random.nextInt(list.size());
        try (ReadResult result = store.read(topic, queueId, from, 1 + random.nextInt(20), 1 << 20)) {
            for (StoredMessage message : result.messages()) {
                expectSame(queue, list, message, "a read while running");
            }
        }
        Sent probe = list.get((int) from);
        if (probe.key != null && random.nextBoolean()) {
            try (LookupResult found = store.lookupByKey(topic, probe.key, 10, 0, Long.MAX_VALUE)) {
                for (StoredMessage message : found.messages()) {
                    expectSame(queue, list, message, "a key lookup while running");
                }
            }
        }
    }

    private void commitOffset() {
        String queue = pickQueue();
        List<Sent> list = model.get(queue);
        int dash = queue.lastIndexOf('-');
        store.commitOffset("g", queue.substring(0, dash), Integer.parseInt(queue.substring(dash + 1)),
                list.isEmpty() ? 0 : random.nextInt(list.size() + 1));
    }

    private void expectSame(String queue, List<Sent> list, StoredMessage message, String when) {
        long offset = message.queueOffset();
        if (offset >= list.size()) {
            throw new SimulationFailure(when + ": " + queue + " served offset " + offset + ", past the "
                    + list.size() + " messages ever appended");
        }
        byte[] body = message.bodyBytes();
        if (!Arrays.equals(body, list.get((int) offset).body)) {
            throw new SimulationFailure(when + ": " + queue + " offset " + offset + " holds " + body.length
                    + " bytes that are not the message appended there (" + list.get((int) offset).body.length
                    + " bytes, id " + list.get((int) offset).id + ")" + identify(body));
        }
        checked++;
    }

    private String identify(byte[] body) {
        if (body.length < 8) {
            return "";
        }
        long stamp = ByteBuffer.wrap(body).getLong();
        for (Map.Entry<String, List<Sent>> entry : model.entrySet()) {
            for (Sent sent : entry.getValue()) {
                if (seed * 1_000_003 + sent.id == stamp) {
                    return "; it is message id " + sent.id + " of " + entry.getKey();
                }
            }
        }
        return "; it matches no message of this run's current history (resurrected or corrupt)";
    }

    /**
     * After an open: every queue must hold a prefix of what was appended, and under SYNC every acknowledged
     * message. What was lost is forgotten, so the next appends continue from the recovered end.
     */
    private void checkAgainstModel(int epoch, boolean afterCrash) {
        for (Map.Entry<String, List<Sent>> entry : model.entrySet()) {
            String queue = entry.getKey();
            List<Sent> list = entry.getValue();
            int dash = queue.lastIndexOf('-');
            String topic = queue.substring(0, dash);
            int queueId = Integer.parseInt(queue.substring(dash + 1));
            long min = store.minOffset(topic, queueId);
            long end = store.maxOffset(topic, queueId);
            long[] emptying = emptyingsInDoubt.get(queue);
            if (emptying != null && min == end && end <= Math.max(emptying[0], emptying[1])) {
                // Emptied by a call the power cut: the queue starts at the offset asked for or lower, holding nothing.
                startModelAt(list, end);
                continue;
            }
            if (end > list.size()) {
                throw new SimulationFailure("epoch " + epoch + ": " + queue + " ends at offset " + end + " but only "
                        + list.size() + " messages were ever appended to it");
            }
            long offset = min;
            while (offset < end) {
                try (ReadResult result = store.read(topic, queueId, offset, 500, 4 << 20)) {
                    if (result.messages().isEmpty()) {
                        throw new SimulationFailure("epoch " + epoch + ": " + queue + " returned no message at offset "
                                + offset + " below its end " + end + " (" + result.status() + ")");
                    }
                    for (StoredMessage message : result.messages()) {
                        if (message.queueOffset() != offset) {
                            throw new SimulationFailure("epoch " + epoch + ": " + queue + " skipped from offset "
                                    + offset + " to " + message.queueOffset());
                        }
                        expectSame(queue, list, message, "epoch " + epoch + " after reopening");
                        Sent sent = list.get((int) offset);
                        if (sent.key != null && random.nextInt(4) == 0) {
                            checkKeyFound(topic, sent, queue, epoch);
                        }
                        offset += message.opaque() ? message.opaqueCount() : 1;
                    }
                }
            }
            long cut = truncationsInDoubt.getOrDefault(queue, Long.MAX_VALUE);
            for (int i = (int) end; i < list.size(); i++) {
                if (list.get(i).acknowledged && flushMode == FlushMode.SYNC && i < cut) {
                    throw new SimulationFailure("epoch " + epoch + ": " + queue + " lost acknowledged message at offset "
                            + i + " (id " + list.get(i).id + "); it ends at " + end + (afterCrash ? " after a power cut"
                            : " after a clean reopen"));
                }
            }
            list.subList((int) end, list.size()).clear();
        }
        truncationsInDoubt.clear();
        emptyingsInDoubt.clear();
    }

    private void checkKeyFound(String topic, Sent sent, String queue, int epoch) {
        try (LookupResult found = store.lookupByKey(topic, sent.key, 10, 0, Long.MAX_VALUE)) {
            boolean present = found.messages().stream().anyMatch(m -> Arrays.equals(m.bodyBytes(), sent.body));
            if (!present) {
                throw new SimulationFailure("epoch " + epoch + ": key " + sent.key + " of " + queue
                        + " is not found by key lookup, though its message is stored");
            }
        }
    }

    private StoreVerifier.Report verify() {
        try {
            return StoreVerifier.verify(ROOT, fs);
        } catch (java.io.IOException e) {
            throw new SimulationFailure("the verifier could not read the store", e);
        }
    }
}
