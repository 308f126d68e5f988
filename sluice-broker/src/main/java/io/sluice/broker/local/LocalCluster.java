package io.sluice.broker.local;

import io.sluice.broker.ClusterView;
import io.sluice.broker.TopicIds;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import io.sluice.store.TopicLayout;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * A broker alone as a cluster of one: itself the only broker and the controller, every topic change and offset
 * commit made in its store at once. Thread-safe.
 */
public final class LocalCluster implements ClusterView {

    private final Store store;
    private final LocalPartitions partitions;
    private final Node self;
    private final TopicLayout layout;

    /**
     * @param store where the topics and committed offsets live; the caller's to close
     * @param partitions the broker's partitions (told when a topic goes)
     * @param self this broker as clients reach it
     * @param layout where a new topic's partitions live in the store
     */
    public LocalCluster(Store store, LocalPartitions partitions, Node self, TopicLayout layout) {
        this.store = store;
        this.partitions = partitions;
        this.self = self;
        this.layout = layout;
    }

    @Override
    public int self() {
        return self.id();
    }

    @Override
    public List<Node> brokers() {
        return List.of(self);
    }

    @Override
    public int controller() {
        return self.id();
    }

    @Override
    public boolean controllerReady() {
        return true;
    }

    @Override
    public int defaultReplicationFactor() {
        return 1;
    }

    @Override
    public int maxPartitions() {
        return store.config().maxQueuesPerTopic();
    }

