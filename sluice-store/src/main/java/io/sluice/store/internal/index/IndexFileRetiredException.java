package io.sluice.store.internal.index;

/** A reader asked for an index entry whose file retention has just deleted: the offset is no longer stored. */
public final class IndexFileRetiredException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    IndexFileRetiredException(String message) {
        super(message);
    }
}
