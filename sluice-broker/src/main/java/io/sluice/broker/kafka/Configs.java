package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.store.StoreConfig;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.function.Function;
import java.util.function.ToIntFunction;
import java.util.function.UnaryOperator;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.errors.InvalidConfigurationException;
import org.apache.kafka.common.errors.InvalidRequestException;
import org.apache.kafka.common.message.AlterConfigsRequestData;
import org.apache.kafka.common.message.AlterConfigsResponseData;
import org.apache.kafka.common.message.DescribeConfigsRequestData;
import org.apache.kafka.common.message.DescribeConfigsResponseData;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsResourceResult;
import org.apache.kafka.common.message.DescribeConfigsResponseData.DescribeConfigsSynonym;
import org.apache.kafka.common.message.IncrementalAlterConfigsRequestData;
import org.apache.kafka.common.message.IncrementalAlterConfigsResponseData;
import org.apache.kafka.common.protocol.Errors;

/**
 * The config APIs: DescribeConfigs of topics (every topic config, with where its value comes from and its synonyms,
 * as Kafka's broker answers) and of the broker (its settings under Kafka's names); IncrementalAlterConfigs and
 * AlterConfigs of topics, checked as Kafka checks them ({@link TopicConfigs}) and carried through the
 * {@link ClusterView} (every broker keeps them). The broker's own settings are taken at start only: changing them is
 * refused with the reason.
 */
final class Configs {

    private static final byte TOPIC = 2;
    private static final byte BROKER = 4;
    private static final byte BROKER_LOGGER = 8;
    private static final byte CLIENT_METRICS = 16;
    private static final byte GROUP = 32;
    /** Kafka's ConfigType values. */
    private static final byte BOOLEAN = 1;
    private static final byte STRING = 2;
    private static final byte INT = 3;
    private static final byte LONG = 5;
    /** IncrementalAlterConfigs' operations. */
    private static final byte SET = 0;
    private static final byte DELETE = 1;
    private static final byte APPEND = 2;
    private static final byte SUBTRACT = 3;
    /** How long an alter waits for the cluster when the request gives no timeout. */
    private static final long ALTER_TIMEOUT_MILLIS = 30_000;

    private final TopicConfigs topicConfigs;
    private final ClusterView cluster;
    private final StoreConfig store;
    private final KafkaApis.Settings settings;
    private final ToIntFunction<String> partitions;

    /** @param partitions a topic's partition count, 0 when it does not exist */
    Configs(TopicConfigs topicConfigs, ClusterView cluster, StoreConfig store, KafkaApis.Settings settings,
            ToIntFunction<String> partitions) {
        this.topicConfigs = topicConfigs;
        this.cluster = cluster;
        this.store = store;
        this.settings = settings;
        this.partitions = partitions;
    }

    /**
     * @return the broker's values of the topic configs it has a setting of its own for: retention, the largest batch,
     *     the segment size
     */
    static Map<String, TopicConfigs.BrokerValue> brokerValues(StoreConfig store) {
        long retentionMs = store.retention().retentionMillis();
        long retentionBytes = store.retention().retentionBytes();
        Map<String, TopicConfigs.BrokerValue> values = new LinkedHashMap<>();
        values.put("retention.ms", new TopicConfigs.BrokerValue(retentionMs == Long.MAX_VALUE ? "-1"
                : String.valueOf(retentionMs), TopicConfigs.STATIC_BROKER_CONFIG));
        values.put("retention.bytes", new TopicConfigs.BrokerValue(retentionBytes == Long.MAX_VALUE ? "-1"
                : String.valueOf(retentionBytes), TopicConfigs.STATIC_BROKER_CONFIG));
        values.put("max.message.bytes", new TopicConfigs.BrokerValue(String.valueOf(store.maxMessageBytes()),
                TopicConfigs.STATIC_BROKER_CONFIG));
        values.put("segment.bytes", new TopicConfigs.BrokerValue(String.valueOf(store.segmentSizeBytes()),
                TopicConfigs.STATIC_BROKER_CONFIG));
        return values;
    }

