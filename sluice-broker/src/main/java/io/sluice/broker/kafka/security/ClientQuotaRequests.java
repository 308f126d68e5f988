package io.sluice.broker.kafka.security;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Set;
import java.util.SortedMap;
import org.apache.kafka.common.message.AlterClientQuotasRequestData;
import org.apache.kafka.common.message.AlterClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData;
import org.apache.kafka.common.message.DescribeClientQuotasRequestData.ComponentData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData.EntityData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData.EntryData;
import org.apache.kafka.common.message.DescribeClientQuotasResponseData.ValueData;
import org.apache.kafka.common.protocol.Errors;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.requests.AlterClientQuotasRequest;
import org.apache.kafka.common.requests.AlterClientQuotasResponse;
import org.apache.kafka.common.requests.ApiError;

/**
 * DescribeClientQuotas and AlterClientQuotas as Kafka 4.3.1 answers them (the broker's describe of its metadata image,
 * ClientQuotasImage; the controller's ClientQuotaControlManager for alterations), as pure functions of the
 * {@link QuotaSet}. Checked against Kafka's own classes in {@code ClientQuotaRequestsTest}.
 *
 * <p>AlterClientQuotas, as Kafka answers it:
 * <ul>
 *   <li>The request's entries are read as Kafka reads them: each entity into a map of type to name (an entity type
 *       given twice keeps its last name), each op a value or, with {@code remove}, a removal.</li>
 *   <li>An entry that names a key twice, or an entity an earlier entry named: INVALID_REQUEST "Ignoring duplicate
 *       entity ClientQuotaEntity(entries={...})" (Kafka answers this for a repeated key too, overwriting its own
 *       "Duplicate quota key" message). Kafka answers once per distinct entity, so the earlier entry's answer is
 *       replaced by that error, but its changes are made: here too.</li>
 *   <li>Then, in Kafka's order: "Invalid empty client quota entity"; "Unhandled client quota entity type: X"; "Empty
 *       X not supported"; an IP with a user or client id; "X is not a valid IP or resolvable host." (an IP entity's
 *       name must resolve); then each op in Kafka's (hash) order: a removal of a key not set is nothing; "Invalid
 *       configuration key K"; "Quota K must be greater than 0"; for the integral keys ({@code producer_byte_rate},
 *       {@code consumer_byte_rate}: LONG; {@code connection_creation_rate}: INT) "Proposed value for K is too large
 *       for a LONG." (or "an INT.") and "K cannot be a fractional value.". The first failure answers the entity and
 *       none of its ops is made; the other entities' are. NaN passes every check, as in Kafka.</li>
 *   <li>More than 10,000 changed values in one request: nothing is made, and every entry of the request (as sent)
 *       is answered POLICY_VIOLATION with the error's default message.</li>
 *   <li>{@code validateOnly}: the same answer, nothing made.</li>
 * </ul>
 *
 * <p>DescribeClientQuotas refuses a filter (errorCode and errorMessage set, entries null) with an empty entity type,
 * a type given twice, a match type other than EXACT (0, needs a name), DEFAULT (1) and SPECIFIED (2, both without a
 * name), or an IP component with a user or client id one: INVALID_REQUEST; a type other than user, client-id and ip:
 * UNSUPPORTED_VERSION. Otherwise it lists every entity that has each component the filter names (EXACT: that name,
 * DEFAULT: the default, SPECIFIED: any name or the default) and, with {@code strict}, no other component.
 *
 * <p>Order: Kafka answers in the order of its hash maps (entries per distinct entity; entity components; values),
 * which no client relies on. Here the same hash maps are built, so small sets are answered in Kafka's order; a Kafka
 * broker whose maps grew through a long history may list them otherwise. Authorizing the request itself (DESCRIBE_CONFIGS,
 * or ALTER_CONFIGS, on the cluster) is the caller's: {@link #describeError} and {@link #alterError} are Kafka's answers
 * then.
 *
 * <p>Stateless and thread-safe.
 */
public final class ClientQuotaRequests {

    /** The versions of the two APIs Kafka 4.3.1 serves, and these functions answer. */
    public static final short MIN_VERSION = 0;
    public static final short MAX_VERSION = 1;
    /** Kafka's largest number of records one controller operation writes (QuorumController.MAX_RECORDS_PER_USER_OP). */
    static final int MAX_RECORDS_PER_OPERATION = 10_000;
    /** Kafka's match types of a DescribeClientQuotas component. */
    public static final byte MATCH_TYPE_EXACT = 0;
    public static final byte MATCH_TYPE_DEFAULT = 1;
    public static final byte MATCH_TYPE_SPECIFIED = 2;

