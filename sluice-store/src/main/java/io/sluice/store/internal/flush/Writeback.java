package io.sluice.store.internal.flush;

import io.sluice.store.internal.log.CommitLog;
import io.sluice.store.internal.log.Segment;
import java.io.IOException;

/**
 * Writeback control for the page-cache write paths under ASYNC flush: starts writeback of dirty log pages
 * ({@code sync_file_range(SYNC_FILE_RANGE_WRITE)}) a fixed distance behind the committed position, in steps
 * of at least {@link #STEP_BYTES}.
 *
 * <h2>Why</h2>
 * Left alone, the kernel lets dirty pages pile up until {@code dirty_background_ratio}, then writes them back
 * in bulk, and past {@code dirty_ratio} it throttles the writing thread, which is the appender: its latency
 * jumps by milliseconds. Starting writeback early keeps the pile small and the disk busy all the time,
 * instead of idle and then flooded. The distance leaves the most recent pages alone, so a page still being
 * filled is not written back twice. The call returns at once; the flusher's forces still decide durability.
 *
 * <p>Used by the flusher thread only.
 */
final class Writeback {

    /** Smallest range worth a system call. */
    static final long STEP_BYTES = 1 << 20;

    private final CommitLog log;
    private final long distanceBytes;
    private long started;

    Writeback(CommitLog log, long distanceBytes) {
        this.log = log;
        this.distanceBytes = distanceBytes;
        this.started = log.flushedPosition();
    }

    /** Starts writeback up to {@code committed} less the distance, if a whole step has gathered. */
    void maybeStart(long committed) throws IOException {
        long target = committed - distanceBytes;
        if (target - started < STEP_BYTES) {
            return;
        }
        for (Segment segment : log.segments()) {
            long from = Math.max(started, segment.base());
            long to = Math.min(target, segment.end());
            if (from < to && segment.tryRetain()) {
                try {
                    segment.file().startWriteback(from - segment.base(), to - from);
                } finally {
                    segment.release();
                }
            }
        }
        started = target;
    }

    /** @return the log position below which writeback has been started */
    long started() {
        return started;
    }
}
