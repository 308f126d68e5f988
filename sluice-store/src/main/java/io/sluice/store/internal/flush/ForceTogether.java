package io.sluice.store.internal.flush;

import io.sluice.store.internal.io.StoreSync;
import io.sluice.store.internal.task.SerialTask;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The store's SYNC group commit across logs: one force makes the waiting appends of many logs durable.
 *
 * <p>With a log per partition, appends for many partitions at once would each need their log's own force, and a
 * force costs the device about the same whatever it carries. Here every log with appends waiting asks for a round; a
 * round commits each such log's buffered bytes to its files, then makes them all durable with one {@code syncfs} of
 * the store's file system ({@link StoreSync}), and only then advances each log's flushed position to
 * what it committed before the sync began. A round that finds one log forces that log alone (a file's own force is
 * cheaper than a file system's). Where the seam cannot sync a file system, each log is forced in turn.
 *
 * <p>Rounds run one at a time on the store's {@link Scheduler}; logs that ask while one runs ride on the next. A
 * failed commit fails that log's flusher; a failed sync fails every log of the round (their flushed positions do not
 * move), as a failed force does, and every later round's logs too ({@link StoreSync}: the failed write-back may have
 * taken any log's pages). An unexpected exception fails the round's logs rather than leave their appends waiting.
 *
 * <p>Thread-safe.
 */
public final class ForceTogether {

    private final StoreSync sync;
    private final ConcurrentLinkedQueue<FlushService> asking = new ConcurrentLinkedQueue<>();
    private final SerialTask task;

    /**
     * @param sync the store's syncs of its file system
     * @param scheduler where rounds run
     */
    public ForceTogether(StoreSync sync, Scheduler scheduler) {
        this.sync = sync;
        this.task = new SerialTask(scheduler, this::rounds);
    }

    /** A log's flusher has appends waiting for a force: it is in the next round. */
    void ask(FlushService flusher) {
        if (flusher.markAsking()) {
            asking.add(flusher);
        }
        task.request();
    }

    private void rounds() {
        while (true) {
            List<FlushService> round = new ArrayList<>();
            FlushService next;
            while ((next = asking.poll()) != null) {
                next.clearAsking();
                if (next.enterRound()) {
                    round.add(next);
                }
            }
            if (round.isEmpty()) {
                return;
            }
            try {
                if (round.size() == 1) {
                    round.getFirst().forceAlone();
                } else {
                    forceTogether(round);
                }
            } catch (RuntimeException e) {
                IOException failure = new IOException("forcing the logs together failed: " + e, e);
                for (FlushService flusher : round) {
                    flusher.fail(failure);
                }
            } finally {
                for (FlushService flusher : round) {
                    flusher.exitRound();
                }
            }
            for (FlushService flusher : round) {
                if (flusher.hasWaiters()) {
                    ask(flusher);
                }
            }
        }
    }

    private void forceTogether(List<FlushService> round) {
        List<FlushService> committed = new ArrayList<>(round.size());
        long[] targets = new long[round.size()];
        for (FlushService flusher : round) {
            long target = flusher.commitForRound();
            if (target >= 0) {
                targets[committed.size()] = target;
                committed.add(flusher);
            }
        }
        if (committed.isEmpty()) {
            return;
        }
        boolean synced;
        try {
            synced = sync.sync();
        } catch (IOException e) {
            for (FlushService flusher : committed) {
                flusher.fail(e);
            }
            return;
        }
        for (int i = 0; i < committed.size(); i++) {
            if (synced) {
                committed.get(i).forced(targets[i]);
            } else {
                committed.get(i).forceAndComplete(targets[i]);
            }
        }
    }
}
