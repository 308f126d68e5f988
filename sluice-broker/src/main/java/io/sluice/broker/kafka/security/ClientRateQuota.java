package io.sluice.broker.kafka.security;

import java.util.Map;
import java.util.Objects;
import java.util.concurrent.ConcurrentHashMap;

/**
 * One kind of client quota on a broker, measured and enforced as Kafka 4.3.1's ClientQuotaManager (and, for request
 * time, ClientRequestQuotaManager) with the default quota callback: produce bytes ({@code producer_byte_rate}), fetch
 * bytes ({@code consumer_byte_rate}) or request handling time ({@code request_percentage}, in percent of one thread:
 * 100 is one thread busy all the time).
 *
 * <p>For each call, the quota that applies to the session's user and the client id is resolved ({@link QuotaLimits}:
 * the most specific of Kafka's 8 levels); when none does, the call answers 0 and touches nothing. Otherwise the value
 * is recorded on the rate of the entity the quota is measured on (one rate per user, per client id, or per user and
 * client id, shared by every connection of that entity) and the throttle time is Kafka's: 0 within the quota, else
 * {@code round((rate - quota) / quota * window)} ms, where the rate is over {@code quota.window.num} windows of
 * {@code quota.window.size.seconds} ({@link SampledRate}). Request time throttles are capped at one window (1 s by
 * default); byte throttles are not. Kafka hands the throttle out as an int: a throttle beyond
 * {@link Integer#MAX_VALUE} ms wraps as it does in Kafka (a negative time, which Kafka then treats as none).
 *
 * <p>Kafka also records clients that have no quota once any quota of the kind exists, so that a quota added later
 * judges them on the traffic of the seconds before; here a rate starts when a quota first applies. A quota changed
 * keeps the rate it bounds, as in Kafka. Rates idle for an hour are dropped ({@link #expireIdle}), as Kafka drops
 * their sensors.
 *
 * <p>Thread-safe. Recording allocates nothing once an entity's rate exists; each rate is locked while it is recorded
 * and measured, as Kafka locks a sensor.
 */
public final class ClientRateQuota {

    /** Kafka's ClientQuotaManager.INACTIVE_SENSOR_EXPIRATION_TIME_SECONDS, in ms. */
    static final long IDLE_EXPIRY_MILLIS = 3_600_000L;
    /** Kafka's ClientRequestQuotaManager.NanosToPercentagePerSecond. */
    private static final double NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1_000_000_000L;

    /** The kinds of client quota measured on request data. */
    public enum Kind {
        /** Bytes of produce requests: {@code producer_byte_rate}. */
        PRODUCE(QuotaSet.PRODUCER_BYTE_RATE),
        /** Bytes of fetch responses to consumers: {@code consumer_byte_rate}. */
        FETCH(QuotaSet.CONSUMER_BYTE_RATE),
        /** Nanoseconds of request handling, as a percentage of one thread: {@code request_percentage}. */
        REQUEST(QuotaSet.REQUEST_PERCENTAGE);

        private final String key;

        Kind(String key) {
            this.key = key;
        }

        /** @return the quota key of this kind */
        public String key() {
            return key;
        }
    }

    private final Kind kind;
    private final int windowCount;
    private final long windowSizeMillis;
    private final long maxThrottleMillis;
    private final Map<String, Map<String, SampledRate>> rates = new ConcurrentHashMap<>();
    private volatile QuotaLimits limits;

    /** A quota of {@code kind} with Kafka's windows, bounding nothing until {@link #update}. */
    public ClientRateQuota(Kind kind, QuotaSettings settings) {
        this.kind = Objects.requireNonNull(kind, "kind");
        this.windowCount = settings.windowCount();
        this.windowSizeMillis = settings.windowSizeMillis();
        this.maxThrottleMillis = kind == Kind.REQUEST ? settings.windowSizeMillis() : Long.MAX_VALUE;
        this.limits = QuotaLimits.of(QuotaSet.empty(), kind.key());
    }

    /** @return the kind of quota */
    public Kind kind() {
        return kind;
    }

    /** Takes the quotas of {@code quotas} from now on; the rates measured so far are kept. */
    public void update(QuotaSet quotas) {
        limits = QuotaLimits.of(quotas, kind.key());
    }

