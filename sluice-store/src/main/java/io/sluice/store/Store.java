package io.sluice.store;

import io.sluice.store.internal.log.PreparedMessage;
import io.sluice.store.internal.recovery.TopicRegistry;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.nio.channels.WritableByteChannel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * An embeddable message store: commit logs in fixed-size segments, a dense index per topic queue, a key
 * index, and every topic in the layout it was created with ({@link TopicLayout}): the shared log by
 * default, or a log of its own per topic or per queue.
 *
 * <h2>Appending</h2>
 * {@link #append} and {@link #appendBatch} encode the messages into one log record, index it, and return a
 * future that completes when the record is as durable as the {@link FlushMode} promises. Bad input (a bad
 * topic name, a negative queue id, an oversize message) throws {@link IllegalArgumentException}; a closed
 * store throws {@link IllegalStateException}; I/O failures complete the future exceptionally with a
 * {@link StoreException} ({@link DiskFullException} when the disk is full). A topic first appended to
 * without {@link #createTopic} lives in the shared log.
 *
 * <h2>Reading</h2>
 * A message is readable only once indexed, and under {@link FlushMode#SYNC} only once durable. Bodies are
 * views of store memory, valid until the {@link ReadResult} is closed.
 *
 * <h2>Layouts on disk</h2>
 * The shared log is the store directory's {@code log/}; a TOPIC log lives in {@code logs/<topic>/}, a QUEUE
 * log in {@code logs/<topic>/<queueId>/}, each a complete log directory with its own indexes, checkpoint,
 * recovery and retention. The file {@code topics} records which topics have logs of their own.
 *
 * <h2>Thread-safety</h2>
 * Every method is thread-safe. Appends to one log are serialised by that log's lock; appends to different
 * logs run in parallel; reads take no lock. Do not use read results after {@link #close()}.
 */
public final class Store implements AutoCloseable {

    /** The directory under the store that holds the logs of TOPIC and QUEUE topics. */
    static final String OWN_LOGS_DIRECTORY = "logs";

    private final Path root;
    private final StoreConfig config;
    private final LogStore shared;
    private final TopicRegistry registry;
    /** Open logs of their own, by {@code <topic>} (TOPIC) or {@code <topic>/<queueId>} (QUEUE). */
    private final Map<String, LogStore> own = new ConcurrentHashMap<>();
    private final Object ownLock = new Object();
    private final AtomicBoolean closed = new AtomicBoolean();
    /** Runs every log's background work; the store's own unless the configuration gave one. */
    private final Scheduler scheduler;

    private Store(Path root, StoreConfig config, Scheduler scheduler, LogStore shared, TopicRegistry registry) {
        this.root = root;
        this.config = config;
        this.scheduler = scheduler;
        this.shared = shared;
        this.registry = registry;
        shared.acceptOnly(topic -> registry.layout(topic) == TopicLayout.SHARED);
    }

    /**
     * Opens the store in {@code directory}, creating it if the directory is absent or empty, and recovering
     * every log that was not closed cleanly.
     *
     * @param directory the store's directory
     * @param config the configuration, for every log of the store
     * @return the open store
     * @throws StoreCorruptedException if the directory is not a store, has an unknown format, a log is
     *     corrupt before its tail, or the topic registry is damaged
     * @throws StoreException on I/O errors, or if the store is already open
     */
    public static Store open(Path directory, StoreConfig config) {
        Objects.requireNonNull(directory, "directory");
        Objects.requireNonNull(config, "config");
        Scheduler scheduler = config.scheduler() != null ? config.scheduler() : Scheduler.threads(config.ioThreads());
        LogStore shared;
        try {
            shared = LogStore.open(directory, config, scheduler);
        } catch (RuntimeException e) {
            if (config.scheduler() == null) {
                scheduler.shutdown();
            }
            throw e;
        }
        Store store = null;
        try {
            store = new Store(directory, config, scheduler, shared, TopicRegistry.load(config.fileIO(), directory));
            store.openOwnLogs();
            return store;
        } catch (IOException e) {
            closeAfterFailedOpen(store, shared, scheduler, config, e);
            throw new StoreException("cannot open store " + directory + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            closeAfterFailedOpen(store, shared, scheduler, config, e);
            throw e;
        }
    }

    private static void closeAfterFailedOpen(Store store, LogStore shared, Scheduler scheduler, StoreConfig config,
                                             Exception failure) {
        try {
            if (store != null) {
                store.close();
            } else {
                shared.close();
                if (config.scheduler() == null) {
                    scheduler.shutdown();
                }
            }
        } catch (RuntimeException e) {
            failure.addSuppressed(e);
        }
    }

    private void openOwnLogs() throws IOException {
        for (Map.Entry<String, TopicLayout> topic : registry.ownLogs().entrySet()) {
            Path directory = root.resolve(OWN_LOGS_DIRECTORY).resolve(topic.getKey());
            FileIO io = config.fileIO();
            if (!io.isDirectory(directory)) {
                continue;
            }
            if (topic.getValue() == TopicLayout.TOPIC) {
                own.put(topic.getKey(), LogStore.open(directory, config, scheduler));
                continue;
            }
            for (Path queue : io.list(directory)) {
                String name = queue.getFileName().toString();
                if (io.isDirectory(queue) && !name.isEmpty() && name.length() <= 10
                        && name.chars().allMatch(Character::isDigit)) {
                    own.put(topic.getKey() + "/" + Integer.parseInt(name), LogStore.open(queue, config, scheduler));
                }
            }
        }
    }

    /**
     * Creates a topic in a layout: where its messages will live, for good. Creating a SHARED topic is
     * optional (appending to a new topic creates it so).
     *
     * @param topic the topic name
     * @param layout the layout
     * @throws IllegalArgumentException if the topic already exists in another layout
     * @throws StoreException if the registry cannot be written
     */
    public void createTopic(String topic, TopicLayout layout) {
        Names.checkTopic(topic);
        Objects.requireNonNull(layout, "layout");
        checkOpen();
        synchronized (ownLock) {
            TopicLayout existing = registry.layout(topic);
            if (existing != TopicLayout.SHARED) {
                if (existing != layout) {
                    throw new IllegalArgumentException("topic " + topic + " already exists with layout " + existing);
                }
                return;
            }
            try {
                boolean created = layout == TopicLayout.SHARED || shared.ifTopicAbsent(topic,
                        () -> registry.register(config.fileIO(), root, topic, layout));
                if (!created) {
                    throw new IllegalArgumentException("topic " + topic + " already exists with layout SHARED");
                }
            } catch (IOException e) {
                throw new StoreException("cannot record the layout of topic " + topic + ": " + e.getMessage(), e);
            }
        }
    }

    /** @return the topic's layout (SHARED for a topic never created otherwise) */
    public TopicLayout layout(String topic) {
        Names.checkTopic(topic);
        return registry.layout(topic);
    }

    /** @return the log holding the topic queue; null if it has a log of its own not created yet */
    private LogStore logFor(String topic, int queueId, boolean create) {
        TopicLayout layout = registry.layout(topic);
        if (layout == TopicLayout.SHARED) {
            return shared;
        }
        String key = layout == TopicLayout.TOPIC ? topic : topic + "/" + queueId;
        LogStore log = own.get(key);
        if (log != null || !create) {
            return log;
        }
        synchronized (ownLock) {
            checkOpen();
            log = own.get(key);
            if (log == null) {
                Path directory = root.resolve(OWN_LOGS_DIRECTORY).resolve(topic);
                if (layout == TopicLayout.QUEUE) {
                    directory = directory.resolve(Integer.toString(queueId));
                }
                log = LogStore.open(directory, config, scheduler);
                own.put(key, log);
            }
            return log;
        }
    }

    /**
     * @return {@code log}, or the shared log when it is null: a queue whose log of its own does not exist yet
     *     is unknown there too, so the shared log answers as for an unknown queue (and checks the arguments)
     */
    private LogStore orShared(LogStore log) {
        return log == null ? shared : log;
    }

    /** @return the logs that hold the topic: one, or every queue's for a QUEUE topic */
    private List<LogStore> logsOf(String topic) {
        TopicLayout layout = registry.layout(topic);
        if (layout == TopicLayout.SHARED) {
            return List.of(shared);
        }
        List<LogStore> logs = new ArrayList<>();
        own.forEach((key, log) -> {
            if (key.equals(topic) || key.startsWith(topic + "/")) {
                logs.add(log);
            }
        });
        return logs;
    }

    private List<LogStore> allLogs() {
        List<LogStore> logs = new ArrayList<>();
        logs.add(shared);
        logs.addAll(new TreeMap<>(own).values());
        return logs;
    }

    /**
     * Appends one message to a topic queue.
     *
     * @param topic topic name: 1-249 characters of {@code [a-zA-Z0-9._-]}, not "." or ".."
     * @param queueId queue id, zero or more
     * @param message the message
     * @return completes with the message's queue offset and log position once durable per the flush mode
     */
    public CompletableFuture<AppendResult> append(String topic, int queueId, Message message) {
        Objects.requireNonNull(message, "message");
        return append(topic, queueId, new PreparedMessage[] {PreparedMessage.prepare(message, config.maxMessageBytes())});
    }

    /**
     * Appends messages as one record covering consecutive queue offsets: all or none are stored.
     *
     * @param topic topic name
     * @param queueId queue id
     * @param messages one or more messages
     * @return completes with the first message's queue offset once durable per the flush mode
     */
    public CompletableFuture<AppendResult> appendBatch(String topic, int queueId, List<Message> messages) {
        Objects.requireNonNull(messages, "messages");
        if (messages.isEmpty()) {
            throw new IllegalArgumentException("a batch must hold at least one message");
        }
        PreparedMessage[] prepared = new PreparedMessage[messages.size()];
        for (int i = 0; i < prepared.length; i++) {
            prepared[i] = PreparedMessage.prepare(Objects.requireNonNull(messages.get(i), "message"),
                    config.maxMessageBytes());
        }
        return append(topic, queueId, prepared);
    }

    private CompletableFuture<AppendResult> append(String topic, int queueId, PreparedMessage[] messages) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        checkOpen();
        CompletableFuture<AppendResult> result = logFor(topic, queueId, true).append(topic, queueId, messages);
        if (result == null) {
            // The topic was created with a log of its own while this append was on its way to the shared log.
            result = logFor(topic, queueId, true).append(topic, queueId, messages);
        }
        return result;
    }

    /**
     * Reads messages from a queue.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxMessages most messages to return, 1 or more
     * @param maxBytes most body bytes to return, 1 or more; the first message is returned even if larger
     * @return the messages (views of store memory) and the offset to continue from; close it when done
     */
    public ReadResult read(String topic, int queueId, long fromOffset, int maxMessages, long maxBytes) {
        Names.checkTopic(topic);
        // A queue whose log of its own does not exist yet is unknown to the shared log too: NO_SUCH_QUEUE.
        return orShared(logFor(topic, queueId, false)).read(topic, queueId, fromOffset, maxMessages, maxBytes);
    }

    /**
     * Sends a queue's records, as stored, to a channel with no copy through the Java heap (see
     * docs/design.md, "Zero-copy transfer"). Whole records are sent, so the first may be a batch that starts
     * before {@code fromOffset}: the receiver skips messages below it.
     *
     * @param topic the topic
     * @param queueId the queue
     * @param fromOffset the first queue offset wanted
     * @param maxBytes most bytes to send, 1 or more; at least one record is sent if any is readable
     * @param target a blocking channel (a socket, a pipe, a file)
     * @return what was sent and the offset to continue from
     * @throws StoreException if writing to the channel or reading the log failed
     */
    public TransferResult transferTo(String topic, int queueId, long fromOffset, long maxBytes,
                                     WritableByteChannel target) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).transferTo(topic, queueId, fromOffset, maxBytes, target);
    }

    /**
     * Reads the record stored at a position of the shared log (as returned in {@link AppendResult#logPosition()}
     * for a SHARED topic; positions of logs of their own are read through {@link #read}).
     *
     * @param logPosition the record's position
     * @return the record's messages
     * @throws IllegalArgumentException if the position is not readable or no record starts there
     */
    public ReadResult readAt(long logPosition) {
        return shared.readAt(logPosition);
    }

    /**
     * Finds the messages of a topic that carry a key (RocketMQ's query by key), newest first, through the key
     * index: no log scan. Every candidate record is re-read and its topic and keys compared, so a hash
     * collision never returns another key's message. For a QUEUE topic every queue's log is asked.
     *
     * @param topic the topic
     * @param key the key, not empty
     * @param maxResults most messages to return, 1 or more
     * @param fromMillis earliest store time, epoch ms, 0 or more
     * @param toMillis latest store time, epoch ms, at or after {@code fromMillis}
     * @return the messages (views of store memory); close it when done
     */
    public LookupResult lookupByKey(String topic, String key, int maxResults, long fromMillis, long toMillis) {
        Names.checkTopic(topic);
        LogStore.checkLookup(key, maxResults, fromMillis, toMillis);
        checkOpen();
        List<LogStore> logs = logsOf(topic);
        if (logs.size() == 1) {
            return logs.getFirst().lookupByKey(topic, key, maxResults, fromMillis, toMillis);
        }
        List<LookupResult> parts = new ArrayList<>();
        for (LogStore log : logs) {
            parts.add(log.lookupByKey(topic, key, maxResults, fromMillis, toMillis));
        }
        return DefaultReadResult.merged(parts, Comparator.comparingLong(StoredMessage::storeTimestamp).reversed(),
                maxResults);
    }

    /** @return the first queue offset still stored; 0 for an unknown queue */
    public long minOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).minOffset(topic, queueId);
    }

    /** @return the offset after the last readable message; 0 for an unknown queue */
    public long maxOffset(String topic, int queueId) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).maxOffset(topic, queueId);
    }

    /**
     * Finds the first message stored at or after a time, by binary search over the queue index.
     *
     * @param epochMillis the time
     * @return the offset of the first readable message whose store timestamp is at or after the time, or
     *     {@link #maxOffset} if there is none
     */
    public long offsetForTimestamp(String topic, int queueId, long epochMillis) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).offsetForTimestamp(topic, queueId, epochMillis);
    }

    /** @return the topics, sorted */
    public Set<String> topics() {
        checkOpen();
        Set<String> topics = new TreeSet<>(shared.topics());
        for (LogStore log : own.values()) {
            topics.addAll(log.topics());
        }
        return topics;
    }

    /** @return the topic's queue ids, sorted; empty for an unknown topic */
    public Set<Integer> queues(String topic) {
        checkOpen();
        Set<Integer> queues = new TreeSet<>();
        for (LogStore log : logsOf(topic)) {
            queues.addAll(log.queues(topic));
        }
        return queues;
    }

    /**
     * Registers (or moves) a consumer group's position on a queue: the next offset it will read. Retention
     * keeps every segment holding messages at or after a registered position (and the last saved one),
     * unless the disk passes the emergency ratio. Positions are saved with each checkpoint and at close;
     * after a crash a group resumes at most one checkpoint interval back.
     *
     * @param group the consumer group: 1-249 characters of {@code [a-zA-Z0-9._-]}
     * @param topic the topic
     * @param queueId the queue
     * @param nextOffset the next offset the group will read, 0 or more
     */
    public void commitOffset(String group, String topic, int queueId, long nextOffset) {
        Names.checkTopic(topic);
        Names.checkQueueId(queueId);
        logFor(topic, queueId, true).commitOffset(group, topic, queueId, nextOffset);
    }

    /** @return the group's registered position on the queue, if any */
    public OptionalLong committedOffset(String group, String topic, int queueId) {
        Names.checkTopic(topic);
        return orShared(logFor(topic, queueId, false)).committedOffset(group, topic, queueId);
    }

    /** @return every registered consumer position, sorted by group, topic and queue */
    public List<ConsumerPosition> consumerPositions() {
        checkOpen();
        List<ConsumerPosition> all = new ArrayList<>();
        for (LogStore log : allLogs()) {
            all.addAll(log.consumerPositions());
        }
        all.sort(Comparator.comparing(ConsumerPosition::group).thenComparing(ConsumerPosition::topic)
                .thenComparingInt(ConsumerPosition::queueId));
        return all;
    }

    /** Forgets every position of a consumer group, so retention no longer holds data for it. @return true if it had any */
    public boolean removeConsumerGroup(String group) {
        boolean removed = false;
        for (LogStore log : allLogs()) {
            removed |= log.removeConsumerGroup(group);
        }
        return removed;
    }

    /**
     * Runs one retention pass on every log now, as each does every
     * {@link RetentionPolicy#checkIntervalMillis()}. {@code retentionBytes} applies to each log.
     *
     * @return what the passes did together: counts summed, the first reason and holding group found
     * @throws StoreException if deleting files failed
     */
    public RetentionReport enforceRetention() {
        checkOpen();
        int segments = 0;
        long bytes = 0;
        long logBytes = 0;
        double ratio = 0;
        boolean refused = false;
        String heldBy = null;
        String reason = null;
        for (LogStore log : allLogs()) {
            RetentionReport report = log.enforceRetention();
            segments += report.segmentsDeleted();
            bytes += report.bytesDeleted();
            logBytes += report.logBytes();
            ratio = Math.max(ratio, report.diskUsedRatio());
            refused |= report.appendsRefused();
            heldBy = heldBy != null ? heldBy : report.heldBy();
            reason = reason != null ? reason : report.reason();
        }
        return new RetentionReport(segments, bytes, logBytes, ratio, refused, heldBy, reason);
    }

    /** @return a snapshot of the shared log's state and positions (see {@link #ownLogStatuses()} for the rest) */
    public StoreStatus status() {
        return shared.status();
    }

    /** @return the state of each log of its own, by {@code <topic>} or {@code <topic>/<queueId>}, sorted */
    public Map<String, StoreStatus> ownLogStatuses() {
        Map<String, StoreStatus> statuses = new TreeMap<>();
        own.forEach((key, log) -> statuses.put(key, log.status()));
        return statuses;
    }

    /** @return true if the last open found every log cleanly shut down and skipped recovery */
    public boolean openedClean() {
        boolean clean = shared.openedClean();
        for (LogStore log : own.values()) {
            clean &= log.openedClean();
        }
        return clean;
    }

    /** @return the store's directory */
    public Path directory() {
        return root;
    }

    /** @return the configuration */
    public StoreConfig config() {
        return config;
    }

    private void checkOpen() {
        if (closed.get()) {
            throw new IllegalStateException("store " + root + " is closed");
        }
    }

    /**
     * Closes every log: stops appends, waits for pending SYNC appends, forces everything, writes each log's
     * checkpoint and clean-shutdown marker (unless a force failed), then unmaps and closes every file.
     * Idempotent.
     *
     * @throws StoreException if closing failed; every log is still closed
     */
    @Override
    public void close() {
        if (!closed.compareAndSet(false, true)) {
            return;
        }
        List<RuntimeException> errors = new ArrayList<>();
        synchronized (ownLock) {
            for (LogStore log : allLogs()) {
                try {
                    log.close();
                } catch (RuntimeException e) {
                    errors.add(e);
                }
            }
        }
        if (config.scheduler() == null) {
            scheduler.shutdown();
        }
        if (!errors.isEmpty()) {
            if (errors.size() == 1) {
                throw errors.getFirst();
            }
            StoreException failure = new StoreException("closing store " + root + " failed");
            errors.forEach(failure::addSuppressed);
            throw failure;
        }
    }
}
