package io.sluice.broker.kafka;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigDef.Importance;
import org.apache.kafka.common.config.ConfigDef.Range;
import org.apache.kafka.common.config.ConfigDef.Type;
import org.apache.kafka.common.config.ConfigDef.ValidList;
import org.apache.kafka.common.config.ConfigDef.ValidString;
import org.apache.kafka.common.config.ConfigException;
import org.apache.kafka.common.errors.InvalidConfigurationException;

/**
 * Kafka 4.3.1's topic configs: every name a topic may be given, its type, Kafka's default and Kafka's check of a
 * value, so that a config is taken or refused, with the same message, exactly as Kafka's broker takes or refuses it
 * (docs/broker.md, "Topic configs", lists what each one does here). A topic keeps only the values it was given (its
 * overrides); the others come from the broker: its own setting where it has one that means the same (a store's
 * retention, its largest batch), else Kafka's default.
 *
 * <p>Immutable and thread-safe.
 */
final class TopicConfigs {

    /** Kafka's ConfigSource values used here. */
    static final byte DYNAMIC_TOPIC_CONFIG = 1;
    static final byte STATIC_BROKER_CONFIG = 4;
    static final byte DEFAULT_CONFIG = 5;

    /**
     * One topic config as Kafka defines it.
     *
     * @param name the topic config's name
     * @param type its type
     * @param kafkaDefault Kafka's default, as DescribeConfigs prints it
     * @param brokerName the broker setting that gives it a value when the topic has none (Kafka's synonym), or null
     */
    record Definition(String name, Type type, String kafkaDefault, String brokerName) {
    }

    /** A value a topic config takes when the topic has none of its own, and where it comes from. */
    record BrokerValue(String value, byte source) {
    }

    private static final Map<String, Definition> DEFINITIONS = new LinkedHashMap<>();
    /** The checks of every value, as Kafka's LogConfig defines them. */
    private static final ConfigDef CHECKS = new ConfigDef();
    /** Names Kafka takes but neither describes nor documents. */
    private static final String INTERNAL_SEGMENT_BYTES = "internal.segment.bytes";

    private static void define(String name, Type type, String kafkaDefault, ConfigDef.Validator validator,
                               String brokerName) {
        DEFINITIONS.put(name, new Definition(name, type, kafkaDefault, brokerName));
        CHECKS.define(name, type, ConfigDef.NO_DEFAULT_VALUE, validator, Importance.MEDIUM, name);
    }

    static {
        String max = String.valueOf(Long.MAX_VALUE);
        define("cleanup.policy", Type.LIST, "delete", ValidList.in(true, "compact", "delete"), "log.cleanup.policy");
        define("compression.gzip.level", Type.INT, "-1", new GzipLevel(), "compression.gzip.level");
        define("compression.lz4.level", Type.INT, "9", Range.between(1, 17), "compression.lz4.level");
        define("compression.type", Type.STRING, "producer",
                ValidString.in("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"), "compression.type");
        define("compression.zstd.level", Type.INT, "3", Range.between(-131072, 22), "compression.zstd.level");
        define("delete.retention.ms", Type.LONG, "86400000", Range.atLeast(0), "log.cleaner.delete.retention.ms");
        define("file.delete.delay.ms", Type.LONG, "60000", Range.atLeast(0), "log.segment.delete.delay.ms");
        define("flush.messages", Type.LONG, max, Range.atLeast(1), "log.flush.interval.messages");
        define("flush.ms", Type.LONG, max, Range.atLeast(0), "log.flush.interval.ms");
        define("follower.replication.throttled.replicas", Type.LIST, "", new ThrottledReplicas(), null);
        define("index.interval.bytes", Type.INT, "4096", Range.atLeast(0), "log.index.interval.bytes");
        define("leader.replication.throttled.replicas", Type.LIST, "", new ThrottledReplicas(), null);
        define("local.retention.bytes", Type.LONG, "-2", Range.atLeast(-2), "log.local.retention.bytes");
        define("local.retention.ms", Type.LONG, "-2", Range.atLeast(-2), "log.local.retention.ms");
        define("max.compaction.lag.ms", Type.LONG, max, Range.atLeast(1), "log.cleaner.max.compaction.lag.ms");
        define("max.message.bytes", Type.INT, "1048588", Range.atLeast(0), "message.max.bytes");
        define("message.timestamp.after.max.ms", Type.LONG, "3600000", Range.atLeast(0),
                "log.message.timestamp.after.max.ms");
        define("message.timestamp.before.max.ms", Type.LONG, max, Range.atLeast(0),
                "log.message.timestamp.before.max.ms");
        define("message.timestamp.type", Type.STRING, "CreateTime", ValidString.in("CreateTime", "LogAppendTime"),
                "log.message.timestamp.type");
        define("min.cleanable.dirty.ratio", Type.DOUBLE, "0.5", Range.between(0, 1), "log.cleaner.min.cleanable.ratio");
        define("min.compaction.lag.ms", Type.LONG, "0", Range.atLeast(0), "log.cleaner.min.compaction.lag.ms");
        define("min.insync.replicas", Type.INT, "1", Range.atLeast(1), "min.insync.replicas");
        define("preallocate", Type.BOOLEAN, "false", null, "log.preallocate");
        define("remote.log.copy.disable", Type.BOOLEAN, "false", null, null);
        define("remote.log.delete.on.disable", Type.BOOLEAN, "false", null, null);
        define("remote.storage.enable", Type.BOOLEAN, "false", null, null);
        define("retention.bytes", Type.LONG, "-1", null, "log.retention.bytes");
        define("retention.ms", Type.LONG, "604800000", Range.atLeast(-1), "log.retention.ms");
        define("segment.bytes", Type.INT, "1073741824", Range.atLeast(1024 * 1024), "log.segment.bytes");
        define("segment.index.bytes", Type.INT, "10485760", Range.atLeast(4), "log.index.size.max.bytes");
        define("segment.jitter.ms", Type.LONG, "0", Range.atLeast(0), null);
        define("segment.ms", Type.LONG, "604800000", Range.atLeast(1), null);
        define("unclean.leader.election.enable", Type.BOOLEAN, "false", null, "unclean.leader.election.enable");
        CHECKS.define(INTERNAL_SEGMENT_BYTES, Type.INT, ConfigDef.NO_DEFAULT_VALUE, null, Importance.MEDIUM,
                INTERNAL_SEGMENT_BYTES);
    }

