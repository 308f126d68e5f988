package io.sluice.broker.kafka.security;

/**
 * A stored ACL set that cannot be read: damaged, cut short, or written by a newer build. Nothing is guessed from it;
 * the message names the line and what was wrong.
 */
public final class CorruptAclSetException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what was wrong, and where */
    public CorruptAclSetException(String message) {
        super(message);
    }

    /** @param message what was wrong, and where @param cause the check that failed */
    public CorruptAclSetException(String message, Throwable cause) {
        super(message, cause);
    }
}
