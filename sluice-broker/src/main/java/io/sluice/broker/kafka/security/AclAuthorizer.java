package io.sluice.broker.kafka.security;

import java.util.HashSet;
import java.util.Objects;
import java.util.Set;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;

/**
 * Answers whether a principal may do an operation on a resource, as Kafka 4.3.1's StandardAuthorizer answers it, from
 * an {@link AclSet} and the {@link AuthorizerConfig}:
 * <ol>
 *   <li>A super user ({@code super.users} holds its {@code type:name}) may do everything, whatever the ACLs.</li>
 *   <li>The bindings that name the resource are the LITERAL ones of its name, the LITERAL ones named {@code *}, and
 *       the PREFIXED ones whose name begins its name, all of its resource type. Kafka's scan skips the LITERAL
 *       {@code *} for a name that begins with "*" (other than {@code *}), so that the wildcard does not name it: so
 *       here too.</li>
 *   <li>Of those, a binding applies if its principal is the principal's type and name, or {@code User:*}; its host is
 *       the client's or {@code *}; and its operation is the one asked, or ALL, or, for an ALLOW only, one that implies
 *       it (READ, WRITE, DELETE and ALTER imply DESCRIBE; ALTER_CONFIGS implies DESCRIBE_CONFIGS).</li>
 *   <li>A DENY that applies denies, whatever allows. Else an ALLOW that applies allows. Else, if some binding names
 *       the resource (whoever it is for), the operation is denied; if none does, {@code allow.everyone.if.no.acl.found}
 *       answers (false unless set).</li>
 * </ol>
 * A principal that is {@code User:*} itself and no super user makes Kafka's authorizer throw; so does this one.
 *
 * <h2>Cost</h2>
 *
 * {@link #authorize} is on the hot path: a produce or fetch asks it once a topic. It never looks at a binding of
 * another resource. It is two hash lookups (the name, and {@code *}) in the bindings of the resource type, plus one
 * lookup for each distinct length of the type's PREFIXED names that is no longer than the name, each hashing that
 * many characters of the name: with P distinct prefix lengths and a name of L characters, O(1 + P·L) character work,
 * whatever the number of bindings, plus the bindings that name the resource. Deployments use few prefix lengths
 * (prefixes such as {@code team-a.} and {@code team-b.} share one), so this is a few lookups of a short string. A
 * super user check hashes the principal's {@code type:name}. Building the index is O(N log N) in the N bindings, once
 * for each new set ({@link #withAcls}).
 *
 * <p>{@link #authorizeByResourceType} reads every binding of the resource type, as Kafka's does; it serves checks made
 * once per producer or per request (InitProducerId's IDEMPOTENT_WRITE fallback), not per record or partition.
 *
 * <p>Immutable and thread-safe: a broker holds the current one in a volatile field and swaps it when the ACLs change.
 */
public final class AclAuthorizer {

    /** The resource name Kafka's authorizeByResourceType asks about first, so that super users pass any DENY. */
    static final String HARDCODED_NAME = "hardcode";

    private final AuthorizerConfig config;
    private final AclSet acls;
    private final AclIndex index;

    /** @param config the settings @param acls the ACLs, indexed here once */
    public AclAuthorizer(AuthorizerConfig config, AclSet acls) {
        this.config = Objects.requireNonNull(config, "config");
        this.acls = Objects.requireNonNull(acls, "acls");
        this.index = new AclIndex(acls);
    }

    /** @return an authorizer with the same settings over {@code newAcls} */
    public AclAuthorizer withAcls(AclSet newAcls) {
        return new AclAuthorizer(config, newAcls);
    }

    /** @return the settings */
    public AuthorizerConfig config() {
        return config;
    }

    /** @return the ACLs answered from */
    public AclSet acls() {
        return acls;
    }

    /**
     * Kafka's StandardAuthorizer.authorize of one action on a LITERAL resource.
     *
     * @param principal the connection's principal (only its type and name count)
     * @param host the client's address as {@code InetAddress.getHostAddress()} writes it
     * @param operation the operation asked
     * @param type the resource's type
     * @param name the resource's name
     * @return true if allowed
     * @throws IllegalArgumentException if the principal is {@code User:*} and no super user, as Kafka 4.3.1 throws
     */
    public boolean authorize(KafkaPrincipal principal, String host, AclOperation operation, ResourceType type,
                             String name) {
        String principalType = principal.getPrincipalType();
        String principalName = principal.getName();
        if (isSuperUser(principalType, principalName)) {
            return true;
        }
        if (principalType.equals(KafkaPrincipal.USER_TYPE) && principalName.equals("*")) {
            // Kafka builds Set.of(principal, User:*), which throws when they are the same: Kafka answers the request
            // with UNKNOWN_SERVER_ERROR, and so does a caller that lets this propagate.
            throw new IllegalArgumentException("duplicate element: " + Acl.WILDCARD_PRINCIPAL);
        }
        return switch (index.evaluate(principalType, principalName, host, operation, type, name)) {
            case AclIndex.ALLOW -> true;
            case AclIndex.NO_ACL -> config.allowEveryoneIfNoAclFound();
            default -> false;
        };
    }

