package io.sluice.broker.kafka.security;

/**
 * A stored client quota set that cannot be read: damaged, cut short, or written by a newer build. Nothing is
 * guessed from it; the message names the line and what was wrong.
 */
public final class CorruptQuotaSetException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what was wrong, and where */
    public CorruptQuotaSetException(String message) {
        super(message);
    }

    /** @param message what was wrong, and where @param cause the check that failed */
    public CorruptQuotaSetException(String message, Throwable cause) {
        super(message, cause);
    }
}
