package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.management.ManagementFactory;
import java.net.InetAddress;
import java.util.Map;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.junit.jupiter.api.Test;

/**
 * Client quotas on numbers worked out from Kafka's formulas, Kafka's order of precedence, its quirks, and the cost of
 * a call: {@link ClientRateQuotaParityTest} checks the same against Kafka's classes at random.
 */
class ClientRateQuotaTest {

    private static final long T0 = 1_700_000_000_000L;

    private static Session session(String user) {
        return new Session(new KafkaPrincipal("User", user), InetAddress.getLoopbackAddress(), null);
    }

    private static ClientRateQuota quota(ClientRateQuota.Kind kind, Map<QuotaEntity, Map<String, Double>> values) {
        ClientRateQuota quota = new ClientRateQuota(kind, QuotaSettings.DEFAULTS);
        quota.update(QuotaSet.of(values));
        return quota;
    }

    @Test
    void throttlesByHowFarOverTheQuotaTheRateIsTimesTheWindow() {
        ClientRateQuota produce = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.clientId("app"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1000.0)));
        // 12,000 bytes at once: a first burst is spread over 10 windows (11 samples, the current one not whole),
        // 1,200 B/s; (1200 - 1000) / 1000 * 10,000 ms = 2,000 ms.
        assertThat(produce.recordAndGetThrottleMillis(session("alice"), "app", 12_000, T0)).isEqualTo(2000);
        // 500 ms later, 100 bytes more: 12,100 B over 10.5 s is 1,152.38 B/s; 0.15238 * 10,500 ms = 1,600 ms.
        assertThat(produce.recordAndGetThrottleMillis(session("bob"), "app", 100, T0 + 500)).isEqualTo(1600);
        // Within the quota: 0.
        assertThat(produce.recordAndGetThrottleMillis(session("alice"), "other", 9_000, T0)).isZero();
        // Byte throttles are not capped: 1,000,000 bytes at once is 100,000 B/s, 99 * 10 s.
        assertThat(produce.recordAndGetThrottleMillis(session("alice"), "app", 988_000, T0 + 500))
                .isEqualTo(Math.round((1_000_100.0 / 10.5 - 1000) / 1000 * 10_500));
    }

    @Test
    void throttlesRequestTimeInPercentOfOneThreadCappedAtOneWindow() {
        ClientRateQuota request = quota(ClientRateQuota.Kind.REQUEST,
                Map.of(QuotaEntity.user("alice"), Map.of(QuotaSet.REQUEST_PERCENTAGE, 10.0)));
        // 0.5 s of handling is 50 percent-seconds, over 10 s 5%: within 10%.
        assertThat(request.recordAndGetThrottleMillis(session("alice"), "app", 500_000_000L, T0)).isZero();
        // 0.7 s more: 12%; (12 - 10) / 10 * 10,000 = 2,000 ms, capped at one window.
        assertThat(request.recordAndGetThrottleMillis(session("alice"), "app", 700_000_000L, T0)).isEqualTo(1000);
        ClientRateQuota slow = quota(ClientRateQuota.Kind.REQUEST,
                Map.of(QuotaEntity.user("alice"), Map.of(QuotaSet.REQUEST_PERCENTAGE, 100.0)));
        // 10.1 s of handling in 10 s: 101% of one thread; 0.01 * 10,000 = 100 ms.
        assertThat(slow.recordAndGetThrottleMillis(session("alice"), "app", 10_100_000_000L, T0)).isEqualTo(100);
    }

    @Test
    void appliesTheMostSpecificOfKafkasEightLevels() {
        Map<QuotaEntity, Map<String, Double>> all = Map.of(
                QuotaEntity.userClientId("alice", "app"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1.0),
                QuotaEntity.userClientId("alice", null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 2.0),
                QuotaEntity.user("alice"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 3.0),
                QuotaEntity.userClientId(null, "app"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 4.0),
                QuotaEntity.userClientId(null, null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 5.0),
                QuotaEntity.user(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 6.0),
                QuotaEntity.clientId("app"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 7.0),
                QuotaEntity.clientId(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 8.0));
        ClientRateQuota produce = quota(ClientRateQuota.Kind.PRODUCE, all);
        assertThat(produce.quota("alice", "app")).isEqualTo(1.0);
        assertThat(produce.quota("alice", "other")).isEqualTo(2.0);
        assertThat(produce.quota("bob", "app")).isEqualTo(4.0);
        assertThat(produce.quota("bob", "other")).isEqualTo(5.0);
        // Each level left out in turn: the next one applies.
        assertThat(without(all, QuotaEntity.userClientId("alice", null)).quota("alice", "other")).isEqualTo(3.0);
        ClientRateQuota noUserClientIds = without(all, QuotaEntity.userClientId("alice", "app"),
                QuotaEntity.userClientId("alice", null), QuotaEntity.userClientId(null, "app"),
                QuotaEntity.userClientId(null, null));
        assertThat(noUserClientIds.quota("alice", "app")).isEqualTo(3.0);
        assertThat(noUserClientIds.quota("bob", "app")).isEqualTo(6.0);
        ClientRateQuota clientIdsOnly = quota(ClientRateQuota.Kind.PRODUCE, Map.of(
                QuotaEntity.clientId("app"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 7.0),
                QuotaEntity.clientId(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 8.0)));
        assertThat(clientIdsOnly.quota("bob", "app")).isEqualTo(7.0);
        assertThat(clientIdsOnly.quota("bob", "other")).isEqualTo(8.0);
        // Other keys bound other kinds of quota only.
        assertThat(quota(ClientRateQuota.Kind.FETCH, all).quota("alice", "app")).isNull();
    }

    @Test
    void keepsKafkasQuirksOfEmptyAndNullClientIds() {
        ClientRateQuota clientIds = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.clientId(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 10.0)));
        assertThat(clientIds.quota("alice", "x")).isEqualTo(10.0);
        assertThat(clientIds.quota("alice", "")).isNull();
        assertThat(clientIds.quota("alice", null)).isNull();
        assertThat(clientIds.recordAndGetThrottleMillis(session("alice"), "", 1_000_000, T0)).isZero();
        ClientRateQuota userClientIds = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.userClientId(null, null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 10.0)));
        assertThat(userClientIds.quota("alice", "x")).isEqualTo(10.0);
        assertThat(userClientIds.quota("alice", "")).isNull();
        ClientRateQuota users = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.user(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 10.0)));
        assertThat(users.quota("alice", null)).isEqualTo(10.0);
        assertThat(users.quota("", "x")).isNull();
    }

    @Test
    void sharesOneRateAmongTheClientsOfTheEntityMeasured() {
        ClientRateQuota produce = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.user(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1000.0)));
        // The default user's quota is each user's own: alice's client ids share alice's rate, bob has his own.
        assertThat(produce.recordAndGetThrottleMillis(session("alice"), "a", 6_000, T0)).isZero();
        assertThat(produce.recordAndGetThrottleMillis(session("alice"), "b", 6_000, T0)).isEqualTo(2000);
        assertThat(produce.recordAndGetThrottleMillis(session("bob"), "a", 6_000, T0)).isZero();
    }

    @Test
    void keepsTheRateWhenTheQuotaChangesAndUnrecordsTakesBack() {
        ClientRateQuota fetch = quota(ClientRateQuota.Kind.FETCH,
                Map.of(QuotaEntity.clientId("app"), Map.of(QuotaSet.CONSUMER_BYTE_RATE, 1000.0)));
        assertThat(fetch.recordAndGetThrottleMillis(session("u"), "app", 9_000, T0)).isZero();
        fetch.update(QuotaSet.of(Map.of(QuotaEntity.clientId("app"), Map.of(QuotaSet.CONSUMER_BYTE_RATE, 500.0))));
        // 10,000 B over 10 s against 500 B/s: (1000 - 500) / 500 * 10,000.
        assertThat(fetch.recordAndGetThrottleMillis(session("u"), "app", 1_000, T0)).isEqualTo(10_000);
        fetch.unrecord(session("u"), "app", 5_000, T0);
        assertThat(fetch.recordAndGetThrottleMillis(session("u"), "app", 0, T0)).isZero();
        assertThat(fetch.maxValueInQuotaWindow(session("u"), "app")).isEqualTo(5000.0);
        assertThat(fetch.maxValueInQuotaWindow(session("u"), "other")).isEqualTo(Double.MAX_VALUE);
    }

    @Test
    void dropsRatesIdleForAnHour() {
        ClientRateQuota produce = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.clientId(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1000.0)));
        produce.recordAndGetThrottleMillis(session("u"), "a", 50_000, T0);
        produce.expireIdle(T0 + ClientRateQuota.IDLE_EXPIRY_MILLIS);
        assertThat(produce.recordAndGetThrottleMillis(session("u"), "a", 0, T0 + 1)).isPositive();
        produce.expireIdle(T0 + 1 + ClientRateQuota.IDLE_EXPIRY_MILLIS + 1);
        assertThat(produce.recordAndGetThrottleMillis(session("u"), "a", 0, T0 + 2)).isZero();
    }

    @Test
    void allocatesNothingPerCall() {
        com.sun.management.ThreadMXBean threads = (com.sun.management.ThreadMXBean)
                ManagementFactory.getThreadMXBean();
        ClientRateQuota none = new ClientRateQuota(ClientRateQuota.Kind.PRODUCE, QuotaSettings.DEFAULTS);
        ClientRateQuota others = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.userClientId("bob", "x"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 10.0),
                        QuotaEntity.user("carol"), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 10.0)));
        ClientRateQuota applies = quota(ClientRateQuota.Kind.PRODUCE,
                Map.of(QuotaEntity.clientId(null), Map.of(QuotaSet.PRODUCER_BYTE_RATE, 1e12)));
        Session alice = session("alice");
        for (ClientRateQuota quota : new ClientRateQuota[] {none, others, applies}) {
            long sum = 0;
            for (int i = 0; i < 200_000; i++) { // warm up
                sum += quota.recordAndGetThrottleMillis(alice, "app", 100, T0 + i / 100);
            }
            long before = threads.getCurrentThreadAllocatedBytes();
            for (int i = 0; i < 100_000; i++) {
                sum += quota.recordAndGetThrottleMillis(alice, "app", 100, T0 + 2000 + i / 100);
            }
            long allocated = threads.getCurrentThreadAllocatedBytes() - before;
            assertThat(sum).isZero();
            assertThat(allocated).as("bytes allocated by 100,000 calls").isLessThan(10_000);
        }
    }

    private static ClientRateQuota without(Map<QuotaEntity, Map<String, Double>> all, QuotaEntity... left) {
        Map<QuotaEntity, Map<String, Double>> some = new java.util.HashMap<>(all);
        for (QuotaEntity entity : left) {
            some.remove(entity);
        }
        return quota(ClientRateQuota.Kind.PRODUCE, some);
    }
}
