package io.sluice.broker.kafka;

import java.util.EnumMap;
import java.util.Map;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersion;
import org.apache.kafka.common.message.ApiVersionsResponseData.ApiVersionCollection;
import org.apache.kafka.common.protocol.ApiKeys;

/**
 * The APIs this broker serves and the versions of each, the single table ApiVersions advertises and every request
 * is checked against. Clients use the highest version both sides list, so only what is implemented in full is
 * listed.
 */
final class SupportedApis {

    private record Range(short min, short max) {
    }

    private static final Map<ApiKeys, Range> RANGES = new EnumMap<>(ApiKeys.class);

    static {
        serve(ApiKeys.API_VERSIONS, ApiKeys.API_VERSIONS.oldestVersion(), ApiKeys.API_VERSIONS.latestVersion());
        // Metadata v10+ carries topic ids; this broker answers with the zero id, which keeps Kafka's consumer on
        // Fetch versions that name topics.
        serve(ApiKeys.METADATA, ApiKeys.METADATA.oldestVersion(), ApiKeys.METADATA.latestVersion());
        serve(ApiKeys.CREATE_TOPICS, ApiKeys.CREATE_TOPICS.oldestVersion(), ApiKeys.CREATE_TOPICS.latestVersion());
        serve(ApiKeys.CREATE_PARTITIONS, ApiKeys.CREATE_PARTITIONS.oldestVersion(),
                ApiKeys.CREATE_PARTITIONS.latestVersion());
        serve(ApiKeys.DESCRIBE_CLUSTER, ApiKeys.DESCRIBE_CLUSTER.oldestVersion(),
                ApiKeys.DESCRIBE_CLUSTER.latestVersion());
    }

    private SupportedApis() {
    }

    private static void serve(ApiKeys key, short min, short max) {
        RANGES.put(key, new Range(min, max));
    }

    /** @return whether {@code version} of {@code key} is served */
    static boolean accepts(ApiKeys key, short version) {
        Range range = RANGES.get(key);
        return range != null && version >= range.min && version <= range.max;
    }

    /** @return the entries of an ApiVersions response */
    static ApiVersionCollection advertised() {
        ApiVersionCollection versions = new ApiVersionCollection();
        RANGES.forEach((key, range) -> versions.add(new ApiVersion().setApiKey(key.id)
                .setMinVersion(range.min).setMaxVersion(range.max)));
        return versions;
    }
}
