package io.sluice.broker.kafka;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Producer ids for idempotent producers: unique across restarts without a record of those given, since each start
 * begins above the wall-clock time in microseconds of that start (a restart happens later, so its ids are larger),
 * and unique across the brokers of a cluster, since each gives only ids equal to its node id modulo 64 (a cluster has
 * at most 64 brokers). Thread-safe.
 */
final class ProducerIds {

    /** Brokers a cluster may have: the ids of one broker are its node id modulo this. */
    static final int STRIDE = 64;

    private final AtomicLong last;

    /** @param nodeId the broker's node id (any value for a broker alone) */
    ProducerIds(int nodeId) {
        last = new AtomicLong(System.currentTimeMillis() * 1_000 * STRIDE + Math.floorMod(nodeId, STRIDE));
    }

    long next() {
        return last.addAndGet(STRIDE);
    }
}
