package io.sluice.broker.kafka.security;

import java.util.LinkedHashSet;
import java.util.Objects;
import java.util.Set;

/**
 * The authorizer's two settings, as Kafka 4.3.1's StandardAuthorizer reads them.
 *
 * <p>Immutable and thread-safe.
 *
 * @param superUsers the principals allowed everything, each as {@code type:name} (compared as that string with the
 *     principal's type, a colon and its name)
 * @param allowEveryoneIfNoAclFound whether an operation on a resource no ACL names is allowed
 */
public record AuthorizerConfig(Set<String> superUsers, boolean allowEveryoneIfNoAclFound) {

    /** Kafka's name of the super users setting: principals separated by semicolons. */
    public static final String SUPER_USERS = "super.users";
    /** Kafka's name of the setting that allows what no ACL names; false unless set. */
    public static final String ALLOW_EVERYONE_IF_NO_ACL_FOUND = "allow.everyone.if.no.acl.found";
    /** No super users, and what no ACL names is denied: Kafka's defaults. */
    public static final AuthorizerConfig DEFAULT = new AuthorizerConfig(Set.of(), false);

    /** @param superUsers copied */
    public AuthorizerConfig {
        superUsers = Set.copyOf(Objects.requireNonNull(superUsers, "superUsers"));
    }

    /**
     * Reads the settings as Kafka does: {@code super.users} split at semicolons, each part trimmed, empty parts
     * skipped, every other part required to have a colon (Kafka's SecurityUtils.parseKafkaPrincipal; {@code User:} is
     * not required, {@code Group:ops} is taken); {@code allow.everyone.if.no.acl.found} true only if it is
     * {@code true} in any case once trimmed, so that any other value, as in Kafka, is false.
     *
     * @param superUsers the {@code super.users} value, or null when not set
     * @param allowEveryoneIfNoAclFound the {@code allow.everyone.if.no.acl.found} value, or null when not set
     * @throws IllegalArgumentException naming {@code super.users} and the part without a colon
     */
    public static AuthorizerConfig parse(String superUsers, String allowEveryoneIfNoAclFound) {
        Set<String> users = new LinkedHashSet<>();
        if (superUsers != null) {
            for (String part : superUsers.split(";")) {
                String user = part.trim();
                if (user.isEmpty()) {
                    continue;
                }
                if (user.indexOf(':') < 0) {
                    throw new IllegalArgumentException(SUPER_USERS + ": expected a string in format "
                            + "principalType:principalName but got " + user);
                }
                users.add(user);
            }
        }
        boolean allow = allowEveryoneIfNoAclFound != null && Boolean.parseBoolean(allowEveryoneIfNoAclFound.trim());
        return new AuthorizerConfig(users, allow);
    }
}
