package io.sluice.store.internal.io;

import io.sluice.store.io.FileIO;
import io.sluice.store.io.StoreFile;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;

/**
 * Replaces a small file so that a crash leaves either the old content or the new, never a mix: write a
 * temporary file, force it, rename it over the old one, force the directory. For the checkpoint, the
 * consumer positions and the calibration.
 */
public final class AtomicFile {

    private AtomicFile() {
    }

    /**
     * @param io the file seam
     * @param directory where the file lives
     * @param name the file's name
     * @param content its new content (all remaining bytes)
     * @throws UncertainReplaceException if the rename or the directory sync failed: the file on disk may be
     *     the old one or the new one
     * @throws IOException on an I/O error before the rename; the old file is then intact
     */
    public static void replace(FileIO io, Path directory, String name, ByteBuffer content) throws IOException {
        Path temp = directory.resolve(name + ".tmp");
        try (StoreFile file = io.open(temp, FileIO.OpenMode.CREATE)) {
            file.truncate(0);
            file.writeFully(content, 0);
            file.force();
        }
        try {
            io.rename(temp, directory.resolve(name));
            io.syncDirectory(directory);
        } catch (IOException e) {
            throw new UncertainReplaceException(directory.resolve(name) + ": " + e.getMessage(), e);
        }
    }

    /** The replace failed at or after its rename: the old content or the new one may be what a restart finds. */
    public static final class UncertainReplaceException extends IOException {
        private static final long serialVersionUID = 1L;

        UncertainReplaceException(String message, IOException cause) {
            super(message, cause);
        }
    }
}
