package io.sluice.store.internal.log;

import java.io.IOException;

/** No write-buffer page came free in time: commits are stalled or open read results pin every page. */
public final class WriteBufferExhaustedException extends IOException {
    private static final long serialVersionUID = 1L;

    WriteBufferExhaustedException(String message) {
        super(message);
    }
}
