package io.sluice.store.internal.recovery;

/** A queue's index lost entries the checkpoint claimed were durable: recovery rebuilds the log's indexes. */
final class IndexGapException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    IndexGapException(String message) {
        super(message);
    }
}
