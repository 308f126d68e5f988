package io.sluice.broker.kafka.security;

import java.util.Comparator;
import java.util.Objects;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;

/**
 * One ACL binding, as Kafka 4.3.1's StandardAcl holds it: a resource pattern (type, name, LITERAL or PREFIXED), the
 * principal it names ({@code type:name}, kept as the string it was created with; {@code User:*} is any user), the host
 * ({@code *} is any host), the operation and ALLOW or DENY.
 *
 * <p>Only a binding Kafka's CreateAcls could have stored can be built: a specific resource type, a LITERAL or PREFIXED
 * pattern, a non-empty name, a specific operation, ALLOW or DENY, and a principal with a colon (the checks of Kafka's
 * AclControlManager.validateNewAcl). Kafka's further check of a CLUSTER binding's name is a check of the request, made
 * by {@link AclRequests}, not of the model. Bindings order by resource type, name, pattern type, principal, host,
 * operation and permission ({@link #ORDER}, on Kafka's codes), the order of an {@link AclSet} and its encoding.
 *
 * <p>Immutable and thread-safe.
 *
 * @param resourceType the resource type, neither ANY nor UNKNOWN
 * @param resourceName the resource name, not empty; {@code *} in a LITERAL binding is every resource of the type
 * @param patternType LITERAL or PREFIXED
 * @param principal {@code type:name}, split at its first colon
 * @param host the client's address as {@code InetAddress.getHostAddress()} writes it, or {@code *}
 * @param operation the operation, neither ANY nor UNKNOWN
 * @param permission ALLOW or DENY
 */
public record Acl(ResourceType resourceType, String resourceName, PatternType patternType, String principal,
                  String host, AclOperation operation, AclPermissionType permission) implements Comparable<Acl> {

    /** The literal resource name that stands for every resource of a type. */
    public static final String WILDCARD_RESOURCE = ResourcePattern.WILDCARD_RESOURCE;
    /** The principal that stands for every user. */
    public static final String WILDCARD_PRINCIPAL = "User:*";
    /** The host that stands for every host. */
    public static final String WILDCARD_HOST = "*";

    /** The order of bindings in a set and in its encoding: stable, as it is on Kafka's codes and on strings. */
    public static final Comparator<Acl> ORDER = Comparator
            .comparingInt((Acl acl) -> acl.resourceType.code())
            .thenComparing(Acl::resourceName)
            .thenComparingInt(acl -> acl.patternType.code())
            .thenComparing(Acl::principal)
            .thenComparing(Acl::host)
            .thenComparingInt(acl -> acl.operation.code())
            .thenComparingInt(acl -> acl.permission.code());

    /** @throws IllegalArgumentException if Kafka would not store this binding, naming the field */
    public Acl {
        Objects.requireNonNull(resourceType, "resourceType");
        Objects.requireNonNull(resourceName, "resourceName");
        Objects.requireNonNull(patternType, "patternType");
        Objects.requireNonNull(principal, "principal");
        Objects.requireNonNull(host, "host");
        Objects.requireNonNull(operation, "operation");
        Objects.requireNonNull(permission, "permission");
        if (resourceType == ResourceType.ANY || resourceType == ResourceType.UNKNOWN) {
            throw new IllegalArgumentException("Invalid resourceType " + resourceType);
        }
        if (patternType != PatternType.LITERAL && patternType != PatternType.PREFIXED) {
            throw new IllegalArgumentException("Invalid patternType " + patternType);
        }
        if (operation == AclOperation.ANY || operation == AclOperation.UNKNOWN) {
            throw new IllegalArgumentException("Invalid operation " + operation);
        }
        if (permission != AclPermissionType.ALLOW && permission != AclPermissionType.DENY) {
            throw new IllegalArgumentException("Invalid permissionType " + permission);
        }
        if (resourceName.isEmpty()) {
            throw new IllegalArgumentException("Resource name should not be empty");
        }
        if (principal.indexOf(':') < 0) {
            throw new IllegalArgumentException("Could not parse principal from `" + principal
                    + "` (no colon is present separating the principal type from the principal name)");
        }
    }

    /** @return the principal's type: what precedes its first colon */
    public String principalType() {
        return principal.substring(0, principal.indexOf(':'));
    }

    /** @return the principal's name: what follows its first colon */
    public String principalName() {
        return principal.substring(principal.indexOf(':') + 1);
    }

    /** @return this binding as kafka-clients' model has it, for its filters */
    public AclBinding toBinding() {
        return new AclBinding(new ResourcePattern(resourceType, resourceName, patternType),
                new AccessControlEntry(principal, host, operation, permission));
    }

    @Override
    public int compareTo(Acl other) {
        return ORDER.compare(this, other);
    }
}
