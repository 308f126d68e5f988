package io.sluice.broker.kafka.security;

import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.LongSupplier;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.protocol.Errors;

/**
 * Kafka's controller mutation quota (KIP-599, {@code controller_mutation_rate}): the partitions a user and client id
 * create, add or delete per second, through CreateTopics, CreatePartitions and DeleteTopics, counted in a token bucket
 * per entity (the most specific of Kafka's eight user/client-id levels) that holds {@code quota.window.num} windows of
 * tokens and refills at the quota. A strict request (CreateTopics v6+, CreatePartitions v3+, DeleteTopics v5+) may take
 * tokens while the bucket is not below zero, so one topic may overdraw it, and a topic asked for once it is below zero
 * is refused THROTTLING_QUOTA_EXCEEDED; an older request is never refused, only throttled. Either answers the time
 * until the bucket is back at zero as its throttle. Thread-safe.
 */
public final class MutationQuota {

    /** A request's hold on its entity's bucket. */
    public interface Permits {

        /**
         * Takes {@code partitions} tokens for one topic.
         *
         * @throws ThrottlingQuotaExceededException if strict and the bucket was already below zero (nothing taken)
         */
        void record(int partitions);

        /** @return how long the client is to wait, less the time since it was found; 0 for none */
        long throttleMillis();
    }

    private static final Permits UNBOUNDED = new Permits() {
        @Override
        public void record(int partitions) {
        }

        @Override
        public long throttleMillis() {
            return 0;
        }
    };

    /** Kafka expires a client's quota sensors after an hour without use. */
    private static final long IDLE_EXPIRY_MILLIS = 3_600_000;

    private final int windowCount;
    private final long windowSizeMillis;
    private final Map<String, Map<String, Bucket>> buckets = new ConcurrentHashMap<>();
    private volatile QuotaLimits limits = QuotaLimits.of(QuotaSet.empty(), QuotaSet.CONTROLLER_MUTATION_RATE);

    public MutationQuota(QuotaSettings settings) {
        this.windowCount = settings.windowCount();
        this.windowSizeMillis = settings.windowSizeMillis();
    }

    /** Takes the quotas of {@code quotas} from now on; the buckets keep their tokens. */
    public void update(QuotaSet quotas) {
        limits = QuotaLimits.of(quotas, QuotaSet.CONTROLLER_MUTATION_RATE);
    }

    /**
     * @param strict whether a topic asked for while the bucket is below zero is refused (else only throttled)
     * @param clock the broker's clock, in milliseconds
     * @return the hold of one request of this user and client id; one that takes nothing without a quota
     */
    public Permits permits(Session session, String clientId, boolean strict, LongSupplier clock) {
        QuotaLimits current = limits;
        if (current.none() || session == null || session.principal() == null) {
            return UNBOUNDED;
        }
        String user = session.principal().getName();
        String client = clientId == null ? "" : clientId;
        int shape = current.shape(user, client);
        String userTag = QuotaLimits.userTag(shape, user);
        String clientIdTag = QuotaLimits.clientIdTag(shape, client);
        if (current.limit(userTag, clientIdTag) == null) {
            return UNBOUNDED;
        }
        Bucket bucket = buckets.computeIfAbsent(userTag, u -> new ConcurrentHashMap<>())
                .computeIfAbsent(clientIdTag, c -> new Bucket());
        return new Hold(bucket, userTag, clientIdTag, strict, clock);
    }

    /** Drops the buckets of entities that took nothing for an hour, as Kafka expires their sensors. */
    public void expireIdle(long nowMillis) {
        for (Map<String, Bucket> byClientId : buckets.values()) {
            byClientId.values().removeIf(bucket -> {
                synchronized (bucket) {
                    return nowMillis - bucket.lastRecordMillis > IDLE_EXPIRY_MILLIS;
                }
            });
        }
        buckets.values().removeIf(Map::isEmpty);
    }

    private final class Hold implements Permits {
        private final Bucket bucket;
        private final String userTag;
        private final String clientIdTag;
        private final boolean strict;
        private final LongSupplier clock;
        private long throttleMillis;
        private long foundMillis;

        Hold(Bucket bucket, String userTag, String clientIdTag, boolean strict, LongSupplier clock) {
            this.bucket = bucket;
            this.userTag = userTag;
            this.clientIdTag = clientIdTag;
            this.strict = strict;
            this.clock = clock;
        }

        @Override
        public void record(int partitions) {
            Double quota = limits.limit(userTag, clientIdTag);
            if (quota == null) {
                return; // the quota was removed since
            }
            long now = clock.getAsLong();
            double burst = windowCount * (windowSizeMillis / 1000.0) * quota;
            synchronized (bucket) {
                bucket.lastRecordMillis = now;
                if (strict) {
                    double tokens = bucket.measure(quota, burst, now);
                    if (tokens < 0) {
                        found(tokens, quota, now);
                        throw new ThrottlingQuotaExceededException((int) throttleMillis,
                                Errors.THROTTLING_QUOTA_EXCEEDED.message());
                    }
                    bucket.take(partitions, quota, burst, now);
                } else {
                    double tokens = bucket.take(partitions, quota, burst, now);
                    if (tokens < 0) {
                        found(tokens, quota, now);
                    }
                }
            }
        }

        private void found(double tokens, double quota, long now) {
            throttleMillis = Math.round(-tokens / quota * 1000);
            foundMillis = now;
        }

        @Override
        public long throttleMillis() {
            return Math.max(0, throttleMillis - (clock.getAsLong() - foundMillis));
        }
    }

    /** Kafka's TokenBucket: starts full, refills at the quota per second up to the burst, and may go below zero. */
    private static final class Bucket {
        private double tokens;
        private long lastUpdateMillis;
        private long lastRecordMillis;

        double measure(double quota, double burst, long now) {
            tokens = Math.min(burst, tokens + quota * ((now - lastUpdateMillis) / 1000.0));
            lastUpdateMillis = now;
            return tokens;
        }

        double take(double value, double quota, double burst, long now) {
            measure(quota, burst, now);
            tokens = Math.min(burst, tokens - value);
            return tokens;
        }
    }
}
