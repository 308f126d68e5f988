package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.function.BooleanSupplier;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.metrics.Metrics;
import org.apache.kafka.common.metrics.internals.PluginMetricsImpl;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.apache.kafka.common.security.auth.KafkaPrincipal;
import org.apache.kafka.common.security.auth.SecurityProtocol;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.metadata.authorizer.StandardAuthorizer;
import org.apache.kafka.server.authorizer.Action;
import org.apache.kafka.server.authorizer.AuthorizableRequestContext;
import org.apache.kafka.server.authorizer.AuthorizationResult;
import org.junit.jupiter.api.Test;

/**
 * The authorizer against Kafka 4.3.1's own StandardAuthorizer (kafka-metadata, a test dependency): random ACL sets
 * over a small universe of names, principals and hosts, so that wildcards, prefixes of prefixes, shared names across
 * types and DENY/ALLOW mixes are frequent, and random questions; both must give the same answer to every
 * {@code authorize} and {@code authorizeByResourceType}.
 */
class AclAuthorizerParityTest {

    private static final ResourceType[] TYPES = {ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
        ResourceType.TRANSACTIONAL_ID};
    private static final String[] NAMES = {"*", "a", "ab", "abc", "b", "ba", "h", "hard", "hardcode", "hardcodes",
        "*a", "a*", "kafka-cluster"};
    private static final String[] ASKED_NAMES = {"", "*", "a", "ab", "abc", "abd", "abcd", "b", "bab", "c", "hardcode",
        "*a", "*ab", "a*", "kafka-cluster", "kafka"};
    private static final String[] ACL_PRINCIPALS = {"User:alice", "User:bob", "User:*", "Group:alice", "User:a:b",
        "Us:er:x", "Group:*", "User:"};
    private static final KafkaPrincipal[] PRINCIPALS = {new KafkaPrincipal("User", "alice"),
        new KafkaPrincipal("User", "bob"), new KafkaPrincipal("Group", "alice"), new KafkaPrincipal("User", "a:b"),
        new KafkaPrincipal("Us:er", "x"), new KafkaPrincipal("Us", "er:x"), new KafkaPrincipal("User", "*"),
        new KafkaPrincipal("User", ""), new KafkaPrincipal("User", "carol")};
    private static final String[] SUPER_USERS = {"", "User:bob", "User:carol;Us:er:x", "Group:alice"};
    private static final String[] ACL_HOSTS = {"*", "10.0.0.1", "10.0.0.2"};
    private static final String[] HOSTS = {"10.0.0.1", "10.0.0.2", "10.0.0.3"};
    private static final AclOperation[] OPERATIONS = {AclOperation.ALL, AclOperation.READ, AclOperation.WRITE,
        AclOperation.CREATE, AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE,
        AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE};

