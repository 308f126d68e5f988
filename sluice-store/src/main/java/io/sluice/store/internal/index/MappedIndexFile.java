package io.sluice.store.internal.index;

import io.sluice.store.internal.cache.RefCounted;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;

/**
 * An index file mapped whole (a queue-index or a key-index file): its mapping lives as long as the object
 * ({@link RefCounted}: readers hold it, the index retires it, the last release unmaps it); no descriptor is
 * kept open. Writes go through the mapping and mark the file in the log's {@link DurabilityLedger}, which
 * forces it before a checkpoint claims what it holds.
 */
abstract class MappedIndexFile extends RefCounted implements DurabilityLedger.Durable {

    final Path path;
    final MemorySegment mapping;
    private final FileIO io;
    private final Arena arena;
    private final DurabilityLedger ledger;
    private volatile boolean dirty;

    MappedIndexFile(Path path, FileIO io, Arena arena, MemorySegment mapping, DurabilityLedger ledger) {
        this.path = path;
        this.io = io;
        this.arena = arena;
        this.mapping = mapping;
        this.ledger = ledger;
    }

    /** @return the file's path */
    public Path path() {
        return path;
    }

    /** @return the file seam it was opened through */
    final FileIO io() {
        return io;
    }

    /** Recovery: the file reads as it should, but that may not be durable; the next claim must make it so. */
    final void uncertain() {
        ledger.markUncertain(path);
    }

    /** Writer: the file was written; the next checkpoint must force it. */
    final void markWritten() {
        if (!dirty) {
            dirty = true;
            ledger.markDirty(this);
        }
    }

    @Override
    public final void taken() {
        dirty = false;
    }

    @Override
    public final void force() throws IOException {
        if (isRetired()) {
            return;
        }
        dirty = false;
        try (StoreFile opened = io.open(path, FileIO.OpenMode.READ_WRITE)) {
            opened.force();
        }
    }

    @Override
    protected final void free() {
        arena.close();
    }

    @Override
    public final String toString() {
        return path.toString();
    }
}
