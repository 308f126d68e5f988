package io.sluice.store.internal.index;

import io.sluice.store.internal.index.QueueIndex.IndexFile;
import io.sluice.store.internal.io.DurabilityLedger;
import io.sluice.store.internal.io.FileTree;
import io.sluice.store.io.FileIO;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The files of one {@link QueueIndex}, in the order of their first entries: which exist, which holds an offset,
 * and the writer's last file. Files are created per the {@link IndexGeometry}, dropped from the end by a truncation
 * and from the start by retention; every name change is marked in the log's {@link DurabilityLedger}. The array is
 * replaced, never changed in place, so a reader finds a file in one consistent array without a lock.
 *
 * <p>Lookups ({@link #find}) are safe from any thread; everything else is the writer's (or recovery's), under the
 * append lock.
 */
final class QueueIndexFiles {

    private final Path directory;
    private final FileIO io;
    private final IndexGeometry geometry;
    private final DurabilityLedger ledger;
    private volatile IndexFile[] files;
    /**
     * Writer-owned: the file the writer last wrote into, so an append finds its file without a search. Reset
     * whenever the writer's files change (truncation, reset, retention, close); never read by readers.
     */
    private IndexFile writing;

    private QueueIndexFiles(Path directory, FileIO io, IndexGeometry geometry, DurabilityLedger ledger,
                            IndexFile[] files) {
        this.directory = directory;
        this.io = io;
        this.geometry = geometry;
        this.ledger = ledger;
        this.files = files;
    }

    /**
     * Opens the files of a queue's index directory. A file shorter than the geometry says (its size was lost in a
     * power cut) is restored to its size, unless read-only.
     *
     * @throws IndexDamagedException if a file is missing between two others or is not one of the geometry's
     */
    static QueueIndexFiles open(Path directory, FileIO io, IndexGeometry geometry, DurabilityLedger ledger,
                                boolean readOnly) throws IOException {
        List<IndexFile> opened = new ArrayList<>();
        try {
            if (io.isDirectory(directory)) {
                int expected = -1;
                for (Path path : io.list(directory)) {
                    String name = path.getFileName().toString();
                    if (name.length() != 20 || !name.chars().allMatch(Character::isDigit)) {
                        continue;
                    }
                    long first = Long.parseLong(name);
                    int number = geometry.fileStartingAt(first);
                    if (number < 0 || (expected >= 0 && number != expected)) {
                        throw new IndexDamagedException("queue index " + directory + ": file " + name
                                + (number < 0 ? " does not start where a file starts"
                                : " follows a missing file (entries from " + geometry.firstEntryOfFile(expected) + ")"));
                    }
                    expected = number + 1;
                    opened.add(IndexFile.open(io, path, first, geometry.entriesOfFile(number), ledger, readOnly));
                }
            }
        } catch (IOException | RuntimeException e) {
            opened.forEach(IndexFile::retire);
            throw e;
        }
        return new QueueIndexFiles(directory, io, geometry, ledger, opened.toArray(IndexFile[]::new));
    }

    /** @return the number of files */
    int count() {
        return files.length;
    }

    /** @return the first file, or null if there is none */
    IndexFile first() {
        IndexFile[] current = files;
        return current.length == 0 ? null : current[0];
    }

    /** @return the last file, or null if there is none */
    IndexFile last() {
        IndexFile[] current = files;
        return current.length == 0 ? null : current[current.length - 1];
    }

    /** @return the file holding entry {@code offset}, or null; a reader must retain it before use */
    IndexFile find(long offset) {
        IndexFile[] current = files;
        int low = 0;
        int high = current.length - 1;
        while (low <= high) {
            int mid = (low + high) >>> 1;
            IndexFile file = current[mid];
            if (offset < file.firstEntry) {
                high = mid - 1;
            } else if (offset >= file.end()) {
                low = mid + 1;
            } else {
                return file;
            }
        }
        return null;
    }

    /** Writer: the file for {@code offset}: the one it last wrote into if that holds it, else found (or null). */
    IndexFile writerFile(long offset) {
        IndexFile file = writing;
        if (file != null && offset >= file.firstEntry && offset < file.end()) {
            return file;
        }
        file = find(offset);
        writing = file;
        return file;
    }

    /** Writer: creates the file the geometry gives entry {@code offset} (and the directory, for the first). */
    IndexFile createFor(long offset) throws IOException {
        int number = geometry.fileFor(offset);
        if (files.length == 0) {
            FileTree.createDirectories(io, directory, ledger);
        }
        long first = geometry.firstEntryOfFile(number);
        IndexFile file = IndexFile.create(io, directory, first, geometry.entriesOfFile(number), ledger);
        IndexFile[] current = files;
        IndexFile[] grown = Arrays.copyOf(current, current.length + 1);
        grown[grown.length - 1] = file;
        Arrays.sort(grown, (a, b) -> Long.compare(a.firstEntry, b.firstEntry));
        files = grown;
        return file;
    }

    /**
     * Recovery: empties the entries from {@code offset} on: files starting there or later are deleted, newest first,
     * and the rest of the file holding {@code offset} is erased. Marked in the ledger.
     *
     * @return the number of files left
     */
    int truncateFrom(long offset) throws IOException {
        IndexFile[] current = files;
        int keep = current.length;
        while (keep > 0 && current[keep - 1].firstEntry >= offset) {
            IndexFile dropped = current[--keep];
            dropped.retire();
            io.delete(dropped.path);
            ledger.markDirectory(directory);
        }
        files = Arrays.copyOf(current, keep);
        writing = null;
        if (keep > 0) {
            IndexFile last = current[keep - 1];
            if (offset < last.end()) {
                last.erase(offset);
            }
        }
        return keep;
    }

    /**
     * Retention: takes out of the index the files whose every entry lies below {@code minOffset}, except the last
     * (it tells where the queue ends).
     *
     * @return the files taken out, for {@link #deleteRetired}
     */
    List<IndexFile> takeOutBelow(long minOffset) {
        IndexFile[] current = files;
        int drop = 0;
        while (drop < current.length - 1 && current[drop].end() <= minOffset) {
            drop++;
        }
        if (drop == 0) {
            return List.of();
        }
        files = Arrays.copyOfRange(current, drop, current.length);
        writing = null;
        return List.of(Arrays.copyOf(current, drop));
    }

    /** Deletes files {@link #takeOutBelow} took out, each unmapped once no reader holds it. */
    void deleteRetired(List<IndexFile> retired) throws IOException {
        for (IndexFile file : retired) {
            file.retire();
            io.delete(file.path);
        }
        if (!retired.isEmpty()) {
            ledger.markDirectory(directory);
        }
    }

    /** Takes every file out and retires it: each is unmapped once its readers let go. */
    void close() {
        IndexFile[] closing = files;
        files = new IndexFile[0];
        writing = null;
        for (IndexFile file : closing) {
            file.retire();
        }
    }
}
