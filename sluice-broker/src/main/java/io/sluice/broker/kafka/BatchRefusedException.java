package io.sluice.broker.kafka;

import java.util.Objects;
import org.apache.kafka.common.protocol.Errors;

/**
 * A produced record batch this broker does not store, with the error Kafka's broker answers for the same fault.
 * Thrown by the checks of {@link RecordBatches} and {@link RecordWalker}; the partition is answered with
 * {@link #error()} and nothing of it is stored.
 */
final class BatchRefusedException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final transient Errors error;

    /**
     * @param error the error code to answer
     * @param message what is wrong, naming the value found
     */
    BatchRefusedException(Errors error, String message) {
        super(message, null, false, false);
        this.error = Objects.requireNonNull(error, "error");
    }

    /** @return the error code to answer the partition with */
    Errors error() {
        return error;
    }
}
