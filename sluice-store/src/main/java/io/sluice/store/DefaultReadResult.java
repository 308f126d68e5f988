package io.sluice.store;

import io.sluice.store.internal.log.RecordView;
import java.util.List;

/** The store's {@link ReadResult} and {@link LookupResult}: messages plus the record views (and pins) behind them. */
final class DefaultReadResult implements ReadResult, LookupResult {

    private final Status status;
    private final List<StoredMessage> messages;
    private final long nextOffset;
    private final List<RecordView> views;
    private boolean closed;

    DefaultReadResult(Status status, List<StoredMessage> messages, long nextOffset, List<RecordView> views) {
        this.status = status;
        this.messages = messages;
        this.nextOffset = nextOffset;
        this.views = views;
    }

    static DefaultReadResult empty(Status status, long nextOffset) {
        return new DefaultReadResult(status, List.of(), nextOffset, List.of());
    }

    @Override
    public Status status() {
        return status;
    }

    @Override
    public List<StoredMessage> messages() {
        return messages;
    }

    @Override
    public long nextOffset() {
        return nextOffset;
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (RecordView view : views) {
            view.close();
        }
    }

    @Override
    public String toString() {
        return "ReadResult[" + status + ", " + messages.size() + " messages, next " + nextOffset + "]";
    }
}
