package io.sluice.broker.kafka.security;

import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.kafka.common.quota.ClientQuotaEntity;

/**
 * What a client quota is set on, as Kafka names it: a user, a client id, both, or an IP address, each either a name or
 * the default of its kind (Kafka's null name, {@code <default>} in its tools). A component that is not part of the
 * entity is null.
 *
 * <p>Kafka takes only these shapes ({@link #shapeError()}): user, client id, user and client id, or IP alone. Names are
 * never empty. Immutable and thread-safe.
 *
 * @param user the user, or null when the entity has no user
 * @param clientId the client id, or null when the entity has no client id
 * @param ip the IP address or host name as the client sent it, or null when the entity has no IP
 */
public record QuotaEntity(Name user, Name clientId, Name ip) implements Comparable<QuotaEntity> {

    /** Kafka's entity type names ({@link ClientQuotaEntity#USER} and the others). */
    public static final String USER = ClientQuotaEntity.USER;
    public static final String CLIENT_ID = ClientQuotaEntity.CLIENT_ID;
    public static final String IP = ClientQuotaEntity.IP;

    /** Absent first, then the default, then names in {@link String} order; user, then client id, then IP. */
    private static final Comparator<String> VALUE_ORDER = Comparator.nullsFirst(Comparator.naturalOrder());
    private static final Comparator<Name> NAME_ORDER = Comparator.nullsFirst(
            (a, b) -> VALUE_ORDER.compare(a.value(), b.value()));
    private static final Comparator<QuotaEntity> ORDER = Comparator.<QuotaEntity, Name>comparing(QuotaEntity::user,
            NAME_ORDER).thenComparing(QuotaEntity::clientId, NAME_ORDER).thenComparing(QuotaEntity::ip, NAME_ORDER);

    /**
     * One component's name: a value, or the default of its kind.
     *
     * @param value the name; null for the default
     */
    public record Name(String value) {

        /** The default of a kind: Kafka's null entity name. */
        public static final Name DEFAULT = new Name(null);

        /** @return the name {@code value}, or {@link #DEFAULT} when it is null */
        public static Name of(String value) {
            return value == null ? DEFAULT : new Name(value);
        }

        /** @return true for the default */
        public boolean isDefault() {
            return value == null;
        }

        @Override
        public String toString() {
            return value == null ? "<default>" : value;
        }
    }

    /** @return the entity of one user (null: the default user) */
    public static QuotaEntity user(String user) {
        return new QuotaEntity(Name.of(user), null, null);
    }

    /** @return the entity of one client id (null: the default client id) */
    public static QuotaEntity clientId(String clientId) {
        return new QuotaEntity(null, Name.of(clientId), null);
    }

    /** @return the entity of a user's client id (a null name: the default of its kind) */
    public static QuotaEntity userClientId(String user, String clientId) {
        return new QuotaEntity(Name.of(user), Name.of(clientId), null);
    }

    /** @return the entity of one IP (null: the default IP) */
    public static QuotaEntity ip(String ip) {
        return new QuotaEntity(null, null, Name.of(ip));
    }

    /**
     * @param entries entity type to name (a null name is the default), as Kafka's {@link ClientQuotaEntity} holds them
     * @throws IllegalArgumentException if a type is none of user, client-id, ip
     */
    public static QuotaEntity of(Map<String, String> entries) {
        Name user = null;
        Name clientId = null;
        Name ip = null;
        for (Map.Entry<String, String> entry : entries.entrySet()) {
            Name name = Name.of(entry.getValue());
            switch (entry.getKey()) {
                case USER -> user = name;
                case CLIENT_ID -> clientId = name;
                case IP -> ip = name;
                default -> throw new IllegalArgumentException("Unhandled client quota entity type: " + entry.getKey());
            }
        }
        return new QuotaEntity(user, clientId, ip);
    }

    /**
     * Kafka's refusal of an entity whose types or names it does not take (ClientQuotaControlManager's checks, in its
     * order), or null for an entity it takes.
     *
     * @return the INVALID_REQUEST message, or null
     */
    public String shapeError() {
        if (user == null && clientId == null && ip == null) {
            return "Invalid empty client quota entity";
        }
        if (ip != null && (user != null || clientId != null)) {
            // Kafka's message, its missing space included.
            return "Invalid quota entity combination, IP entity shouldnot be combined with User or ClientId";
        }
        return null;
    }

    /** @return true for an entity of user and/or client id (the quotas of requests), false for an IP entity */
    public boolean isUserOrClient() {
        return ip == null && (user != null || clientId != null);
    }

    /**
     * @return the entity as Kafka's {@link ClientQuotaEntity}, over a map filled as Kafka fills the one it reads from a
     *     request (so that its text and iteration order are Kafka's)
     */
    public ClientQuotaEntity toKafka() {
        int size = (user == null ? 0 : 1) + (clientId == null ? 0 : 1) + (ip == null ? 0 : 1);
        Map<String, String> entries = new HashMap<>(size);
        if (user != null) {
            entries.put(USER, user.value());
        }
        if (clientId != null) {
            entries.put(CLIENT_ID, clientId.value());
        }
        if (ip != null) {
            entries.put(IP, ip.value());
        }
        return new ClientQuotaEntity(entries);
    }

    @Override
    public int compareTo(QuotaEntity other) {
        return ORDER.compare(this, Objects.requireNonNull(other, "other"));
    }

    @Override
    public String toString() {
        StringBuilder out = new StringBuilder("QuotaEntity(");
        if (user != null) {
            out.append("user=").append(user);
        }
        if (clientId != null) {
            out.append(out.length() > 12 ? ", " : "").append("client-id=").append(clientId);
        }
        if (ip != null) {
            out.append(out.length() > 12 ? ", " : "").append("ip=").append(ip);
        }
        return out.append(')').toString();
    }
}