    /** How an IP entity's name is checked: Kafka's {@code InetAddress.getByName}, which may ask DNS for a host name. */
    @FunctionalInterface
    public interface HostResolver {

        /** @throws UnknownHostException if {@code host} is neither an address nor a name that resolves */
        InetAddress resolve(String host) throws UnknownHostException;
    }

    /** The resolver Kafka uses. */
    public static final HostResolver SYSTEM_RESOLVER = InetAddress::getByName;

    private ClientQuotaRequests() {
    }

    /**
     * @param quotas the current set
     * @return the entities the request's filter matches with their values, or the refusal of the filter; throttle time
     *     0 (the caller sets it)
     */
    public static DescribeClientQuotasResponseData describe(QuotaSet quotas, DescribeClientQuotasRequestData request,
                                                            short version) {
        checkVersion(version);
        Map<String, String> exactMatch = new HashMap<>();
        Set<String> typeMatch = new HashSet<>();
        String refusal = null;
        Errors error = Errors.INVALID_REQUEST;
        for (ComponentData component : request.components()) {
            String type = component.entityType();
            if (type.isEmpty()) {
                refusal = "Invalid empty entity type.";
            } else if (exactMatch.containsKey(type) || typeMatch.contains(type)) {
                refusal = "Entity type " + type + " cannot appear more than once in the filter.";
            } else if (!(type.equals(QuotaEntity.IP) || type.equals(QuotaEntity.USER)
                    || type.equals(QuotaEntity.CLIENT_ID))) {
                refusal = "Unsupported entity type " + type;
                error = Errors.UNSUPPORTED_VERSION;
            } else {
                refusal = match(component, exactMatch, typeMatch);
            }
            if (refusal != null) {
                return describeError(error, refusal);
            }
        }
        boolean ip = exactMatch.containsKey(QuotaEntity.IP) || typeMatch.contains(QuotaEntity.IP);
        boolean userOrClient = exactMatch.containsKey(QuotaEntity.USER) || typeMatch.contains(QuotaEntity.USER)
                || exactMatch.containsKey(QuotaEntity.CLIENT_ID) || typeMatch.contains(QuotaEntity.CLIENT_ID);
        if (ip && userOrClient) {
            return describeError(Errors.INVALID_REQUEST, "Invalid entity filter component combination. IP filter "
                    + "component should not be used with user or clientId filter component.");
        }
        DescribeClientQuotasResponseData response = new DescribeClientQuotasResponseData();
        for (Map.Entry<ClientQuotaEntity, Map<String, Double>> entry : kafkaImage(quotas).entrySet()) {
            Map<String, String> entity = entry.getKey().entries();
            if (matches(entity, exactMatch, typeMatch, request.strict())) {
                EntryData data = new EntryData();
                for (Map.Entry<String, String> component : entity.entrySet()) {
                    data.entity().add(new EntityData().setEntityType(component.getKey())
                            .setEntityName(component.getValue()));
                }
                List<ValueData> values = new ArrayList<>(entry.getValue().size());
                for (Map.Entry<String, Double> value : entry.getValue().entrySet()) {
                    values.add(new ValueData().setKey(value.getKey()).setValue(value.getValue()));
                }
                response.entries().add(data.setValues(values));
            }
        }
        return response;
    }

    /**
     * Kafka's answer to a DescribeClientQuotas it refuses as a whole (CLUSTER_AUTHORIZATION_FAILED when the principal
     * may not DESCRIBE_CONFIGS the cluster, with that error's default message): no entries.
     */
    public static DescribeClientQuotasResponseData describeError(Errors error) {
        return describeError(error, error.message());
    }

    /**
     * @return the request as a change of the stored set (nothing is applied yet), checking IP names with
     *     {@link #SYSTEM_RESOLVER}
     */
    public static QuotaMutation alter(AlterClientQuotasRequestData request, short version) {
        return alter(request, version, SYSTEM_RESOLVER);
    }

    /**
     * @param resolver how an IP entity's name is checked
     * @return the request as a change of the stored set (nothing is applied yet)
     */
    public static QuotaMutation alter(AlterClientQuotasRequestData request, short version, HostResolver resolver) {
        checkVersion(version);
        Objects.requireNonNull(resolver, "resolver");
        AlterClientQuotasRequestData copy = request.duplicate();
        List<ClientQuotaAlteration> alterations = new AlterClientQuotasRequest(copy, version).entries();
        boolean validateOnly = copy.validateOnly();
        return new QuotaMutation(quotas -> alter(quotas, copy, alterations, validateOnly, resolver));
    }

