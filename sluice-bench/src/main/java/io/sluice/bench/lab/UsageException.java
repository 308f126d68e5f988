package io.sluice.bench.lab;

/** Bad input to an experiment (unknown size, unusable directory, not enough space): exit code 2. */
public final class UsageException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param message what was wrong and, where it helps, what would be accepted */
    public UsageException(String message) {
        super(message);
    }
}
