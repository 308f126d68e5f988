package io.sluice.store.internal.engine;

import io.sluice.store.DiskFullException;
import io.sluice.store.StoreException;
import io.sluice.store.StoreStatus;
import io.sluice.store.internal.log.WriteBufferExhaustedException;
import io.sluice.store.io.StoreIOException;
import java.io.IOException;
import java.nio.file.Path;
import java.util.function.Consumer;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A log's one failure funnel: every I/O error on the log's write side comes through {@link #classify}, which
 * decides by error number (not by message text) what it means, and the log's one read-only state.
 *
 * <table>
 * <caption>what a failure does</caption>
 * <tr><th>failure</th><th>the append gets</th><th>the log</th></tr>
 * <tr><td>ENOSPC or EDQUOT (disk full)</td><td>{@link DiskFullException}</td><td>stays open; appends work
 *     again once space is freed</td></tr>
 * <tr><td>every write-buffer page pinned by readers</td><td>{@link StoreException}</td><td>stays open</td></tr>
 * <tr><td>any other I/O error (EIO...), or a failed force</td><td>{@link StoreException}</td><td>read-only for good:
 *     a failed force is never retried, since the kernel may have dropped the dirty pages it covered</td></tr>
 * </table>
 * An interrupt of a caller's thread is not a failure of the log: the store's file I/O does not react to
 * interrupts (see {@code FileIO}).
 *
 * <p>Thread-safe.
 */
final class LogHealth {

    private static final Logger LOG = LoggerFactory.getLogger(LogHealth.class);

    private final Path root;
    private final Consumer<String> onReadOnly;
    private volatile StoreStatus.State state = StoreStatus.State.OPEN;
    private volatile String reason;

    /**
     * @param root the log's directory, for messages
     * @param onReadOnly told once, with the reason, when the log turns read-only
     */
    LogHealth(Path root, Consumer<String> onReadOnly) {
        this.root = root;
        this.onReadOnly = onReadOnly;
    }

    StoreStatus.State state() {
        return state;
    }

    String reason() {
        return reason;
    }

    boolean open() {
        return state == StoreStatus.State.OPEN;
    }

    /** @throws StoreException if appends must fail: the log is read-only */
    StoreException refusal() {
        return state == StoreStatus.State.READ_ONLY ? new StoreException("store is read-only: " + reason) : null;
    }

    /**
     * Turns the log read-only, once; later calls keep the first reason.
     *
     * @return true if this call did it
     */
    boolean goReadOnly(String why) {
        synchronized (this) {
            if (state != StoreStatus.State.OPEN) {
                return false;
            }
            reason = why;
            state = StoreStatus.State.READ_ONLY;
        }
        LOG.error("store {} is now read-only: {}", root, why);
        onReadOnly.accept(why);
        return true;
    }

    /** Marks the log closed; appends and reads are refused from now on. */
    synchronized void closed() {
        state = StoreStatus.State.CLOSED;
    }

    /**
     * Classifies a write-side failure of {@code what} and returns the exception the caller reports.
     *
     * @param what the operation, for the message ("append", "checkpoint"...)
     */
    StoreException classify(IOException failure, String what) {
        if (isDiskFull(failure)) {
            return new DiskFullException(what + " failed: disk full (" + failure.getMessage() + "); acknowledged"
                    + " messages are intact and appends resume once space is freed", failure);
        }
        if (failure instanceof WriteBufferExhaustedException) {
            return new StoreException(what + " failed: " + failure.getMessage(), failure);
        }
        goReadOnly(what + " failed: " + failure);
        return new StoreException(what + " failed and the store is now read-only: " + failure.getMessage(), failure);
    }

    /** @return true if the failure (or a cause) carries ENOSPC or EDQUOT */
    static boolean isDiskFull(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof StoreIOException io && io.diskFull()) {
                return true;
            }
        }
        return false;
    }
}
