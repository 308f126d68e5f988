package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.Partition;
import io.sluice.broker.Partitions;
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
    /** The first Fetch version with CurrentLeader. */
    private static final short FETCH_HINTS = 12;
    /** The first Fetch version with NodeEndpoints: how to reach the leaders named. */
    private static final short FETCH_ENDPOINTS = 16;

    private LeaderHints() {
    }

    /** Names the leaders of the partitions a Produce answer refused as not led here. */
    static ProduceResponseData produce(ProduceResponseData response, short version, Partitions partitions,
                                       ClusterView cluster) {
        if (version < PRODUCE_HINTS) {
            return response;
        }
        Set<Integer> named = new HashSet<>();
        for (ProduceResponseData.TopicProduceResponse topic : response.responses()) {
            for (ProduceResponseData.PartitionProduceResponse partition : topic.partitionResponses()) {
                Partition.Leadership leader = elsewhere(partitions, cluster, topic.name(), partition.index(),
                        partition.errorCode());
                if (leader != null) {
                    partition.setCurrentLeader(new ProduceResponseData.LeaderIdAndEpoch()
                            .setLeaderId(leader.leader()).setLeaderEpoch(leader.epoch()));
                    named.add(leader.leader());
                }
            }
        }
        for (ClusterView.Node node : cluster.brokers()) {
            if (named.contains(node.id())) {
                response.nodeEndpoints().add(new ProduceResponseData.NodeEndpoint().setNodeId(node.id())
                        .setHost(node.host()).setPort(node.port()));
            }
        }
        return response;
    }

    /** Names the leaders of the partitions a Fetch answer refused as not led here. */
    static FetchResponseData fetch(FetchResponseData response, short version, Partitions partitions,
                                   ClusterView cluster) {
        if (version < FETCH_HINTS) {
            return response;
        }
        Set<Integer> named = new HashSet<>();
        for (FetchResponseData.FetchableTopicResponse topic : response.responses()) {
            for (FetchResponseData.PartitionData partition : topic.partitions()) {
                Partition.Leadership leader = elsewhere(partitions, cluster, topic.topic(),
                        partition.partitionIndex(), partition.errorCode());
                if (leader != null) {
                    partition.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch()
                            .setLeaderId(leader.leader()).setLeaderEpoch(leader.epoch()));
                    named.add(leader.leader());
                }
            }
        }
        if (version >= FETCH_ENDPOINTS) {
            for (ClusterView.Node node : cluster.brokers()) {
                if (named.contains(node.id())) {
                    response.nodeEndpoints().add(new FetchResponseData.NodeEndpoint().setNodeId(node.id())
                            .setHost(node.host()).setPort(node.port()));
                }
            }
        }
        return response;
    }

    /**
     * @return the partition's leadership if the answer refused it as not led here and another broker is known to
     *     lead it; not while its leader is in doubt here (it may have died, and a client would go there at once rather
     *     than back off and ask Metadata, which waits for the doubt to be settled)
     */
    private static Partition.Leadership elsewhere(Partitions partitions, ClusterView cluster, String topic,
                                                  int index, short error) {
        if (error != Errors.NOT_LEADER_OR_FOLLOWER.code() || topic == null) {
            return null;
        }
        Partition partition = partitions.partition(topic, index);
        if (partition == null || partition.leaderInDoubt()) {
            return null;
        }
        Partition.Leadership leadership = partition.leadership();
        return leadership.leader() >= 0 && leadership.leader() != cluster.self() && leadership.epoch() >= 0
                ? leadership : null;
    }
}