    private record Value(String value, byte type) {
    }

    private Map<String, Value> broker() {
        Map<String, Value> configs = new LinkedHashMap<>();
        configs.put("auto.create.topics.enable", new Value(String.valueOf(settings.autoCreateTopics()), BOOLEAN));
        configs.put("broker.id", new Value(String.valueOf(settings.nodeId()), INT));
        configs.put("message.max.bytes", new Value(String.valueOf(store.maxMessageBytes()), INT));
        configs.put("node.id", new Value(String.valueOf(settings.nodeId()), INT));
        configs.put("num.partitions", new Value(String.valueOf(settings.defaultPartitions()), INT));
        configs.put("offsets.retention.minutes", new Value(String.valueOf(settings.offsetsRetentionMinutes()), INT));
        Map<String, String> none = Map.of();
        configs.put("log.retention.ms", new Value(topicConfigs.value(none, "retention.ms"), LONG));
        configs.put("log.retention.bytes", new Value(topicConfigs.value(none, "retention.bytes"), LONG));
        configs.put("log.segment.bytes", new Value(topicConfigs.value(none, "segment.bytes"), INT));
        configs.put("log.cleanup.policy", new Value(topicConfigs.value(none, "cleanup.policy"), STRING));
        return configs;
    }

    DescribeConfigsResponseData describe(DescribeConfigsRequestData request) {
        List<DescribeConfigsResponseData.DescribeConfigsResult> results = new ArrayList<>();
        for (DescribeConfigsRequestData.DescribeConfigsResource resource : request.resources()) {
            DescribeConfigsResponseData.DescribeConfigsResult result = new DescribeConfigsResponseData
                    .DescribeConfigsResult().setResourceType(resource.resourceType())
                    .setResourceName(resource.resourceName()).setConfigs(new ArrayList<>());
            List<String> wanted = resource.configurationKeys();
            switch (resource.resourceType()) {
                case TOPIC -> {
                    if (partitions.applyAsInt(resource.resourceName()) == 0) {
                        results.add(result.setErrorCode(Errors.UNKNOWN_TOPIC_OR_PARTITION.code())
                                .setErrorMessage("The topic '" + resource.resourceName() + "' does not exist."));
                        continue;
                    }
                    for (TopicConfigs.Described config : topicConfigs.describe(
                            cluster.topicConfigs(resource.resourceName()))) {
                        if (wanted == null || wanted.contains(config.definition().name())) {
                            result.configs().add(described(config, request.includeSynonyms()));
                        }
                    }
                }
                case BROKER -> {
                    if (!resource.resourceName().isEmpty()
                            && !resource.resourceName().equals(String.valueOf(settings.nodeId()))) {
                        results.add(result.setErrorCode(Errors.INVALID_REQUEST.code())
                                .setErrorMessage("this is broker " + settings.nodeId()));
                        continue;
                    }
                    broker().forEach((name, value) -> {
                        if (wanted == null || wanted.contains(name)) {
                            result.configs().add(new DescribeConfigsResourceResult().setName(name)
                                    .setValue(value.value()).setReadOnly(true)
                                    .setConfigSource(TopicConfigs.STATIC_BROKER_CONFIG).setIsSensitive(false)
                                    .setSynonyms(new ArrayList<>()).setConfigType(value.type()));
                        }
                    });
                }
                case BROKER_LOGGER -> {
                    // No loggers are described.
                }
                default -> {
                    results.add(result.setErrorCode(Errors.INVALID_REQUEST.code())
                            .setErrorMessage("resource type " + resource.resourceType() + " has no configs here"));
                    continue;
                }
            }
            results.add(result);
        }
        return new DescribeConfigsResponseData().setResults(results);
    }

