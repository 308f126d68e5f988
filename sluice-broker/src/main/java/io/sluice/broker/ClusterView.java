package io.sluice.broker;

import io.sluice.store.ConsumerPosition;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;

/**
 * The cluster a broker is one of, as the Kafka layer sees it: its brokers and controller, topics created, grown and
 * deleted, consumer groups' committed offsets, preferred leader elections. A broker alone is a cluster of one
 * ({@code io.sluice.broker.local.LocalCluster}: itself the controller, every change made in its store at once); a
 * broker of a Raft cluster carries each change through the cluster's metadata (the cluster module). Thread-safe.
 */
public interface ClusterView {

    /**
     * A broker of the cluster as clients reach it.
     *
     * @param id its node id
     * @param host its client host
     * @param port its client port
     */
    record Node(int id, String host, int port) {
    }

    /** @return this broker's node id */
    int self();

    /** @return every broker of the cluster */
    List<Node> brokers();

    /** @return the node that answers for the cluster's metadata now (the controller), or -1 if none is known */
    int controller();

    /**
     * @return true if this broker is the controller and has applied the metadata its predecessors committed (the
     *     committed group offsets among them): until then it must not answer for groups
     */
    boolean controllerReady();

    /** @return the replication factor of a topic created without one: 3, or fewer in a smaller cluster; 1 alone */
    int defaultReplicationFactor();

    /** @return the most partitions a topic may have */
    int maxPartitions();

    /** Why a topic change was refused, for the Kafka layer to answer with its error. */
    enum Refusal {
        /** The name is not one the store takes. */
        INVALID_NAME,
        /** The topic exists already. */
        EXISTS,
        /** The topic does not exist. */
        NO_TOPIC,
        /** A partition count out of range, or not larger than the topic's. */
        INVALID_PARTITIONS,
        /** More replicas than brokers, or fewer than one. */
        INVALID_REPLICATION_FACTOR,
        /** The topic cannot be deleted here. */
        DELETION_DISABLED
    }

    /** A topic change refused, with why. */
    final class TopicRefusedException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        private final transient Refusal refusal;

        /**
         * @param refusal why
         * @param message what, naming the value found
         */
        public TopicRefusedException(Refusal refusal, String message) {
            super(message);
            this.refusal = refusal;
        }

