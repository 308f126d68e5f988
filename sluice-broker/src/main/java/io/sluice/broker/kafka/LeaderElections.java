package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.message.ElectLeadersRequestData;
import org.apache.kafka.common.message.ElectLeadersResponseData;
import org.apache.kafka.common.message.ElectLeadersResponseData.PartitionResult;
import org.apache.kafka.common.message.ElectLeadersResponseData.ReplicaElectionResult;
import org.apache.kafka.common.protocol.Errors;

/**
 * ElectLeaders ({@code kafka-leader-election}, {@code Admin.electLeaders}). A preferred election asks each partition's
 * leader to hand leadership to its preferred replica, the first of its replicas ({@link ClusterView#electPreferredLeader}),
 * and answers ELECTION_NOT_NEEDED where that replica leads already, PREFERRED_LEADER_NOT_AVAILABLE where it cannot
 * take over now. An unclean election, which Kafka uses to let an out-of-sync replica lead, has no counterpart under
 * Raft, where only a replica holding every committed entry can be elected: it is not needed where a leader is known,
 * and refused with ELIGIBLE_LEADERS_NOT_AVAILABLE where none is. A broker alone is the preferred (and only)
 * replica of every partition it has: its cluster answers that no election is needed.
 *
 * <p>The partitions' elections run at once, and the answer comes when they have ended, off the connection's thread;
 * a partition still undecided at three quarters of the request's timeout (so that the answer reaches the client before
 * it gives up) is answered REQUEST_TIMED_OUT. Thread-safe.
 */
final class LeaderElections {

    private static final byte PREFERRED = 0;
    private static final byte UNCLEAN = 1;

    private final Partitions partitions;
    private final ClusterView cluster;

    LeaderElections(Partitions partitions, ClusterView cluster) {
        this.partitions = partitions;
        this.cluster = cluster;
    }

    /**
     * @return completes with the answer to {@code request}: one result per partition named, or per partition of every
     *     topic
     */
    CompletableFuture<ElectLeadersResponseData> elect(ElectLeadersRequestData request, short version) {
        byte type = version == 0 ? PREFERRED : request.electionType();
        ElectLeadersResponseData response = new ElectLeadersResponseData();
        if (type != PREFERRED && type != UNCLEAN) {
            return CompletableFuture.completedFuture(response.setErrorCode(Errors.INVALID_REQUEST.code()));
        }
        Map<String, List<Integer>> wanted = new LinkedHashMap<>();
        if (request.topicPartitions() == null) {
            partitions.topics().forEach((topic, count) -> {
                List<Integer> all = new ArrayList<>(count);
                for (int p = 0; p < count; p++) {
                    all.add(p);
                }
                wanted.put(topic, all);
            });
        } else {
            for (ElectLeadersRequestData.TopicPartitions topic : request.topicPartitions()) {
                wanted.computeIfAbsent(topic.topic(), name -> new ArrayList<>()).addAll(topic.partitions());
            }
        }
        long waitMillis = Math.max(0, request.timeoutMs()) * 3L / 4;
        Map<String, List<CompletableFuture<PartitionResult>>> started = new LinkedHashMap<>();
        wanted.forEach((topic, indexes) -> {
            int count = partitions.count(topic);
            List<CompletableFuture<PartitionResult>> results = started.computeIfAbsent(topic,
                    name -> new ArrayList<>());
            for (int partition : indexes) {
                CompletableFuture<PartitionResult> result = partition < 0 || partition >= count
                        ? CompletableFuture.completedFuture(result(partition, Errors.UNKNOWN_TOPIC_OR_PARTITION,
                                "no partition " + partition + " of topic " + topic))
                        : start(type, topic, partition, request.timeoutMs());
                results.add(result.exceptionally(failure -> result(partition, Errors.UNKNOWN_SERVER_ERROR,
                        String.valueOf(failure))).completeOnTimeout(result(partition, Errors.REQUEST_TIMED_OUT,
                        "the election did not end within the request's timeout"), waitMillis,
                        TimeUnit.MILLISECONDS));
            }
        });
        List<CompletableFuture<PartitionResult>> all = started.values().stream().flatMap(List::stream).toList();
        return CompletableFuture.allOf(all.toArray(CompletableFuture[]::new)).thenApply(done -> {
            started.forEach((topic, results) -> {
                ReplicaElectionResult result = new ReplicaElectionResult().setTopic(topic);
                results.forEach(one -> result.partitionResult().add(one.join()));
                response.replicaElectionResults().add(result);
            });
            return response;
        });
    }

    private CompletableFuture<PartitionResult> start(byte type, String topic, int partition, int timeoutMs) {
        if (type == UNCLEAN) {
            Partition known = partitions.partition(topic, partition);
            return CompletableFuture.completedFuture(known != null && known.leadership().leader() >= 0
                    ? result(partition, Errors.ELECTION_NOT_NEEDED, null)
                    : result(partition, Errors.ELIGIBLE_LEADERS_NOT_AVAILABLE, "no leader known; under Raft only a"
                            + " replica holding every committed entry can be elected, and the replicas elect one"
                            + " themselves once a majority of them is reachable"));
        }
        return cluster.electPreferredLeader(topic, partition, timeoutMs).handle((election, failure) -> {
            if (failure != null) {
                Throwable cause = failure.getCause() != null ? failure.getCause() : failure;
                return cause instanceof IllegalArgumentException
                        ? result(partition, Errors.UNKNOWN_TOPIC_OR_PARTITION, cause.getMessage())
                        : result(partition, Errors.PREFERRED_LEADER_NOT_AVAILABLE, String.valueOf(cause.getMessage()));
            }
            return switch (election) {
                case ELECTED -> result(partition, Errors.NONE, null);
                case NOT_NEEDED -> result(partition, Errors.ELECTION_NOT_NEEDED, null);
                case PREFERRED_NOT_AVAILABLE -> result(partition, Errors.PREFERRED_LEADER_NOT_AVAILABLE,
                        "the preferred replica could not take over now (behind the leader, unreachable, or no"
                                + " leader to hand over)");
            };
        });
    }

    private static PartitionResult result(int partition, Errors error, String message) {
        return new PartitionResult().setPartitionId(partition).setErrorCode(error.code())
                .setErrorMessage(error == Errors.NONE ? null : message != null ? message : error.message());
    }
}
