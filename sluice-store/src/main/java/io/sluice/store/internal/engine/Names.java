package io.sluice.store.internal.engine;

/** Validation of the names and ids callers pass in. Stateless. */
final class Names {

    /** Longest topic name, as in Kafka. */
    static final int MAX_TOPIC_LENGTH = 249;

    private Names() {
    }

    /** @throws IllegalArgumentException naming the rule the topic breaks */
    static void checkTopic(String topic) {
        checkName("topic", topic);
    }

    /** @throws IllegalArgumentException naming the rule the consumer group name breaks */
    static void checkGroup(String group) {
        checkName("consumer group", group);
    }

    /** Topic and group names follow Kafka's rule: they must be safe as file and directory names. */
    private static void checkName(String kind, String name) {
        if (name == null || name.isEmpty()) {
            throw new IllegalArgumentException(kind + " name must not be empty");
        }
        if (name.length() > MAX_TOPIC_LENGTH) {
            throw new IllegalArgumentException(kind + " name must be at most " + MAX_TOPIC_LENGTH
                    + " characters, was " + name.length());
        }
        if (name.equals(".") || name.equals("..")) {
            throw new IllegalArgumentException(kind + " name must not be '.' or '..'");
        }
        for (int i = 0; i < name.length(); i++) {
            char c = name.charAt(i);
            boolean ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
                    || c == '.' || c == '_' || c == '-';
            if (!ok) {
                throw new IllegalArgumentException(kind + " name must use only [a-zA-Z0-9._-], found '" + c
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
