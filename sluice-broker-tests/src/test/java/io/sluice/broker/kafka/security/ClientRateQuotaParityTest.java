package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.util.HashMap;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.apache.kafka.common.errors.ThrottlingQuotaExceededException;
import org.apache.kafka.common.metrics.MetricConfig;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.Quota;
import org.apache.kafka.common.metrics.QuotaViolationException;
import org.apache.kafka.common.metrics.Sensor;
import org.apache.kafka.common.metrics.stats.Rate;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.server.config.ClientQuotaManagerConfig;
import org.apache.kafka.server.quota.ClientQuotaEntity.ConfigEntity;
import org.apache.kafka.server.quota.ClientQuotaManager;
import org.apache.kafka.server.quota.ControllerMutationQuota;
import org.apache.kafka.server.quota.ControllerMutationQuotaManager;
import org.apache.kafka.server.quota.QuotaType;
import org.apache.kafka.server.quota.QuotaUtils;
import org.junit.jupiter.api.Test;

/**
 * Client quotas against Kafka 4.3.1's own classes (kafka-server and kafka-clients, test dependencies): the rate and
 * throttle of one sensor against kafka-clients' {@code Sensor} with a {@code Rate} and {@code QuotaUtils}, and whole
 * quota configurations against Kafka's {@code ClientQuotaManager} with its default callback, which must give the same
 * throttle to every call, the same quota and the same largest fetch, and the controller mutation quota against
 * Kafka's {@code ControllerMutationQuotaManager}.
 *
 * <p>Each configuration is set before any traffic: Kafka also records clients without a quota once any quota of the
 * kind exists, which this broker does not (see {@link ClientRateQuota}), so a quota added after traffic may judge a
 * client differently for up to {@code quota.window.num} seconds.
 */
class ClientRateQuotaParityTest {

    private static final String[] USERS = {"alice", "bob", "carol", "a b", ""};
    private static final String[] CLIENT_IDS = {"app", "other", "tool", ""};

    /** Kafka's clock, moved by the test. */
    private static final class TestTime implements Time {
        long nowMillis = 1_700_000_000_000L;

        @Override
        public long milliseconds() {
            return nowMillis;
        }

        @Override
        public long nanoseconds() {
            return TimeUnit.MILLISECONDS.toNanos(nowMillis);
        }

        @Override
        public void sleep(long millis) {
            nowMillis += millis;
        }

        @Override
        public void waitObject(Object lock, Supplier<Boolean> condition, long deadlineMillis) {
            throw new UnsupportedOperationException();
        }
    }

    private static long seed(String name) {
        long seed = Long.getLong("sluice.quotas.seed", System.nanoTime());
        System.out.println(name + " seed: " + seed + " (-Dsluice.quotas.seed=" + seed + ")");
        return seed;
    }

    @Test
    void measuresAndThrottlesAsKafkasSensor() {
        long seed = seed("measuresAndThrottlesAsKafkasSensor");
        Random random = new Random(seed);
        int throttled = 0;
        // At least 200 runs, and on until 1,000 throttled calls were compared: how many a run throttles is random.
        for (int run = 0; run < 200 || throttled < 1000 && run < 5000; run++) {
            int samples = 1 + random.nextInt(12);
            int windowSeconds = 1 + random.nextInt(3);
            double bound = random.nextInt(4) == 0 ? 0.5 + random.nextInt(10) : 100 + random.nextInt(100_000);
            Metrics metrics = new Metrics(new TestTime());
            Sensor sensor = metrics.sensor("s", new MetricConfig().timeWindow(windowSeconds, TimeUnit.SECONDS)
                    .samples(samples).quota(Quota.upperBound(bound)));
            sensor.add(metrics.metricName("rate", "g"), new Rate());
            SampledRate ours = new SampledRate(samples, windowSeconds * 1000L);
            long now = 1_000_000L + random.nextInt(1000);
            for (int i = 0; i < 300; i++) {
                now += switch (random.nextInt(6)) {
                    case 0 -> 0;
                    case 1 -> random.nextInt(5);
                    case 2, 3 -> random.nextInt(300);
                    case 4 -> random.nextInt(3000);
                    default -> random.nextInt(40_000);
                };
                double value = random.nextInt(8) == 0 ? -random.nextInt(500) : random.nextInt((int) bound * 3 + 2);
                long expected;
                try {
                    sensor.record(value, now, true);
                    expected = 0;
                } catch (QuotaViolationException e) {
                    expected = QuotaUtils.throttleTime(e, now);
                }
                assertThat(ours.recordAndGetThrottleMillis(value, now, bound))
                        .as("seed %d run %d call %d", seed, run, i).isEqualTo(expected);
                throttled += expected > 0 ? 1 : 0;
            }
            metrics.close();
        }
        assertThat(throttled).as("calls throttled").isGreaterThanOrEqualTo(1000);
    }

