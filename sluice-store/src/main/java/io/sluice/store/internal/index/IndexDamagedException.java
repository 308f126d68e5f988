package io.sluice.store.internal.index;

import java.io.IOException;

/** A queue index's files are not a contiguous run: recovery rebuilds the indexes from the log. */
public final class IndexDamagedException extends IOException {
    private static final long serialVersionUID = 1L;

    IndexDamagedException(String message) {
        super(message);
    }
}
