package io.sluice.bench.lab;

/** An experiment's check of its own work failed (wrong checksum or count): its figures are void. Exit 1. */
public final class VerificationException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what was checked and what was found */
    public VerificationException(String message) {
        super(message);
    }
}
