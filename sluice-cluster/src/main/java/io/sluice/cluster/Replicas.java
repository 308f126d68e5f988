package io.sluice.cluster;

import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.store.Store;
import io.sluice.store.TopicLayout;
import java.io.IOException;
import java.time.Duration;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BiConsumer;
import java.util.function.LongSupplier;
import org.apache.ratis.protocol.RaftGroup;
import org.apache.ratis.protocol.RaftGroupId;
import org.apache.ratis.server.RaftServer;

/**
 * The partition replicas this node hosts: each partition's Raft group on this node, its topic in the store, and the
 * {@link ReplicatedPartition} through which the broker appends and reads who leads. It names the groups found in the
 * Raft directory before the server starts them, adds a group when the metadata gives this node a replica, tells the
 * broker's listeners when a partition's leader or high watermark changes, and moves each replica's retention hold
 * every {@link #RETENTION_HOLD_MILLIS} (the task {@code node-<id>-retention-holds}).
 *
 * <p>Thread-safe.
 */
final class Replicas {

    /** How often each partition's retention hold follows its Raft log's start. */
    static final long RETENTION_HOLD_MILLIS = 5_000;

    private final RaftGroups groups;
    private final Store store;
    private final ClusterNode.Tuning tuning;
    private final ShortReplicas shorts;
    private final LongSupplier nanoClock;
    /** The partition of each group this node hosts or is about to (named before the server starts them). */
    private final Map<RaftGroupId, PartitionId> known = new ConcurrentHashMap<>();
    /** The replicas looked up so far, until their group stops or rejoins here. */
    private final Map<PartitionId, ReplicatedPartition> partitions = new ConcurrentHashMap<>();
    private final List<BiConsumer<String, Integer>> listeners = new CopyOnWriteArrayList<>();
    /**
     * When this node added a partition's group (a topic created or grown since it started), until the group's leader
     * is its preferred replica ({@link Leadership}): a new group's leadership goes there.
     */
    private final Map<PartitionId, Long> added = new ConcurrentHashMap<>();
    /** Guards creating and growing topics in the store. */
    private final Object topicsInStore = new Object();

    /**
     * @param groups the node's groups
     * @param store the node's store
     * @param tuning how replicas batch their entries
     * @param shorts the replicas that lost batches (told when a replica follows a leader again)
     * @param nanoClock the clock a group's addition is noted by
     */
    Replicas(RaftGroups groups, Store store, ClusterNode.Tuning tuning, ShortReplicas shorts, LongSupplier nanoClock) {
        this.groups = groups;
        this.store = store;
        this.tuning = tuning;
        this.shorts = shorts;
        this.nanoClock = nanoClock;
    }

    /**
     * Names the partition groups the Raft directory may hold, before the server starts them: the store has every
     * topic this node took part in (created before its groups are). A topic whose groups are named by its id has their
     * directories under those names (its id, the store keeps); the metadata, which says how each topic names its
     * groups, is read only once the server runs. Retention keeps each whole partition until its group has read its
     * Raft log.
     */
    void nameStoredPartitions() {
        store.declaredTopics().forEach((topic, count) -> {
            if (store.layout(topic) == TopicLayout.BATCHES) {
                UUID id = store.topicId(topic);
                for (int p = 0; p < count && id != null; p++) {
                    if (groups.hasDirectory(groups.groupIdById(id, p))) {
                        groups.nameGroups(topic, id);
                        break;
                    }
                }
                for (int p = 0; p < count; p++) {
                    PartitionId partition = new PartitionId(topic, p);
                    name(partition);
                    RetentionHold.holdWhole(store, partition);
                }
            }
        });
    }

    /** Names a partition's group: this node hosts it, or is about to. */
    void name(PartitionId partition) {
        known.put(groups.groupId(partition), partition);
    }

    /** @return the partition of a group this node named, or null */
    PartitionId partitionOf(RaftGroupId groupId) {
        return known.get(groupId);
    }

    /** @return the partitions whose groups this node named */
    Collection<PartitionId> known() {
        return known.values();
    }

    /**
     * Makes the store have the topic with at least its partitions (the metadata's apply and rejoins race), and, when
     * it creates it, its configs.
     */
    void ensureTopic(MetadataCommands.Topic topic) {
        synchronized (topicsInStore) {
            int count = store.queueCount(topic.name());
            if (count == 0) {
                if (topic.id() != null) {
                    store.createTopic(topic.name(), TopicLayout.BATCHES, topic.partitions(), topic.configs(),
                            topic.id());
                } else {
                    store.createTopic(topic.name(), TopicLayout.BATCHES, topic.partitions(), topic.configs());
                }
                return;
            }
            if (count < topic.partitions()) {
                store.increaseQueueCount(topic.name(), topic.partitions());
            }
            keepId(topic);
        }
    }

    /**
     * Gives the store's topic the id the cluster gave it, if it has none yet (created before ids). A topic the store
     * does not have yet (a rejoin creates it later) gets it with its creation.
     */
    void keepId(MetadataCommands.Topic topic) {
        if (topic.id() == null) {
            return;
        }
        synchronized (topicsInStore) {
            if (store.queueCount(topic.name()) > 0 && store.topicId(topic.name()) == null) {
                store.setTopicIds(Map.of(topic.name(), topic.id()));
            }
        }
    }

