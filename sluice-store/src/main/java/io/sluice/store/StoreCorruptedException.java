package io.sluice.store;

import java.nio.file.Path;

/**
 * The store refused to open because its files are damaged in a way recovery must not paper over: a record
 * that fails validation with valid records after it, a missing segment, an unknown format. Names the file
 * and position. {@link StoreConfig#truncateOnCorruption()} lets a user accept the loss and open anyway.
 */
public final class StoreCorruptedException extends StoreException {
    private static final long serialVersionUID = 1L;

    private final transient Path file;
    private final long position;

    /**
     * @param message what is wrong
     * @param file the damaged file, or null when the damage is not in one file
     * @param position the log position (or file offset) of the damage, or -1
     */
    public StoreCorruptedException(String message, Path file, long position) {
        super(message);
        this.file = file;
        this.position = position;
    }

    /** @return the damaged file, or null */
    public Path file() {
        return file;
    }

    /** @return the position of the damage, or -1 */
    public long position() {
        return position;
    }
}
