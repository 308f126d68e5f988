package io.sluice.store.internal.engine;

import io.sluice.store.RetentionReport;
import io.sluice.store.StoreException;
import io.sluice.store.internal.task.TaskGate;
import io.sluice.store.io.DiskSpace;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The store's retention passes: one pass runs each log's retention (docs/store.md, "Retention and consumer
 * positions"), every {@code checkIntervalMillis} on the scheduler or when asked ({@code Store.enforceRetention}).
 * {@code retentionBytes} applies to each log; the disk's use is measured once per pass. A topic's configs
 * ({@code Store.setTopicConfigs}) set its own logs' limits ({@link TopicRetention}).
 *
 * <p>A closed log ({@link ClosedLog}) is opened for a pass only if the pass could delete something from it: it was
 * forced whole as it closed, so nothing changed in it since but the clock, the disk's use and its topic's limits.
 *
 * <p>Thread-safe: a pass holds the log-set lock for reading, so no log is deleted or truncated under it, and uses each
 * log it visits, so none closes while idle under it.
 */
final class RetentionPasses {

    private static final Logger LOG = LoggerFactory.getLogger(RetentionPasses.class);

    private final Logs logs;
    private final Scheduler scheduler;
    private final TaskGate gate;
    private volatile Scheduler.Timer timer;

    /** @param gate scheduled passes run inside it */
    RetentionPasses(Logs logs, Scheduler scheduler, TaskGate gate) {
        this.logs = logs;
        this.scheduler = scheduler;
        this.gate = gate;
    }

    /**
     * Runs one pass on every log now.
     *
     * @return what the passes did together: counts summed, the first reason and holding group found
     * @throws StoreException if deleting files failed
     */
    RetentionReport runNow() {
        logs.checkWritable();
        try {
            return pass();
        } catch (IOException e) {
            throw new StoreException("retention pass failed: " + e.getMessage(), e);
        }
    }

    private RetentionReport pass() throws IOException {
        logs.setLock().readLock().lock();
        try {
            DiskSpace space = logs.config().fileIO().diskSpace(logs.root());
            long capacity = space.usedBytes() + space.usableBytes();
            long now = logs.config().clock().millis();
            int segments = 0;
            long bytes = 0;
            long logBytes = 0;
            double ratio = 0;
            boolean refused = false;
            String heldBy = null;
            String reason = null;
            for (String name : logs.names()) {
                TopicRetention limits = TopicRetention.of(logs.config().retention(), name.isEmpty() ? Map.of()
                        : logs.registry().configs(name.contains("/") ? name.substring(0, name.indexOf('/')) : name));
                double used = capacity <= 0 ? 0 : (double) (space.usedBytes() - bytes) / capacity;
                LogStore log = logs.use(name, closedLog -> mayDelete(closedLog, now, limits, used));
                if (log == null) {
                    continue; // closed, and a pass would delete nothing: it stays closed
                }
                RetentionReport report;
                try {
                    report = log.enforceRetention(space, limits.millis(), limits.bytes());
                } finally {
                    logs.release(log);
                }
                segments += report.segmentsDeleted();
                bytes += report.bytesDeleted();
                logBytes += report.logBytes();
                ratio = Math.max(ratio, report.diskUsedRatio());
                refused |= report.appendsRefused();
                heldBy = heldBy != null ? heldBy : report.heldBy();
                reason = reason != null ? reason : report.reason();
            }
            logs.appendsRefused(refused);
            return new RetentionReport(segments, bytes, logBytes, ratio, refused, heldBy, reason);
        } finally {
            logs.setLock().readLock().unlock();
        }
    }

    /**
     * @return true if a pass could delete a segment of a closed log, which then opens for it; a log not opened since
     *     the store opened is opened once if it has more than one segment (the active one always stays), and from then
     *     on judged by what it held as it closed
     */
    private boolean mayDelete(ClosedLog log, long now, TopicRetention limits, double diskUsedRatio) {
        if (log.outlook() == null) {
            return log.segmentCount() > 1;
        }
        return log.outlook().mayDelete(now, limits.millis(), limits.bytes(), diskUsedRatio,
                logs.config().retention().diskCleanRatio());
    }

    /** Schedules the next pass. */
    void schedule() {
        timer = scheduler.schedule(this::scheduled, logs.config().retention().checkIntervalMillis());
    }

    private void scheduled() {
        if (!gate.enter()) {
            return;
        }
        try {
            pass();
        } catch (IOException | RuntimeException e) {
            LOG.error("retention pass on {} failed; will retry: {}", logs.root(), e.toString());
        } finally {
            gate.exit();
        }
        schedule();
    }

    /** Cancels the next pass, if one is scheduled. */
    void cancel() {
        Scheduler.Timer scheduled = timer;
        if (scheduled != null) {
            scheduled.cancel();
        }
    }
}