    @Test
    void throttlesAsKafkasClientQuotaManager() throws Exception {
        long seed = seed("throttlesAsKafkasClientQuotaManager");
        Random random = new Random(seed);
        int throttled = 0;
        // At least 60 runs, and on until 500 throttled calls were compared: a run's quotas may match few of its calls.
        for (int run = 0; run < 60 || throttled < 500 && run < 2000; run++) {
            QuotaType kafkaType = random.nextBoolean() ? QuotaType.PRODUCE : QuotaType.REQUEST;
            ClientRateQuota.Kind kind = kafkaType == QuotaType.PRODUCE ? ClientRateQuota.Kind.PRODUCE
                    : ClientRateQuota.Kind.REQUEST;
            TestTime time = new TestTime();
            Metrics metrics = new Metrics(time);
            ClientQuotaManager kafka = new ClientQuotaManager(new ClientQuotaManagerConfig(11, 1), metrics,
                    kafkaType, time, "parity-");
            try {
                ClientRateQuota ours = new ClientRateQuota(kind, QuotaSettings.DEFAULTS);
                ours.update(randomQuotas(random, kind.key(), kafka));
                for (int i = 0; i < 400; i++) {
                    time.nowMillis += random.nextInt(4) == 0 ? random.nextInt(3000) : random.nextInt(200);
                    String user = USERS[random.nextInt(USERS.length)];
                    String clientId = CLIENT_IDS[random.nextInt(CLIENT_IDS.length)];
                    Session session = new Session(new KafkaPrincipal("User", user), InetAddress.getLoopbackAddress(),
                            null);
                    org.apache.kafka.network.Session kafkaSession = new org.apache.kafka.network.Session(
                            new KafkaPrincipal("User", user), InetAddress.getLoopbackAddress());
                    long value = kind == ClientRateQuota.Kind.REQUEST ? random.nextInt(50_000_000)
                            : random.nextInt(20_000);
                    double kafkaValue = kind == ClientRateQuota.Kind.REQUEST ? value * (100.0 / 1_000_000_000L)
                            : value;
                    String what = "seed " + seed + " run " + run + " call " + i + " " + user + "/" + clientId;
                    switch (random.nextInt(8)) {
                        case 0 -> {
                            kafka.recordNoThrottle(kafkaSession, clientId, kafkaValue);
                            ours.recordNoThrottle(session, clientId, value, time.nowMillis);
                        }
                        case 1 -> {
                            kafka.unrecordQuotaSensor(kafkaSession, clientId, kafkaValue, time.nowMillis);
                            ours.unrecord(session, clientId, value, time.nowMillis);
                        }
                        default -> {
                            long expected = kafka.maybeRecordAndGetThrottleTimeMs(kafkaSession, clientId, kafkaValue,
                                    time.nowMillis);
                            if (kind == ClientRateQuota.Kind.REQUEST) {
                                expected = Math.min(expected, 1000); // ClientRequestQuotaManager's bound
                            }
                            assertThat(ours.recordAndGetThrottleMillis(session, clientId, value, time.nowMillis))
                                    .as(what).isEqualTo(expected);
                            throttled += expected > 0 ? 1 : 0;
                        }
                    }
                    double kafkaQuota = kafka.quota(user, clientId).bound();
                    Double quota = ours.quota(user, clientId);
                    assertThat(quota == null ? (double) Long.MAX_VALUE : quota).as(what).isEqualTo(kafkaQuota);
                    assertThat(ours.maxValueInQuotaWindow(session, clientId)).as(what)
                            .isEqualTo(kafka.maxValueInQuotaWindow(kafkaSession, clientId));
                }
            } finally {
                kafka.shutdown();
                metrics.close();
            }
        }
        assertThat(throttled).as("calls throttled").isGreaterThanOrEqualTo(500);
    }

