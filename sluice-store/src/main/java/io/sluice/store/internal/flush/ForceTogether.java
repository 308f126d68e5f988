package io.sluice.store.internal.flush;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import io.sluice.store.internal.task.SerialTask;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The store's SYNC group commit across logs: one force makes the waiting appends of many logs durable.
 *
 * <p>With a log per partition, appends for many partitions at once would each need their log's own force, and a
 * force costs the device about the same whatever it carries. Here every log with appends waiting asks for a round; a
 * round commits each such log's buffered bytes to its files, then makes them all durable with one {@code syncfs} of
 * the store's file system ({@link FileIO#syncFileSystem}), and only then advances each log's flushed position to
 * what it committed before the sync began. A round that finds one log forces that log alone (a file's own force is
 * cheaper than a file system's). Where the seam cannot sync a file system, each log is forced in turn.
 *
 * <p>Rounds run one at a time on the store's {@link Scheduler}; logs that ask while one runs ride on the next. A
 * failed commit fails that log's flusher; a failed sync fails every log of the round (their flushed positions do not
 * move), as a failed force does.
 *
 * <p>Thread-safe.
 */
public final class ForceTogether {

    private final FileIO io;
    private final Path root;
    private final ConcurrentLinkedQueue<FlushService> asking = new ConcurrentLinkedQueue<>();
    private final SerialTask task;
    private volatile long fileSystemSyncs;

    /**
     * @param io the file seam
     * @param root the store's directory: its file system is the one synced
     * @param scheduler where rounds run
     */
    public ForceTogether(FileIO io, Path root, Scheduler scheduler) {
        this.io = io;
        this.root = root;
        this.task = new SerialTask(scheduler, this::rounds);
    }

    /** A log's flusher has appends waiting for a force: it is in the next round. */
    void ask(FlushService flusher) {
        if (flusher.markAsking()) {
            asking.add(flusher);
        }
        task.request();
    }

    /** @return how many rounds made their logs durable with one sync of the file system */
    public long fileSystemSyncs() {
        return fileSystemSyncs;
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
            synced = io.syncFileSystem(root);
        } catch (IOException e) {
            for (FlushService flusher : committed) {
                flusher.fail(e);
            }
            return;
        }
        if (synced) {
            fileSystemSyncs++;
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
