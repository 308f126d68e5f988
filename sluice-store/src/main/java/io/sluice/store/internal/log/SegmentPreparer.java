package io.sluice.store.internal.log;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.Scheduler;
import java.io.IOException;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.atomic.AtomicBoolean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the next segment in the background (a task on the store's {@link Scheduler}) while the active one
 * fills, so a roll rarely waits for file creation and block allocation. If the roll comes before the task
 * started, the roll runs it itself; a failed background attempt (a full disk) is not fatal: the roll tries
 * again and reports that attempt's error.
 *
 * <p>{@link #prepare}, {@link #take} and {@link #close} are called by the single log writer (or the closing
 * thread).
 */
final class SegmentPreparer implements AutoCloseable {

    /** Makes a segment. */
    @FunctionalInterface
    interface Factory {
        Segment create(long base, long size) throws IOException;
    }

    private static final Logger LOG = LoggerFactory.getLogger(SegmentPreparer.class);

    private final Factory factory;
    private final FileIO io;
    private final Scheduler scheduler;
    private Preparation prepared;

    SegmentPreparer(Factory factory, FileIO io, Scheduler scheduler) {
        this.factory = factory;
        this.io = io;
        this.scheduler = scheduler;
    }

    /** Starts creating the segment of {@code size} bytes at {@code base} unless it is already under way. */
    void prepare(long base, long size) {
        if (prepared != null && prepared.base == base) {
            return;
        }
        discardPrepared();
        prepared = new Preparation(base, size);
        scheduler.execute(prepared);
    }

    /**
     * @param atLeast the least size that will do (a record larger than the prepared segment needs a larger one)
     * @param size the size of a segment made now
     * @return the segment at {@code base}: the prepared one if it succeeded and is large enough, else one made now
     */
    Segment take(long base, long atLeast, long size) throws IOException {
        Preparation preparation = prepared;
        if (preparation != null && preparation.base == base) {
            prepared = null;
            try {
                Segment segment = preparation.await();
                if (segment.size() >= atLeast) {
                    return segment;
                }
                // Too small for the record that rolls into it: the file is made again at the size needed.
                segment.close();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                preparation.discard();
                throw new IOException("interrupted while waiting for segment " + base, e);
            } catch (ExecutionException | CancellationException e) {
                LOG.debug("background creation of segment {} failed ({}); retrying now", base, e.toString());
            }
        }
        return factory.create(base, size);
    }

    private void discardPrepared() {
        if (prepared != null) {
            prepared.discard();
            prepared = null;
        }
    }

    /**
     * Gives up the prepared segment and waits for a creation in progress to finish and be undone: a creation left
     * running would delete its file by name once done, and a log opened again on the same directory (after a
     * truncation) may have made that file its own by then.
     */
    @Override
    public void close() {
        Preparation preparation = prepared;
        discardPrepared();
        if (preparation != null) {
            preparation.awaitSettled();
        }
    }

    /** One segment being made, by whichever comes first: the scheduler or the roll. */
    private final class Preparation implements Runnable {
        final long base;
        final long size;
        private final AtomicBoolean claimed = new AtomicBoolean();
        private final AtomicBoolean cleaned = new AtomicBoolean();
        private final CompletableFuture<Segment> result = new CompletableFuture<>();
        private volatile boolean discarded;

        Preparation(long base, long size) {
            this.base = base;
            this.size = size;
        }

        @Override
        public void run() {
            if (!claimed.compareAndSet(false, true)) {
                return;
            }
            try {
                result.complete(factory.create(base, size));
            } catch (IOException | RuntimeException e) {
                result.completeExceptionally(e);
            }
            if (discarded) {
                cleanUp();
            }
        }

        /** Runs it here unless it already ran or runs elsewhere, then waits for it. */
        Segment await() throws InterruptedException, ExecutionException {
            run();
            return result.get();
        }

        /** Gives it up: never run, or its segment closed and deleted once made. */
        void discard() {
            discarded = true;
            if (claimed.compareAndSet(false, true)) {
                result.cancel(false);
            } else if (result.isDone()) {
                cleanUp();
            }
        }

        /** After {@link #discard}: waits until a run in progress is over and its segment deleted. */
        void awaitSettled() {
            if (!claimed.get()) {
                return;
            }
            boolean interrupted = false;
            while (true) {
                try {
                    result.get();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                } catch (ExecutionException | CancellationException e) {
                    break;
                }
            }
            cleanUp();
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }

        /** Synchronized: whoever comes second returns only once the segment is deleted. */
        private synchronized void cleanUp() {
            Segment segment = result.isCompletedExceptionally() ? null : result.getNow(null);
            if (segment == null || !cleaned.compareAndSet(false, true)) {
                return;
            }
            try {
                // Unused: it holds no record, and leaving it would only take disk space until the next open.
                segment.close();
                io.delete(segment.file().path());
            } catch (IOException e) {
                LOG.warn("deleting unused prepared segment {}: {}", segment, e.toString());
            }
        }
    }
}
