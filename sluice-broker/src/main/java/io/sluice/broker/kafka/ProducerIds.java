package io.sluice.broker.kafka;

import java.util.concurrent.atomic.AtomicLong;

/**
 * Producer ids for idempotent producers: unique across restarts without a record of those given, since each start
 * begins above the wall-clock time in microseconds of that start (a restart happens later, so its ids are larger).
 * Thread-safe.
 */
final class ProducerIds {

    private final AtomicLong last = new AtomicLong(System.currentTimeMillis() * 1_000);

    long next() {
        return last.incrementAndGet();
    }
}
