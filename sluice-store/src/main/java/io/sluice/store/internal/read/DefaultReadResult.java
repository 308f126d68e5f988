package io.sluice.store.internal.read;

import io.sluice.store.LookupResult;
import io.sluice.store.ReadResult;
import io.sluice.store.StoredMessage;
import io.sluice.store.internal.log.RecordView;
import java.util.ArrayList;
import java.util.List;

/**
 * The store's {@link ReadResult} and {@link LookupResult}: messages plus the record views (and pins) behind them.
 * Not thread-safe to close concurrently with reading its messages.
 */
public final class DefaultReadResult implements ReadResult, LookupResult {

    private final Status status;
    private final List<StoredMessage> messages;
    private final long nextOffset;
    private final List<RecordView> views;
    private boolean closed;
    /** Results this one was merged from, closed with it. */
    private List<? extends AutoCloseable> parts = List.of();
    /** Run once as the result closes, or null. */
    private Runnable onClose;

    DefaultReadResult(Status status, List<StoredMessage> messages, long nextOffset, List<RecordView> views) {
        this.status = status;
        this.messages = messages;
        this.nextOffset = nextOffset;
        this.views = views;
    }

    /**
     * @return the messages of several lookups in {@code order}, at most {@code max}; closing it closes them
     *     all
     */
    public static DefaultReadResult merged(List<? extends LookupResult> parts, java.util.Comparator<StoredMessage> order,
                                    int max) {
        List<StoredMessage> messages = new ArrayList<>();
        for (LookupResult part : parts) {
            messages.addAll(part.messages());
        }
        messages.sort(order);
        DefaultReadResult merged = new DefaultReadResult(Status.FOUND,
                List.copyOf(messages.subList(0, Math.min(max, messages.size()))), -1, List.of());
        merged.parts = List.copyOf(parts);
        return merged;
    }

    /**
     * Has {@code release} run when this result closes, or now if it holds nothing (an empty result need not be
     * closed).
     *
     * @return this
     */
    public DefaultReadResult releasing(Runnable release) {
        if (views.isEmpty() && parts.isEmpty()) {
            release.run();
        } else {
            onClose = release;
        }
        return this;
    }

    /** @return a result of no message: the queue holds none at the offset asked for, for {@code status} */
    public static DefaultReadResult empty(Status status, long nextOffset) {
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
        try {
            for (RecordView view : views) {
                view.close();
            }
            for (AutoCloseable part : parts) {
                try {
                    part.close();
                } catch (Exception e) {
                    throw new IllegalStateException("closing a merged lookup failed", e);
                }
            }
        } finally {
            if (onClose != null) {
                onClose.run();
            }
        }
    }

    @Override
    public String toString() {
        return "ReadResult[" + status + ", " + messages.size() + " messages, next " + nextOffset + "]";
    }
}