    /**
     * Records what a client used and answers how long to throttle it.
     *
     * @param session who sent the request (its principal's name is the user)
     * @param clientId the request header's client id
     * @param value bytes (produce: the request's size; fetch: the response's), or nanoseconds of handling (request)
     * @param nowMillis the broker's clock
     * @return the throttle time in ms: 0 when within the quota, or when no quota applies
     */
    public long recordAndGetThrottleMillis(Session session, String clientId, long value, long nowMillis) {
        QuotaLimits current = limits;
        if (current.none()) {
            return 0;
        }
        String user = session.principal().getName();
        int shape = current.shape(user, clientId);
        String userTag = QuotaLimits.userTag(shape, user);
        String clientIdTag = QuotaLimits.clientIdTag(shape, clientId);
        Double quota = current.limit(userTag, clientIdTag);
        if (quota == null) {
            return 0;
        }
        SampledRate rate = rate(userTag, clientIdTag);
        long throttleMillis;
        synchronized (rate) {
            throttleMillis = rate.recordAndGetThrottleMillis(scaled(value), nowMillis, quota);
        }
        // Kafka bounds request throttles by a window, and hands every throttle out as an int.
        return (int) Math.min(throttleMillis, maxThrottleMillis);
    }

    /**
     * Records usage without throttling for it (Kafka's recordNoThrottle: a request's network thread time, counted
     * toward the next request's throttle).
     */
    public void recordNoThrottle(Session session, String clientId, long value, long nowMillis) {
        record(session, clientId, scaled(value), nowMillis);
    }

    /**
     * Takes back usage recorded for a response that is not sent in full: Kafka records a throttled fetch's bytes and
     * then unrecords them, since it answers that fetch empty.
     */
    public void unrecord(Session session, String clientId, long value, long nowMillis) {
        record(session, clientId, -scaled(value), nowMillis);
    }

    /**
     * @return the most a client may use in one go without being throttled for it alone: its quota times
     *     {@code (quota.window.num - 1)} windows ({@link Double#MAX_VALUE} without a quota). Kafka caps a consumer's
     *     fetch max bytes by it, converted to an int (saturating).
     */
    public double maxValueInQuotaWindow(Session session, String clientId) {
        QuotaLimits current = limits;
        if (current.none()) {
            return Double.MAX_VALUE;
        }
        Double quota = current.limitFor(session.principal().getName(), clientId);
        return quota == null ? Double.MAX_VALUE : quota * (windowCount - 1) * (windowSizeMillis / 1000);
    }

    /**
     * @return the quota that applies to this user and client id, or null (Kafka's {@code quota(user, clientId)},
     *     which answers {@link Long#MAX_VALUE} for none)
     */
    public Double quota(String user, String clientId) {
        return limits.limitFor(user, clientId);
    }

    /** Drops the rates of entities that recorded nothing for an hour, as Kafka expires their sensors. */
    public void expireIdle(long nowMillis) {
        for (Map<String, SampledRate> byClientId : rates.values()) {
            byClientId.values().removeIf(rate -> {
                synchronized (rate) {
                    return nowMillis - rate.lastRecordMillis() > IDLE_EXPIRY_MILLIS;
                }
            });
        }
        rates.values().removeIf(Map::isEmpty);
    }

    private void record(Session session, String clientId, double value, long nowMillis) {
        QuotaLimits current = limits;
        if (current.none()) {
            return;
        }
        String user = session.principal().getName();
        int shape = current.shape(user, clientId);
        String userTag = QuotaLimits.userTag(shape, user);
        String clientIdTag = QuotaLimits.clientIdTag(shape, clientId);
        if (current.limit(userTag, clientIdTag) == null) {
            return;
        }
        SampledRate rate = rate(userTag, clientIdTag);
        synchronized (rate) {
            rate.record(value, nowMillis);
        }
    }

    private SampledRate rate(String userTag, String clientIdTag) {
        Map<String, SampledRate> byClientId = rates.get(userTag);
        if (byClientId == null) {
            byClientId = rates.computeIfAbsent(userTag, u -> new ConcurrentHashMap<>());
        }
        SampledRate rate = byClientId.get(clientIdTag);
        if (rate == null) {
            rate = byClientId.computeIfAbsent(clientIdTag, c -> new SampledRate(windowCount, windowSizeMillis));
        }
        return rate;
    }

    private double scaled(long value) {
        return kind == Kind.REQUEST ? value * NANOS_TO_PERCENTAGE_PER_SECOND : value;
    }
}
