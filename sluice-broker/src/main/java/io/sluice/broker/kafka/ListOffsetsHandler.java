package io.sluice.broker.kafka;

import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import io.sluice.store.TopicDeletedException;
import java.util.ArrayList;
import java.util.List;
import org.apache.kafka.common.message.ListOffsetsRequestData;
import org.apache.kafka.common.message.ListOffsetsResponseData;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsPartitionResponse;
import org.apache.kafka.common.message.ListOffsetsResponseData.ListOffsetsTopicResponse;
import org.apache.kafka.common.protocol.Errors;

/**
 * ListOffsets: a partition's earliest and latest offsets, and offsets by time (on the records' own timestamps,
 * {@link RecordTimes}), from its leader up to the high watermark; from any replica, up to its own log's end, for the
 * debugging replica id. Each offset found comes with the leader epoch of the batch holding it
 * ({@link Partition#leaderEpochAt}), the latest with the leader's own, as Kafka answers them.
 *
 * <p>The special timestamps are taken from the version that introduced them on, as Kafka 4.3.1 takes them: max
 * timestamp from v7, earliest local from v8, latest tiered from v9, earliest pending upload from v11; an earlier
 * version naming one, or any other negative timestamp, is answered UNSUPPORTED_VERSION before the partition is looked
 * at. Nothing is tiered here (remote storage is refused, as a broker without it refuses it): earliest local is the
 * earliest, and latest tiered and earliest pending upload are answered as Kafka answers them on a topic without remote
 * storage, with no offset (-1), no timestamp and no epoch, and no error. Thread-safe.
 */
final class ListOffsetsHandler {

    /** Kafka's special timestamps (kafka-clients' {@code ListOffsetsRequest}: latest tiered is -5, KIP-1005). */
    private static final long LATEST = -1;
    private static final long EARLIEST = -2;
    private static final long MAX_TIMESTAMP = -3;
    private static final long EARLIEST_LOCAL = -4;
    private static final long LATEST_TIERED = -5;
    private static final long EARLIEST_PENDING_UPLOAD = -6;

    /**
     * The replica id an operator's tool sends to read any replica's own log (Kafka's DEBUGGING_REPLICA_ID): served by
     * every replica, up to its own log's end rather than the high watermark, as Kafka serves it.
     */
    private static final int DEBUGGING_REPLICA_ID = -2;

    private final Partitions partitions;

    private final ProducerStates producerStates;

    ListOffsetsHandler(Partitions partitions, ProducerStates producerStates) {
        this.partitions = partitions;
        this.producerStates = producerStates;
    }

    ListOffsetsResponseData listOffsets(ListOffsetsRequestData request, short version) {
        List<ListOffsetsTopicResponse> topics = new ArrayList<>();
        for (ListOffsetsRequestData.ListOffsetsTopic topic : request.topics()) {
            List<ListOffsetsPartitionResponse> answers = new ArrayList<>();
            for (ListOffsetsRequestData.ListOffsetsPartition wanted : topic.partitions()) {
                ListOffsetsPartitionResponse answer = takes(wanted.timestamp(), version)
                        ? listOffset(topic.name(), wanted.partitionIndex(), wanted.timestamp(),
                                request.replicaId() == DEBUGGING_REPLICA_ID, request.isolationLevel() == 1)
                        : unanswered(wanted.partitionIndex()).setErrorCode(Errors.UNSUPPORTED_VERSION.code());
                // The leader epoch came with v4: an earlier answer cannot carry one (it would not encode).
                answers.add(version >= 4 ? answer : answer.setLeaderEpoch(-1));
            }
            topics.add(new ListOffsetsTopicResponse().setName(topic.name()).setPartitions(answers));
        }
        return new ListOffsetsResponseData().setTopics(topics);
    }

    /** @return whether {@code version} takes {@code timestamp}: a time, or a special timestamp it knows */
    private static boolean takes(long timestamp, short version) {
        if (timestamp >= 0 || timestamp == LATEST || timestamp == EARLIEST) {
            return true;
        }
        if (timestamp == MAX_TIMESTAMP) {
            return version >= 7;
        }
        if (timestamp == EARLIEST_LOCAL) {
            return version >= 8;
        }
        if (timestamp == LATEST_TIERED) {
            return version >= 9;
        }
        return timestamp == EARLIEST_PENDING_UPLOAD && version >= 11;
    }

    /** @return an answer with no offset, no timestamp and no epoch */
    private static ListOffsetsPartitionResponse unanswered(int index) {
        return new ListOffsetsPartitionResponse().setPartitionIndex(index).setTimestamp(-1).setOffset(-1)
                .setLeaderEpoch(-1);
    }

    /**
     * @param anyReplica answer from this broker's own log if it holds a replica, leader or not, up to its end
     *     ({@link #DEBUGGING_REPLICA_ID}); else only as the leader, up to the high watermark
     */
    private ListOffsetsPartitionResponse listOffset(String topic, int index, long timestamp, boolean anyReplica,
                                                    boolean committedOnly) {
        ListOffsetsPartitionResponse response = unanswered(index);
        Partition partition = partitions.partition(topic, index);
        if (partition == null) {
            return response.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
        }
        boolean ownLog = anyReplica && partition.hostedHere();
        if (!ownLog && !partition.leads()) {
            return response.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        try {
            long start = partition.logStartOffset();
            long end = ownLog ? partition.logEndOffset()
                    : Math.min(partition.logEndOffset(), partition.highWatermark());
            if (committedOnly && !ownLog) {
                // read_committed: up to the last stable offset, below every open transaction.
                end = producerStates.lastStable(partition, end);
            }
            if (timestamp == LATEST) {
                return response.setOffset(end).setLeaderEpoch(partition.leaderEpoch());
            }
            if (timestamp == LATEST_TIERED || timestamp == EARLIEST_PENDING_UPLOAD) {
                return response; // nothing is tiered, nor waits to be
            }
            if (timestamp == EARLIEST || timestamp == EARLIEST_LOCAL) {
                // The epoch of the first batch; an empty log's is the leader's, which its next batch will carry.
                int epoch = start < partition.logEndOffset() ? partition.leaderEpochAt(start) : -1;
                return response.setOffset(start).setLeaderEpoch(epoch >= 0 ? epoch : partition.leaderEpoch());
            }
            RecordTimes.Found found = timestamp == MAX_TIMESTAMP ? RecordTimes.largest(partition)
                    : RecordTimes.firstAtOrAfter(partition, timestamp);
            if (found == null || found.offset() >= end) {
                return response; // none, or past the high watermark: not committed, and perhaps cut by the next leader
            }
            return response.setOffset(found.offset()).setTimestamp(found.timestamp())
                    .setLeaderEpoch(partition.leaderEpochAt(found.offset()));
        } catch (RuntimeException e) {
            return response.setErrorCode(readError(e).code());
        }
    }

    /**
     * @return the error for a read of a partition that failed: UNKNOWN_TOPIC_OR_PARTITION if its topic was deleted
     *     under the read (the client refreshes its metadata), else KAFKA_STORAGE_ERROR
     */
    static Errors readError(RuntimeException e) {
        return e instanceof TopicDeletedException ? Errors.UNKNOWN_TOPIC_OR_PARTITION : Errors.KAFKA_STORAGE_ERROR;
    }
}