    private static DescribeConfigsResourceResult described(TopicConfigs.Described config, boolean synonyms) {
        List<DescribeConfigsSynonym> list = new ArrayList<>();
        if (synonyms) {
            config.synonyms().forEach(synonym -> list.add(new DescribeConfigsSynonym().setName(synonym.name())
                    .setValue(synonym.value()).setSource(synonym.source())));
        }
        return new DescribeConfigsResourceResult().setName(config.definition().name()).setValue(config.value())
                .setReadOnly(false).setConfigSource(config.source()).setIsSensitive(false).setSynonyms(list)
                .setConfigType(configType(config.definition().type()));
    }

    /** @return Kafka's ConfigType code of a type */
    static byte configType(ConfigDef.Type type) {
        return switch (type) {
            case BOOLEAN -> 1;
            case STRING -> 2;
            case INT -> 3;
            case SHORT -> 4;
            case LONG -> 5;
            case DOUBLE -> 6;
            case LIST -> 7;
            case CLASS -> 8;
            case PASSWORD -> 9;
        };
    }

    IncrementalAlterConfigsResponseData incrementalAlter(IncrementalAlterConfigsRequestData request) {
        IncrementalAlterConfigsResponseData response = new IncrementalAlterConfigsResponseData();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ALTER_TIMEOUT_MILLIS);
        Set<Object> namedTwice = namedTwice(request.resources(), r -> r.resourceType(), r -> r.resourceName());
        for (IncrementalAlterConfigsRequestData.AlterConfigsResource resource : request.resources()) {
            IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse answer =
                    new IncrementalAlterConfigsResponseData.AlterConfigsResourceResponse()
                            .setResourceType(resource.resourceType()).setResourceName(resource.resourceName());
            response.responses().add(answer);
            Outcome refused = beforeAcls(resource, namedTwice.contains(resource), settings.nodeId());
            Outcome outcome = refused != null ? refused
                    : alter(resource.resourceType(), resource.resourceName(), current -> {
                        Map<String, String> next = new TreeMap<>(current);
                        for (IncrementalAlterConfigsRequestData.AlterableConfig config : resource.configs()) {
                            apply(next, current, config);
                        }
                        TopicConfigs.check(next);
                        return next;
                    }, resource.configs().isEmpty(), request.validateOnly(), deadline);
            answer.setErrorCode(outcome.error().code()).setErrorMessage(outcome.message());
        }
        return response;
    }

    /**
     * What Kafka's broker refuses in an IncrementalAlterConfigs before it looks at the ACLs (its ConfigAdminManager's
     * preprocessing); the principal's ACLs come after, then the change itself.
     *
     * @param namedTwice whether another resource of the request has this one's type and name
     * @return the refusal, or null when the ACLs are next
     */
    static Outcome beforeAcls(IncrementalAlterConfigsRequestData.AlterConfigsResource resource, boolean namedTwice,
                              int nodeId) {
        List<String> names = new ArrayList<>();
        List<String> nullValued = new ArrayList<>();
        for (IncrementalAlterConfigsRequestData.AlterableConfig config : resource.configs()) {
            names.add(config.name());
            if (config.configOperation() != DELETE && config.value() == null) {
                nullValued.add(config.name());
            }
        }
        return beforeAcls(resource.resourceType(), resource.resourceName(), names, nullValued, namedTwice, false,
                nodeId);
    }

    /** As for IncrementalAlterConfigs; the legacy API also takes a broker's logger for an unknown type. */
    static Outcome beforeAcls(AlterConfigsRequestData.AlterConfigsResource resource, boolean namedTwice,
                              int nodeId) {
        List<String> names = new ArrayList<>();
        List<String> nullValued = new ArrayList<>();
        for (AlterConfigsRequestData.AlterableConfig config : resource.configs()) {
            names.add(config.name());
            if (config.value() == null) {
                nullValued.add(config.name());
            }
        }
        return beforeAcls(resource.resourceType(), resource.resourceName(), names, nullValued, namedTwice, true,
                nodeId);
    }

    /**
     * In Kafka's order: a resource named twice, a config named twice, null values where a value is needed, then by
     * type: an unknown one, and for the broker a name that is neither empty nor this broker's id.
     */
    private static Outcome beforeAcls(byte type, String name, List<String> names, List<String> nullValued,
                                      boolean namedTwice, boolean legacy, int nodeId) {
        if (namedTwice) {
            return new Outcome(Errors.INVALID_REQUEST, "Each resource must appear at most once.");
        }
        if (new HashSet<>(names).size() < names.size()) {
            return new Outcome(Errors.INVALID_REQUEST, "Error due to duplicate config keys");
        }
        if (!nullValued.isEmpty()) {
            return new Outcome(Errors.INVALID_REQUEST, "Null value not supported for : "
                    + String.join(", ", nullValued));
        }
        if (type == BROKER) {
            if (!name.isEmpty()) {
                int id;
                try {
                    id = Integer.parseInt(name);
                } catch (NumberFormatException e) {
                    return new Outcome(Errors.INVALID_REQUEST, "Node id must be an integer, but it is: " + name);
                }
                if (id != nodeId) {
                    return new Outcome(Errors.INVALID_REQUEST, "Unexpected broker id, expected " + nodeId
                            + ", but received " + name);
                }
            }
            // Kafka validates the change itself here too, and refuses one of a setting it cannot change while it
            // runs; which settings those are is Kafka's broker's own list. This broker can change none of its
            // settings, and says so once the ACLs let the change through: a principal without them is told that
            // first, as Kafka tells it for the settings it can change.
            return null;
        }
        boolean known = type == TOPIC || type == CLIENT_METRICS || type == GROUP || type == BROKER_LOGGER && !legacy;
        return known ? null : new Outcome(Errors.INVALID_REQUEST, "Unknown resource type " + type);
    }

    /** @return the resources of a request whose type and name another one also has (an identity set) */
    static <R> Set<Object> namedTwice(Collection<R> resources, Function<R, Byte> type,
                                      Function<R, String> name) {
        Map<Map.Entry<Byte, String>, Integer> count = new HashMap<>();
        for (R resource : resources) {
            count.merge(Map.entry(type.apply(resource), name.apply(resource)), 1, Integer::sum);
        }
        Set<Object> twice = Collections.newSetFromMap(new IdentityHashMap<>());
        for (R resource : resources) {
            if (count.get(Map.entry(type.apply(resource), name.apply(resource))) > 1) {
                twice.add(resource);
            }
        }
        return twice;
    }

    /** Applies one operation to {@code next}, the configs the topic is to have; {@code current} are those it has. */
    private void apply(Map<String, String> next, Map<String, String> current,
                       IncrementalAlterConfigsRequestData.AlterableConfig config) {
        String name = config.name();
        TopicConfigs.Definition definition = TopicConfigs.definitions().get(name);
        if (definition == null) {
            throw new InvalidConfigurationException("Unknown topic config name: " + name);
        }
        switch (config.configOperation()) {
            case SET -> next.put(name, config.value()); // not null: refused before the ACLs
            case DELETE -> next.remove(name);
            case APPEND, SUBTRACT -> {
                String op = config.configOperation() == APPEND ? "APPEND" : "SUBTRACT";
                if (definition.type() != ConfigDef.Type.LIST) {
                    throw new InvalidConfigurationException("Can't " + op + " to key " + name
                            + " because its type is not LIST.");
                }
                Set<String> values = new LinkedHashSet<>(list(topicConfigs.value(next.containsKey(name) ? next
                        : current, name)));
                List<String> given = config.value() == null ? List.of() : list(config.value());
                if (config.configOperation() == APPEND) {
                    values.addAll(given);
                } else {
                    values.removeAll(given);
                }
                next.put(name, String.join(",", values));
            }
            default -> throw new InvalidRequestException("Unknown alter config operation "
                    + config.configOperation() + " for " + name);
        }
    }

    private static List<String> list(String value) {
        return value.isBlank() ? List.of() : ((List<?>) ConfigDef.parseType("list", value, ConfigDef.Type.LIST))
                .stream().map(String::valueOf).toList();
    }

    AlterConfigsResponseData alter(AlterConfigsRequestData request) {
        AlterConfigsResponseData response = new AlterConfigsResponseData();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(ALTER_TIMEOUT_MILLIS);
        Set<Object> namedTwice = namedTwice(request.resources(), r -> r.resourceType(), r -> r.resourceName());
        for (AlterConfigsRequestData.AlterConfigsResource resource : request.resources()) {
            Map<String, String> wanted = new TreeMap<>();
            for (AlterConfigsRequestData.AlterableConfig config : resource.configs()) {
                wanted.put(config.name(), config.value());
            }
            Outcome refused = beforeAcls(resource, namedTwice.contains(resource), settings.nodeId());
            Outcome outcome = refused != null ? refused
                    : alter(resource.resourceType(), resource.resourceName(), current -> {
                        Map<String, String> next = new TreeMap<>(wanted);
                        TopicConfigs.check(next);
                        return next;
                    }, wanted.isEmpty(), request.validateOnly(), deadline);
            response.responses().add(new AlterConfigsResponseData.AlterConfigsResourceResponse()
                    .setResourceType(resource.resourceType()).setResourceName(resource.resourceName())
                    .setErrorCode(outcome.error().code()).setErrorMessage(outcome.message()));
        }
        return response;
    }

    /** Why a change of the broker's settings is refused. */
    private static final String SETTINGS_AT_START = "this broker's settings are taken when it starts (the options"
            + " of `sluice broker`) and cannot be changed while it runs";

    record Outcome(Errors error, String message) {
        static final Outcome NONE = new Outcome(Errors.NONE, null);
    }

    /** Changes one resource's configs, as the request asks; @return the resource's answer */
    private Outcome alter(byte type, String name, UnaryOperator<Map<String, String>> change, boolean empty,
                          boolean validateOnly, long deadline) {
        if (type == BROKER && empty) {
            return Outcome.NONE; // nothing to change
        }
        if (type == BROKER || type == BROKER_LOGGER) {
            return new Outcome(Errors.INVALID_REQUEST, SETTINGS_AT_START);
        }
        if (type != TOPIC) {
            return new Outcome(Errors.INVALID_REQUEST, "resource type " + type + " has no configs here");
        }
        if (partitions.applyAsInt(name) == 0) {
            return new Outcome(Errors.UNKNOWN_TOPIC_OR_PARTITION, "The topic '" + name + "' does not exist.");
        }
        try {
            if (validateOnly) {
                change.apply(cluster.topicConfigs(name));
                return Outcome.NONE;
            }
            CompletableFuture<Void> done = cluster.alterTopicConfigs(name, change);
            done.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            return Outcome.NONE;
        } catch (ExecutionException | CompletionException e) {
            return failure(e.getCause() != null ? e.getCause() : e);
        } catch (RuntimeException e) {
            return failure(e);
        } catch (TimeoutException e) {
            return new Outcome(Errors.REQUEST_TIMED_OUT, "the cluster did not change the configs of " + name
                    + " within " + ALTER_TIMEOUT_MILLIS + " ms; it may still do so");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Outcome(Errors.UNKNOWN_SERVER_ERROR, "interrupted");
        }
    }

    private static Outcome failure(Throwable cause) {
        if (cause instanceof InvalidConfigurationException) {
            return new Outcome(Errors.INVALID_CONFIG, cause.getMessage());
        }
        if (cause instanceof InvalidRequestException) {
            return new Outcome(Errors.INVALID_REQUEST, cause.getMessage());
        }
        if (cause instanceof ClusterView.TopicRefusedException refused
                && refused.refusal() == ClusterView.Refusal.NO_TOPIC) {
            return new Outcome(Errors.UNKNOWN_TOPIC_OR_PARTITION, cause.getMessage());
        }
        return new Outcome(Errors.KAFKA_STORAGE_ERROR, String.valueOf(cause.getMessage()));
    }
}
