package io.sluice.broker.kafka.security;

import java.util.Collections;
import java.util.Map;
import java.util.NavigableMap;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import java.util.TreeMap;

/**
 * The cluster's client quota configuration, as Kafka's metadata image holds it: for each {@link QuotaEntity}, its quota
 * values by key ({@code producer_byte_rate}, {@code consumer_byte_rate}, {@code request_percentage},
 * {@code controller_mutation_rate} on user and client id entities, {@code connection_creation_rate} on IP entities).
 * An entity without values is not in the set. A change makes a new set; {@link #encode()} and {@link #decode(String)}
 * are the stored form ({@link QuotaSetFormat}).
 *
 * <p>Entities are in {@link QuotaEntity} order and keys in name order, so that the same set is always the same text.
 * Immutable and thread-safe.
 */
public final class QuotaSet {

    /** The quota keys Kafka takes on user and client id entities. */
    public static final String PRODUCER_BYTE_RATE = "producer_byte_rate";
    public static final String CONSUMER_BYTE_RATE = "consumer_byte_rate";
    public static final String REQUEST_PERCENTAGE = "request_percentage";
    public static final String CONTROLLER_MUTATION_RATE = "controller_mutation_rate";
    /** The quota key Kafka takes on IP entities. */
    public static final String CONNECTION_CREATION_RATE = "connection_creation_rate";
    /** The keys of user and client id entities. */
    public static final Set<String> USER_AND_CLIENT_KEYS = Set.of(PRODUCER_BYTE_RATE, CONSUMER_BYTE_RATE,
            REQUEST_PERCENTAGE, CONTROLLER_MUTATION_RATE);

    private static final QuotaSet EMPTY = new QuotaSet(new TreeMap<>());

    private final NavigableMap<QuotaEntity, SortedMap<String, Double>> quotas;
    private final int size;

    private QuotaSet(NavigableMap<QuotaEntity, SortedMap<String, Double>> quotas) {
        this.quotas = Collections.unmodifiableNavigableMap(quotas);
        int values = 0;
        for (SortedMap<String, Double> entityQuotas : quotas.values()) {
            values += entityQuotas.size();
        }
        this.size = values;
    }

    /** @return the set without quotas */
    public static QuotaSet empty() {
        return EMPTY;
    }

    /**
     * Reads a set written by {@link #encode()}.
     *
     * @throws CorruptQuotaSetException if {@code encoded} is not a whole set in a version this build reads
     */
    public static QuotaSet decode(String encoded) {
        return QuotaSetFormat.decode(encoded);
    }

    /**
     * Reads the cluster's quota record: its text as {@link #encode()} wrote it, or the empty text of a cluster that
     * never stored one ({@code ClusterView.securityRecord} answers "" for a record it does not have).
     *
     * @param record the record's text; "" (or null) for none
     * @throws CorruptQuotaSetException if a non-empty text is not a whole set in a version this build reads
     */
    public static QuotaSet ofRecord(String record) {
        return record == null || record.isEmpty() ? EMPTY : decode(record);
    }

    /** @return the stored form of this set */
    public String encode() {
        return QuotaSetFormat.encode(this);
    }

    /** @return the number of quota values, over all entities */
    public int size() {
        return size;
    }

    /** @return true if the set holds no quota */
    public boolean isEmpty() {
        return quotas.isEmpty();
    }

    /** @return every entity with its values, in entity order; keys in name order (unmodifiable) */
    public NavigableMap<QuotaEntity, SortedMap<String, Double>> entities() {
        return quotas;
    }

    /** @return the entity's values by key, empty when it has none (unmodifiable) */
    public SortedMap<String, Double> quotas(QuotaEntity entity) {
        SortedMap<String, Double> values = quotas.get(entity);
        return values == null ? Collections.emptySortedMap() : values;
    }

    /** @return the value of {@code key} on {@code entity}, or null when it is not set */
    public Double quota(QuotaEntity entity, String key) {
        return quotas(entity).get(key);
    }

    /**
     * @param changes for each entity, its changes by key: a value sets the key, null removes it
     * @return the set after the changes; this very set when they change nothing
     */
    QuotaSet with(Map<QuotaEntity, Map<String, Double>> changes) {
        TreeMap<QuotaEntity, SortedMap<String, Double>> next = null;
        for (Map.Entry<QuotaEntity, Map<String, Double>> change : changes.entrySet()) {
            QuotaEntity entity = change.getKey();
            SortedMap<String, Double> before = next == null ? quotas(entity) : valuesOf(next, entity);
            TreeMap<String, Double> after = new TreeMap<>(before);
            for (Map.Entry<String, Double> value : change.getValue().entrySet()) {
                if (value.getValue() == null) {
                    after.remove(value.getKey());
                } else {
                    after.put(value.getKey(), value.getValue());
                }
            }
            if (after.equals(before)) {
                continue;
            }
            if (next == null) {
                next = new TreeMap<>(quotas);
            }
            if (after.isEmpty()) {
                next.remove(entity);
            } else {
                next.put(entity, Collections.unmodifiableSortedMap(after));
            }
        }
        return next == null ? this : of(next);
    }

    /** @return the set of these values (entities without values are left out) */
    static QuotaSet of(Map<QuotaEntity, ? extends Map<String, Double>> values) {
        TreeMap<QuotaEntity, SortedMap<String, Double>> copy = new TreeMap<>();
        for (Map.Entry<QuotaEntity, ? extends Map<String, Double>> entry : values.entrySet()) {
            if (!entry.getValue().isEmpty()) {
                TreeMap<String, Double> entityValues = new TreeMap<>();
                for (Map.Entry<String, Double> value : entry.getValue().entrySet()) {
                    entityValues.put(value.getKey(), Objects.requireNonNull(value.getValue(), "value"));
                }
                copy.put(Objects.requireNonNull(entry.getKey(), "entity"),
                        Collections.unmodifiableSortedMap(entityValues));
            }
        }
        return copy.isEmpty() ? EMPTY : new QuotaSet(copy);
    }

    private static SortedMap<String, Double> valuesOf(Map<QuotaEntity, SortedMap<String, Double>> map,
                                                      QuotaEntity entity) {
        SortedMap<String, Double> values = map.get(entity);
        return values == null ? Collections.emptySortedMap() : values;
    }

    @Override
    public boolean equals(Object other) {
        return other instanceof QuotaSet set && quotas.equals(set.quotas);
    }

    @Override
    public int hashCode() {
        return quotas.hashCode();
    }

    @Override
    public String toString() {
        return "QuotaSet" + quotas;
    }
}
