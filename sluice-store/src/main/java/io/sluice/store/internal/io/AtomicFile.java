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
     * @throws IOException on an I/O error; the old file is then intact
     */
    public static void replace(FileIO io, Path directory, String name, ByteBuffer content) throws IOException {
        Path temp = directory.resolve(name + ".tmp");
        try (StoreFile file = io.open(temp, FileIO.OpenMode.CREATE)) {
            file.truncate(0);
            file.writeFully(content, 0);
            file.force();
        }
        io.rename(temp, directory.resolve(name));
        io.syncDirectory(directory);
    }
}
