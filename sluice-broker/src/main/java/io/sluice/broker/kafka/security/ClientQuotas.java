package io.sluice.broker.kafka.security;

import java.util.Objects;

/**
 * A broker's client quotas: the produce, fetch, request time and controller mutation quotas of users and client ids,
 * and the connection creation rates, all fed from the cluster's quota set.
 *
 * <p>Give it every new quota set ({@link #update}, after each change of the {@code quotas} security record, and once
 * at start), and call {@link #expireIdle} now and then (Kafka sweeps every 30 s) so that the rates of clients gone
 * for an hour are dropped. Thread-safe.
 */
public final class ClientQuotas {

    private final ClientRateQuota produce;
    private final ClientRateQuota fetch;
    private final ClientRateQuota request;
    private final MutationQuota mutations;
    private final ConnectionRateQuotas connections;
    private volatile QuotaSet quotas = QuotaSet.empty();

    /** Quotas measured with {@code settings}, bounding nothing until {@link #update}. */
    public ClientQuotas(QuotaSettings settings, ClientQuotaRequests.HostResolver resolver) {
        Objects.requireNonNull(settings, "settings");
        this.produce = new ClientRateQuota(ClientRateQuota.Kind.PRODUCE, settings);
        this.fetch = new ClientRateQuota(ClientRateQuota.Kind.FETCH, settings);
        this.request = new ClientRateQuota(ClientRateQuota.Kind.REQUEST, settings);
        this.mutations = new MutationQuota(settings);
        this.connections = new ConnectionRateQuotas(settings, resolver);
    }

    /** Takes the quotas of {@code next} from now on (the rates measured so far are kept). */
    public synchronized void update(QuotaSet next) {
        Objects.requireNonNull(next, "next");
        if (next.equals(quotas)) {
            return;
        }
        produce.update(next);
        fetch.update(next);
        request.update(next);
        mutations.update(next);
        connections.update(next);
        quotas = next;
    }

    /** @return the quota set last given to {@link #update} */
    public QuotaSet quotas() {
        return quotas;
    }

    /** @return the produce bytes quota ({@code producer_byte_rate}) */
    public ClientRateQuota produce() {
        return produce;
    }

    /** @return the fetch bytes quota ({@code consumer_byte_rate}) */
    public ClientRateQuota fetch() {
        return fetch;
    }

    /** @return the request handling time quota ({@code request_percentage}) */
    public ClientRateQuota request() {
        return request;
    }

    /** @return the partitions created, added and deleted per second ({@code controller_mutation_rate}) */
    public MutationQuota mutations() {
        return mutations;
    }

    /** @return the connection creation rates ({@code max.connection.creation.rate}, {@code connection_creation_rate}) */
    public ConnectionRateQuotas connections() {
        return connections;
    }

    /** Drops the rates of clients and addresses idle for an hour. */
    public void expireIdle(long nowMillis) {
        produce.expireIdle(nowMillis);
        fetch.expireIdle(nowMillis);
        request.expireIdle(nowMillis);
        mutations.expireIdle(nowMillis);
        connections.expireIdle(nowMillis);
    }
}
