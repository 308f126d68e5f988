package io.sluice.broker.metrics;

import io.prometheus.metrics.core.metrics.Counter;
import io.prometheus.metrics.core.metrics.GaugeWithCallback;
import io.prometheus.metrics.core.metrics.Histogram;
import io.prometheus.metrics.exporter.httpserver.HTTPServer;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import io.sluice.store.ConsumerPosition;
import io.sluice.store.Store;
import java.io.IOException;
import java.util.Map;
import java.util.function.IntSupplier;

/**
 * The broker's Prometheus metrics: requests and their latency per API, bytes in and out, the time from a batch's
 * append to the store's acknowledgement (the group commit's flush latency under SYNC), and, read when scraped,
 * each partition's log start and end offsets, each consumer group's lag, and open connections. Served as
 * Prometheus text on an HTTP endpoint ({@link #serve}). Thread-safe.
 */
public final class BrokerMetrics {

    private static final double[] LATENCY_BUCKETS = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
        0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30};

    private final PrometheusRegistry registry = new PrometheusRegistry();
    private final Counter requests;
    private final Counter requestsByVersion;
    private final Histogram latency;
    private final Counter bytesIn;
    private final Counter bytesOut;
    private final Histogram appendAck;

    /**
     * @param store the store served, read when scraped
     * @param connections the number of open connections
     */
    public BrokerMetrics(Store store, IntSupplier connections) {
        requests = Counter.builder().name("sluice_broker_requests").help("Requests answered, by API")
                .labelNames("api").register(registry);
        // As Kafka's RequestsPerSec has a version tag: which versions clients use (after a broker serves new ones,
        // whether they moved to them, e.g. to Fetch and Produce naming topics by id).
        requestsByVersion = Counter.builder().name("sluice_broker_requests_by_version")
                .help("Requests answered, by API and version").labelNames("api", "version").register(registry);
        latency = Histogram.builder().name("sluice_broker_request_duration_seconds")
                .help("From a request's arrival to its response being ready, by API (a long poll's wait included)")
                .labelNames("api").classicOnly().classicUpperBounds(LATENCY_BUCKETS).register(registry);
        bytesIn = Counter.builder().name("sluice_broker_received_bytes").help("Request bytes received")
                .register(registry);
        bytesOut = Counter.builder().name("sluice_broker_sent_bytes").help("Response bytes sent").register(registry);
        appendAck = Histogram.builder().name("sluice_broker_append_ack_seconds")
                .help("From a produced batch's append to the store's acknowledgement: the group commit's flush latency"
                        + " under SYNC and for forced appends, near zero under ASYNC")
                .classicOnly().classicUpperBounds(LATENCY_BUCKETS).register(registry);
        GaugeWithCallback.builder().name("sluice_broker_log_end_offset").help("A partition's next offset")
                .labelNames("topic", "partition").callback(callback -> {
                    for (Map.Entry<String, Integer> topic : store.declaredTopics().entrySet()) {
                        for (int p = 0; p < topic.getValue(); p++) {
                            callback.call(store.maxOffset(topic.getKey(), p), topic.getKey(), String.valueOf(p));
                        }
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("sluice_broker_log_start_offset").help("A partition's first retained offset")
                .labelNames("topic", "partition").callback(callback -> {
                    for (Map.Entry<String, Integer> topic : store.declaredTopics().entrySet()) {
                        for (int p = 0; p < topic.getValue(); p++) {
                            callback.call(store.minOffset(topic.getKey(), p), topic.getKey(), String.valueOf(p));
                        }
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("sluice_broker_group_lag")
                .help("Records a consumer group has not committed past, by store group name, topic and partition")
                .labelNames("group", "topic", "partition").callback(callback -> {
                    for (ConsumerPosition position : store.consumerPositions()) {
                        long end = store.maxOffset(position.topic(), position.queueId());
                        callback.call(Math.max(0, end - position.nextOffset()), position.group(), position.topic(),
                                String.valueOf(position.queueId()));
                    }
                }).register(registry);
        GaugeWithCallback.builder().name("sluice_broker_connections").help("Open client connections")
                .callback(callback -> callback.call(connections.getAsInt())).register(registry);
    }

    /**
     * Records one request.
     *
     * @param api the API's name, as Kafka names it
     * @param version the request's version
     * @param nanos from arrival to response ready
     * @param received request bytes, size prefix included
     * @param sent response bytes (0 if none)
     */
    public void request(String api, int version, long nanos, long received, long sent) {
        requests.labelValues(api).inc();
        requestsByVersion.labelValues(api, String.valueOf(version)).inc();
        latency.labelValues(api).observe(nanos / 1e9);
        bytesIn.inc(received);
        if (sent > 0) {
            bytesOut.inc(sent);
        }
    }

    /** @return how many requests of the API at that version were answered (tests: the versions clients chose) */
    public long requests(String api, int version) {
        return (long) requestsByVersion.labelValues(api, String.valueOf(version)).get();
    }

    /** @param nanos from a batch's append to the store's acknowledgement */
    public void appendAcknowledged(long nanos) {
        appendAck.observe(nanos / 1e9);
    }

    /**
     * Serves the metrics as Prometheus text at {@code /metrics}.
     *
     * @param host the address to bind (127.0.0.1 keeps them on this machine)
     * @param port the port, 0 for any free one
     * @return the running server; close it to stop
     * @throws IOException if the address cannot be bound
     */
    public HTTPServer serve(String host, int port) throws IOException {
        return HTTPServer.builder().hostname(host).port(port).registry(registry).buildAndStart();
    }
}