    @Override
    public CompletableFuture<Void> createTopic(String topic, int count, int replicationFactor,
                                               Map<String, String> configs) {
        try {
            if (replicationFactor != 1) {
                throw new TopicRefusedException(Refusal.INVALID_REPLICATION_FACTOR, "this broker keeps one replica of"
                        + " each partition; replication factor " + replicationFactor + " cannot be met");
            }
            checkTopicName(topic);
            if (count < 1 || count > maxPartitions()) {
                throw new TopicRefusedException(Refusal.INVALID_PARTITIONS, "the partition count must be between 1"
                        + " and " + maxPartitions() + ", was " + count);
            }
            // A store topic with messages but no declared count (appended through the store's API) exists too.
            if (store.queueCount(topic) > 0 || !store.queues(topic).isEmpty()
                    || !store.createTopic(topic, layout, count, configs, TopicIds.random())) {
                throw new TopicRefusedException(Refusal.EXISTS, "topic " + topic + " already exists");
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public Map<String, String> topicConfigs(String topic) {
        return store.topicConfigs(topic);
    }

    /** Changes are made one at a time, so each is made on what the one before left. */
    @Override
    public synchronized CompletableFuture<Void> alterTopicConfigs(String topic,
                                                                  UnaryOperator<Map<String, String>> change) {
        try {
            if (partitions.count(topic) == 0) {
                throw new TopicRefusedException(Refusal.NO_TOPIC, "The topic '" + topic + "' does not exist.");
            }
            store.setTopicConfigs(topic, change.apply(store.topicConfigs(topic)));
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public void checkTopicName(String topic) {
        try {
            store.layout(topic);
        } catch (IllegalArgumentException e) {
            throw new TopicRefusedException(Refusal.INVALID_NAME, e.getMessage());
        }
    }

    @Override
    public CompletableFuture<Void> addPartitions(String topic, int count) {
        try {
            int current = partitions.count(topic);
            if (current == 0) {
                throw new TopicRefusedException(Refusal.NO_TOPIC, "topic " + topic + " does not exist");
            }
            if (count <= current || count > maxPartitions()) {
                throw new TopicRefusedException(Refusal.INVALID_PARTITIONS, "topic " + topic + " has " + current
                        + " partitions; a new count must be larger and at most " + maxPartitions() + ", was " + count);
            }
            try {
                store.increaseQueueCount(topic, count);
            } catch (IllegalArgumentException e) {
                // A concurrent request that raised the count first.
                throw new TopicRefusedException(Refusal.INVALID_PARTITIONS, e.getMessage());
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * Deletes the topic from the store with its records and committed offsets; topics in the store's shared layout
     * cannot be deleted ({@link Refusal#DELETION_DISABLED}, with the store's reason). Fetches waiting on it are told.
     */
    @Override
    public CompletableFuture<Void> deleteTopic(String topic) {
        boolean gone = false;
        try {
            if (partitions.count(topic) == 0 || !store.deleteTopic(topic)) {
                throw new TopicRefusedException(Refusal.NO_TOPIC, "no topic " + topic);
            }
            gone = true;
            return CompletableFuture.completedFuture(null);
        } catch (IllegalArgumentException e) {
            return CompletableFuture.failedFuture(new TopicRefusedException(Refusal.DELETION_DISABLED,
                    e.getMessage()));
        } catch (RuntimeException e) {
            // Deleted with files left for the next open, or not deleted (the registry could not be saved).
            gone = partitions.count(topic) == 0;
            return CompletableFuture.failedFuture(e);
        } finally {
            if (gone) {
                partitions.changed(topic, -1);
            }
        }
    }

    @Override
    public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
        try {
            for (CommittedOffset offset : offsets) {
                store.commitOffset(group, offset.topic(), offset.partition(), offset.offset());
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Void> deleteOffsets(String group, List<CommittedOffset> partitions) {
        try {
            for (CommittedOffset partition : partitions) {
                store.removeCommittedOffset(group, partition.topic(), partition.partition());
            }
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public List<ConsumerPosition> committedOffsets() {
        return store.consumerPositions();
    }

    @Override
    public OptionalLong committedOffset(String group, String topic, int partition) {
        return store.committedOffset(group, topic, partition);
    }

    @Override
    public GroupsCoordination groupsCoordination() {
        return new GroupsCoordination(0, 0);
    }

    @Override
    public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision, long idleSinceMillis) {
        try {
            if (idleSinceMillis < 0) {
                store.removeConsumerGroup(group); // a group with members only has no offsets to remove
                return CompletableFuture.completedFuture(true);
            }
            return CompletableFuture.completedFuture(store.removeConsumerGroupIfIdle(group, idleSinceMillis));
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    /**
     * The store topic of the transaction coordinator's states: never declared, so no Kafka client sees it, in the
     * shared log, where retention drops a state unchanged for as long as the log keeps records (as Kafka forgets a
     * transactional id idle for transactional.id.expiration.ms).
     */
    public static final String TRANSACTIONS_TOPIC = "__transaction_state";

    @Override
    public boolean coordinatesTransactions() {
        return true;
    }

    /**
     * Appends the state to {@link #TRANSACTIONS_TOPIC} as one opaque record: 8 bytes the store stamps with its
     * offset, the transactional id (Java's modified UTF-8, length first), then the state's bytes.
     */
    @Override
    public CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long epoch) {
        try {
            java.io.ByteArrayOutputStream bytes = new java.io.ByteArrayOutputStream();
            try (java.io.DataOutputStream out = new java.io.DataOutputStream(bytes)) {
                out.writeLong(0);
                out.writeUTF(transactionalId);
                out.write(state);
            }
            return store.appendOpaque(TRANSACTIONS_TOPIC, 0, java.lang.foreign.MemorySegment.ofArray(
                    bytes.toByteArray()), 1, io.sluice.store.Durability.ACKNOWLEDGED).thenApply(appended -> null);
        } catch (java.io.IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public Map<String, byte[]> savedTransactions() {
        Map<String, byte[]> states = new java.util.LinkedHashMap<>();
        if (!store.queues(TRANSACTIONS_TOPIC).contains(0)) {
            return states;
        }
        long offset = store.minOffset(TRANSACTIONS_TOPIC, 0);
        while (true) {
            try (io.sluice.store.ReadResult read = store.read(TRANSACTIONS_TOPIC, 0, offset, 1_000, 16L << 20)) {
                if (read.status() != io.sluice.store.ReadResult.Status.FOUND || read.messages().isEmpty()) {
                    return states;
                }
                for (io.sluice.store.StoredMessage message : read.messages()) {
                    byte[] body = message.bodyBytes();
                    try (java.io.DataInputStream in = new java.io.DataInputStream(
                            new java.io.ByteArrayInputStream(body, 8, body.length - 8))) {
                        String id = in.readUTF();
                        states.remove(id); // the order kept is the order of the last saves
                        states.put(id, in.readAllBytes());
                    } catch (java.io.IOException e) {
                        throw new IllegalStateException("a transaction state at offset "
                                + message.queueOffset() + " of " + TRANSACTIONS_TOPIC + " cannot be read: " + e);
                    }
                }
                offset = read.nextOffset();
            }
        }
    }

    /** Commits the offsets, then forces the store with its checkpoint, where committed offsets are kept. */
    @Override
    public CompletableFuture<Void> commitTransactionOffsets(String group, List<CommittedOffset> offsets) {
        try {
            for (CommittedOffset offset : offsets) {
                store.commitOffset(group, offset.topic(), offset.partition(), offset.offset());
            }
            store.sync();
            return CompletableFuture.completedFuture(null);
        } catch (RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    @Override
    public CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        return CompletableFuture.completedFuture(Election.NOT_NEEDED);
    }

    /** The directory of the security records, beside the store's own files. */
    static final String SECURITY_DIRECTORY = "security";

    private final Object securityLock = new Object();
    private final Map<String, String> security = new java.util.concurrent.ConcurrentHashMap<>();

    /** Reads a record from its file once; "" when there is none. */
    @Override
    public String securityRecord(String kind) {
        checkKind(kind);
        String known = security.get(kind);
        if (known != null) {
            return known;
        }
        synchronized (securityLock) {
            return security.computeIfAbsent(kind, k -> {
                java.nio.file.Path file = securityFile(k);
                io.sluice.store.io.FileIO files = store.config().fileIO();
                try {
                    return files.exists(file) ? io.sluice.broker.DurableFile.read(files, file) : "";
                } catch (java.io.IOException e) {
                    throw new java.io.UncheckedIOException("reading " + file + " failed", e);
                }
            });
        }
    }

    /**
     * Writes the record's file whole (written aside, forced, renamed, its directory forced), under one lock, so changes
     * apply one after the other and each is durable before it is seen.
     */
    @Override
    public CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change) {
        try {
            synchronized (securityLock) {
                String changed = change.apply(securityRecord(kind));
                io.sluice.store.io.FileIO files = store.config().fileIO();
                java.nio.file.Path file = securityFile(kind);
                io.sluice.broker.DurableFile.createDirectories(files, file.getParent());
                io.sluice.broker.DurableFile.write(files, file, file.resolveSibling(kind + ".tmp"), changed);
                security.put(kind, changed);
            }
            return CompletableFuture.completedFuture(null);
        } catch (java.io.IOException | RuntimeException e) {
            return CompletableFuture.failedFuture(e);
        }
    }

    private java.nio.file.Path securityFile(String kind) {
        return store.directory().resolve(SECURITY_DIRECTORY).resolve(kind);
    }

    private static void checkKind(String kind) {
        if (!kind.matches("[a-z]{1,16}")) {
            throw new IllegalArgumentException("a security record's kind is a short lowercase word, was '" + kind + "'");
        }
    }
}
