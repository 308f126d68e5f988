package io.sluice.broker.kafka;

import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderPartition;
import org.apache.kafka.common.message.OffsetForLeaderEpochRequestData.OffsetForLeaderTopic;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData.EpochEndOffset;
import org.apache.kafka.common.message.OffsetForLeaderEpochResponseData.OffsetForLeaderTopicResult;
import org.apache.kafka.common.protocol.Errors;

/**
 * OffsetForLeaderEpoch: where a leader epoch ends in a partition's log, which a consumer asks after its leader changed
 * (or after a seek that names an epoch) to check that the records it read are still there (KIP-320); a position past
 * the end of its epoch means the log was cut under it. Answered by the leader only, as Kafka's broker answers it.
 *
 * <h2>Where an epoch ends</h2>
 * Kafka keeps each partition's history of epochs, each with the offset it started at, in a file beside its log (the
 * leader-epoch checkpoint). This broker keeps none: every batch carries the epoch it was appended in
 * ({@link Partition#leaderEpochAt}), the epochs never decrease along the log, so the end of epoch {@code e} is the
 * first offset whose batch is of a later epoch, found by bisection over the log's offsets: a few dozen reads of a
 * batch's header at most (one per halving of the log's offsets), and none at all for the current epoch, which is what
 * consumers ask almost always. Nothing is kept, so nothing must be rebuilt at a start, cut with the log's tail, moved
 * with its start or written at a change of leader; the answer is read when asked, which is rarely (a change of leader,
 * a seek), and from the log, which cannot disagree with it.
 *
 * <p>The answer for requested epoch {@code e} on a leader in epoch {@code current}, as Kafka's
 * {@code LeaderEpochFileCache.endOffsetFor} gives it (the leader's history ends with its own epoch, starting where the
 * log ended when it was elected):
 * <ul>
 *   <li>{@code e} = -1, or above {@code current}: unknown (epoch -1, offset -1);
 *   <li>{@code e} = {@code current}: {@code current} and the log's end;
 *   <li>below: the first offset whose batch's epoch is above {@code e} (the log's end if none is), with the epoch of
 *   the batch before it, the largest epoch up to {@code e}; or, when no batch the log still holds is of {@code e} or an
 *   earlier one, {@code e} itself with the log's start (Kafka answers the requested epoch with the start of the first
 *   epoch it knows).
 * </ul>
 * Thread-safe.
 */
final class OffsetForLeaderEpochHandler {

    /** The epoch and the offset Kafka answers when it knows of no such epoch. */
    private static final int UNDEFINED_EPOCH = -1;
    private static final long UNDEFINED_OFFSET = -1;

    private final Partitions partitions;

    OffsetForLeaderEpochHandler(Partitions partitions) {
        this.partitions = partitions;
    }

    /** The end of an epoch: the largest epoch up to the one asked for, and the offset where it ends. */
    record EpochEnd(int epoch, long endOffset) {
        static final EpochEnd UNDEFINED = new EpochEnd(UNDEFINED_EPOCH, UNDEFINED_OFFSET);
    }

    OffsetForLeaderEpochResponseData handle(OffsetForLeaderEpochRequestData request) {
        OffsetForLeaderEpochResponseData response = new OffsetForLeaderEpochResponseData();
        for (OffsetForLeaderTopic topic : request.topics()) {
            // One answer per topic name, as Kafka's: a name asked twice gathers both asks' partitions.
            OffsetForLeaderTopicResult answer = response.topics().find(topic.topic());
            if (answer == null) {
                answer = new OffsetForLeaderTopicResult().setTopic(topic.topic());
                response.topics().add(answer);
            }
            for (OffsetForLeaderPartition wanted : topic.partitions()) {
                answer.partitions().add(endOffset(topic.topic(), wanted));
            }
        }
        return response;
    }

    /** Kafka's order: the partition is known, the client's epoch is this broker's, this broker leads it. */
    private EpochEndOffset endOffset(String topic, OffsetForLeaderPartition wanted) {
        EpochEndOffset answer = new EpochEndOffset().setPartition(wanted.partition())
                .setLeaderEpoch(UNDEFINED_EPOCH).setEndOffset(UNDEFINED_OFFSET);
        Partition partition = partitions.partition(topic, wanted.partition());
        if (partition == null) {
            return answer.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code());
        }
        if (!partition.hostedHere()) {
            return answer.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        Errors fenced = checkCurrentEpoch(wanted.currentLeaderEpoch(), partition.leaderEpoch());
        if (fenced != Errors.NONE) {
            return answer.setErrorCode(fenced.code());
        }
        if (!partition.leads()) {
            return answer.setErrorCode(Errors.NOT_LEADER_OR_FOLLOWER.code());
        }
        try {
            EpochEnd end = endOf(partition, wanted.leaderEpoch(), partition.leaderEpoch());
            return answer.setLeaderEpoch(end.epoch()).setEndOffset(end.endOffset());
        } catch (RuntimeException e) {
            return answer.setErrorCode(ListOffsetsHandler.readError(e).code());
        }
    }

    /**
     * The fencing Kafka applies to a request that names the epoch its sender knows (-1: none named).
     *
     * @return FENCED_LEADER_EPOCH if the sender's epoch is older than this broker's, UNKNOWN_LEADER_EPOCH if newer
     *     (this broker has not heard of the election yet), else NONE
     */
    static Errors checkCurrentEpoch(int sendersEpoch, int ownEpoch) {
        if (sendersEpoch == UNDEFINED_EPOCH || sendersEpoch == ownEpoch) {
            return Errors.NONE;
        }
        return sendersEpoch < ownEpoch ? Errors.FENCED_LEADER_EPOCH : Errors.UNKNOWN_LEADER_EPOCH;
    }

    /**
     * @param requested the epoch asked for
     * @param current the leader's epoch, the last of its history
     * @return where {@code requested} ends in {@code partition}'s log, as the class comment says
     */
    static EpochEnd endOf(Partition partition, int requested, int current) {
        if (requested == UNDEFINED_EPOCH || requested > current) {
            return EpochEnd.UNDEFINED;
        }
        long end = partition.logEndOffset();
        if (requested == current) {
            return new EpochEnd(current, end);
        }
        long start = partition.logStartOffset();
        long boundary = firstAfter(partition, requested, start, end);
        int before = boundary > start ? partition.leaderEpochAt(boundary - 1) : UNDEFINED_EPOCH;
        return before < 0 ? new EpochEnd(requested, boundary) : new EpochEnd(before, boundary);
    }

    /**
     * @return the first offset in [{@code start}, {@code end}) whose batch is of an epoch above {@code epoch}, or
     *     {@code end} if none is: a bisection, since the epochs never decrease along the log (an offset the log no
     *     longer holds, which retention took meanwhile, counts as an earlier epoch)
     */
    private static long firstAfter(Partition partition, int epoch, long start, long end) {
        long low = start;
        long high = end;
        while (low < high) {
            long middle = low + (high - low) / 2;
            if (partition.leaderEpochAt(middle) > epoch) {
                high = middle;
            } else {
                low = middle + 1;
            }
        }
        return low;
    }
}
