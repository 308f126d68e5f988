package io.sluice.cluster;

import io.sluice.broker.Replication.CommittedOffset;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The consumer groups' committed offsets the metadata applies, kept in this node's store as consumer positions, so
 * that the next coordinator has them. Called on the metadata's applying thread.
 */
final class StoreOffsets {

    private static final Logger LOG = LoggerFactory.getLogger(StoreOffsets.class);

    private final Store store;

    /** @param store the node's store */
    StoreOffsets(Store store) {
        this.store = store;
    }

    /**
     * The metadata committed a group's offsets: this node's store keeps them as consumer positions, and forgets those
     * deleted ({@link MetadataCommands#DELETED}, Kafka's OffsetDelete).
     */
    void commit(MetadataCommands.Offsets offsets) {
        for (CommittedOffset offset : offsets.offsets()) {
            if (offset.offset() == MetadataCommands.DELETED) {
                store.removeCommittedOffset(offsets.group(), offset.topic(), offset.partition());
            } else {
                store.commitOffset(offsets.group(), offset.topic(), offset.partition(), offset.offset());
            }
        }
    }

    /**
     * The metadata is about to apply a snapshot holding these groups' offsets (each group with its partitions): the
     * store forgets every other group, and every group holding positions of partitions the snapshot's lacks. Such
     * positions were forgotten before the snapshot, or committed after it (the log that follows commits them again);
     * the snapshot's commits come next.
     */
    void keepOnly(Map<String, Set<ClusterNode.PartitionId>> groups) {
        Map<String, Set<ClusterNode.PartitionId>> stored = new HashMap<>();
        for (ConsumerPosition position : store.consumerPositions()) {
            stored.computeIfAbsent(position.group(), g -> new HashSet<>())
                    .add(new ClusterNode.PartitionId(position.topic(), position.queueId()));
        }
        stored.forEach((group, partitions) -> {
            Set<ClusterNode.PartitionId> kept = groups.get(group);
            if (kept == null || !kept.containsAll(partitions)) {
                forget(group);
            }
        });
    }

    /** The metadata forgot a group's offsets (deleted or expired by its coordinator): so does this node's store. */
    void forget(String group) {
        try {
            store.removeConsumerGroup(group);
        } catch (RuntimeException e) {
            // The cluster forgot them; this node keeps them until it is rebuilt (a closed store, a failed disk).
            LOG.error("node cannot forget the committed offsets of group {}: {}", group, e.toString());
        }
    }
}