    /**
     * Kafka's answer to an AlterClientQuotas it refuses as a whole (CLUSTER_AUTHORIZATION_FAILED when the principal
     * may not ALTER_CONFIGS the cluster): every entry of the request, as sent, with the error and its default message.
     */
    public static AlterClientQuotasResponseData alterError(AlterClientQuotasRequestData request, Errors error) {
        List<AlterClientQuotasResponseData.EntryData> entries = new ArrayList<>(request.entries().size());
        for (AlterClientQuotasRequestData.EntryData entry : request.entries()) {
            List<AlterClientQuotasResponseData.EntityData> entity = new ArrayList<>(entry.entity().size());
            for (AlterClientQuotasRequestData.EntityData component : entry.entity()) {
                entity.add(new AlterClientQuotasResponseData.EntityData().setEntityType(component.entityType())
                        .setEntityName(component.entityName()));
            }
            entries.add(new AlterClientQuotasResponseData.EntryData().setEntity(entity).setErrorCode(error.code())
                    .setErrorMessage(error.message()));
        }
        return new AlterClientQuotasResponseData().setEntries(entries);
    }

    private static QuotaMutation.QuotaChange alter(QuotaSet quotas, AlterClientQuotasRequestData request,
                                                   List<ClientQuotaAlteration> alterations, boolean validateOnly,
                                                   HostResolver resolver) {
        if (alterations.isEmpty()) {
            return new QuotaMutation.QuotaChange(quotas, new AlterClientQuotasResponseData());
        }
        Map<ClientQuotaEntity, ApiError> results = new HashMap<>();
        Map<QuotaEntity, Map<String, Double>> changes = new LinkedHashMap<>();
        int records = 0;
        for (ClientQuotaAlteration alteration : alterations) {
            ClientQuotaEntity entity = alteration.entity();
            // Kafka reads the ops into a map; a key seen twice marks the entity, and the mark is then overwritten.
            Map<String, Double> values = new HashMap<>(alteration.ops().size());
            for (ClientQuotaAlteration.Op op : alteration.ops()) {
                if (values.containsKey(op.key())) {
                    results.put(entity, invalid("Duplicate quota key " + op.key()
                            + " not updating quota for this entity " + entity));
                } else {
                    values.put(op.key(), op.value());
                }
            }
            if (results.containsKey(entity)) {
                results.put(entity, invalid("Ignoring duplicate entity " + entity));
                continue;
            }
            Map<String, Double> entityChanges = new LinkedHashMap<>();
            ApiError result = alterEntity(quotas, entity, values, entityChanges, resolver);
            results.put(entity, result);
            if (result.isSuccess() && !entityChanges.isEmpty()) {
                records += entityChanges.size();
                changes.computeIfAbsent(QuotaEntity.of(entity.entries()), e -> new LinkedHashMap<>())
                        .putAll(entityChanges);
            }
        }
        if (records > MAX_RECORDS_PER_OPERATION) {
            return new QuotaMutation.QuotaChange(quotas, alterError(request, Errors.POLICY_VIOLATION));
        }
        AlterClientQuotasResponseData response = AlterClientQuotasResponse.fromQuotaEntities(results, 0).data();
        return new QuotaMutation.QuotaChange(validateOnly ? quotas : quotas.with(changes), response);
    }

    /** ClientQuotaControlManager.alterClientQuotaEntity: the entity's checks, then its values' ones. */
    private static ApiError alterEntity(QuotaSet quotas, ClientQuotaEntity entity, Map<String, Double> values,
                                        Map<String, Double> changes, HostResolver resolver) {
        String refusal = entityError(entity.entries(), resolver);
        if (refusal != null) {
            return invalid(refusal);
        }
        QuotaEntity ours = QuotaEntity.of(entity.entries());
        SortedMap<String, Double> current = quotas.quotas(ours);
        for (Map.Entry<String, Double> value : values.entrySet()) {
            String key = value.getKey();
            Double newValue = value.getValue();
            if (newValue == null) {
                if (current.containsKey(key)) {
                    changes.put(key, null);
                }
                continue;
            }
            refusal = valueError(ours, key, newValue);
            if (refusal != null) {
                changes.clear();
                return invalid(refusal);
            }
            if (!Objects.equals(current.get(key), newValue)) {
                changes.put(key, newValue);
            }
        }
        return ApiError.NONE;
    }

    /** ClientQuotaControlManager.validateEntity and configKeysForEntityType, in their order and words. */
    private static String entityError(Map<String, String> entries, HostResolver resolver) {
        if (entries.isEmpty()) {
            return "Invalid empty client quota entity";
        }
        for (Map.Entry<String, String> entry : entries.entrySet()) {
            String type = entry.getKey();
            if (!type.equals(QuotaEntity.USER) && !type.equals(QuotaEntity.CLIENT_ID) && !type.equals(QuotaEntity.IP)) {
                return "Unhandled client quota entity type: " + type;
            }
            if (entry.getValue() != null && entry.getValue().isEmpty()) {
                return "Empty " + type + " not supported";
            }
        }
        String shape = QuotaEntity.of(entries).shapeError();
        if (shape != null) {
            return shape;
        }
        String ip = entries.get(QuotaEntity.IP);
        if (ip != null) {
            try {
                resolver.resolve(ip);
            } catch (UnknownHostException e) {
                return ip + " is not a valid IP or resolvable host.";
            }
        }
        return null;
    }

