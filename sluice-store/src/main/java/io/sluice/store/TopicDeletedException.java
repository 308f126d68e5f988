package io.sluice.store;

/**
 * An append was on its way to a topic's log of its own when {@link Store#deleteTopic} deleted the topic: it was
 * not stored. Or a read of such a log was in progress: it was cut short.
 */
public final class TopicDeletedException extends StoreException {
    private static final long serialVersionUID = 1L;

    /** @param topic the deleted topic */
    public TopicDeletedException(String topic) {
        super("topic " + topic + " was deleted; the append was not stored");
    }

    /**
     * @param topic the deleted topic
     * @param cause how the read failed
     */
    public TopicDeletedException(String topic, Throwable cause) {
        super("topic " + topic + " was deleted while it was read", cause);
    }
}
