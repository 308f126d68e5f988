package io.sluice.store.internal.index;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The bookkeeping a directory of mapped index files shares, for queue indexes and the key index alike:
 * what is unforced since the last checkpoint, and files that retention removed but that stay mapped until
 * the next pass, so a reader who looked one up just before never finds its mapping gone.
 *
 * <p>The writer marks; the checkpoint forces; retention retires. Each of those runs on one thread.
 */
final class IndexFiles {

    /** One mapped file of the directory. */
    interface MappedFile {
        /** @return the file's path */
        Path path();

        /** @return the open file */
        StoreFile storeFile();

        /** Unmaps and closes it. */
        void close() throws IOException;
    }

    private final FileIO fileIO;
    private final Path directory;
    private final List<MappedFile> retired = new ArrayList<>();
    /** Set by the writer when entries were written since the last force. */
    private volatile boolean dirty;
    /** Set by the writer when it created a file whose directory entry is not yet forced. */
    private volatile boolean directoryUnsynced;

    IndexFiles(FileIO fileIO, Path directory) {
        this.fileIO = fileIO;
        this.directory = directory;
    }

    /** Writer: entries were written. */
    void markWritten() {
        if (!dirty) {
            dirty = true;
        }
    }

    /**
     * Writer: a file was created. Its directory entry is forced by the next checkpoint, not now under the
     * append lock; the checkpoint forces it before claiming any entry in the file durable.
     */
    void markCreated() {
        directoryUnsynced = true;
    }

    /**
     * Checkpoint: forces the directory if a file was created since the last call, then the newest two
     * files if entries were written (only they can have changed at checkpoint cadence).
     */
    void forceIfDirty(MappedFile[] files) throws IOException {
        if (directoryUnsynced) {
            directoryUnsynced = false;
            fileIO.syncDirectory(directory);
        }
        if (!dirty) {
            return;
        }
        dirty = false;
        for (int i = Math.max(0, files.length - 2); i < files.length; i++) {
            files[i].storeFile().force();
        }
    }

    /**
     * Retention: deletes the first {@code drop} files (the caller has already taken them out of its array),
     * keeping them mapped until {@link #closeRetired()}.
     */
    void retire(MappedFile[] files, int drop) throws IOException {
        for (int i = 0; i < drop; i++) {
            retired.add(files[i]);
            fileIO.delete(files[i].path());
        }
        fileIO.syncDirectory(directory);
    }

    /** Unmaps the files retired by the previous pass. */
    void closeRetired() throws IOException {
        closeAll(retired.toArray(MappedFile[]::new));
        retired.clear();
    }

    /** The index's close: unmaps the retired files and {@code files}, trying every one. */
    void close(MappedFile[] files) throws IOException {
        IOException failure = null;
        try {
            closeRetired();
        } catch (IOException e) {
            failure = e;
        }
        try {
            closeAll(files);
        } catch (IOException e) {
            failure = e;
        }
        if (failure != null) {
            throw failure;
        }
    }

    private static void closeAll(MappedFile[] files) throws IOException {
        IOException failure = null;
        for (MappedFile file : files) {
            try {
                file.close();
            } catch (IOException e) {
                failure = e;
            }
        }
        if (failure != null) {
            throw failure;
        }
    }
}