    /**
     * Kafka's Authorizer.authorizeByResourceType: whether the principal may do {@code operation} on some resource of
     * {@code type}. True if {@link #authorize} allows it on a resource named {@code hardcode} (so a super user, an
     * ALLOW of {@code *} or of a prefix of "hardcode", or {@code allow.everyone.if.no.acl.found} with no binding
     * naming it); else false if a LITERAL {@code *} DENY applies; else true if a LITERAL {@code *} ALLOW applies; else
     * true if an ALLOW applies whose name no applying DENY covers: for a LITERAL ALLOW neither a LITERAL DENY of the
     * same name nor a PREFIXED DENY of a prefix of its name, for a PREFIXED ALLOW no PREFIXED DENY of a prefix of its
     * name. Here a binding applies if its principal and host match (as in {@link #authorize}) and its operation is
     * the one asked or ALL: no operation implies another here, as in Kafka.
     *
     * @throws IllegalArgumentException if {@code operation} or {@code type} is ANY or UNKNOWN, or where
     *     {@link #authorize} throws, as Kafka throws
     */
    public boolean authorizeByResourceType(KafkaPrincipal principal, String host, AclOperation operation,
                                           ResourceType type) {
        checkByResourceTypeArguments(operation, type);
        if (authorize(principal, host, operation, type, HARDCODED_NAME)) {
            return true;
        }
        Set<String> deniedLiterals = new HashSet<>();
        Set<String> deniedPrefixes = new HashSet<>();
        Set<String> allowedLiterals = new HashSet<>();
        Set<String> allowedPrefixes = new HashSet<>();
        boolean wildcardAllowed = false;
        for (AclIndex.Rule rule : index.all(type)) {
            Acl acl = rule.acl;
            if (!rule.matches(principal.getPrincipalType(), principal.getName(), host)
                    || (acl.operation() != operation && acl.operation() != AclOperation.ALL)) {
                continue;
            }
            boolean literal = acl.patternType() == PatternType.LITERAL;
            if (acl.permission() == AclPermissionType.DENY) {
                if (literal && acl.resourceName().equals(Acl.WILDCARD_RESOURCE)) {
                    return false;
                }
                (literal ? deniedLiterals : deniedPrefixes).add(acl.resourceName());
            } else if (literal && acl.resourceName().equals(Acl.WILDCARD_RESOURCE)) {
                wildcardAllowed = true;
            } else {
                (literal ? allowedLiterals : allowedPrefixes).add(acl.resourceName());
            }
        }
        if (wildcardAllowed) {
            return true;
        }
        for (String allowed : allowedLiterals) {
            if (!deniedLiterals.contains(allowed) && !coveredByPrefix(allowed, deniedPrefixes)) {
                return true;
            }
        }
        for (String allowed : allowedPrefixes) {
            if (!coveredByPrefix(allowed, deniedPrefixes)) {
                return true;
            }
        }
        return false;
    }

    private boolean isSuperUser(String principalType, String principalName) {
        // Kafka compares the configured strings with KafkaPrincipal.toString() of the principal's type and name.
        return !config.superUsers().isEmpty()
                && config.superUsers().contains(principalType + ':' + principalName);
    }

    /** @return true if a prefix of {@code name}, one character or more, is in {@code prefixes} */
    private static boolean coveredByPrefix(String name, Set<String> prefixes) {
        for (int length = 1; length <= name.length() && !prefixes.isEmpty(); length++) {
            if (prefixes.contains(name.substring(0, length))) {
                return true;
            }
        }
        return false;
    }

    private static void checkByResourceTypeArguments(AclOperation operation, ResourceType type) {
        if (type == ResourceType.ANY) {
            throw new IllegalArgumentException("Must specify a non-filter resource type for authorizeByResourceType");
        }
        if (type == ResourceType.UNKNOWN) {
            throw new IllegalArgumentException("Unknown resource type");
        }
        if (operation == AclOperation.ANY) {
            throw new IllegalArgumentException("Must specify a non-filter operation type for authorizeByResourceType");
        }
        if (operation == AclOperation.UNKNOWN) {
            throw new IllegalArgumentException("Unknown operation type");
        }
    }
}
