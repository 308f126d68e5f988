package io.sluice.broker.kafka;

import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.kafka.common.message.DeleteRecordsRequestData;
import org.apache.kafka.common.message.DeleteRecordsResponseData;
import org.apache.kafka.common.message.DeleteRecordsResponseData.DeleteRecordsPartitionResult;
import org.apache.kafka.common.message.DeleteRecordsResponseData.DeleteRecordsTopicResult;
import org.apache.kafka.common.protocol.Errors;

/**
 * DeleteRecords: each partition's log start offset raised to the offset asked for (-1: the high watermark), on the
 * partition's leader, as Kafka's broker does; answered with the partition's low watermark once its leader's replica
 * has it (durably, and in a cluster once a majority applied it). An offset past the high watermark is
 * OFFSET_OUT_OF_RANGE, a partition led elsewhere NOT_LEADER_OR_FOLLOWER, one that does not exist
 * UNKNOWN_TOPIC_OR_PARTITION; each partition is answered on its own.
 */
final class DeleteRecordsHandler {

    /** Kafka's offset for "the high watermark" in a DeleteRecords request. */
    private static final long HIGH_WATERMARK = -1;

    private final Partitions partitions;

    DeleteRecordsHandler(Partitions partitions) {
        this.partitions = partitions;
    }

    CompletableFuture<DeleteRecordsResponseData> handle(DeleteRecordsRequestData request) {
        List<CompletableFuture<?>> pending = new ArrayList<>();
        DeleteRecordsResponseData.DeleteRecordsTopicResultCollection topics =
                new DeleteRecordsResponseData.DeleteRecordsTopicResultCollection();
        long timeoutMs = Math.max(1, request.timeoutMs());
        for (DeleteRecordsRequestData.DeleteRecordsTopic topic : request.topics()) {
            DeleteRecordsTopicResult topicResult = new DeleteRecordsTopicResult().setName(topic.name());
            topics.add(topicResult);
            for (DeleteRecordsRequestData.DeleteRecordsPartition wanted : topic.partitions()) {
                DeleteRecordsPartitionResult result = new DeleteRecordsPartitionResult()
                        .setPartitionIndex(wanted.partitionIndex()).setLowWatermark(-1);
                topicResult.partitions().add(result);
                CompletableFuture<?> done = delete(topic.name(), wanted, result, timeoutMs);
                if (done != null) {
                    pending.add(done);
                }
            }
        }
        DeleteRecordsResponseData response = new DeleteRecordsResponseData().setTopics(topics);
        return CompletableFuture.allOf(pending.toArray(new CompletableFuture<?>[0])).thenApply(ignored -> response);
    }

    /** @return what completes the partition's answer, or null if it is answered already */
    private CompletableFuture<?> delete(String topic, DeleteRecordsRequestData.DeleteRecordsPartition wanted,
                                        DeleteRecordsPartitionResult result, long timeoutMs) {
        Partition partition = partitions.partition(topic, wanted.partitionIndex());
        if (partition == null) {
            result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
            return null;
        }
        if (!partition.leads()) {
            result.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
            return null;
        }
        long highWatermark = partition.highWatermark();
        long offset = wanted.offset() == HIGH_WATERMARK ? highWatermark : wanted.offset();
        if (offset < 0 || offset > highWatermark) {
            result.setErrorCode(Errors.OFFSET_OUT_OF_RANGE.code());
            return null;
        }
        return partition.deleteRecords(offset).orTimeout(timeoutMs, TimeUnit.MILLISECONDS)
                .handle((lowWatermark, error) -> {
                    if (error == null) {
                        result.setLowWatermark(lowWatermark);
                    } else {
                        Throwable cause = error instanceof CompletionException && error.getCause() != null
                                ? error.getCause() : error;
                        result.setErrorCode((cause instanceof Partition.NotLeaderException
                                ? Errors.NOT_LEADER_OR_FOLLOWER : cause instanceof TimeoutException
                                ? Errors.REQUEST_TIMED_OUT : Errors.KAFKA_STORAGE_ERROR).code());
                    }
                    return null;
                });
    }
}
