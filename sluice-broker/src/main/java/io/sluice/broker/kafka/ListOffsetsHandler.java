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
 * debugging replica id. Thread-safe.
 */
final class ListOffsetsHandler {

    /** Kafka's special timestamps. */
    private static final long LATEST = -1;
    private static final long EARLIEST = -2;
    private static final long MAX_TIMESTAMP = -3;
    private static final long EARLIEST_LOCAL = -4;
    private static final long EARLIEST_PENDING_UPLOAD = -5;
    private static final long LATEST_TIERED = -6;

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

    ListOffsetsResponseData listOffsets(ListOffsetsRequestData request) {
        List<ListOffsetsTopicResponse> topics = new ArrayList<>();
        for (ListOffsetsRequestData.ListOffsetsTopic topic : request.topics()) {
            List<ListOffsetsPartitionResponse> answers = new ArrayList<>();
            for (ListOffsetsRequestData.ListOffsetsPartition wanted : topic.partitions()) {
                answers.add(listOffset(topic.name(), wanted.partitionIndex(), wanted.timestamp(),
                        request.replicaId() == DEBUGGING_REPLICA_ID, request.isolationLevel() == 1));
            }
            topics.add(new ListOffsetsTopicResponse().setName(topic.name()).setPartitions(answers));
        }
        return new ListOffsetsResponseData().setTopics(topics);
    }

    /**
     * @param anyReplica answer from this broker's own log if it holds a replica, leader or not, up to its end
     *     ({@link #DEBUGGING_REPLICA_ID}); else only as the leader, up to the high watermark
     */
    private ListOffsetsPartitionResponse listOffset(String topic, int index, long timestamp, boolean anyReplica,
                                                    boolean committedOnly) {
        ListOffsetsPartitionResponse response = new ListOffsetsPartitionResponse().setPartitionIndex(index)
                .setTimestamp(-1).setOffset(-1).setLeaderEpoch(-1);
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
            response.setLeaderEpoch(partition.leaderEpoch());
            if (timestamp == LATEST || timestamp == LATEST_TIERED) {
                return response.setOffset(end);
            }
            if (timestamp == EARLIEST || timestamp == EARLIEST_LOCAL || timestamp == EARLIEST_PENDING_UPLOAD) {
                return response.setOffset(start);
            }
            if (timestamp < 0 && timestamp != MAX_TIMESTAMP) {
                return response.setErrorCode(Errors.INVALID_REQUEST.code());
            }
            RecordTimes.Found found = timestamp == MAX_TIMESTAMP ? RecordTimes.largest(partition)
                    : RecordTimes.firstAtOrAfter(partition, timestamp);
            if (found != null && found.offset() >= end) {
                found = null; // past the high watermark: not committed, and perhaps cut by the next leader
            }
            return found == null ? response : response.setOffset(found.offset()).setTimestamp(found.timestamp());
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
