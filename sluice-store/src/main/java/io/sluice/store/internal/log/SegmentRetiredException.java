package io.sluice.store.internal.log;

/**
 * A read reached a log position whose segment retention has deleted: the caller's position is older than
 * what the store keeps, which readers report as a too-small offset.
 */
public final class SegmentRetiredException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** @param position the log position that is no longer stored */
    public SegmentRetiredException(long position) {
        super("log position " + position + " was deleted by retention");
    }
}
