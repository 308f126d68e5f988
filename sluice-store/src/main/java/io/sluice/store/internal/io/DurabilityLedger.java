package io.sluice.store.internal.io;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * One log's ledger of what was written since it was last forced: index files, key-index files, and
 * directories whose entries changed. A checkpoint forces everything in it before it advances the log's durable
 * position, so the checkpoint (and the clean-shutdown marker) never claims a byte or a name that was not
 * forced. The log's own bytes are tracked by position instead (the flushed position).
 *
 * <p>Writers mark an item once per change from clean to dirty (each item keeps a flag), so marking costs a
 * volatile read on the hot path. Items are forced in the order they were first marked, so a simulation that
 * cuts the power at the n-th file operation replays the same way.
 *
 * <p>Thread-safe.
 */
public final class DurabilityLedger {

    /** Something that becomes durable when forced. */
    public interface Durable {
        /** Forces it. @throws IOException on an I/O error */
        void force() throws IOException;

        /**
         * It was taken out of the ledger for a sync of the whole file system ({@link #take}), as {@link #force} would
         * force it: a write from now on must mark it again.
         */
        default void taken() {
        }
    }

    private final FileIO io;
    private final Set<Durable> dirty = new LinkedHashSet<>();
    /** Files whose cached pages are right but whose durable content is unknown (see {@link #markUncertain}). */
    private final Set<Path> uncertain = new LinkedHashSet<>();
    /**
     * What {@link #take} took for a sync of the file system that has not returned yet: not durable until it does, so
     * the ledger is not clean meanwhile and {@link #forceAll} forces these too.
     */
    private final Set<Durable> pending = new LinkedHashSet<>();
    private final Set<Path> pendingUncertain = new LinkedHashSet<>();

    /** @param io the file seam, for directory syncs */
    public DurabilityLedger(FileIO io) {
        this.io = io;
    }

    /** Records that {@code item} was written and must be forced before the next durable claim. */
    public synchronized void markDirty(Durable item) {
        dirty.add(item);
    }

    /** Records that names in {@code directory} were created, deleted or renamed. */
    public void markDirectory(Path directory) {
        markDirty(new DirectoryEntries(io, directory));
    }

    /**
     * Records a file this process did not write but whose durable content may differ from what it reads: a
     * file a killed process changed (its pages still cached and dirty) without forcing it. Recovery marks the
     * index files it found blank without erasing them. They are made durable before the next claim: with one
     * {@link FileIO#syncFileSystem} where the seam can, else one force each.
     */
    public synchronized void markUncertain(Path file) {
        uncertain.add(file);
    }

    /** @return true if nothing awaits a force */
    public synchronized boolean isClean() {
        return dirty.isEmpty() && uncertain.isEmpty() && pending.isEmpty() && pendingUncertain.isEmpty();
    }

    /**
     * What a sync of the whole file system is about to make durable ({@link #take}).
     *
     * @param items the items marked
     * @param uncertain the files of unknown durable content
     */
    public record Taken(List<Durable> items, List<Path> uncertain) {
    }

    /**
     * Takes everything marked so far, for a sync of the whole file system that starts after this returns (and so
     * forces them all): an item marked again meanwhile is for the next force. What was taken stays pending, not clean,
     * until the sync returned ({@link #settled}); if it fails, or is not made, {@link #putBack} what was taken.
     *
     * @return what was taken
     */
    public synchronized Taken take() {
        Taken taken = new Taken(new ArrayList<>(dirty), new ArrayList<>(uncertain));
        pending.addAll(dirty);
        pendingUncertain.addAll(uncertain);
        dirty.clear();
        uncertain.clear();
        for (Durable item : taken.items()) {
            item.taken();
        }
        return taken;
    }

    /** What {@link #take} took is durable: the sync it was taken for returned. */
    public synchronized void settled(Taken taken) {
        taken.items().forEach(pending::remove);
        taken.uncertain().forEach(pendingUncertain::remove);
    }

    /** Marks again what {@link #take} took: the sync it was taken for failed or was not made. */
    public synchronized void putBack(Taken taken) {
        settled(taken);
        uncertain.addAll(taken.uncertain());
        dirty.addAll(taken.items());
    }

    /**
     * Forces everything marked so far. An item marked again while this runs is forced by the next call. On
     * failure the items not yet forced stay marked, and the failure is thrown.
     *
     * @throws IOException if a force failed
     */
    public void forceAll() throws IOException {
        List<Durable> batch;
        List<Path> unknown;
        synchronized (this) {
            // Pending items (taken for a sync still running) are forced too, and stay pending until that sync returns.
            batch = new ArrayList<>(dirty);
            batch.addAll(pending);
            dirty.clear();
            unknown = new ArrayList<>(uncertain);
            unknown.addAll(pendingUncertain);
            uncertain.clear();
        }
        try {
            if (!unknown.isEmpty() && !io.syncFileSystem(unknown.getFirst())) {
                for (Path file : unknown) {
                    try (StoreFile opened = io.open(file, FileIO.OpenMode.READ_WRITE)) {
                        opened.force();
                    }
                }
            }
        } catch (IOException | RuntimeException e) {
            synchronized (this) {
                uncertain.addAll(unknown);
                dirty.addAll(batch);
            }
            throw e;
        }
        for (int i = 0; i < batch.size(); i++) {
            try {
                batch.get(i).force();
            } catch (IOException | RuntimeException e) {
                synchronized (this) {
                    dirty.addAll(batch.subList(i, batch.size()));
                }
                throw e;
            }
        }
    }

    /** A directory whose entries changed; equal by path, so marking one twice forces it once. */
    private record DirectoryEntries(FileIO io, Path directory) implements Durable {
        @Override
        public void force() throws IOException {
            io.syncDirectory(directory);
        }

        @Override
        public boolean equals(Object other) {
            return other instanceof DirectoryEntries entries && entries.directory.equals(directory);
        }

        @Override
        public int hashCode() {
            return directory.hashCode();
        }
    }
}
