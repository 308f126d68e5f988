package io.sluice.store;

/**
 * An append failed because the disk holding the store has no space left (ENOSPC). Nothing acknowledged
 * is affected and the store stays writable: appends succeed again once space is freed.
 */
public final class DiskFullException extends StoreException {
    private static final long serialVersionUID = 1L;

    /**
     * @param message what could not be written
     * @param cause the underlying error
     */
    public DiskFullException(String message, Throwable cause) {
        super(message, cause);
    }
}
