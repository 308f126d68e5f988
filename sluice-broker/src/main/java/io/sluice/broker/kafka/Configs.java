package io.sluice.broker.kafka;

import io.sluice.store.StoreConfig;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResourceResult;
import org.apache.kafka.common.protocol.Errors;

/**
 * DescribeConfigs: the settings a topic or the broker has, under Kafka's names, derived from the store's settings
 * and the broker's (read-only: AlterConfigs is not served). Enough for Kafka's admin tools, which describe a
 * topic's configs with the topic.
 */
final class Configs {

    private static final byte TOPIC = 2;
    private static final byte BROKER = 4;
    private static final byte BROKER_LOGGER = 8;
    /** Kafka's ConfigSource: set by the broker's static configuration. */
    private static final byte STATIC_BROKER_CONFIG = 4;
    /** Kafka's ConfigType values used here. */
    private static final byte STRING = 2;
    private static final byte INT = 3;
    private static final byte LONG = 5;
    private static final byte BOOLEAN = 1;

    private final StoreConfig store;
    private final KafkaApis.Settings settings;
    private final java.util.function.ToIntFunction<String> partitions;

    /** @param partitions a topic's partition count, 0 when it does not exist */
    Configs(StoreConfig store, KafkaApis.Settings settings, java.util.function.ToIntFunction<String> partitions) {
        this.store = store;
        this.settings = settings;
        this.partitions = partitions;
    }

    private record Value(String value, byte type) {
    }

    private Map<String, Value> topic() {
        Map<String, Value> configs = new LinkedHashMap<>();
        long retentionMs = store.retention().retentionMillis();
        long retentionBytes = store.retention().retentionBytes();
        configs.put("cleanup.policy", new Value("delete", STRING));
        configs.put("compression.type", new Value("producer", STRING));
        configs.put("max.message.bytes", new Value(String.valueOf(store.maxMessageBytes()), INT));
        configs.put("message.timestamp.type", new Value("CreateTime", STRING));
        configs.put("min.insync.replicas", new Value("1", INT));
        configs.put("retention.bytes", new Value(retentionBytes == Long.MAX_VALUE ? "-1" : String.valueOf(retentionBytes), LONG));
        configs.put("retention.ms", new Value(retentionMs == Long.MAX_VALUE ? "-1" : String.valueOf(retentionMs), LONG));
        configs.put("segment.bytes", new Value(String.valueOf(store.segmentSizeBytes()), INT));
        return configs;
    }

    private Map<String, Value> broker() {
        Map<String, Value> configs = new LinkedHashMap<>();
        configs.put("auto.create.topics.enable", new Value(String.valueOf(settings.autoCreateTopics()), BOOLEAN));
        configs.put("broker.id", new Value(String.valueOf(settings.nodeId()), INT));
        configs.put("message.max.bytes", new Value(String.valueOf(store.maxMessageBytes()), INT));
        configs.put("node.id", new Value(String.valueOf(settings.nodeId()), INT));
        configs.put("num.partitions", new Value(String.valueOf(settings.defaultPartitions()), INT));
        configs.put("offsets.retention.minutes", new Value(String.valueOf(settings.offsetsRetentionMinutes()), INT));
        configs.putAll(topicDefaultsAsBroker());
        return configs;
    }

    private Map<String, Value> topicDefaultsAsBroker() {
        Map<String, Value> configs = new LinkedHashMap<>();
        Map<String, Value> topic = topic();
        configs.put("log.retention.ms", topic.get("retention.ms"));
        configs.put("log.retention.bytes", topic.get("retention.bytes"));
        configs.put("log.segment.bytes", topic.get("segment.bytes"));
        return configs;
    }

    DescribeConfigsResponseData describe(DescribeConfigsRequestData request) {
        List<DescribeConfigsResponseData.DescribeConfigsResult> results = new ArrayList<>();
        for (DescribeConfigsRequestData.DescribeConfigsResource resource : request.resources()) {
            DescribeConfigsResponseData.DescribeConfigsResult result = new DescribeConfigsResponseData
                    .DescribeConfigsResult().setResourceType(resource.resourceType())
                    .setResourceName(resource.resourceName()).setConfigs(new ArrayList<>());
            Map<String, Value> configs;
            switch (resource.resourceType()) {
                case TOPIC -> {
                    if (partitions.applyAsInt(resource.resourceName()) == 0) {
                        results.add(result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                                .setErrorMessage("no topic " + resource.resourceName()));
                        continue;
                    }
                    configs = topic();
                }
                case BROKER -> {
                    if (!resource.resourceName().isEmpty()
                            && !resource.resourceName().equals(String.valueOf(settings.nodeId()))) {
                        results.add(result.setErrorCode(Errors.INVALID_REQUEST.code())
                                .setErrorMessage("this is broker " + settings.nodeId()));
                        continue;
                    }
                    configs = broker();
                }
                case BROKER_LOGGER -> configs = Map.of();
                default -> {
                    results.add(result.setErrorCode(Errors.INVALID_REQUEST.code())
                            .setErrorMessage("resource type " + resource.resourceType() + " has no configs here"));
                    continue;
                }
            }
            configs.forEach((name, value) -> {
                if (resource.configurationKeys() == null || resource.configurationKeys().contains(name)) {
                    result.configs().add(new DescribeConfigsResourceResult().setName(name).setValue(value.value())
                            .setReadOnly(true).setConfigSource(STATIC_BROKER_CONFIG).setIsSensitive(false)
                            .setSynonyms(new ArrayList<>()).setConfigType(value.type()));
                }
            });
            results.add(result);
        }
        return new DescribeConfigsResponseData().setResults(results);
    }
}