    /** ClientQuotaControlManager.validateQuotaKeyValue: the key its entity takes, then the value for its type. */
    static String valueError(QuotaEntity entity, String key, double value) {
        boolean ipKey = QuotaSet.CONNECTION_CREATION_RATE.equals(key);
        if (entity.isUserOrClient() ? !QuotaSet.USER_AND_CLIENT_KEYS.contains(key) : !ipKey) {
            return "Invalid configuration key " + key;
        }
        if (value <= 0.0) {
            return "Quota " + key + " must be greater than 0";
        }
        if (ipKey) {
            if (value > Integer.MAX_VALUE) {
                return "Proposed value for " + key + " is too large for an INT.";
            }
            return fractionError(key, value);
        }
        if (key.equals(QuotaSet.PRODUCER_BYTE_RATE) || key.equals(QuotaSet.CONSUMER_BYTE_RATE)) {
            if (value > Long.MAX_VALUE) {
                return "Proposed value for " + key + " is too large for a LONG.";
            }
            return fractionError(key, value);
        }
        return null; // request_percentage and controller_mutation_rate are doubles
    }

    private static String fractionError(String key, double value) {
        return Math.abs(value % 1.0) > 1e-6 ? key + " cannot be a fractional value." : null;
    }

    private static String match(ComponentData component, Map<String, String> exactMatch, Set<String> typeMatch) {
        switch (component.matchType()) {
            case MATCH_TYPE_EXACT -> {
                if (component.match() == null) {
                    return "Request specified MATCH_TYPE_EXACT, but set match string to null.";
                }
                exactMatch.put(component.entityType(), component.match());
            }
            case MATCH_TYPE_DEFAULT -> {
                if (component.match() != null) {
                    return "Request specified MATCH_TYPE_DEFAULT, but also specified a match string.";
                }
                exactMatch.put(component.entityType(), null);
            }
            case MATCH_TYPE_SPECIFIED -> {
                if (component.match() != null) {
                    return "Request specified MATCH_TYPE_SPECIFIED, but also specified a match string.";
                }
                typeMatch.add(component.entityType());
            }
            default -> {
                return "Unknown match type " + component.matchType();
            }
        }
        return null;
    }

    private static boolean matches(Map<String, String> entity, Map<String, String> exactMatch, Set<String> typeMatch,
                                   boolean strict) {
        if (strict && entity.size() != exactMatch.size() + typeMatch.size()) {
            return false;
        }
        for (Map.Entry<String, String> entry : exactMatch.entrySet()) {
            if (!entity.containsKey(entry.getKey()) || !Objects.equals(entity.get(entry.getKey()), entry.getValue())) {
                return false;
            }
        }
        for (String type : typeMatch) {
            if (!entity.containsKey(type)) {
                return false;
            }
        }
        return true;
    }

    /**
     * The set as Kafka's metadata image holds it: hash maps of Kafka's entities to hash maps of values, each filled as
     * Kafka fills a fresh image (its entity maps from the records' order, its value maps sized by their count), so
     * that iterating them gives Kafka's order for a set that was not reshaped by a long history.
     */
    private static Map<ClientQuotaEntity, Map<String, Double>> kafkaImage(QuotaSet quotas) {
        Map<ClientQuotaEntity, Map<String, Double>> image = new HashMap<>(quotas.entities().size());
        for (Map.Entry<QuotaEntity, SortedMap<String, Double>> entity : quotas.entities().entrySet()) {
            Map<String, Double> values = new HashMap<>(entity.getValue().size());
            values.putAll(entity.getValue());
            image.put(entity.getKey().toKafka(), values);
        }
        return image;
    }

    private static DescribeClientQuotasResponseData describeError(Errors error, String message) {
        return new DescribeClientQuotasResponseData().setErrorCode(error.code()).setErrorMessage(message)
                .setEntries(null);
    }

    private static ApiError invalid(String message) {
        return new ApiError(Errors.INVALID_REQUEST, message);
    }

    private static void checkVersion(short version) {
        if (version < MIN_VERSION || version > MAX_VERSION) {
            throw new IllegalArgumentException("client quota APIs are served at versions " + MIN_VERSION + " to "
                    + MAX_VERSION + ", not " + version);
        }
    }
}
