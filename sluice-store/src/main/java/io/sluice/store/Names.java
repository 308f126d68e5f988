package io.sluice.store;

/** Validation of the names and ids callers pass in. Stateless. */
final class Names {

    /** Longest topic name, as in Kafka. */
    static final int MAX_TOPIC_LENGTH = 249;

    private Names() {
    }

    /** @throws IllegalArgumentException naming the rule the topic breaks */
    static void checkTopic(String topic) {
        if (topic == null || topic.isEmpty()) {
            throw new IllegalArgumentException("topic name must not be empty");
        }
        if (topic.length() > MAX_TOPIC_LENGTH) {
            throw new IllegalArgumentException("topic name must be at most " + MAX_TOPIC_LENGTH
                    + " characters, was " + topic.length());
        }
        if (topic.equals(".") || topic.equals("..")) {
            throw new IllegalArgumentException("topic name must not be '.' or '..'");
        }
        for (int i = 0; i < topic.length(); i++) {
            char c = topic.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == '-';
            if (!ok) {
                throw new IllegalArgumentException("topic name must use only [a-zA-Z0-9._-], found '" + c
                        + "' at index " + i);
            }
        }
    }

    /** @throws IllegalArgumentException if the queue id is negative */
    static void checkQueueId(int queueId) {
        if (queueId < 0) {
            throw new IllegalArgumentException("queue id must not be negative, was " + queueId);
        }
    }
}
