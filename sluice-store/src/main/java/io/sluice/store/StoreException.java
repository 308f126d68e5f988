package io.sluice.store;

/**
 * An operation could not be carried out because of the store's state or its files: an I/O error, a full
 * disk, a store turned read-only by a failed force. The message says which.
 */
public class StoreException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** @param message what failed and why */
    public StoreException(String message) {
        super(message);
    }

    /**
     * @param message what failed and why
     * @param cause the underlying error
     */
    public StoreException(String message, Throwable cause) {
        super(message, cause);
    }
}
