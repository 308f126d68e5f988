package io.sluice.store.internal.log;

import java.io.IOException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Creates the next segment in the background while the active one fills, so a roll rarely waits for file
 * creation and block allocation. A failed background attempt (a full disk) is not fatal: the roll tries
 * again synchronously and reports that attempt's error.
 *
 * <p>Thread-safe: {@link #prepare} and {@link #take} are called by the single log writer.
 */
final class SegmentPreparer implements AutoCloseable {

    /** Makes a segment. */
    @FunctionalInterface
    interface Factory {
        Segment create(long base) throws IOException;
    }

    private static final Logger LOG = LoggerFactory.getLogger(SegmentPreparer.class);

    private final Factory factory;
    private final ExecutorService executor;
    private long preparedBase = -1;
    private CompletableFuture<Segment> prepared;

    SegmentPreparer(Factory factory) {
        this.factory = factory;
        this.executor = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "sluice-segment-preparer");
            t.setDaemon(true);
            return t;
        });
    }

    /** Starts creating the segment at {@code base} unless it is already under way. */
    void prepare(long base) {
        if (preparedBase == base && prepared != null) {
            return;
        }
        discardPrepared();
        preparedBase = base;
        prepared = CompletableFuture.supplyAsync(() -> {
            try {
                return factory.create(base);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        }, executor);
    }

    /** @return the segment at {@code base}: the prepared one if it succeeded, else a new one made now */
    Segment take(long base) throws IOException {
        if (preparedBase == base && prepared != null) {
            CompletableFuture<Segment> future = prepared;
            prepared = null;
            preparedBase = -1;
            try {
                return future.get();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IOException("interrupted while waiting for segment " + base, e);
            } catch (ExecutionException e) {
                LOG.debug("background creation of segment {} failed ({}); retrying now", base, e.getCause().toString());
            }
        }
        return factory.create(base);
    }

    private void discardPrepared() {
        if (prepared == null) {
            return;
        }
        CompletableFuture<Segment> future = prepared;
        prepared = null;
        future.thenAccept(segment -> {
            try {
                // Unused: it holds no record, and leaving it would only take disk space until the next open.
                segment.close();
                java.nio.file.Files.deleteIfExists(segment.file().path());
            } catch (IOException e) {
                LOG.warn("closing unused prepared segment {}", segment, e);
            }
        });
    }

    @Override
    public void close() {
        discardPrepared();
        executor.shutdown();
        try {
            if (!executor.awaitTermination(30, java.util.concurrent.TimeUnit.SECONDS)) {
                LOG.warn("segment preparer did not stop within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
