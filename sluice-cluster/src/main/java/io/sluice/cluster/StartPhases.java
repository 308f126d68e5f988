package io.sluice.cluster;

import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How long each phase of a cluster broker's start took, logged as one line once it serves clients, so that a slow
 * start says where its time went: the JVM's own start (from the process's start to the broker's), the store's open
 * (its recovery after a crash), the Raft server's start (every group's log loaded), the metadata's snapshot, the
 * listener. Not thread-safe: the starting thread's.
 */
final class StartPhases {

    private static final Logger LOG = LoggerFactory.getLogger(StartPhases.class);

    private final int nodeId;
    private final long processStartMillis = ManagementFactory.getRuntimeMXBean().getStartTime();
    private final long beganMillis = System.currentTimeMillis();
    private long lastNanos = System.nanoTime();
    private final List<String> phases = new ArrayList<>();

    /** @param nodeId the node starting; the clock starts now */
    StartPhases(int nodeId) {
        this.nodeId = nodeId;
    }

    /** Ends the phase under way, named {@code what}, and starts the next. */
    void done(String what) {
        long now = System.nanoTime();
        phases.add(what + " " + TimeUnit.NANOSECONDS.toMillis(now - lastNanos) + " ms");
        lastNanos = now;
    }

    /** Logs every phase, after the time the process took to reach the broker's start. */
    void log() {
        LOG.info("node {} started in {} ms since its process began: process to broker start {} ms, {}", nodeId,
                System.currentTimeMillis() - processStartMillis, beganMillis - processStartMillis,
                String.join(", ", phases));
    }
}
