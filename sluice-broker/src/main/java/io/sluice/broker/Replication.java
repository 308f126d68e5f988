package io.sluice.broker;

import io.sluice.store.KafkaBatch;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.function.UnaryOperator;
import java.util.function.BiConsumer;

/**
 * What a broker that is one of a cluster asks of the cluster: who leads each partition, where its appends go and how
 * far it is committed, and the topics every broker knows. Without one ({@code null}) a broker serves its own store
 * alone. The cluster module implements it over Raft; the broker stays free of how.
 */
public interface Replication {

    /**
     * A broker of the cluster as clients reach it.
     *
     * @param id its node id
     * @param host its client host
     * @param port its client port
     */
    record Node(int id, String host, int port) {
    }

    /**
     * A partition as this broker knows it now.
     *
     * @param leader the node that leads it, or -1 if none is known (an election is on)
     * @param leaderEpoch grows with every change of leader (the Raft term)
     * @param replicas the nodes holding a replica
     * @param inSync the replicas known to have every committed batch
     */
    record PartitionView(int leader, int leaderEpoch, List<Integer> replicas, List<Integer> inSync) {
    }

    /**
     * An append's two moments.
     *
     * @param stored completes with the batch's base offset once the leader stored it (acks=1)
     * @param committed completes with it once a majority of the replicas have it (acks=all)
     */
    record Appended(CompletableFuture<Long> stored, CompletableFuture<Long> committed) {
    }

    /** Raised through an append's futures when this broker does not (or no longer) lead the partition. */
    final class NotLeaderException extends RuntimeException {
        private static final long serialVersionUID = 1L;

        /** @param message what happened */
        public NotLeaderException(String message) {
            super(message);
        }
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

    /** @return the partition as known now, or null if the cluster has no such topic or partition */
    PartitionView partition(String topic, int partition);

    /**
     * @return true if this broker holds a replica of the partition and cannot name its leader with confidence now: none
     *     is known (an election is on), or this replica follows one it has not heard from for longer than the
     *     leader's heartbeats allow (it may have died; the replicas elect another only once their election timeout
     *     passes); a Metadata answer waits, a little, for that to be settled
     */
    default boolean leaderInDoubt(String topic, int partition) {
        return false;
    }

    /**
     * @return the partition's leader epoch as this broker knows it, or -1 if the cluster has no such partition; the
     *     produce path asks on every idempotent batch, so an implementation answers it without building the whole
     *     {@link #partition} view (replicas, in-sync set)
     */
    default int leaderEpoch(String topic, int partition) {
        PartitionView view = partition(topic, partition);
        return view == null ? -1 : view.leaderEpoch();
    }

    /**
     * @return the idempotent producers this broker's replica keeps of its log as it stores its batches, or null if it
     *     keeps none (then read back from the log: {@link Partition#producerHistory})
     */
    default ProducerHistory producerHistory(String topic, int partition) {
        return null;
    }

    /** @return true if this broker leads the partition and can take appends now */
    boolean leads(String topic, int partition);

    /**
     * Appends a Kafka record batch (v2) to a partition this broker leads. Batches of a partition must be appended one
     * at a time (their offsets follow the order of the calls).
     *
     * @param batch the checked batch, in memory of its own that the cluster keeps ({@link KafkaBatch#copy})
     * @throws NotLeaderException through the futures if this broker does not lead it
     */
    Appended append(String topic, int partition, KafkaBatch batch);

    /** @return the offset below which the partition is committed (what consumers may read), as this broker knows */
    long highWatermark(String topic, int partition);

    /**
     * @return the offset below which the partition's records were deleted (Kafka's DeleteRecords), as this broker's
     *     replica applied the deletions, 0 if none were or it holds no replica; its store may still hold batches below
     *     it, which the cluster sends a replica behind, but clients are answered as if it held none
     */
    long logStartOffset(String topic, int partition);

    /**
     * Deletes a partition's records below {@code offset} on every replica, if this broker leads the partition: its log
     * start moves there at one place of the partition's replicated log.
     *
     * @param offset the new log start, at most the high watermark (the caller checks)
     * @return completes with the partition's log start after the deletion once it is committed and this broker applied
     *     it; fails with {@link NotLeaderException} if this broker does not (or no longer) lead the partition
     */
    CompletableFuture<Long> deleteRecords(String topic, int partition, long offset);

    /**
     * Creates a topic in every broker of the cluster, each partition on {@code replicationFactor} brokers, with its
     * configs (every broker's store keeps them with the topic).
     *
     * @return completes once the cluster has it and this broker's store has it; fails with
     *     {@link IllegalArgumentException} for a bad request (a topic that exists, too many replicas)
     */
    CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor,
                                        Map<String, String> configs);

    /** Creates a topic without configs of its own, as {@link #createTopic(String, int, int, Map)}. */
    default CompletableFuture<Void> createTopic(String topic, int partitions, int replicationFactor) {
        return createTopic(topic, partitions, replicationFactor, Map.of());
    }

    /**
     * Deletes a topic from every broker of the cluster, with its records, its groups' committed offsets and producer
     * state.
     *
     * @return completes once the cluster deleted it and this broker's part of it is gone; fails with
     *     {@link IllegalArgumentException} saying the topic "does not exist" if the cluster has no such topic
     */
    CompletableFuture<Void> deleteTopic(String topic);

