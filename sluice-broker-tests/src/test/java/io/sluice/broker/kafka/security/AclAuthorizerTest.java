package io.sluice.broker.kafka.security;

import static org.apache.kafka.common.acl.AclOperation.ALL;
import static org.apache.kafka.common.acl.AclOperation.ALTER;
import static org.apache.kafka.common.acl.AclOperation.ALTER_CONFIGS;
import static org.apache.kafka.common.acl.AclOperation.CREATE;
import static org.apache.kafka.common.acl.AclOperation.DELETE;
import static org.apache.kafka.common.acl.AclOperation.DESCRIBE;
import static org.apache.kafka.common.acl.AclOperation.DESCRIBE_CONFIGS;
import static org.apache.kafka.common.acl.AclOperation.IDEMPOTENT_WRITE;
import static org.apache.kafka.common.acl.AclOperation.READ;
import static org.apache.kafka.common.acl.AclOperation.WRITE;
import static org.apache.kafka.common.acl.AclPermissionType.ALLOW;
import static org.apache.kafka.common.acl.AclPermissionType.DENY;
import static org.apache.kafka.common.resource.PatternType.LITERAL;
import static org.apache.kafka.common.resource.PatternType.PREFIXED;
import static org.apache.kafka.common.resource.ResourceType.CLUSTER;
import static org.apache.kafka.common.resource.ResourceType.GROUP;
import static org.apache.kafka.common.resource.ResourceType.TOPIC;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.List;
import java.util.Set;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.junit.jupiter.api.Test;

/**
 * The authorizer's rules, each as Kafka 4.3.1's StandardAuthorizer answers it ({@code AclAuthorizerParityTest} checks
 * random sets against Kafka's own class).
 */
class AclAuthorizerTest {

    private static final KafkaPrincipal ALICE = new KafkaPrincipal("User", "alice");
    private static final KafkaPrincipal BOB = new KafkaPrincipal("User", "bob");
    private static final String HOST = "10.0.0.1";
    private static final String OTHER_HOST = "10.0.0.2";

    private static Acl acl(ResourceType type, String name, PatternType pattern, String principal, String host,
                           AclOperation operation, AclPermissionType permission) {
        return new Acl(type, name, pattern, principal, host, operation, permission);
    }

    private static Acl allow(ResourceType type, String name, PatternType pattern, String principal,
                             AclOperation operation) {
        return acl(type, name, pattern, principal, "*", operation, ALLOW);
    }

    private static Acl deny(ResourceType type, String name, PatternType pattern, String principal,
                            AclOperation operation) {
        return acl(type, name, pattern, principal, "*", operation, DENY);
    }

    private static AclAuthorizer authorizer(Acl... acls) {
        return new AclAuthorizer(AuthorizerConfig.DEFAULT, AclSet.of(List.of(acls)));
    }

    private static AclAuthorizer authorizer(AuthorizerConfig config, Acl... acls) {
        return new AclAuthorizer(config, AclSet.of(List.of(acls)));
    }

