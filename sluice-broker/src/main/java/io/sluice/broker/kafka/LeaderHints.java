package io.sluice.broker.kafka;

import io.sluice.broker.Replication;
import java.util.HashSet;
import java.util.Set;
import org.apache.kafka.common.message.FetchResponseData;
import org.apache.kafka.common.message.ProduceResponseData;
import org.apache.kafka.common.protocol.Errors;

/**
 * KIP-951: a NOT_LEADER_OR_FOLLOWER answer names the partition's leader as this broker knows it, with its epoch (and,
 * in Produce, how to reach it), so a client whose leader moved while this broker stayed up sends its retry there
 * without a Metadata round trip first. A client takes the hint only if its epoch is newer than the one it holds.
 */
final class LeaderHints {

    /** The first Produce version with CurrentLeader and NodeEndpoints. */
    private static final short PRODUCE_HINTS = 10;
    /** The first Fetch version with CurrentLeader (NodeEndpoints come with 16, above the versions served). */
    private static final short FETCH_HINTS = 12;

    private LeaderHints() {
    }

    /** Names the leaders of the partitions a Produce answer refused as not led here. */
    static ProduceResponseData produce(ProduceResponseData response, short version, Replication replication) {
        if (replication == null || version < PRODUCE_HINTS) {
            return response;
        }
        Set<Integer> named = new HashSet<>();
        for (ProduceResponseData.TopicProduceResponse topic : response.responses()) {
            for (ProduceResponseData.PartitionProduceResponse partition : topic.partitionResponses()) {
                Replication.PartitionView leader = elsewhere(replication, topic.name(), partition.index(),
                        partition.errorCode());
                if (leader != null) {
                    partition.setCurrentLeader(new ProduceResponseData.LeaderIdAndEpoch()
                            .setLeaderId(leader.leader()).setLeaderEpoch(leader.leaderEpoch()));
                    named.add(leader.leader());
                }
            }
        }
        for (Replication.Node node : replication.brokers()) {
            if (named.contains(node.id())) {
                response.nodeEndpoints().add(new ProduceResponseData.NodeEndpoint().setNodeId(node.id())
                        .setHost(node.host()).setPort(node.port()));
            }
        }
        return response;
    }

    /** Names the leaders of the partitions a Fetch answer refused as not led here. */
    static FetchResponseData fetch(FetchResponseData response, short version, Replication replication) {
        if (replication == null || version < FETCH_HINTS) {
            return response;
        }
        for (FetchResponseData.FetchableTopicResponse topic : response.responses()) {
            for (FetchResponseData.PartitionData partition : topic.partitions()) {
                Replication.PartitionView leader = elsewhere(replication, topic.topic(), partition.partitionIndex(),
                        partition.errorCode());
                if (leader != null) {
                    partition.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch()
                            .setLeaderId(leader.leader()).setLeaderEpoch(leader.leaderEpoch()));
                }
            }
        }
        return response;
    }

    /**
     * @return the partition's view if the answer refused it as not led here and another broker is known to lead it;
     *     not while its leader is in doubt here (it may have died, and a client would go there at once rather than
     *     back off and ask Metadata, which waits for the doubt to be settled)
     */
    private static Replication.PartitionView elsewhere(Replication replication, String topic, int partition,
                                                      short error) {
        if (error != Errors.NOT_LEADER_OR_FOLLOWER.code() || topic == null
                || replication.leaderInDoubt(topic, partition)) {
            return null;
        }
        Replication.PartitionView view = replication.partition(topic, partition);
        return view != null && view.leader() >= 0 && view.leader() != replication.self() && view.leaderEpoch() >= 0
                ? view : null;
    }
}
