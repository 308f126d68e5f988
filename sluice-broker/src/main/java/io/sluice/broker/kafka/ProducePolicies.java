package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Each topic's {@link TopicConfigs.Produce}, parsed once per change of its configs: a produce looks its topic's up
 * without parsing (the cluster's configs of a topic are the same map until they change). Thread-safe.
 */
final class ProducePolicies {

    private record Parsed(Map<String, String> configs, TopicConfigs.Produce produce) {
    }

    private final TopicConfigs topicConfigs;
    private final ClusterView cluster;
    private final Map<String, Parsed> parsed = new ConcurrentHashMap<>();

    ProducePolicies(TopicConfigs topicConfigs, ClusterView cluster) {
        this.topicConfigs = topicConfigs;
        this.cluster = cluster;
    }

    /** @return what the topic's configs ask of a produce now */
    TopicConfigs.Produce of(String topic) {
        Map<String, String> configs = cluster.topicConfigs(topic);
        Parsed known = parsed.get(topic);
        if (known != null && known.configs() == configs) {
            return known.produce();
        }
        TopicConfigs.Produce produce = topicConfigs.produce(configs);
        parsed.put(topic, new Parsed(configs, produce));
        return produce;
    }
}