    /**
     * The controller mutation quota against Kafka's {@code ControllerMutationQuotaManager}: requests of one to four
     * topics, strict or permissive, must be refused, throttled and let through as Kafka's quotas do.
     */
    @Test
    void throttlesMutationsAsKafkasControllerMutationQuotaManager() throws Exception {
        long seed = seed("throttlesMutationsAsKafkasControllerMutationQuotaManager");
        Random random = new Random(seed);
        int refused = 0;
        int throttled = 0;
        for (int run = 0; run < 40 || (refused < 200 || throttled < 200) && run < 2000; run++) {
            TestTime time = new TestTime();
            Metrics metrics = new Metrics(time);
            ControllerMutationQuotaManager kafka = new ControllerMutationQuotaManager(new ClientQuotaManagerConfig(11,
                    1), metrics, time, "parity-", Optional.empty());
            try {
                MutationQuota ours = new MutationQuota(QuotaSettings.DEFAULTS);
                ours.update(randomQuotas(random, QuotaSet.CONTROLLER_MUTATION_RATE, kafka));
                for (int i = 0; i < 300; i++) {
                    time.nowMillis += random.nextInt(4) == 0 ? random.nextInt(5000) : random.nextInt(300);
                    String user = USERS[random.nextInt(USERS.length)];
                    String clientId = CLIENT_IDS[random.nextInt(CLIENT_IDS.length)];
                    boolean strict = random.nextBoolean();
                    Session session = new Session(new KafkaPrincipal("User", user), InetAddress.getLoopbackAddress(),
                            null);
                    org.apache.kafka.network.Session kafkaSession = new org.apache.kafka.network.Session(
                            new KafkaPrincipal("User", user), InetAddress.getLoopbackAddress());
                    ControllerMutationQuota kafkaPermits = strict ? kafka.newStrictQuotaFor(kafkaSession, clientId)
                            : kafka.newPermissiveQuotaFor(kafkaSession, clientId);
                    MutationQuota.Permits permits = ours.permits(session, clientId, strict, () -> time.nowMillis);
                    int topics = 1 + random.nextInt(4);
                    for (int t = 0; t < topics; t++) {
                        String what = "seed " + seed + " run " + run + " call " + i + " topic " + t + " " + user
                                + "/" + clientId + (strict ? " strict" : " permissive");
                        int partitions = 1 + random.nextInt(random.nextBoolean() ? 5 : 60);
                        Integer kafkaRefusal = null;
                        try {
                            kafkaPermits.record(partitions);
                        } catch (ThrottlingQuotaExceededException e) {
                            kafkaRefusal = e.throttleTimeMs();
                        }
                        Integer refusal = null;
                        try {
                            permits.record(partitions);
                        } catch (ThrottlingQuotaExceededException e) {
                            refusal = e.throttleTimeMs();
                        }
                        assertThat(refusal).as(what).isEqualTo(kafkaRefusal);
                        refused += refusal != null ? 1 : 0;
                        time.nowMillis += random.nextInt(3);
                    }
                    assertThat(permits.throttleMillis()).as("seed %d run %d call %d", seed, run, i)
                            .isEqualTo(kafkaPermits.throttleTime());
                    throttled += permits.throttleMillis() > 0 ? 1 : 0;
                }
            } finally {
                kafka.shutdown();
                metrics.close();
            }
        }
        assertThat(refused).as("topics refused").isGreaterThanOrEqualTo(200);
        assertThat(throttled).as("requests throttled").isGreaterThanOrEqualTo(200);
    }

    /** A random configuration of {@code key} over the 8 levels, given to Kafka's manager and returned as a set. */
    private static QuotaSet randomQuotas(Random random, String key, ClientQuotaManager kafka) {
        Map<QuotaEntity, Map<String, Double>> values = new HashMap<>();
        int count = random.nextInt(7);
        for (int i = 0; i < count; i++) {
            String user = random.nextInt(3) == 0 ? null : USERS[random.nextInt(USERS.length - 1)];
            String clientId = random.nextInt(3) == 0 ? null : CLIENT_IDS[random.nextInt(CLIENT_IDS.length - 1)];
            double quota = switch (key) {
                case QuotaSet.REQUEST_PERCENTAGE -> 1 + random.nextInt(200) / 4.0;
                case QuotaSet.CONTROLLER_MUTATION_RATE -> 0.5 + random.nextInt(40) / 2.0;
                default -> 1000 + random.nextInt(20_000);
            };
            int shape = random.nextInt(3);
            QuotaEntity entity = switch (shape) {
                case 0 -> QuotaEntity.user(user);
                case 1 -> QuotaEntity.clientId(clientId);
                default -> QuotaEntity.userClientId(user, clientId);
            };
            values.put(entity, Map.of(key, quota));
            Optional<ConfigEntity> kafkaUser = shape == 1 ? Optional.empty() : Optional.of(user == null
                    ? ClientQuotaManager.DEFAULT_USER_ENTITY : new ClientQuotaManager.UserEntity(
                    org.apache.kafka.common.utils.Sanitizer.sanitize(user)));
            Optional<ConfigEntity> kafkaClient = shape == 0 ? Optional.empty() : Optional.of(clientId == null
                    ? ClientQuotaManager.DEFAULT_USER_CLIENT_ID : new ClientQuotaManager.ClientIdEntity(clientId));
            kafka.updateQuota(kafkaUser, kafkaClient, Optional.of(Quota.upperBound(quota)));
        }
        return QuotaSet.of(values);
    }
}