    @Test
    void answersAsKafkasStandardAuthorizer() throws Exception {
        long seed = Long.getLong("sluice.acls.seed", System.nanoTime());
        System.out.println("AclAuthorizerParityTest seed " + seed + " (-Dsluice.acls.seed=" + seed
                + " to run it again)");
        Random random = new Random(seed);
        int allowed = 0;
        int questions = 0;
        int rounds = Integer.getInteger("sluice.acls.rounds", 300);
        for (int round = 0; round < rounds; round++) {
            String superUsers = SUPER_USERS[random.nextInt(SUPER_USERS.length)];
            boolean allowEveryone = random.nextInt(3) == 0;
            List<Acl> acls = new ArrayList<>();
            for (int i = random.nextInt(round % 10 == 0 ? 3 : 25); i > 0; i--) {
                acls.add(new Acl(pick(random, TYPES), pick(random, NAMES),
                        random.nextBoolean() ? PatternType.LITERAL : PatternType.PREFIXED,
                        pick(random, ACL_PRINCIPALS), pick(random, ACL_HOSTS), pick(random, OPERATIONS),
                        random.nextInt(3) == 0 ? AclPermissionType.DENY : AclPermissionType.ALLOW));
            }
            AclSet set = AclSet.of(acls);
            AuthorizerConfig config = AuthorizerConfig.parse(superUsers, String.valueOf(allowEveryone));
            AclAuthorizer ours = new AclAuthorizer(config, set);
            // A Metrics a round: each StandardAuthorizer registers the same metric names.
            try (Metrics metrics = new Metrics();
                 StandardAuthorizer kafka = kafkaAuthorizer(superUsers, allowEveryone, set, metrics)) {
                for (int i = 0; i < 200; i++) {
                    KafkaPrincipal principal = pick(random, PRINCIPALS);
                    String host = pick(random, HOSTS);
                    AclOperation operation = pick(random, OPERATIONS);
                    ResourceType type = pick(random, TYPES);
                    String name = pick(random, ASKED_NAMES);
                    AuthorizableRequestContext context = context(principal, host);
                    String expected = answer(() -> kafka.authorize(context, List.of(new Action(operation,
                            new ResourcePattern(type, name, PatternType.LITERAL), 1, false, false))).get(0)
                            == AuthorizationResult.ALLOWED);
                    assertThat(answer(() -> ours.authorize(principal, host, operation, type, name)))
                            .as("seed %d round %d: %s from %s, %s %s %s, over %s", seed, round, principal, host,
                                    operation, type, name, set).isEqualTo(expected);
                    String expectedByType = answer(() -> kafka.authorizeByResourceType(context, operation, type)
                            == AuthorizationResult.ALLOWED);
                    assertThat(answer(() -> ours.authorizeByResourceType(principal, host, operation, type)))
                            .as("seed %d round %d: by type, %s from %s, %s %s, over %s", seed, round, principal,
                                    host, operation, type, set).isEqualTo(expectedByType);
                    allowed += expected.equals("allowed") ? 1 : 0;
                    questions++;
                }
            }
        }
        assertThat(allowed).as("both answers are common").isBetween(questions / 10, questions * 9 / 10);
    }

    private static StandardAuthorizer kafkaAuthorizer(String superUsers, boolean allowEveryone, AclSet set,
                                                      Metrics metrics) {
        StandardAuthorizer authorizer = new StandardAuthorizer();
        authorizer.configure(Map.of(StandardAuthorizer.SUPER_USERS_CONFIG, superUsers,
                StandardAuthorizer.ALLOW_EVERYONE_IF_NO_ACL_IS_FOUND_CONFIG, String.valueOf(allowEveryone)));
        authorizer.withPluginMetrics(new PluginMetricsImpl(metrics, Map.of()));
        Map<Uuid, StandardAcl> acls = new HashMap<>();
        for (Acl acl : set.acls()) {
            acls.put(new Uuid(0, acls.size() + 1), new StandardAcl(acl.resourceType(), acl.resourceName(),
                    acl.patternType(), acl.principal(), acl.host(), acl.operation(), acl.permission()));
        }
        authorizer.loadSnapshot(acls);
        authorizer.completeInitialLoad();
        return authorizer;
    }

    private static AuthorizableRequestContext context(KafkaPrincipal principal, String host)
            throws UnknownHostException {
        InetAddress address = InetAddress.getByName(host);
        return new AuthorizableRequestContext() {
            @Override
            public String listenerName() {
                return "PLAINTEXT";
            }

            @Override
            public SecurityProtocol securityProtocol() {
                return SecurityProtocol.PLAINTEXT;
            }

            @Override
            public KafkaPrincipal principal() {
                return principal;
            }

            @Override
            public InetAddress clientAddress() {
                return address;
            }

            @Override
            public int requestType() {
                return 0;
            }

            @Override
            public int requestVersion() {
                return 0;
            }

            @Override
            public String clientId() {
                return "parity";
            }

            @Override
            public int correlationId() {
                return 0;
            }
        };
    }

    /** @return "allowed", "denied", or the exception's class and message */
    private static String answer(BooleanSupplier question) {
        try {
            return question.getAsBoolean() ? "allowed" : "denied";
        } catch (RuntimeException e) {
            return e.getClass().getSimpleName() + ": " + e.getMessage();
        }
    }

    private static <T> T pick(Random random, T[] values) {
        return values[random.nextInt(values.length)];
    }
}
