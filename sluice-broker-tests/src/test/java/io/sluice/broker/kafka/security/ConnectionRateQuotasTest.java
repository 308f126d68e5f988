package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.metrics.QuotaViolationException;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.server.quota.QuotaUtils;
import org.junit.jupiter.api.Test;

/** Connection creation rates: Kafka's numbers, and a sequence of connections against Kafka's sensors. */
class ConnectionRateQuotasTest {

    private static final long T0 = 1_700_000_000_000L;
    private static final InetAddress A = address("10.0.0.1");
    private static final InetAddress B = address("10.0.0.2");

    private static InetAddress address(String ip) {
        try {
            return InetAddress.getByName(ip);
        } catch (UnknownHostException e) {
            throw new AssertionError(e);
        }
    }

    private static ConnectionRateQuotas quotas(int brokerRate, Map<QuotaEntity, Map<String, Double>> values) {
        ConnectionRateQuotas quotas = new ConnectionRateQuotas(new QuotaSettings(11, 1, brokerRate),
                ClientQuotaRequests.SYSTEM_RESOLVER);
        quotas.update(QuotaSet.of(values));
        return quotas;
    }

    @Test
    void refusesAnAddressOverItsQuotaAndCountsTheRefusalNowhere() {
        ConnectionRateQuotas quotas = quotas(Integer.MAX_VALUE, Map.of(
                QuotaEntity.ip("10.0.0.1"), Map.of(QuotaSet.CONNECTION_CREATION_RATE, 1.0),
                QuotaEntity.ip(null), Map.of(QuotaSet.CONNECTION_CREATION_RATE, 5.0),
                QuotaEntity.ip("x.invalid"), Map.of(QuotaSet.CONNECTION_CREATION_RATE, 1.0)));
        assertThat(quotas.quota(A)).isEqualTo(1);
        assertThat(quotas.quota(B)).isEqualTo(5);
        // Ten at once is 1 a second over the 10 s a first burst is spread over; the eleventh is 1.1: refused, held
        // (1.1 - 1) / 1 * 10,000 ms, capped at one window.
        for (int i = 0; i < 10; i++) {
            assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0)).isZero();
        }
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0)).isEqualTo(1000);
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0)).isEqualTo(1000);
        // The refused ones count for nothing: a second on, one more is 11 over 10 s, refused too; just before the
        // first sample is 11 s old, 11 over 10.999 s is just over (1 ms); once it is, it is dropped: 1 over 10 s.
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0 + 1000)).isEqualTo(1000);
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0 + 10_999)).isEqualTo(1);
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0 + 11_000)).isZero();
        // Another address: the default quota, its own rate.
        for (int i = 0; i < 50; i++) {
            assertThat(quotas.recordIpConnectionAndGetThrottleMillis(B, T0)).isZero();
        }
        // 51 over 10 s against 5: (5.1 - 5) / 5 * 10,000 ms.
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(B, T0)).isEqualTo(200);
        // Without quotas, nothing is counted.
        quotas.update(QuotaSet.empty());
        assertThat(quotas.quota(A)).isEqualTo(Integer.MAX_VALUE);
        assertThat(quotas.recordIpConnectionAndGetThrottleMillis(A, T0 + 10_000)).isZero();
    }

    @Test
    void makesTheAcceptorWaitOverTheBrokerWideRate() {
        ConnectionRateQuotas quotas = quotas(2, Map.of());
        for (int i = 0; i < 20; i++) {
            assertThat(quotas.recordConnectionAndGetWaitMillis(T0)).isZero();
        }
        // 21 over 10 s is 2.1 a second: (2.1 - 2) / 2 * 10,000 = 500 ms.
        assertThat(quotas.recordConnectionAndGetWaitMillis(T0)).isEqualTo(500);
        // 22 over 10.5 s is 2.095 a second: 0.0476 * 10,500 = 500 ms.
        assertThat(quotas.recordConnectionAndGetWaitMillis(T0 + 500)).isEqualTo(500);
        // 40 more at once: 62 over 10.5 s, 5.9 a second, capped at one window.
        for (int i = 0; i < 39; i++) {
            quotas.recordConnectionAndGetWaitMillis(T0 + 500);
        }
        assertThat(quotas.recordConnectionAndGetWaitMillis(T0 + 500)).isEqualTo(1000);
    }

    @Test
    void answersAsKafkasSensorsForASequenceOfConnections() {
        long seed = Long.getLong("sluice.quotas.seed", System.nanoTime());
        System.out.println("ConnectionRateQuotasTest seed: " + seed + " (-Dsluice.quotas.seed=" + seed + ")");
        Random random = new Random(seed);
        int brokerRate = 20;
        int ipRate = 3;
        ConnectionRateQuotas quotas = quotas(brokerRate, Map.of(QuotaEntity.ip(null),
                Map.of(QuotaSet.CONNECTION_CREATION_RATE, (double) ipRate)));
        Metrics metrics = new Metrics();
        Sensor broker = sensor(metrics, "broker", brokerRate);
        Map<InetAddress, Sensor> ips = Map.of(A, sensor(metrics, "a", ipRate), B, sensor(metrics, "b", ipRate));
        long now = T0;
        int refused = 0;
        for (int i = 0; i < 2000; i++) {
            now += random.nextInt(4) == 0 ? random.nextInt(2000) : random.nextInt(100);
            InetAddress address = random.nextBoolean() ? A : B;
            long expectedWait = Math.max(kafkaThrottle(broker, now), 0);
            assertThat(quotas.recordConnectionAndGetWaitMillis(now)).as("seed %d call %d", seed, i)
                    .isEqualTo(expectedWait);
            long after = now + expectedWait;
            long expectedRefusal = kafkaThrottle(ips.get(address), after);
            if (expectedRefusal > 0) {
                ips.get(address).record(-1.0, after, false);
                broker.record(-1.0, after, false);
                refused++;
            }
            assertThat(quotas.recordIpConnectionAndGetThrottleMillis(address, after)).as("seed %d call %d", seed, i)
                    .isEqualTo(expectedRefusal);
        }
        metrics.close();
        assertThat(refused).isPositive();
    }

    private static Sensor sensor(Metrics metrics, String name, int quota) {
        Sensor sensor = metrics.sensor(name, new MetricConfig().timeWindow(1, TimeUnit.SECONDS).samples(11)
                .quota(new Quota(quota, true)));
        sensor.add(metrics.metricName(name + "-rate", "g"), new Rate(), null);
        return sensor;
    }

    /** Kafka's ConnectionQuotas.recordAndGetThrottleTimeMs. */
    private static long kafkaThrottle(Sensor sensor, long nowMillis) {
        try {
            sensor.record(1.0, nowMillis);
            return 0;
        } catch (QuotaViolationException e) {
            return (int) QuotaUtils.boundedThrottleTime(e, 1000, nowMillis);
        }
    }
}
