package io.sluice.broker.kafka.security;

import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.SortedMap;

/**
 * One quota key's values ({@code producer_byte_rate}, say) on user and client id entities, indexed for the question
 * Kafka's default quota callback answers for every request: which quota applies to this user and client id, and
 * which entity's usage it is measured on.
 *
 * <p>Kafka measures a client's usage on a sensor named by two tags, user and client id, one of them possibly empty,
 * and bounds it by the most specific quota of the 8 that could apply:
 * <ol>
 *   <li>{@code /config/users/<user>/clients/<client-id>}</li>
 *   <li>{@code /config/users/<user>/clients/<default>}</li>
 *   <li>{@code /config/users/<user>}</li>
 *   <li>{@code /config/users/<default>/clients/<client-id>}</li>
 *   <li>{@code /config/users/<default>/clients/<default>}</li>
 *   <li>{@code /config/users/<default>}</li>
 *   <li>{@code /config/clients/<client-id>}</li>
 *   <li>{@code /config/clients/<default>}</li>
 * </ol>
 * The tags ({@link #shape}) follow which kinds of entity have this key at all: only client ids, only users, or only
 * users' client ids: the tags are always those of that kind; more than one kind: the kind of the first entity of the
 * list above that has the key. The quota ({@link #limit}) then follows from the tags alone: both tags non-empty, the
 * first of entries 1, 2, 4, 5 that is set; a user tag only, 3 then 6; a client id tag only, 7 then 8. So a client
 * with an empty client id has no client id quota, and none of its user's client id quotas either, as in Kafka; a
 * null client id (or user) has no quota.
 *
 * <p>Users are compared by principal name (Kafka compares them URL-encoded, which is the same comparison). Immutable
 * and thread-safe; the questions allocate nothing.
 */
final class QuotaLimits {

    /** The measuring tags: user and client id. */
    static final int USER_AND_CLIENT_ID = 0;
    /** The measuring tags: user only (client id tag ""). */
    static final int USER = 1;
    /** The measuring tags: client id only (user tag ""). */
    static final int CLIENT_ID = 2;

    private static final int CLIENT_ID_KIND = 1;
    private static final int USER_KIND = 2;
    private static final int USER_CLIENT_ID_KIND = 4;

    /** The kinds of entity that have the key: Kafka's quotaTypesEnabled bits. */
    private final int kinds;
    private final Map<String, ClientIdLimits> userClientIds;
    private final ClientIdLimits defaultUserClientIds;
    private final Map<String, Double> users;
    private final Double defaultUser;
    private final ClientIdLimits clientIds;

    /** A user's (or the default user's) client id quotas, or the quotas of client ids alone. */
    private record ClientIdLimits(Map<String, Double> named, Double defaultClientId) {

        Double named(String clientId) {
            return named.get(clientId);
        }
    }

    private QuotaLimits(int kinds, Map<String, ClientIdLimits> userClientIds, ClientIdLimits defaultUserClientIds,
                        Map<String, Double> users, Double defaultUser, ClientIdLimits clientIds) {
        this.kinds = kinds;
        this.userClientIds = userClientIds;
        this.defaultUserClientIds = defaultUserClientIds;
        this.users = users;
        this.defaultUser = defaultUser;
        this.clientIds = clientIds;
    }

