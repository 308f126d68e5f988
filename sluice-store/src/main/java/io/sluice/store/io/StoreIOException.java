package io.sluice.store.io;

import java.io.IOException;

/**
 * An I/O error with the operating system's error number, so the store tells a full disk (ENOSPC, EDQUOT) from a
 * failing device (EIO) without reading the message, which may be in any language.
 */
public class StoreIOException extends IOException {
    private static final long serialVersionUID = 1L;

    /** No space left on device. */
    public static final int ENOSPC = 28;
    /** Disk quota exceeded. */
    public static final int EDQUOT = 122;
    /** Input/output error. */
    public static final int EIO = 5;

    private final int errno;

    /**
     * @param message what failed
     * @param errno the error number, or 0 if unknown
     */
    public StoreIOException(String message, int errno) {
        super(message);
        this.errno = errno;
    }

    /** @return the error number, or 0 if unknown */
    public int errno() {
        return errno;
    }

    /** @return true if the error says the disk (or the quota) is full */
    public boolean diskFull() {
        return errno == ENOSPC || errno == EDQUOT;
    }
}
