package io.sluice.broker.kafka.security;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.HashMap;
import java.util.Iterator;
import java.util.Map;
import java.util.Objects;
import java.util.SortedMap;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The rate of new connections a broker accepts, as Kafka 4.3.1's ConnectionQuotas limits it: broker-wide by
 * {@code max.connection.creation.rate}, and per client address by the {@code connection_creation_rate} quota of its IP
 * entity (or of the default IP entity).
 *
 * <p>What Kafka's acceptor does with a new connection, in this order, and what the two methods answer:
 * <ol>
 *   <li>{@link #recordConnectionAndGetWaitMillis}: the connection counts toward the broker-wide rate; over
 *       {@code max.connection.creation.rate}, the acceptor waits the answered time (at most one window, 1 s by
 *       default) before it goes on, so every connection of the listener waits. Kafka always counts, even without a
 *       limit.</li>
 *   <li>{@link #recordIpConnectionAndGetThrottleMillis}, with the clock after that wait: when the address has a
 *       quota, the connection counts toward the address's rate; over the quota, the connection is refused: Kafka
 *       neither reads from it nor counts it, keeps it open for the answered time (at most one window) and then
 *       closes it, and takes the connection back out of both rates.</li>
 * </ol>
 * A quota of exactly {@link Integer#MAX_VALUE} is no quota, as in Kafka; quotas are ints (Kafka truncates the stored
 * double). Listener-level {@code listener.name.X.max.connection.creation.rate}, and the inter-broker listener's
 * exemption from the broker-wide rate, are not here: Sluice's brokers talk over Raft, not a Kafka listener.
 *
 * <p>Thread-safe: both methods lock this object, as Kafka does all of this under one lock.
 */
public final class ConnectionRateQuotas {

    private static final Logger LOG = LoggerFactory.getLogger(ConnectionRateQuotas.class);
    /** Kafka's IP_CONNECTION_RATE_DEFAULT: no quota. */
    static final int NO_QUOTA = Integer.MAX_VALUE;

    private final int windowCount;
    private final long windowSizeMillis;
    private final int brokerRate;
    private final SampledRate brokerConnections;
    private final ClientQuotaRequests.HostResolver resolver;
    private final Map<InetAddress, SampledRate> addressConnections = new HashMap<>();
    private Map<InetAddress, Integer> addressRates = Map.of();
    private int defaultAddressRate = NO_QUOTA;

    /**
     * @param resolver how an IP entity's name becomes an address (Kafka: {@code InetAddress.getByName})
     */
    public ConnectionRateQuotas(QuotaSettings settings, ClientQuotaRequests.HostResolver resolver) {
        this.windowCount = settings.windowCount();
        this.windowSizeMillis = settings.windowSizeMillis();
        this.brokerRate = settings.maxConnectionCreationRate();
        this.brokerConnections = new SampledRate(windowCount, windowSizeMillis);
        this.resolver = Objects.requireNonNull(resolver, "resolver");
    }

    /**
     * Takes the IP quotas of {@code quotas} from now on; the rates measured so far are kept. An IP entity whose name
     * does not resolve is left out, and logged, as Kafka leaves it.
     */
    public synchronized void update(QuotaSet quotas) {
        Map<InetAddress, Integer> rates = new HashMap<>();
        int defaultRate = NO_QUOTA;
        for (Map.Entry<QuotaEntity, SortedMap<String, Double>> entry : quotas.entities().entrySet()) {
            QuotaEntity.Name ip = entry.getKey().ip();
            Double value = entry.getValue().get(QuotaSet.CONNECTION_CREATION_RATE);
            if (ip == null || value == null) {
                continue;
            }
            int rate = (int) value.doubleValue();
            if (ip.isDefault()) {
                defaultRate = rate;
                continue;
            }
            try {
                rates.put(resolver.resolve(ip.value()), rate);
            } catch (UnknownHostException e) {
                LOG.error("ignoring the connection_creation_rate quota of {}: it does not resolve", ip.value());
            }
        }
        addressRates = rates;
        defaultAddressRate = defaultRate;
    }

    /**
     * Counts a new connection toward the broker-wide rate.
     *
     * @return how long the acceptor waits before it goes on (0: at once), at most one window
     */
    public synchronized long recordConnectionAndGetWaitMillis(long nowMillis) {
        return Math.max(throttle(brokerConnections, nowMillis, brokerRate), 0);
    }

    /**
     * Counts a new connection toward its address's rate, when the address has a quota.
     *
     * @return 0 to accept the connection; otherwise it is refused, and this is how long Kafka keeps it open, unread,
     *     before closing it (at most one window)
     */
    public synchronized long recordIpConnectionAndGetThrottleMillis(InetAddress address, long nowMillis) {
        int quota = quota(address);
        if (quota == NO_QUOTA) {
            return 0;
        }
        SampledRate rate = addressConnections.computeIfAbsent(address,
                a -> new SampledRate(windowCount, windowSizeMillis));
        long throttleMillis = throttle(rate, nowMillis, quota);
        if (throttleMillis > 0) {
            // Not accepted: it counts toward neither rate.
            rate.record(-1.0, nowMillis);
            brokerConnections.record(-1.0, nowMillis);
        }
        return throttleMillis;
    }

    /** @return the connection rate quota of {@code address}, {@link Integer#MAX_VALUE} for none */
    public synchronized int quota(InetAddress address) {
        return addressRates.getOrDefault(address, defaultAddressRate);
    }

    /** Drops the rates of addresses that connected to nothing for an hour, as Kafka expires their sensors. */
    public synchronized void expireIdle(long nowMillis) {
        Iterator<SampledRate> rates = addressConnections.values().iterator();
        while (rates.hasNext()) {
            if (nowMillis - rates.next().lastRecordMillis() > ClientRateQuota.IDLE_EXPIRY_MILLIS) {
                rates.remove();
            }
        }
    }

    /** Kafka's ConnectionQuotas.recordAndGetThrottleTimeMs: QuotaUtils.boundedThrottleTime, as an int. */
    private int throttle(SampledRate rate, long nowMillis, int quota) {
        return (int) Math.min(rate.recordAndGetThrottleMillis(1.0, nowMillis, quota), windowSizeMillis);
    }
}