    /** Gives the store's topic the configs the cluster gave it, creating it if the store has not yet. */
    void keepConfigs(MetadataCommands.Topic topic) {
        synchronized (topicsInStore) {
            if (store.queueCount(topic.name()) == 0) {
                ensureTopic(topic);
            } else {
                store.setTopicConfigs(topic.name(), topic.configs());
            }
        }
    }

    /**
     * Makes this node a replica of a partition: creates its Raft group here if the node does not host it yet.
     * Every replica's node must be told (each adds the group on its own server); the metadata does so.
     *
     * @param replicas the node ids of the partition's replicas, this node among them
     * @return the partition's replica on this node
     */
    ReplicatedPartition host(PartitionId partition, List<Integer> replicas) throws IOException {
        if (!replicas.contains(groups.selfId())) {
            throw new IllegalArgumentException("node " + groups.selfId() + " is not among " + partition
                    + "'s replicas " + replicas);
        }
        RaftGroupId groupId = groups.groupId(partition);
        known.put(groupId, partition);
        if (!groups.hosts(groupId)) {
            groups.add(RaftGroup.valueOf(groupId, groups.peers(replicas)), partition.toString(), true);
            added.put(partition, nanoClock.getAsLong());
        }
        return partition(partition);
    }

    /** @return this node's replica of a partition it hosts */
    ReplicatedPartition partition(PartitionId partition) throws IOException {
        ReplicatedPartition existing = partitions.get(partition);
        if (existing != null) {
            return existing;
        }
        RaftServer.Division division = groups.division(groups.groupId(partition));
        ReplicatedPartition created = new ReplicatedPartition(partition, division, groups.clientId(),
                groups.callIds(), tuning.entriesInFlight(), tuning.refillWait());
        ReplicatedPartition raced = partitions.putIfAbsent(partition, created);
        return raced != null ? raced : created;
    }

    /** @return this node's replica of the partition, or null if it hosts none */
    ReplicatedPartition replicaOf(String topic, int partition) {
        PartitionId id = new PartitionId(topic, partition);
        // Every produce and fetch asks: a replica found once is kept (until its group stops or rejoins here), so the
        // group id's digest and the walk over the server's groups are paid once per partition, not per request.
        ReplicatedPartition found = partitions.get(id);
        if (found != null) {
            return found;
        }
        RaftGroupId groupId = groups.groupId(id);
        if (!known.containsKey(groupId) || !groups.hosts(groupId)) {
            return null;
        }
        try {
            return partition(id);
        } catch (IOException e) {
            return null;
        }
    }

    /** Forgets the replica looked up for a partition: its group stopped here, or runs here anew. */
    void drop(PartitionId partition) {
        partitions.remove(partition);
    }

    /**
     * Forgets the partition's group {@code id}, whose topic was deleted: its name, the replica looked up for it (if
     * that is this group's, not the group of a topic of the same name created since) and when it was added.
     */
    void forget(PartitionId partition, RaftGroupId id) {
        known.remove(id, partition);
        ReplicatedPartition replica = partitions.get(partition);
        if (replica != null && replica.division().getGroup().getGroupId().equals(id)) {
            partitions.remove(partition, replica);
            added.remove(partition);
        }
    }

    /** A topic's data left the store: the broker's listeners look again at its partitions (told as partition -1). */
    void topicGone(String topic) {
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(topic, -1);
        }
    }

    /** @return the replicas looked up so far */
    Collection<ReplicatedPartition> running() {
        return partitions.values();
    }

    /**
     * A partition's leader or high watermark changed here: a replica that lost batches and follows a leader again
     * holds others back no more, and the broker's listeners look again.
     */
    void changed(PartitionId partition) {
        shorts.followingAgain(partition);
        for (BiConsumer<String, Integer> listener : listeners) {
            listener.accept(partition.topic(), partition.partition());
        }
    }

    /** Registers a listener told of each partition whose leader or high watermark changed here. */
    void onChange(BiConsumer<String, Integer> listener) {
        listeners.add(listener);
    }

    /** @return when this node added each partition's group since it started, until led by its preferred replica */
    Map<PartitionId, Long> added() {
        return added;
    }

    /**
     * Starts moving each partition's retention hold to the first batch its Raft log names, every few seconds: the
     * log's start moves up as Ratis purges it after a snapshot, on a partition written to or not. The store's first
     * offset follows the partition's log start (Kafka's DeleteRecords) as far as the hold lets it.
     */
    void startRetentionHolds(Tasks tasks) {
        tasks.every("node-" + groups.selfId() + "-retention-holds", Duration.ofMillis(RETENTION_HOLD_MILLIS), () -> {
            for (ReplicatedPartition partition : partitions.values()) {
                partition.machine().holdRetentionAtLog();
                partition.machine().deleteBelowLogStart();
            }
        });
    }
}
