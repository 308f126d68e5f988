package io.sluice.store.internal.io;

import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;

/**
 * The store's syncs of its file system ({@code syncfs}), which force many logs at once: through one descriptor held
 * from the store's open to its close, one sync at a time, and a failure that sticks.
 *
 * <p>A sync of the file system writes every dirty page on it, other logs' too, and the kernel reports a write-back
 * error once per descriptor: to the first sync after it on that descriptor, and not at all on a descriptor opened
 * after it. So the descriptor is opened before the store writes anything, syncs do not run side by side (the second
 * would return success for pages the first's error lost), and once one sync failed every later one fails too: which
 * logs' pages the failed write-back took is not known, so no log may claim a sync after it. A log's own force
 * ({@code fdatasync} on its file's descriptor, opened before the error) still reports it for that file.
 *
 * <p>Thread-safe.
 */
public final class StoreSync implements AutoCloseable {

    private final FileIO.FileSystemSync handle;
    private IOException failure;
    private long syncs;

    private StoreSync(FileIO.FileSystemSync handle) {
        this.handle = handle;
    }

    /**
     * @param io the file seam
     * @param root the store's directory
     * @return the store's syncs; {@link #sync} answers false where the seam cannot sync a file system
     * @throws IOException if the descriptor could not be opened
     */
    public static StoreSync open(FileIO io, Path root) throws IOException {
        return new StoreSync(io.openFileSystemSync(root));
    }

    /** @return syncs that no seam can make (a store open for reading only) */
    public static StoreSync none() {
        return new StoreSync(null);
    }

    /**
     * Makes everything written to the store's file system before the call durable.
     *
     * @return false where the seam cannot sync a file system (force each log instead)
     * @throws IOException if the sync failed, or an earlier one did
     */
    public synchronized boolean sync() throws IOException {
        if (handle == null) {
            return false;
        }
        if (failure != null) {
            throw new IOException("an earlier sync of the file system failed, so what was written before it is not"
                    + " known to be durable: " + failure.getMessage(), failure);
        }
        try {
            handle.sync();
        } catch (IOException | RuntimeException e) {
            failure = e instanceof IOException io ? io : new IOException(e.toString(), e);
            throw failure;
        }
        syncs++;
        return true;
    }

    /** @return the syncs made so far */
    public synchronized long syncs() {
        return syncs;
    }

    @Override
    public synchronized void close() throws IOException {
        if (handle != null) {
            handle.close();
        }
    }
}
