package io.sluice.cluster;

import io.sluice.cluster.ClusterNode.PartitionId;
import io.sluice.cluster.MetadataCommands.Topic;
import io.sluice.store.Store;
import io.sluice.store.TopicLayout;
import java.io.IOException;
import java.nio.file.Files;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.ratis.protocol.RaftGroupId;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Topics deleted from the cluster, on this node (docs/cluster.md, "Deleting a topic"): as the metadata deletes one,
 * this node stops its replicas' groups and deletes their directories, then the topic's data in its store (its batches,
 * and the consumer positions on it). The store's part goes last, and only once every group's directory went: a node
 * starts the groups in its Raft directory that its store's topics name, and refuses to start with a group directory it
 * cannot name, so a deletion cut short (a crash, a failed removal) leaves the store's topic naming what is left, which
 * the node then starts and deletes again. A topic is told apart from another of its name by its id
 * ({@link Topic#is}), so a deletion this node replays never deletes a topic created after it under the same name, which
 * the store may already hold.
 *
 * <p>A node away while a topic was deleted still holds it when it comes back, and its groups start with its Raft
 * server, before the metadata can say the topic is gone. Replaying the deletion deletes it; where the metadata log was
 * purged past the deletion, the snapshot the node installs lacks the topic ({@link MetadataState#applySnapshot}); and
 * what neither reaches (a topic this node's metadata never learned again, a deletion cut short) goes once the node has
 * applied its barrier, everything committed before it ({@link #sweep}). A topic created under the name of one this node
 * still holds waits for the sweep too: until then the store's topic may as well be one created after it, which this
 * node replays its way to.
 *
 * <p>Called on the metadata's applying thread. Thread-safe.
 */
final class TopicDeletions {

    private static final Logger LOG = LoggerFactory.getLogger(TopicDeletions.class);

    private final RaftGroups groups;
    private final Replicas replicas;
    private final ReplicaRestarts restarts;
    private final Store store;
    /** Hosts this node's replicas of a topic the sweep let in (its creation applied while another held its name). */
    private final Consumer<Topic> host;
    /** Topics whose creation this node applied while its store held another topic of the name, until the sweep. */
    private final Set<String> waiting = ConcurrentHashMap.newKeySet();

    /**
     * @param groups the node's groups
     * @param replicas the replicas it hosts
     * @param restarts its replicas stopped after their log failed
     * @param store its store
     * @param host hosts this node's replicas of a topic, as its creation's apply does
     */
    TopicDeletions(RaftGroups groups, Replicas replicas, ReplicaRestarts restarts, Store store, Consumer<Topic> host) {
        this.groups = groups;
        this.replicas = replicas;
        this.restarts = restarts;
        this.store = store;
        this.host = host;
    }

    /**
     * Whether the store holds another topic of this topic's name, whose creation (or growth, or configs) the metadata
     * applies: one deleted while this node was away, or one created after this entry, which this node replays. Such a
     * topic is left alone, and this one is hosted once the sweep found which it is.
     */
    boolean storeHoldsAnother(Topic topic) {
        if (store.queueCount(topic.name()) == 0 || topic.is(store.topicId(topic.name()))) {
            return false;
        }
        if (waiting.add(topic.name())) {
            LOG.info("node {}: the store holds another topic named {} than the one with the id {} the metadata"
                    + " names; its replicas are hosted once this node has caught up with the metadata",
                    groups.selfId(), topic.name(), topic.id());
        }
        return true;
    }

    /**
     * The metadata deleted a topic (or found it deleted): this node's groups of its partitions stop and their
     * directories go, then the topic's data in the store, if the store's topic of that name is this one.
     */
    void deleted(Topic topic) {
        UUID stored = store.topicId(topic.name());
        int count = store.queueCount(topic.name());
        boolean inStore = count > 0 && topic.is(stored);
        boolean removed = true;
        for (int p = 0; p < Math.max(topic.partitions(), inStore ? count : 0); p++) {
            removed &= removeGroup(groups.groupId(topic, p), new PartitionId(topic.name(), p));
        }
        if (topic.groupsById() && topic.id().equals(groups.groupsNamedBy(topic.name()))) {
            groups.nameGroups(topic.name(), null);
        }
        if (inStore && removed) {
            deleteFromStore(topic.name());
        }
        waiting.remove(topic.name());
        LOG.info("node {}: topic {} (id {}) deleted here{}", groups.selfId(), topic.name(), topic.id(),
                inStore ? "" : "; the store holds no topic of that id");
    }

    /**
     * Once this node has applied its barrier (everything committed before it): what is left of topics the cluster no
     * longer has goes. A store's topic with an id that the metadata lacks, or whose name the metadata gives another
     * topic, was deleted (its creation and deletion were applied before the barrier), as was one without an id whose
     * name the metadata gives a topic created since deletions; their groups' directories go, and their data. Topics
     * the metadata let wait for this ({@link #storeHoldsAnother}) are hosted. A store's topic without an id whose name
     * the metadata does not have is left alone: a node's store can hold a topic the metadata never named (a replica
     * hosted directly, as the replication's tests do), and every topic created since ids has one.
     */
    void sweep(MetadataState metadata) {
        for (Map.Entry<String, Integer> topic : store.declaredTopics().entrySet()) {
            String name = topic.getKey();
            UUID stored = store.topicId(name);
            Topic known = metadata.topic(name);
            boolean gone = stored != null ? known == null || !known.is(stored) : known != null && known.groupsById();
            if (!gone || store.layout(name) != TopicLayout.BATCHES) {
                continue;
            }
            LOG.warn("node {}: topic {} (id {}) is no longer in the cluster (deleted while this node was away); its"
                    + " replicas and data here go", groups.selfId(), name, stored);
            boolean removed = true;
            for (int p = 0; p < topic.getValue(); p++) {
                PartitionId partition = new PartitionId(name, p);
                if (stored != null) {
                    removed &= removeGroup(groups.groupIdById(stored, p), partition);
                }
                if (known == null || known.groupsById()) {
                    removed &= removeGroup(groups.groupIdByName(name, p), partition);
                }
            }
            if (stored != null && stored.equals(groups.groupsNamedBy(name))) {
                groups.nameGroups(name, null);
            }
            if (removed) {
                deleteFromStore(name);
            }
        }
        for (String name : Set.copyOf(waiting)) {
            waiting.remove(name);
            Topic known = metadata.topic(name);
            if (known != null && !storeHoldsAnother(known)) {
                host.accept(known);
            }
        }
    }

    /**
     * Stops this node's member of a group and deletes its directory (or deletes the directory a group not running here
     * left), with its restart marker; the replica looked up for the partition goes if it was this group's.
     *
     * @return whether the group's directory is gone
     */
    private boolean removeGroup(RaftGroupId id, PartitionId partition) {
        replicas.forget(partition, id);
        restarts.forget(partition, id);
        try {
            if (groups.hosts(id)) {
                groups.remove(id, true, partition.toString());
            } else if (groups.hasDirectory(id)) {
                groups.deleteDirectory(id);
            }
            Files.deleteIfExists(RestartMarker.of(groups.raftDirectory(), id));
            return true;
        } catch (IOException | RuntimeException e) {
            // The store's topic stays, naming the group, which the node starts and deletes again after its next start.
            LOG.error("node {}: cannot remove the Raft group {} of {}, of a deleted topic; its data stay until the"
                    + " node's next start: {}", groups.selfId(), id, partition, e.toString());
            return false;
        }
    }

    private void deleteFromStore(String topic) {
        try {
            store.deleteTopic(topic);
        } catch (RuntimeException e) {
            LOG.error("node {}: cannot delete topic {} from its store (tried again after its next start): {}",
                    groups.selfId(), topic, e.toString());
        }
        replicas.topicGone(topic);
    }
}