    /** Kafka's check of compression.gzip.level: 1 to 9, or -1 (the codec's default). */
    private static final class GzipLevel implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            int level = (Integer) value;
            if (level != -1 && (level < 1 || level > 9)) {
                throw new ConfigException(name, value, "Value must be between 1 and 9 or equal to -1");
            }
        }
    }

    /** Kafka's check of the throttled replicas lists: {@code *}, or {@code partition:broker} pairs. */
    private static final class ThrottledReplicas implements ConfigDef.Validator {
        @Override
        public void ensureValid(String name, Object value) {
            @SuppressWarnings("unchecked")
            List<String> items = (List<String>) value;
            boolean star = items.size() == 1 && items.getFirst().trim().equals("*");
            if (!star && !items.stream().allMatch(item -> item.trim().matches("[0-9]+:[0-9]+"))) {
                throw new ConfigException(name, value, name + " must be the literal '*' or a list of replicas in the"
                        + " following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...");
            }
        }
    }

    private final Map<String, BrokerValue> broker;

    /**
     * @param broker the broker's values of some topic configs (by topic config name), where it has its own; Kafka's
     *     default stands for the others
     */
    TopicConfigs(Map<String, BrokerValue> broker) {
        for (String name : broker.keySet()) {
            if (!DEFINITIONS.containsKey(name)) {
                throw new IllegalArgumentException("no topic config " + name);
            }
        }
        this.broker = Map.copyOf(broker);
    }

    /** @return every topic config's definition, by name, in name order */
    static Map<String, Definition> definitions() {
        return DEFINITIONS;
    }

    /**
     * Checks a topic's overrides as Kafka checks them: each name known, each value of its type and in its range, and
     * the values together (the compaction lags, remote storage).
     *
     * @throws InvalidConfigurationException with Kafka's message, for the first fault
     */
    static void check(Map<String, String> overrides) {
        for (String name : overrides.keySet()) {
            if (!CHECKS.names().contains(name)) {
                throw new InvalidConfigurationException("Unknown topic config name: " + name);
            }
        }
        Map<String, Object> parsed = new java.util.HashMap<>();
        try {
            for (Map.Entry<String, String> config : overrides.entrySet()) {
                ConfigDef.ConfigKey key = CHECKS.configKeys().get(config.getKey());
                Object value = ConfigDef.parseType(key.name, config.getValue(), key.type);
                if (key.validator != null) {
                    key.validator.ensureValid(key.name, value);
                }
                parsed.put(key.name, value);
            }
        } catch (ConfigException e) {
            throw new InvalidConfigurationException(e.getMessage());
        }
        long minLag = (Long) parsed.getOrDefault("min.compaction.lag.ms", 0L);
        long maxLag = (Long) parsed.getOrDefault("max.compaction.lag.ms", Long.MAX_VALUE);
        if (minLag > maxLag) {
            throw new InvalidConfigurationException("conflict topic config setting min.compaction.lag.ms (" + minLag
                    + ") > max.compaction.lag.ms (" + maxLag + ")");
        }
        if (Boolean.TRUE.equals(parsed.get("remote.storage.enable"))) {
            throw new InvalidConfigurationException("Tiered Storage functionality is disabled in the broker. Topic"
                    + " cannot be configured with remote log storage.");
        }
    }

    /** A topic config as DescribeConfigs reports it: its value, where that comes from, and its synonyms. */
    record Described(Definition definition, String value, byte source, List<Synonym> synonyms) {
    }

    /** A value a config could take, by name and source, in the order that decides between them. */
    record Synonym(String name, String value, byte source) {
    }

    /** @return every topic config (internal ones aside) with the value the topic's overrides give it, in name order */
    List<Described> describe(Map<String, String> overrides) {
        List<Described> described = new ArrayList<>(DEFINITIONS.size());
        for (Definition definition : DEFINITIONS.values()) {
            List<Synonym> synonyms = new ArrayList<>(3);
            String own = overrides.get(definition.name());
            if (own != null) {
                synonyms.add(new Synonym(definition.name(), own, DYNAMIC_TOPIC_CONFIG));
            }
            BrokerValue fromBroker = broker.get(definition.name());
            if (fromBroker != null && definition.brokerName() != null) {
                synonyms.add(new Synonym(definition.brokerName(), fromBroker.value(), fromBroker.source()));
            }
            if (definition.brokerName() != null && (fromBroker == null || fromBroker.source() != DEFAULT_CONFIG)) {
                synonyms.add(new Synonym(definition.brokerName(), definition.kafkaDefault(), DEFAULT_CONFIG));
            }
            Synonym first = own != null ? synonyms.getFirst()
                    : fromBroker != null ? new Synonym(definition.name(), fromBroker.value(), fromBroker.source())
                    : new Synonym(definition.name(), definition.kafkaDefault(), DEFAULT_CONFIG);
            described.add(new Described(definition, first.value(), first.source(), synonyms));
        }
        return described;
    }

    /** @return the value of one topic config for a topic with these overrides */
    String value(Map<String, String> overrides, String name) {
        String own = overrides.get(name);
        if (own != null) {
            return own;
        }
        BrokerValue fromBroker = broker.get(name);
        return fromBroker != null ? fromBroker.value() : DEFINITIONS.get(name).kafkaDefault();
    }

    /**
     * @return one topic config's value for a topic with these overrides, parsed as Kafka parses its type (a LIST as
     *     a list of trimmed strings)
     */
    Object parsed(Map<String, String> overrides, String name) {
        return ConfigDef.parseType(name, value(overrides, name), DEFINITIONS.get(name).type());
    }

    /**
     * What a topic's configs ask of the produce path.
     *
     * @param maxMessageBytes the largest batch taken
     * @param logAppendTime whether the broker stamps each batch with its own time (LogAppendTime)
     * @param timestampBeforeMaxMs how far in the past a record's CreateTime may be
     * @param timestampAfterMaxMs how far in the future a record's CreateTime may be
     * @param minInsyncReplicas the fewest in-sync replicas an acks=all produce needs
     * @param compacted whether cleanup.policy names compact (every record needs a key)
     * @param flushMessages force the log once this many records are not forced
     * @param flushMs force the log once its oldest record not forced is this old
     */
    record Produce(int maxMessageBytes, boolean logAppendTime, long timestampBeforeMaxMs, long timestampAfterMaxMs,
                   int minInsyncReplicas, boolean compacted, long flushMessages, long flushMs) {
    }

    /** @return what the topic's overrides ask of the produce path */
    Produce produce(Map<String, String> overrides) {
        return new Produce((Integer) parsed(overrides, "max.message.bytes"),
                "LogAppendTime".equals(parsed(overrides, "message.timestamp.type")),
                (Long) parsed(overrides, "message.timestamp.before.max.ms"),
                (Long) parsed(overrides, "message.timestamp.after.max.ms"),
                (Integer) parsed(overrides, "min.insync.replicas"),
                ((List<?>) parsed(overrides, "cleanup.policy")).contains("compact"),
                (Long) parsed(overrides, "flush.messages"), (Long) parsed(overrides, "flush.ms"));
    }
}
