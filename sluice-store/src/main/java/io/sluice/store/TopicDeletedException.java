package io.sluice.store;

/**
 * An append was on its way to a topic's log of its own when {@link Store#deleteTopic} deleted the topic: it was
 * not stored.
 */
public final class TopicDeletedException extends StoreException {
    private static final long serialVersionUID = 1L;

    /** @param topic the deleted topic */
    public TopicDeletedException(String topic) {
        super("topic " + topic + " was deleted; the append was not stored");
    }
}
