package io.sluice.broker.kafka.security;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;

/**
 * An {@link AclSet} indexed for the question "which bindings name this resource, and what do they say about this
 * principal, host and operation", without looking at bindings of other resources (see {@link AclAuthorizer} for the
 * cost).
 *
 * <p>Per resource type: the LITERAL bindings by name (the wildcard {@code *} among them), the PREFIXED ones by prefix,
 * and the lengths those prefixes have, in increasing order, so that the prefixes of a name that could be a binding's
 * are looked up one per length.
 *
 * <p>Immutable and thread-safe.
 */
final class AclIndex {

    /** No binding names the resource: the authorizer's default answers. */
    static final int NO_ACL = 0;
    /** Bindings name the resource, but none applies to this principal, host and operation: denied. */
    static final int NONE_APPLIES = 1;
    /** A binding allows, and none denies. */
    static final int ALLOW = 2;
    /** A binding denies. */
    static final int DENY = 3;

    private final Section[] sections = new Section[ResourceType.values().length];

    AclIndex(AclSet acls) {
        Map<ResourceType, List<Acl>> byType = new HashMap<>();
        for (Acl acl : acls.acls()) {
            byType.computeIfAbsent(acl.resourceType(), type -> new ArrayList<>()).add(acl);
        }
        byType.forEach((type, list) -> sections[type.ordinal()] = new Section(list));
    }

    /**
     * @return {@link #DENY} if a binding of the resource denies, else {@link #ALLOW} if one allows, else
     *     {@link #NONE_APPLIES} if any binding names the resource, else {@link #NO_ACL}
     */
    int evaluate(String principalType, String principalName, String host, AclOperation operation,
                 ResourceType type, String name) {
        Section section = sections[type.ordinal()];
        if (section == null) {
            return NO_ACL;
        }
        int result = NO_ACL;
        result = Math.max(result, apply(section.literal.get(name), principalType, principalName, host, operation));
        // Kafka's scan (StandardAuthorizerData.checkSection) takes the LITERAL "*" for a literal binding of a prefix
        // of the name when the name begins with "*", and skips it: the wildcard names every resource but those.
        if (result != DENY && !name.startsWith(Acl.WILDCARD_RESOURCE)) {
            result = Math.max(result, apply(section.literal.get(Acl.WILDCARD_RESOURCE), principalType,
                    principalName, host, operation));
        }
        for (int i = 0; result != DENY && i < section.prefixLengths.length; i++) {
            int length = section.prefixLengths[i];
            if (length > name.length()) {
                break;
            }
            result = Math.max(result, apply(section.prefixed.get(name.substring(0, length)), principalType,
                    principalName, host, operation));
        }
        return result;
    }

    /** @return every binding of {@code type}, in {@link Acl#ORDER} */
    List<Rule> all(ResourceType type) {
        Section section = sections[type.ordinal()];
        return section == null ? List.of() : section.all;
    }

    private static int apply(Rule[] rules, String principalType, String principalName, String host,
                             AclOperation operation) {
        if (rules == null) {
            return NO_ACL;
        }
        int result = NONE_APPLIES;
        for (Rule rule : rules) {
            int applied = rule.apply(principalType, principalName, host, operation);
            if (applied == DENY) {
                return DENY;
            }
            result = Math.max(result, applied);
        }
        return result;
    }

    /** The bindings of one resource type. */
    private static final class Section {
        final Map<String, Rule[]> literal = new HashMap<>();
        final Map<String, Rule[]> prefixed = new HashMap<>();
        final int[] prefixLengths;
        final List<Rule> all;

        Section(List<Acl> acls) {
            Map<String, List<Rule>> literalLists = new HashMap<>();
            Map<String, List<Rule>> prefixedLists = new HashMap<>();
            TreeSet<Integer> lengths = new TreeSet<>();
            List<Rule> rules = new ArrayList<>(acls.size());
            for (Acl acl : acls) {
                Rule rule = new Rule(acl);
                rules.add(rule);
                if (acl.patternType() == PatternType.LITERAL) {
                    literalLists.computeIfAbsent(acl.resourceName(), name -> new ArrayList<>()).add(rule);
                } else {
                    prefixedLists.computeIfAbsent(acl.resourceName(), name -> new ArrayList<>()).add(rule);
                    lengths.add(acl.resourceName().length());
                }
            }
            literalLists.forEach((name, list) -> literal.put(name, list.toArray(Rule[]::new)));
            prefixedLists.forEach((name, list) -> prefixed.put(name, list.toArray(Rule[]::new)));
            prefixLengths = lengths.stream().mapToInt(Integer::intValue).toArray();
            all = List.copyOf(rules);
        }
    }

    /** One binding, with its principal split once. */
    static final class Rule {
        final Acl acl;
        final String principalType;
        final String principalName;
        final boolean anyUser;
        final boolean allow;

        Rule(Acl acl) {
            this.acl = acl;
            this.principalType = acl.principalType();
            this.principalName = acl.principalName();
            this.anyUser = acl.principal().equals(Acl.WILDCARD_PRINCIPAL);
            this.allow = acl.permission() == AclPermissionType.ALLOW;
        }

        /** @return whether the binding matches this principal and host */
        boolean matches(String principalType, String principalName, String host) {
            return (anyUser || (this.principalType.equals(principalType) && this.principalName.equals(principalName)))
                    && (acl.host().equals(Acl.WILDCARD_HOST) || acl.host().equals(host));
        }

        /**
         * Kafka's StandardAuthorizerData.findResult: a binding for ALL applies to every operation; an ALLOW of READ,
         * WRITE, DELETE or ALTER also allows DESCRIBE, and one of ALTER_CONFIGS also allows DESCRIBE_CONFIGS; a DENY
         * applies to its own operation only.
         *
         * @return {@link #ALLOW} or {@link #DENY} if the binding applies, else {@link #NONE_APPLIES}
         */
        int apply(String principalType, String principalName, String host, AclOperation operation) {
            if (!matches(principalType, principalName, host)) {
                return NONE_APPLIES;
            }
            AclOperation granted = acl.operation();
            if (granted != AclOperation.ALL && granted != operation && !(allow && implies(granted, operation))) {
                return NONE_APPLIES;
            }
            return allow ? ALLOW : DENY;
        }

        private static boolean implies(AclOperation granted, AclOperation asked) {
            return switch (asked) {
                case DESCRIBE -> granted == AclOperation.READ || granted == AclOperation.WRITE
                        || granted == AclOperation.DELETE || granted == AclOperation.ALTER;
                case DESCRIBE_CONFIGS -> granted == AclOperation.ALTER_CONFIGS;
                default -> false;
            };
        }
    }
}