    @Test
    void aSuperUserMayDoAnythingWhateverDenies() {
        AclAuthorizer authorizer = authorizer(AuthorizerConfig.parse(" User:admin ; ;User:root;", null),
                deny(TOPIC, "*", LITERAL, "User:*", ALL), deny(CLUSTER, "kafka-cluster", LITERAL, "User:admin", ALL));
        assertThat(authorizer.config().superUsers()).containsExactlyInAnyOrder("User:admin", "User:root");
        assertThat(authorizer.authorize(new KafkaPrincipal("User", "admin"), HOST, WRITE, TOPIC, "t")).isTrue();
        assertThat(authorizer.authorize(new KafkaPrincipal("User", "root"), HOST, ALTER, CLUSTER, "kafka-cluster"))
                .isTrue();
        assertThat(authorizer.authorizeByResourceType(new KafkaPrincipal("User", "admin"), HOST, WRITE, TOPIC))
                .isTrue();
        // The configured string is compared with the principal's type:name, case and all.
        assertThat(authorizer.authorize(new KafkaPrincipal("user", "admin"), HOST, WRITE, TOPIC, "t")).isFalse();
        assertThat(authorizer.authorize(new KafkaPrincipal("Group", "admin"), HOST, WRITE, TOPIC, "t")).isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "t")).isFalse();
    }

    @Test
    void superUsersAreParsedAsKafkaParsesThem() {
        assertThat(AuthorizerConfig.parse(null, null)).isEqualTo(AuthorizerConfig.DEFAULT);
        assertThat(AuthorizerConfig.parse("", "").superUsers()).isEmpty();
        assertThat(AuthorizerConfig.parse("Group:ops;User:;:", null).superUsers())
                .containsExactlyInAnyOrder("Group:ops", "User:", ":");
        assertThatThrownBy(() -> AuthorizerConfig.parse("User:admin;root", null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("super.users: expected a string in format principalType:principalName but got root");
        assertThat(AuthorizerConfig.parse(null, " TRUE ").allowEveryoneIfNoAclFound()).isTrue();
        assertThat(AuthorizerConfig.parse(null, "yes").allowEveryoneIfNoAclFound()).isFalse();
        assertThat(AuthorizerConfig.parse(null, "false").allowEveryoneIfNoAclFound()).isFalse();
    }

    @Test
    void anAllowAppliesToItsPrincipalHostOperationAndResourceOnly() {
        AclAuthorizer authorizer = authorizer(acl(TOPIC, "orders", LITERAL, "User:alice", HOST, READ, ALLOW));
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "orders")).isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, TOPIC, "orders")).as("another user").isFalse();
        assertThat(authorizer.authorize(new KafkaPrincipal("Group", "alice"), HOST, READ, TOPIC, "orders"))
                .as("another principal type").isFalse();
        assertThat(authorizer.authorize(ALICE, OTHER_HOST, READ, TOPIC, "orders")).as("another host").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "orders")).as("another operation").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "orders2")).as("a longer name").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "order")).as("a shorter name").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, GROUP, "orders")).as("another type").isFalse();
    }

    @Test
    void wildcardsStandForAnyUserHostAndName() {
        AclAuthorizer authorizer = authorizer(allow(TOPIC, "*", LITERAL, "User:*", READ));
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "anything")).isTrue();
        assertThat(authorizer.authorize(BOB, OTHER_HOST, READ, TOPIC, "*")).isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "")).as("even an empty name").isTrue();
        // User:* is Kafka's wildcard principal: any principal, whatever its type.
        assertThat(authorizer.authorize(new KafkaPrincipal("Group", "ops"), HOST, READ, TOPIC, "t")).isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, READ, GROUP, "t")).isFalse();
        // Only User:* is a wildcard: Group:* names a principal called "*".
        AclAuthorizer groupStar = authorizer(allow(TOPIC, "t", LITERAL, "Group:*", READ));
        assertThat(groupStar.authorize(new KafkaPrincipal("Group", "ops"), HOST, READ, TOPIC, "t")).isFalse();
        assertThat(groupStar.authorize(new KafkaPrincipal("Group", "*"), HOST, READ, TOPIC, "t")).isTrue();
        // A prefixed "*" is a prefix like any other, not a wildcard.
        AclAuthorizer prefixedStar = authorizer(allow(TOPIC, "*", PREFIXED, "User:alice", READ));
        assertThat(prefixedStar.authorize(ALICE, HOST, READ, TOPIC, "t")).isFalse();
        assertThat(prefixedStar.authorize(ALICE, HOST, READ, TOPIC, "*t")).isTrue();
    }

    /**
     * Kafka 4.3.1's scan of the bindings takes the LITERAL {@code *} for a literal binding of a prefix of a name that
     * begins with "*", and skips it: the wildcard names no name beginning with "*" but {@code *} itself
     * (AclAuthorizerParityTest found it). Topic names cannot hold "*"; group and transactional ids can.
     */
    @Test
    void theLiteralWildcardDoesNotNameNamesBeginningWithAStarAsInKafka() {
        AclAuthorizer authorizer = authorizer(AuthorizerConfig.parse(null, "true"),
                allow(GROUP, "*", LITERAL, "User:alice", READ), deny(GROUP, "*", LITERAL, "User:bob", READ));
        assertThat(authorizer.authorize(ALICE, HOST, READ, GROUP, "g*")).isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, GROUP, "g*")).isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, GROUP, "*")).isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, GROUP, "*")).isFalse();
        assertThat(authorizer.authorize(BOB, HOST, READ, GROUP, "*g")).as("no ACL found: allowed").isTrue();
        assertThat(authorizer(allow(GROUP, "*", LITERAL, "User:alice", READ))
                .authorize(ALICE, HOST, READ, GROUP, "*g")).as("no ACL found: denied").isFalse();
        assertThat(authorizer(allow(GROUP, "*", PREFIXED, "User:alice", READ))
                .authorize(ALICE, HOST, READ, GROUP, "*g")).as("a prefixed * still does").isTrue();
    }

    @Test
    void aPrefixedBindingNamesEveryResourceItsNameBegins() {
        AclAuthorizer authorizer = authorizer(allow(TOPIC, "team-a.", PREFIXED, "User:alice", WRITE),
                allow(TOPIC, "t", PREFIXED, "User:bob", WRITE), allow(TOPIC, "team-a.x", PREFIXED, "User:bob", READ));
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "team-a.orders")).isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "team-a.")).as("its very name").isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "team-a")).isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "team-b.orders")).isFalse();
        assertThat(authorizer.authorize(BOB, HOST, WRITE, TOPIC, "team-a.orders")).as("a shorter prefix").isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, TOPIC, "team-a.xyz")).as("a longer prefix").isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, TOPIC, "team-a.y")).isFalse();
    }

    @Test
    void aDenyBeatsAnyAllow() {
        AclAuthorizer authorizer = authorizer(allow(TOPIC, "orders", LITERAL, "User:alice", ALL),
                allow(TOPIC, "*", LITERAL, "User:*", READ), deny(TOPIC, "ord", PREFIXED, "User:alice", READ),
                acl(TOPIC, "payments", LITERAL, "User:*", OTHER_HOST, WRITE, DENY),
                allow(TOPIC, "payments", LITERAL, "User:alice", WRITE));
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "orders")).as("a prefixed deny").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "orders")).as("denied READ only").isTrue();
        assertThat(authorizer.authorize(BOB, HOST, READ, TOPIC, "orders")).as("denied alice only").isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "payments")).isTrue();
        assertThat(authorizer.authorize(ALICE, OTHER_HOST, WRITE, TOPIC, "payments")).as("denied from one host")
                .isFalse();
        AclAuthorizer wildcardDeny = authorizer(allow(GROUP, "g", LITERAL, "User:alice", READ),
                deny(GROUP, "*", LITERAL, "User:*", ALL));
        assertThat(wildcardDeny.authorize(ALICE, HOST, READ, GROUP, "g")).isFalse();
        assertThat(wildcardDeny.authorize(ALICE, HOST, DESCRIBE, GROUP, "g")).isFalse();
    }

    @Test
    void allowsImplyDescribeAndDescribeConfigsButDeniesImplyNothing() {
        for (AclOperation implying : List.of(READ, WRITE, DELETE, ALTER, DESCRIBE, ALL)) {
            assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", implying))
                    .authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")).as("%s implies DESCRIBE", implying).isTrue();
        }
        for (AclOperation other : List.of(CREATE, ALTER_CONFIGS, DESCRIBE_CONFIGS, IDEMPOTENT_WRITE)) {
            assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", other))
                    .authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")).as("%s does not imply DESCRIBE", other).isFalse();
        }
        assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", ALTER_CONFIGS))
                .authorize(ALICE, HOST, DESCRIBE_CONFIGS, TOPIC, "t")).isTrue();
        assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", ALTER))
                .authorize(ALICE, HOST, DESCRIBE_CONFIGS, TOPIC, "t")).isFalse();
        assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", WRITE))
                .authorize(ALICE, HOST, READ, TOPIC, "t")).as("WRITE does not imply READ").isFalse();
        assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", DESCRIBE))
                .authorize(ALICE, HOST, READ, TOPIC, "t")).isFalse();
        assertThat(authorizer(allow(TOPIC, "t", LITERAL, "User:alice", ALL))
                .authorize(ALICE, HOST, IDEMPOTENT_WRITE, TOPIC, "t")).isTrue();
        // A DENY of READ does not deny DESCRIBE; a DENY of ALL denies everything.
        AclAuthorizer denyRead = authorizer(allow(TOPIC, "t", LITERAL, "User:alice", ALL),
                deny(TOPIC, "t", LITERAL, "User:alice", READ), deny(TOPIC, "t", LITERAL, "User:bob", ALL),
                allow(TOPIC, "t", LITERAL, "User:bob", ALL));
        assertThat(denyRead.authorize(ALICE, HOST, DESCRIBE, TOPIC, "t")).isTrue();
        assertThat(denyRead.authorize(ALICE, HOST, READ, TOPIC, "t")).isFalse();
        assertThat(denyRead.authorize(BOB, HOST, DESCRIBE, TOPIC, "t")).isFalse();
        AclAuthorizer denyAlterConfigs = authorizer(allow(TOPIC, "t", LITERAL, "User:alice", ALL),
                deny(TOPIC, "t", LITERAL, "User:alice", ALTER_CONFIGS));
        assertThat(denyAlterConfigs.authorize(ALICE, HOST, DESCRIBE_CONFIGS, TOPIC, "t")).isTrue();
    }

    /** Kafka's "no ACL found": no binding of the resource's type names it, whoever the binding is for. */
    @Test
    void allowEveryoneIfNoAclFoundAppliesOnlyWhereNoBindingNamesTheResource() {
        AuthorizerConfig open = AuthorizerConfig.parse(null, "true");
        AclAuthorizer authorizer = authorizer(open, acl(TOPIC, "orders", LITERAL, "User:bob", OTHER_HOST, READ, DENY),
                allow(TOPIC, "team-", PREFIXED, "User:bob", WRITE), allow(GROUP, "*", LITERAL, "User:bob", READ),
                allow(CLUSTER, "kafka-cluster", LITERAL, "User:bob", DESCRIBE));
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "payments")).as("no binding").isTrue();
        assertThat(authorizer.authorize(ALICE, HOST, WRITE, TOPIC, "orders")).as("bob's, from another host")
                .isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, TOPIC, "team-x")).as("a prefix names it").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, GROUP, "g")).as("the wildcard names it").isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, ALTER, CLUSTER, "kafka-cluster")).isFalse();
        assertThat(authorizer.authorize(ALICE, HOST, READ, ResourceType.TRANSACTIONAL_ID, "orders"))
                .as("bindings of other types do not count").isTrue();
        assertThat(authorizer(allow(TOPIC, "orders", LITERAL, "User:bob", READ))
                .authorize(ALICE, HOST, WRITE, TOPIC, "payments")).as("denied by default").isFalse();
        assertThat(new AclAuthorizer(open, AclSet.empty()).authorize(ALICE, HOST, ALL, CLUSTER, "kafka-cluster"))
                .isTrue();
    }

    @Test
    void onlyThePrincipalsTypeAndNameCount() {
        KafkaPrincipal subclass = new KafkaPrincipal("User", "alice", true) {
            @Override
            public String toString() {
                return "something else";
            }
        };
        AclAuthorizer authorizer = authorizer(AuthorizerConfig.parse("User:alice", null));
        assertThat(authorizer.authorize(subclass, HOST, WRITE, TOPIC, "t")).isTrue();
        AclAuthorizer colon = authorizer(allow(TOPIC, "t", LITERAL, "User:a:b", READ));
        assertThat(colon.authorize(new KafkaPrincipal("User", "a:b"), HOST, READ, TOPIC, "t")).isTrue();
        assertThat(colon.authorize(new KafkaPrincipal("User:a", "b"), HOST, READ, TOPIC, "t"))
                .as("split at the binding's first colon").isFalse();
    }

    /**
     * Kafka 4.3.1 builds Set.of(principal, User:*), which throws for the principal User:* itself: every request of a
     * user named "*" that is not a super user fails (UNKNOWN_SERVER_ERROR), as here.
     */
    @Test
    void theWildcardPrincipalItselfFailsUnlessASuperUser() {
        KafkaPrincipal star = new KafkaPrincipal("User", "*");
        AclAuthorizer authorizer = authorizer(allow(TOPIC, "*", LITERAL, "User:*", ALL));
        assertThatThrownBy(() -> authorizer.authorize(star, HOST, READ, TOPIC, "t"))
                .isInstanceOf(IllegalArgumentException.class).hasMessage("duplicate element: User:*");
        assertThatThrownBy(() -> authorizer.authorizeByResourceType(star, HOST, WRITE, TOPIC))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(authorizer(AuthorizerConfig.parse("User:*", null)).authorize(star, HOST, READ, TOPIC, "t"))
                .isTrue();
    }

    @Test
    void byResourceTypeTheHardcodedNameAnswersFirst() {
        assertThat(authorizer(AuthorizerConfig.parse(null, "true"))
                .authorizeByResourceType(ALICE, HOST, WRITE, TOPIC)).as("no ACL found for \"hardcode\"").isTrue();
        assertThat(authorizer(AuthorizerConfig.parse(null, "true"), allow(TOPIC, "x", LITERAL, "User:bob", READ))
                .authorizeByResourceType(ALICE, HOST, WRITE, TOPIC)).as("\"hardcode\" still has none").isTrue();
        assertThat(authorizer(allow(TOPIC, "hard", PREFIXED, "User:alice", READ))
                .authorizeByResourceType(ALICE, HOST, DESCRIBE, TOPIC)).as("READ implies DESCRIBE there").isTrue();
        assertThat(authorizer(allow(TOPIC, "orders", LITERAL, "User:alice", READ))
                .authorizeByResourceType(ALICE, HOST, DESCRIBE, TOPIC)).as("but not in the scan").isFalse();
        assertThat(authorizer(AuthorizerConfig.parse("User:alice", null), deny(TOPIC, "*", LITERAL, "User:*", ALL))
                .authorizeByResourceType(ALICE, HOST, WRITE, TOPIC)).isTrue();
    }

    @Test
    void byResourceTypeAnAllowCountsUnlessADenyCoversIt() {
        Acl literalAllow = allow(TOPIC, "orders", LITERAL, "User:alice", WRITE);
        Acl prefixedAllow = allow(TOPIC, "team-", PREFIXED, "User:alice", WRITE);
        assertThat(byType(literalAllow)).isTrue();
        assertThat(byType(prefixedAllow)).isTrue();
        assertThat(byType(allow(TOPIC, "orders", LITERAL, "User:alice", ALL))).isTrue();
        assertThat(byType(allow(TOPIC, "*", LITERAL, "User:*", WRITE), deny(TOPIC, "o", PREFIXED, "User:*", WRITE)))
                .as("a wildcard allow").isTrue();
        assertThat(byType(literalAllow, deny(TOPIC, "orders", LITERAL, "User:alice", WRITE))).isFalse();
        assertThat(byType(literalAllow, deny(TOPIC, "ord", PREFIXED, "User:*", WRITE))).isFalse();
        assertThat(byType(literalAllow, deny(TOPIC, "orders", PREFIXED, "User:alice", ALL))).isFalse();
        assertThat(byType(literalAllow, deny(TOPIC, "orders2", PREFIXED, "User:alice", WRITE))).isTrue();
        assertThat(byType(prefixedAllow, deny(TOPIC, "team-", LITERAL, "User:alice", WRITE)))
                .as("a literal deny never covers a prefix").isTrue();
        assertThat(byType(prefixedAllow, deny(TOPIC, "team", PREFIXED, "User:alice", WRITE))).isFalse();
        assertThat(byType(prefixedAllow, deny(TOPIC, "team-a", PREFIXED, "User:alice", WRITE)))
                .as("a longer prefix leaves the rest").isTrue();
        assertThat(byType(literalAllow, prefixedAllow, deny(TOPIC, "orders", LITERAL, "User:alice", WRITE)))
                .as("another allow stands").isTrue();
        assertThat(byType(literalAllow, deny(TOPIC, "*", LITERAL, "User:*", WRITE))).isFalse();
        assertThat(byType(literalAllow, deny(TOPIC, "*", PREFIXED, "User:*", WRITE)))
                .as("a prefixed * is no wildcard").isTrue();
        // What does not apply is left out: other principals, hosts, operations and resource types.
        assertThat(byType(allow(TOPIC, "orders", LITERAL, "User:bob", WRITE))).isFalse();
        assertThat(byType(acl(TOPIC, "orders", LITERAL, "User:alice", OTHER_HOST, WRITE, ALLOW))).isFalse();
        assertThat(byType(allow(TOPIC, "orders", LITERAL, "User:alice", READ))).isFalse();
        assertThat(byType(allow(GROUP, "orders", LITERAL, "User:alice", WRITE))).isFalse();
        assertThat(byType(literalAllow, deny(TOPIC, "orders", LITERAL, "User:bob", WRITE))).isTrue();
        assertThat(byType(literalAllow, deny(TOPIC, "orders", LITERAL, "User:alice", READ))).isTrue();
        assertThat(byType(literalAllow, acl(TOPIC, "*", LITERAL, "User:*", OTHER_HOST, WRITE, DENY))).isTrue();
        assertThat(byType()).isFalse();
    }

    @Test
    void byResourceTypeRefusesFilterValuesAsKafkaDoes() {
        AclAuthorizer authorizer = authorizer();
        assertThatThrownBy(() -> authorizer.authorizeByResourceType(ALICE, HOST, WRITE, ResourceType.ANY))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("Must specify a non-filter resource type for authorizeByResourceType");
        assertThatThrownBy(() -> authorizer.authorizeByResourceType(ALICE, HOST, WRITE, ResourceType.UNKNOWN))
                .hasMessage("Unknown resource type");
        assertThatThrownBy(() -> authorizer.authorizeByResourceType(ALICE, HOST, AclOperation.ANY, TOPIC))
                .hasMessage("Must specify a non-filter operation type for authorizeByResourceType");
        assertThatThrownBy(() -> authorizer.authorizeByResourceType(ALICE, HOST, AclOperation.UNKNOWN, TOPIC))
                .hasMessage("Unknown operation type");
    }

    @Test
    void withAclsKeepsTheSettings() {
        AclAuthorizer authorizer = authorizer(AuthorizerConfig.parse("User:root", "true"));
        AclAuthorizer next = authorizer.withAcls(AclSet.of(List.of(allow(TOPIC, "t", LITERAL, "User:bob", READ))));
        assertThat(next.config()).isEqualTo(authorizer.config());
        assertThat(next.config().superUsers()).isEqualTo(Set.of("User:root"));
        assertThat(next.authorize(ALICE, HOST, READ, TOPIC, "t")).isFalse();
        assertThat(next.authorize(ALICE, HOST, READ, TOPIC, "u")).isTrue();
    }

    private static boolean byType(Acl... acls) {
        return authorizer(acls).authorizeByResourceType(ALICE, HOST, WRITE, TOPIC);
    }
}
