package io.sluice.broker.kafka;

/**
 * A frame that cannot be answered: a size out of bounds, a header that does not parse, an API key this broker does
 * not know. The connection is closed after one log line, as Kafka does; nothing else is affected.
 */
public final class ProtocolException extends Exception {

    private static final long serialVersionUID = 1L;

    /** @param message what was wrong, naming the value found */
    public ProtocolException(String message) {
        super(message);
    }

    /** @param message what was wrong @param cause the parser's error */
    public ProtocolException(String message, Throwable cause) {
        super(message, cause);
    }
}