        /** @return why the change was refused */
        public Refusal refusal() {
            return refusal;
        }
    }

    /**
     * @throws TopicRefusedException ({@link Refusal#INVALID_NAME}) if no topic may have this name, with why
     */
    void checkTopicName(String topic);

    /**
     * Creates a topic on every broker of the cluster, each partition on {@code replicationFactor} brokers, without
     * configs of its own.
     *
     * @return completes once this broker serves it; fails with {@link TopicRefusedException} for a bad request
     */
    default CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor) {
        return createTopic(topic, partitions, replicationFactor, Map.of());
    }

    /**
     * Creates a topic on every broker of the cluster, each partition on {@code replicationFactor} brokers, with its
     * configs (Kafka's topic configs, checked by the caller): the topic and its configs come into being together.
     *
     * @return completes once this broker serves it; fails with {@link TopicRefusedException} for a bad request
     */
    CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                        Map<String, String> configs);

    /** @return the configs the topic was given (not the defaults), by name; empty for one with none, or unknown */
    Map<String, String> topicConfigs(String topic);

    /**
     * Changes a topic's configs on every broker of the cluster: {@code change} is given the configs the topic has and
     * answers those it is to have (checked), and the topic gets them only if it still had the ones given (else the
     * change is made again on what it has now), so that changes made at once through several brokers all count.
     *
     * @param change from the configs the topic has to those it is to have; may throw to refuse the change
     * @return completes once this broker has them; fails with {@link TopicRefusedException} ({@link Refusal#NO_TOPIC})
     *     if there is no such topic, or with what {@code change} threw
     */
    CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change);

    /**
     * Gives a topic more partitions, each new one on as many brokers as the topic's first.
     *
     * @return completes once this broker serves them; fails with {@link TopicRefusedException} for a bad request
     */
    CompletableFuture<Void> addPartitions(String topic, int partitions);

    /**
     * Deletes a topic with its records, committed offsets and producer state.
     *
     * @return completes once this broker no longer serves it; fails with {@link TopicRefusedException} (no such
     *     topic, or deletion not possible here)
     */
    CompletableFuture<Void> deleteTopic(String topic);

    /**
     * A group's committed offset of one partition.
     *
     * @param topic the topic
     * @param partition the partition
     * @param offset the next offset the group reads
     */
    record CommittedOffset(String topic, int partition, long offset) {
    }

    /**
     * Commits a consumer group's offsets on every broker of the cluster, so that they survive the coordinator.
     *
     * @param group the group's store name
     * @return completes once this broker has them; fails with {@link Partition.NotLeaderException} if this broker
     *     does not coordinate the groups, or stopped before the commit reached the cluster
     */
    CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets);

    /**
     * Deletes a consumer group's committed offsets of some partitions on every broker of the cluster (Kafka's
     * OffsetDelete), as {@link #commitOffsets} commits them.
     *
     * @param partitions the partitions (their offsets are not looked at)
     */
    default CompletableFuture<Void> deleteOffsets(String group, List<CommittedOffset> partitions) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("offsets cannot be deleted here"));
    }

    /** @return every group's committed offsets this broker holds */
    List<ConsumerPosition> committedOffsets();

    /** @return the group's committed offset of the partition, if it has one */
    OptionalLong committedOffset(String group, String topic, int partition);

    /**
     * Where this broker stands as the groups' coordinator, for a decision to forget a group.
     *
     * @param epoch the term in which this broker coordinates the groups, -1 if it does not (0 for a broker alone)
     * @param applied how far this broker has applied the cluster's offset commits, as a position in their order
     */
    record GroupsCoordination(long epoch, long applied) {
    }

    /** @return where this broker stands as the groups' coordinator now */
    GroupsCoordination groupsCoordination();

    /**
     * Forgets a consumer group's committed offsets on every broker, unless the cluster took a commit of the group
     * after the decision's position, or the decision's coordinator no longer coordinates.
     *
     * @param idleSinceMillis for a broker alone: forget only if no offset was committed since (store clock), or -1
     *     to forget whatever the time
     * @return completes with true once forgotten here, false if a later commit kept them
     */
    CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision, long idleSinceMillis);

    /**
     * @return true if this broker coordinates transactions (a broker alone does; a cluster's brokers do not yet): the
     *     transaction APIs then keep their state through {@link #saveTransaction}
     */
    default boolean coordinatesTransactions() {
        return false;
    }

    /**
     * Saves a transactional id's state, its coordinator's record of it: what {@link #savedTransactions} gives back
     * after a restart, the last saved of each id.
     *
     * @param state the state's bytes (the coordinator's encoding)
     * @param epoch the coordination epoch the coordinator loaded its states in ({@link #groupsCoordination}): a cluster
     *     refuses the save ({@link Partition.NotLeaderException}) if this broker no longer coordinates in that epoch
     * @return completes once saved as durably as an acknowledged produce; fails with the store's error
     */
    default CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long epoch) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("transactions are not served here"));
    }

    /** @return the last state saved of each transactional id, by id, in the order they were saved */
    default Map<String, byte[]> savedTransactions() {
        return Map.of();
    }

    /**
     * Commits the group offsets of a committed transaction: as {@link #commitOffsets}, and durably once it completes
     * (whatever the flush mode, since the transaction's markers are already in the partitions).
     */
    default CompletableFuture<Void> commitTransactionOffsets(String group, List<CommittedOffset> offsets) {
        return commitOffsets(group, offsets);
    }

    /** What a preferred leader election of a partition came to. */
    enum Election {
        /** Leadership moved to the preferred replica. */
        ELECTED,
        /** The preferred replica leads already. */
        NOT_NEEDED,
        /** The preferred replica could not take over now: behind the leader, unreachable, or no leader to hand over. */
        PREFERRED_NOT_AVAILABLE
    }

    /**
     * Asks a partition's leader to hand its leadership to the partition's preferred replica (its first replica).
     *
     * @return completes with the outcome; fails with {@link IllegalArgumentException} for a partition the cluster does
     *     not have
     */
    CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis);

    /**
     * A security record of the cluster, as text: the SCRAM credentials ({@code "scram"}) or the ACLs ({@code "acls"}),
     * each in its owner's encoding.
     *
     * @return the record's text as this broker has it, or "" if there is none
     */
    default String securityRecord(String kind) {
        return "";
    }

    /**
     * Changes a security record on every broker of the cluster: {@code change} is given the text the record has and
     * answers the one it is to have, and the record gets it only if it still had the one given (else the change is
     * made again on what it has now), as {@link #alterTopicConfigs} changes a topic's configs. Durable once it
     * completes, whatever the flush mode.
     *
     * @param change from the text to the new text; may throw to refuse the change
     * @return completes once this broker has the new text; fails with what {@code change} threw, or the store's error
     */
    default CompletableFuture<Void> alterSecurityRecord(String kind, UnaryOperator<String> change) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("security records are not kept here"));
    }
}
