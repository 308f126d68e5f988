package io.sluice.store.internal.engine;

import io.sluice.store.RetentionPolicy;
import io.sluice.store.Store;
import java.util.Arrays;
import java.util.Map;

/**
 * A topic's age and size limits: its configs' {@code retention.ms} and {@code retention.bytes} where set (-1, or any
 * negative value, for no limit), else the store's policy; none at all when its {@code cleanup.policy} does not name
 * {@code delete} (a compacted topic keeps every record retention would otherwise take). A value that is not a number
 * leaves the policy's: configs are checked by whoever sets them, and the store must not stop retention over one.
 *
 * @param millis keep messages at least this long; {@link Long#MAX_VALUE} keeps them forever
 * @param bytes keep each log at most this large; {@link Long#MAX_VALUE} for no limit
 */
record TopicRetention(long millis, long bytes) {

    static TopicRetention of(RetentionPolicy policy, Map<String, String> configs) {
        String cleanup = configs.get(Store.CLEANUP_POLICY);
        if (cleanup != null && Arrays.stream(cleanup.split(",")).map(String::trim).noneMatch("delete"::equals)) {
            return new TopicRetention(Long.MAX_VALUE, Long.MAX_VALUE);
        }
        return new TopicRetention(limit(configs.get(Store.RETENTION_MS), policy.retentionMillis()),
                limit(configs.get(Store.RETENTION_BYTES), policy.retentionBytes()));
    }

    private static long limit(String value, long otherwise) {
        if (value == null) {
            return otherwise;
        }
        try {
            long limit = Long.parseLong(value.trim());
            return limit < 0 ? Long.MAX_VALUE : limit;
        } catch (NumberFormatException e) {
            return otherwise;
        }
    }
}