    /**
     * Changes a topic's configs in every broker of the cluster, as {@code ClusterView.alterTopicConfigs} describes:
     * made again on what the topic has if another change came first.
     *
     * @return completes once this broker's store has them; fails with {@link IllegalArgumentException} saying the
     *     topic "does not exist" if the cluster has no such topic, or with what {@code change} threw
     */
    CompletableFuture<Void> alterTopicConfigs(String topic, UnaryOperator<Map<String, String>> change);

    /**
     * Gives a topic more partitions in every broker of the cluster, each new one on as many brokers as the topic's
     * first partition.
     *
     * @return completes once the cluster has them and this broker's store has them; fails with
     *     {@link IllegalArgumentException} for a bad request (no such topic, a count not larger than the topic's)
     */
    CompletableFuture<Void> addPartitions(String topic, int partitions);

    /**
     * A group's committed offset of one partition.
     *
     * @param topic the topic
     * @param partition the partition
     * @param offset the next offset the group reads
     */
    record CommittedOffset(String topic, int partition, long offset) {
    }

    /** The offset {@link #commitOffsets} takes for a partition whose committed offset is deleted (OffsetDelete). */
    long DELETED_OFFSET = -1;

    /**
     * Commits a consumer group's offsets in every broker of the cluster (each keeps them as its store's consumer
     * positions), so that they survive the coordinator. The group coordinator of every group is the
     * {@link #controller()}.
     *
     * @param group the group's store name
     * @return completes once the cluster has them and this broker's store has them; fails with
     *     {@link NotLeaderException} if this broker does not coordinate the groups, or stopped before the commit
     *     reached the cluster (it is then refused: the group may have committed through the next coordinator)
     */
    CompletableFuture<Void> commitOffsets(String group, List<CommittedOffset> offsets);

    /**
     * Where this broker stands as the groups' coordinator, for a decision to forget a group ({@link #forgetGroup}).
     *
     * @param epoch the term in which this broker leads the cluster's metadata (and so coordinates the groups), -1 if
     *     it does not
     * @param applied how far this broker has applied the cluster's offset commits (and the rest of its metadata), as a
     *     position in their order: read before the store's offsets a decision is taken on
     */
    record GroupsCoordination(long epoch, long applied) {
    }

    /** @return where this broker stands as the groups' coordinator now */
    GroupsCoordination groupsCoordination();

    /**
     * Forgets a consumer group's committed offsets in every broker of the cluster (a group deleted, or expired by its
     * coordinator), unless the cluster took a commit of the group after the decision's position, or the decision's
     * coordinator no longer coordinates (its epoch is over): every broker then keeps them alike.
     *
     * @param group the group's store name
     * @param decision where this broker stood when it decided, read before the offsets it decided on
     * @return completes with true once the cluster forgot them and this broker's store has, false if a later commit
     *     kept them; fails if the decision's epoch is over or the cluster did not take it
     */
    CompletableFuture<Boolean> forgetGroup(String group, GroupsCoordination decision);

    /**
     * Saves a transactional id's state in every broker of the cluster, as the transaction coordinator (the groups'
     * coordinator, the {@link #controller()}), so that the next coordinator resumes it.
     *
     * @param epoch the term the coordinator loaded its states in: the save is refused in any other
     * @return completes once the cluster has it; fails with {@link NotLeaderException} if this broker does not
     *     coordinate in that term, or stopped before the state reached the cluster
     */
    default CompletableFuture<Void> saveTransaction(String transactionalId, byte[] state, long epoch) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("transactions are not kept here"));
    }

    /** @return the last state saved of each transactional id, by id, as this broker applied the cluster's metadata */
    default Map<String, byte[]> savedTransactions() {
        return Map.of();
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
     * Asks a partition's leader to hand its leadership to the partition's preferred replica (the first of its
     * replicas), as Kafka's preferred leader election does; the other replicas' logs are not touched.
     *
     * @param timeoutMillis how long the hand-over may take
     * @return completes with the outcome; fails with {@link IllegalArgumentException} for a partition the cluster does
     *     not have
     */
    default CompletableFuture<Election> electPreferredLeader(String topic, int partition, long timeoutMillis) {
        return CompletableFuture.completedFuture(Election.NOT_NEEDED);
    }

    /** @return the replication factor of a topic created without one: 3, or fewer in a smaller cluster */
    int defaultReplicationFactor();

    /**
     * @param listener told (topic, partition) when a partition's high watermark moves or its leader changes, so
     *     that fetches waiting for data look again
     */
    void onChange(BiConsumer<String, Integer> listener);

    /** @return the cluster's security record of {@code kind}, as {@code ClusterView.securityRecord} describes it */
    default String securityRecord(String kind) {
        return "";
    }

    /** Changes a security record on every broker, as {@code ClusterView.alterSecurityRecord} describes it. */
    default CompletableFuture<Void> alterSecurityRecord(String kind, java.util.function.UnaryOperator<String> change) {
        return CompletableFuture.failedFuture(new UnsupportedOperationException("security records are not kept here"));
    }
}
