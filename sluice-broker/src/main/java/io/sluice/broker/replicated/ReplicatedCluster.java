package io.sluice.broker.replicated;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Replication;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import java.util.concurrent.CompletionException;

/**
 * A cluster broker's view of its cluster, as the Kafka layer sees it, over the cluster's {@link Replication}: the
 * cluster's brokers, the metadata's leader as controller, topic changes and offset commits carried through the
 * cluster (every broker applies them to its store), preferred elections. Thread-safe.
 */
public final class ReplicatedCluster implements ClusterView {

    private final Replication node;
    private final Store store;

    /**
     * @param node the cluster as this broker's node of it sees it
     * @param store the broker's store (committed offsets are read from it; topic names checked against it)
     */
    public ReplicatedCluster(Replication node, Store store) {
        this.node = node;
        this.store = store;
    }

    @Override
    public int self() {
        return node.self();
    }

    @Override
    public List<Node> brokers() {
        return node.brokers().stream().map(broker -> new Node(broker.id(), broker.host(), broker.port())).toList();
    }

    @Override
    public int controller() {
        return node.controller();
    }

    @Override
    public boolean controllerReady() {
        return node.controllerReady();
    }

    @Override
    public int defaultReplicationFactor() {
        return node.defaultReplicationFactor();
    }

    @Override
    public int maxPartitions() {
        return store.config().maxQueuesPerTopic();
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
    public CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                               Map<String, String> configs) {
        try {
            checkTopicName(topic);
            if (replicationFactor < 1 || replicationFactor > node.brokers().size()) {
                throw new TopicRefusedException(Refusal.INVALID_REPLICATION_FACTOR, "replication factor "
                        + replicationFactor + " cannot be met by a cluster of " + node.brokers().size() + " brokers");
            }
            if (partitions < 1 || partitions > maxPartitions()) {
                throw new TopicRefusedException(Refusal.INVALID_PARTITIONS, "the partition count must be between 1"
                        + " and " + maxPartitions() + ", was " + partitions);
            }
        } catch (TopicRefusedException e) {
            return CompletableFuture.failedFuture(e);
        }
        // Checked above, the one refusal left is a topic the cluster has already.
        return refused(node.createTopic(topic, partitions, replicationFactor, configs), Refusal.EXISTS);
    }

    @Override
    public Map<String, String> topicConfigs(String topic) {
        return store.topicConfigs(topic);
    }

    @Override
    public String securityRecord(String kind) {
        return node.securityRecord(kind);
    }

    @Override
    public CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change) {
        return node.alterSecurityRecord(kind, change);
    }

    @Override
    public CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change) {
        return refused(node.alterTopicConfigs(topic, change), Refusal.NO_TOPIC);
    }

    @Override
    public CompletableFuture<Void> addPartitions(String topic, int partitions) {
        return refused(node.addPartitions(topic, partitions), Refusal.INVALID_PARTITIONS);
    }

    /** @return {@code change}, its {@link IllegalArgumentException} (a refusal) told as {@code refusal} */
    private static <T> CompletableFuture<T> refused(CompletableFuture<T> change, Refusal refusal) {
        return change.exceptionallyCompose(error -> {
            Throwable cause = cause(error);
            return CompletableFuture.failedFuture(cause instanceof IllegalArgumentException
                    ? new TopicRefusedException(cause.getMessage().contains("does not exist") ? Refusal.NO_TOPIC
                            : refusal, cause.getMessage()) : cause);
        });
    }

    private static Throwable cause(Throwable error) {
        return error instanceof CompletionException && error.getCause() != null ? error.getCause() : error;
    }

    /** Through the cluster's metadata: every broker deletes its part, this one before the answer. */
    @Override
    public CompletableFuture<Void> deleteTopic(String topic) {
        return refused(node.deleteTopic(topic), Refusal.NO_TOPIC);
    }

    @Override
    public CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets) {
        return notLeader(node.commitOffsets(group, offsets.stream().map(offset -> new Replication.CommittedOffset(
                offset.topic(), offset.partition(), offset.offset())).toList()));
    }

    @Override
    public CompletableFuture<Void> deleteOffsets(String group, List<CommittedOffset> partitions) {
        return notLeader(node.commitOffsets(group, partitions.stream().map(partition -> new Replication.CommittedOffset(
                partition.topic(), partition.partition(), Replication.DELETED_OFFSET)).toList()));
    }

    /** @return {@code result}, the cluster's not-leader exception told as the Kafka layer's */
    private static <T> CompletableFuture<T> notLeader(CompletableFuture<T> result) {
        return result.exceptionallyCompose(error -> {
            Throwable cause = cause(error);
            return CompletableFuture.failedFuture(cause instanceof Replication.NotLeaderException
                    ? new Partition.NotLeaderException(cause.getMessage()) : cause);
        });
    }

    /** The controller coordinates transactions, as it coordinates groups; their states go through the metadata. */
    @Override
    public boolean coordinatesTransactions() {
        return true;
    }

    @Override
    public CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long epoch) {
        return notLeader(node.saveTransaction(transactionalId, state, epoch));
    }

    @Override
    public Map<String, byte[]> savedTransactions() {
        return node.savedTransactions();
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
        Replication.GroupsCoordination coordination = node.groupsCoordination();
        return new GroupsCoordination(coordination.epoch(), coordination.applied());
    }

    /** The cluster decides by the decision's position, not by time: {@code idleSinceMillis} is not used. */
    @Override
    public CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision, long idleSinceMillis) {
        return notLeader(node.forgetGroup(group, new Replication.GroupsCoordination(decision.epoch(),
                decision.applied())));
    }

    @Override
    public CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        return node.electPreferredLeader(topic, partition, timeoutMillis).thenApply(election -> switch (election) {
            case ELECTED -> Election.ELECTED;
            case NOT_NEEDED -> Election.NOT_NEEDED;
            case PREFERRED_NOT_AVAILABLE -> Election.PREFERRED_NOT_AVAILABLE;
        });
    }
}
