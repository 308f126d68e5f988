package io.sluice.broker.kafka;

import io.sluice.broker.ClusterView;
import io.sluice.broker.kafka.security.ClientQuotaRequests;
import io.sluice.broker.kafka.security.ClientQuotas;
import io.sluice.broker.kafka.security.MutationQuota;
import io.sluice.broker.kafka.security.QuotaMutation;
import io.sluice.broker.kafka.security.QuotaSet;
import io.sluice.broker.kafka.security.QuotaSettings;
import io.sluice.broker.kafka.security.Session;
import io.sluice.broker.net.AcceptRates;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.util.concurrent.CompletableFuture;
import java.util.function.LongSupplier;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.protocol.ApiMessage;

/**
 * Client quotas as Kafka's broker applies them: the quotas are the cluster's security record {@code quotas}
 * (DescribeClientQuotas, AlterClientQuotas: {@code kafka-client-quotas}, {@code kafka-configs --entity-type
 * users/clients/ips}); a produce's bytes count against {@code producer_byte_rate}, a fetch's response bytes against
 * {@code consumer_byte_rate}, and every request's handling time against {@code request_percentage}, per user and
 * client id as the most specific quota says. A client over a quota is answered with the time to wait in
 * {@code throttle_time_ms} and its connection reads nothing for that long (KIP-219). Thread-safe.
 */
final class Throttles {

    private final ClusterView cluster;
    private final ClientQuotas quotas;
    private final LongSupplier clock;
    private volatile String quotaText;

    Throttles(ClusterView cluster, QuotaSettings settings, LongSupplier clock) {
        this.cluster = cluster;
        this.quotas = new ClientQuotas(settings, ClientQuotaRequests.SYSTEM_RESOLVER);
        this.clock = clock;
    }

    /** Takes the cluster's quotas again when their record changed. */
    private ClientQuotas current() {
        String text = cluster.securityRecord(QuotaMutation.RECORD);
        if (text != quotaText) {
            synchronized (this) {
                if (text != quotaText) {
                    quotas.update(QuotaSet.ofRecord(text));
                    quotaText = text;
                }
            }
        }
        return quotas;
    }

    /** @return the connection rates: Kafka's max.connection.creation.rate and each address's quota */
    AcceptRates acceptRates() {
        return new AcceptRates() {
            @Override
            public long waitMillis(long nowMillis) {
                return current().connections().recordConnectionAndGetWaitMillis(nowMillis);
            }

            @Override
            public long refuseMillis(java.net.InetAddress address, long nowMillis) {
                return current().connections().recordIpConnectionAndGetThrottleMillis(address, nowMillis);
            }
        };
    }

    DescribeClientQuotasResponseData describe(DescribeClientQuotasRequestData request, short version) {
        return ClientQuotaRequests.describe(current().quotas(), request, version);
    }

    CompletableFuture<AlterClientQuotasResponseData> alter(AlterClientQuotasRequestData request, short version) {
        QuotaMutation mutation = ClientQuotaRequests.alter(request, version);
        return cluster.alterSecurityRecord(QuotaMutation.RECORD, mutation).thenApply(ignored -> mutation.response());
    }

    /**
     * Records a request against its client's quotas and sets its answer's throttle_time_ms.
     *
     * @return how long the connection is to read nothing, 0 for no throttle
     */
    long throttle(ApiKeys key, Session session, String clientId, int requestBytes, long arrivedNanos,
                  ApiMessage response) {
        if (session == null || session.principal() == null || key == ApiKeys.SASL_HANDSHAKE
                || key == ApiKeys.SASL_AUTHENTICATE || key == ApiKeys.WRITE_TXN_MARKERS) {
            return 0;
        }
        ClientQuotas now = current();
        long millis = clock.getAsLong();
        String client = clientId == null ? "" : clientId;
        long throttle = now.request().recordAndGetThrottleMillis(session, client,
                System.nanoTime() - arrivedNanos, millis);
        if (key == ApiKeys.PRODUCE) {
            throttle = Math.max(throttle, now.produce().recordAndGetThrottleMillis(session, client, requestBytes,
                    millis));
        }
        if (throttle > 0) {
            setThrottle(response, throttle);
        }
        return throttle;
    }

    /**
     * @return the hold of a CreateTopics, CreatePartitions or DeleteTopics request on its client's
     *     {@code controller_mutation_rate}: strict (a topic past the quota refused) from the versions Kafka's
     *     controller is strict from (CreateTopics 6, CreatePartitions 3, DeleteTopics 5)
     */
    MutationQuota.Permits mutations(ApiKeys key, short version, Session session, String clientId) {
        short strictSince = switch (key) {
            case CREATE_TOPICS -> 6;
            case CREATE_PARTITIONS -> 3;
            default -> 5;
        };
        return current().mutations().permits(session, clientId, version >= strictSince, clock);
    }

    /** Sets a response's throttle_time_ms to a mutation quota's wait when that is longer than its own. */
    static long withMutationThrottle(long throttle, MutationQuota.Permits permits, ApiMessage response) {
        long mutation = permits.throttleMillis();
        if (mutation > throttle) {
            setThrottle(response, mutation);
            return mutation;
        }
        return throttle;
    }

    /** A consumer's fetch: its response bytes and handling time against its quotas; a follower's is exempt. */
    long fetchThrottle(Session session, String clientId, long responseBytes, long arrivedNanos, boolean follower) {
        if (follower || session == null || session.principal() == null) {
            return 0;
        }
        ClientQuotas now = current();
        long millis = clock.getAsLong();
        String client = clientId == null ? "" : clientId;
        long request = now.request().recordAndGetThrottleMillis(session, client, System.nanoTime() - arrivedNanos,
                millis);
        return Math.max(request, now.fetch().recordAndGetThrottleMillis(session, client, responseBytes, millis));
    }

    /** Each response type's throttle_time_ms setter, found once per type (every answer that has one). */
    private static final ClassValue<MethodHandle> SETTERS = new ClassValue<>() {
        @Override
        protected MethodHandle computeValue(Class<?> type) {
            try {
                return MethodHandles.publicLookup().findVirtual(type, "setThrottleTimeMs",
                        MethodType.methodType(type, int.class));
            } catch (NoSuchMethodException | IllegalAccessException e) {
                return null;
            }
        }
    };

    private static void setThrottle(ApiMessage response, long throttle) {
        MethodHandle setter = SETTERS.get(response.getClass());
        if (setter == null) {
            return;
        }
        try {
            setter.invoke(response, (int) Math.min(Integer.MAX_VALUE, throttle));
        } catch (Throwable e) {
            throw new IllegalStateException("setting throttle_time_ms of " + response.getClass().getSimpleName(), e);
        }
    }
}
