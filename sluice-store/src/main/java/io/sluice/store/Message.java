package io.sluice.store;

import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A message to append: a body plus optional keys, a tag, properties and the producer's (born) timestamp.
 *
 * <p>Immutable apart from the body, which is not copied: the caller must not change the body's bytes until
 * the append call has returned (the store copies them into the log before it returns the future).
 * Instances may be shared between threads once built.
 *
 * @param keys keys the message can later be found by; none is an empty list
 * @param tag a short label consumers can filter on; no tag is the empty string
 * @param properties application properties, in insertion order
 * @param bornTimestamp when the producer created the message, epoch milliseconds
 * @param body the payload
 */
public record Message(List<String> keys, String tag, Map<String, String> properties, long bornTimestamp,
                      MemorySegment body) {

    /** Validates and makes defensive copies of the collections. */
    public Message {
        keys = List.copyOf(Objects.requireNonNull(keys, "keys"));
        tag = Objects.requireNonNull(tag, "tag");
        properties = Map.copyOf(Objects.requireNonNull(properties, "properties"));
        Objects.requireNonNull(body, "body");
    }

    /**
     * @param body the payload (not copied)
     * @return a message with no keys, tag or properties, born now
     */
    public static Message of(byte[] body) {
        return builder().body(body).build();
    }

    /** @return a builder; {@link Builder#body} must be set */
    public static Builder builder() {
        return new Builder();
    }

    /** @return the body's size in bytes */
    public long bodySize() {
        return body.byteSize();
    }

    /** Builds {@link Message}s. Not thread-safe. */
    public static final class Builder {
        private List<String> keys = List.of();
        private String tag = "";
        private final Map<String, String> properties = new LinkedHashMap<>();
        private long bornTimestamp = Long.MIN_VALUE;
        private MemorySegment body;

        private Builder() {
        }

        /** @param keys the message's keys @return this */
        public Builder keys(String... keys) {
            this.keys = List.of(keys);
            return this;
        }

        /** @param keys the message's keys @return this */
        public Builder keys(List<String> keys) {
            this.keys = List.copyOf(keys);
            return this;
        }

        /** @param tag the message's tag @return this */
        public Builder tag(String tag) {
            this.tag = Objects.requireNonNull(tag, "tag");
            return this;
        }

        /** @param name property name @param value property value @return this */
        public Builder property(String name, String value) {
            properties.put(Objects.requireNonNull(name, "name"), Objects.requireNonNull(value, "value"));
            return this;
        }

        /** @param epochMillis the producer's timestamp @return this */
        public Builder bornTimestamp(long epochMillis) {
            this.bornTimestamp = epochMillis;
            return this;
        }

        /** @param body the payload (not copied) @return this */
        public Builder body(byte[] body) {
            this.body = MemorySegment.ofArray(Objects.requireNonNull(body, "body"));
            return this;
        }

        /** @param body the payload between position and limit (not copied) @return this */
        public Builder body(ByteBuffer body) {
            this.body = MemorySegment.ofBuffer(Objects.requireNonNull(body, "body"));
            return this;
        }

        /** @param body the payload (not copied) @return this */
        public Builder body(MemorySegment body) {
            this.body = Objects.requireNonNull(body, "body");
            return this;
        }

        /** @return the message; born now unless a born timestamp was set */
        public Message build() {
            if (body == null) {
                throw new IllegalStateException("body is required");
            }
            long born = bornTimestamp == Long.MIN_VALUE ? System.currentTimeMillis() : bornTimestamp;
            return new Message(keys, tag, properties, born, body);
        }
    }
}