    /** @return the values of {@code key} in {@code quotas} */
    static QuotaLimits of(QuotaSet quotas, String key) {
        int kinds = 0;
        Map<String, Map<String, Double>> userClientIds = new HashMap<>();
        Map<String, Double> defaultUserClientIds = new HashMap<>();
        Double defaultUserDefaultClientId = null;
        Map<String, Double> userDefaultClientIds = new HashMap<>();
        Map<String, Double> users = new HashMap<>();
        Double defaultUser = null;
        Map<String, Double> clientIds = new HashMap<>();
        Double defaultClientId = null;
        for (Map.Entry<QuotaEntity, SortedMap<String, Double>> entry : quotas.entities().entrySet()) {
            Double value = entry.getValue().get(key);
            QuotaEntity entity = entry.getKey();
            if (value == null || !entity.isUserOrClient()) {
                continue;
            }
            QuotaEntity.Name user = entity.user();
            QuotaEntity.Name clientId = entity.clientId();
            if (user != null && clientId != null) {
                kinds |= USER_CLIENT_ID_KIND;
                if (user.isDefault() && clientId.isDefault()) {
                    defaultUserDefaultClientId = value;
                } else if (user.isDefault()) {
                    defaultUserClientIds.put(clientId.value(), value);
                } else if (clientId.isDefault()) {
                    userDefaultClientIds.put(user.value(), value);
                } else {
                    userClientIds.computeIfAbsent(user.value(), u -> new HashMap<>()).put(clientId.value(), value);
                }
            } else if (user != null) {
                kinds |= USER_KIND;
                if (user.isDefault()) {
                    defaultUser = value;
                } else {
                    users.put(user.value(), value);
                }
            } else {
                kinds |= CLIENT_ID_KIND;
                if (clientId.isDefault()) {
                    defaultClientId = value;
                } else {
                    clientIds.put(clientId.value(), value);
                }
            }
        }
        Map<String, ClientIdLimits> byUser = new HashMap<>();
        for (String user : userClientIds.keySet()) {
            byUser.put(user, new ClientIdLimits(Collections.unmodifiableMap(userClientIds.get(user)),
                    userDefaultClientIds.get(user)));
        }
        for (Map.Entry<String, Double> userDefault : userDefaultClientIds.entrySet()) {
            // Not Map.of(): its get(null) throws, and a null client id is looked up as Kafka looks it up.
            byUser.putIfAbsent(userDefault.getKey(), new ClientIdLimits(Collections.emptyMap(),
                    userDefault.getValue()));
        }
        return new QuotaLimits(kinds, Collections.unmodifiableMap(byUser), new ClientIdLimits(
                Collections.unmodifiableMap(defaultUserClientIds), defaultUserDefaultClientId),
                Collections.unmodifiableMap(users), defaultUser, new ClientIdLimits(
                        Collections.unmodifiableMap(clientIds), defaultClientId));
    }

    /** @return true when no entity has the key: no client has this quota */
    boolean none() {
        return kinds == 0;
    }

    /**
     * @return the tags a client's usage is measured on ({@link #USER_AND_CLIENT_ID}, {@link #USER} or
     *     {@link #CLIENT_ID}): Kafka's DefaultQuotaCallback.quotaMetricTags
     */
    int shape(String user, String clientId) {
        switch (kinds) {
            case 0, CLIENT_ID_KIND -> {
                return CLIENT_ID;
            }
            case USER_KIND -> {
                return USER;
            }
            case USER_CLIENT_ID_KIND -> {
                return USER_AND_CLIENT_ID;
            }
            default -> {
                ClientIdLimits ofUser = userClientIds.get(user);
                if (ofUser != null && (ofUser.named(clientId) != null || ofUser.defaultClientId() != null)) {
                    return USER_AND_CLIENT_ID;
                }
                if (users.get(user) != null) {
                    return USER;
                }
                if (defaultUserClientIds.named(clientId) != null || defaultUserClientIds.defaultClientId() != null) {
                    return USER_AND_CLIENT_ID;
                }
                return defaultUser != null ? USER : CLIENT_ID;
            }
        }
    }

    /** @return the user tag of a {@link #shape}: "" when only the client id measures */
    static String userTag(int shape, String user) {
        return shape == CLIENT_ID ? "" : user;
    }

    /** @return the client id tag of a {@link #shape}: "" when only the user measures */
    static String clientIdTag(int shape, String clientId) {
        return shape == USER ? "" : clientId;
    }

    /**
     * @return the quota of the usage measured on these tags, or null when none applies: Kafka's
     *     DefaultQuotaCallback.quotaLimit
     */
    Double limit(String userTag, String clientIdTag) {
        if (userTag == null || clientIdTag == null) {
            return null;
        }
        if (!userTag.isEmpty() && !clientIdTag.isEmpty()) {
            ClientIdLimits ofUser = userClientIds.get(userTag);
            if (ofUser != null) {
                Double quota = ofUser.named(clientIdTag);
                if (quota == null) {
                    quota = ofUser.defaultClientId();
                }
                if (quota != null) {
                    return quota;
                }
            }
            Double quota = defaultUserClientIds.named(clientIdTag);
            return quota != null ? quota : defaultUserClientIds.defaultClientId();
        }
        if (!userTag.isEmpty()) {
            Double quota = users.get(userTag);
            return quota != null ? quota : defaultUser;
        }
        if (!clientIdTag.isEmpty()) {
            Double quota = clientIds.named(clientIdTag);
            return quota != null ? quota : clientIds.defaultClientId();
        }
        return null;
    }

    /** @return the quota that applies to this user and client id, or null: {@link #limit} of its {@link #shape} */
    Double limitFor(String user, String clientId) {
        int shape = shape(user, clientId);
        return limit(userTag(shape, user), clientIdTag(shape, clientId));
    }
}
