package io.sluice.broker;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.broker.kafka.security.Acl;
import io.sluice.broker.kafka.security.AclSet;
import io.sluice.broker.kafka.security.QuotaEntity;
import io.sluice.broker.kafka.security.QuotaSet;
import io.sluice.broker.kafka.security.ScramCredentials;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.stream.Collectors;
import org.apache.kafka.clients.CommonClientConfigs;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.ScramCredentialInfo;
import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.clients.admin.UserScramCredentialAlteration;
import org.apache.kafka.clients.admin.UserScramCredentialUpsertion;
import org.apache.kafka.common.acl.AccessControlEntry;
import org.apache.kafka.common.acl.AclBinding;
import org.apache.kafka.common.acl.AclBindingFilter;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.config.SaslConfigs;
import org.apache.kafka.common.quota.ClientQuotaAlteration;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourcePattern;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A broker alone in a process of its own, with a SASL listener and ACLs, killed by SIGKILL again and again at seeded
 * moments while three administrators keep changing its security records, each change to names of its own: SCRAM
 * credentials of new users (AlterUserScramCredentials, several users a request), ACL bindings (CreateAcls) and client
 * quotas (AlterClientQuotas). After each start, every change acknowledged before the kill is there, as the broker
 * describes it and in the records' files read with the broker's own parsers, and users whose credentials were
 * acknowledged (the last one among them) authenticate with SCRAM-SHA-256.
 */
class SecurityRecordsKillTest {

    private static final int ROUNDS = 5;
    private static final int USERS_PER_REQUEST = 4;
    private static final String JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"
            + " user_admin=\"admin-secret\";";

    @TempDir
    Path dir;

    private Process process;
    private int port;

    /** What was acknowledged: users with a credential, users with an ACL binding, users with a quota, in order. */
    private final List<String> scram = Collections.synchronizedList(new ArrayList<>());
    private final Set<String> acls = ConcurrentHashMap.newKeySet();
    private final Set<String> quotas = ConcurrentHashMap.newKeySet();

    @AfterEach
    void kill() throws InterruptedException {
        if (process != null) {
            process.destroyForcibly();
            process.waitFor(30, TimeUnit.SECONDS);
        }
    }

    private void start(int round) throws Exception {
        process = BrokerChild.start(dir.resolve("store"), port, dir.resolve("broker-" + round + ".log"),
                "security.listeners=SASL_PLAINTEXT://127.0.0.1:" + port,
                "security.sasl.enabled.mechanisms=PLAIN,SCRAM-SHA-256",
                "security.listener.name.sasl_plaintext.plain.sasl.jaas.config=" + JAAS,
                "security.authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "security.super.users=User:admin");
    }

    private Map<String, Object> client(String mechanism, String user, String password) {
        String module = mechanism.equals("PLAIN") ? "org.apache.kafka.common.security.plain.PlainLoginModule"
                : "org.apache.kafka.common.security.scram.ScramLoginModule";
        Map<String, Object> config = new HashMap<>();
        config.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, "127.0.0.1:" + port);
        config.put(CommonClientConfigs.SECURITY_PROTOCOL_CONFIG, "SASL_PLAINTEXT");
        config.put(SaslConfigs.SASL_MECHANISM, mechanism);
        config.put(SaslConfigs.SASL_JAAS_CONFIG, module + " required username=\"" + user + "\" password=\""
                + password + "\";");
        // A call the kill cut off fails within a few seconds (or is retried on the next broker), not 60 s.
        config.put(CommonClientConfigs.REQUEST_TIMEOUT_MS_CONFIG, 3_000);
        config.put(CommonClientConfigs.DEFAULT_API_TIMEOUT_MS_CONFIG, 6_000);
        config.put(CommonClientConfigs.RECONNECT_BACKOFF_MS_CONFIG, 50);
        config.put(CommonClientConfigs.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200);
        config.put(CommonClientConfigs.RETRY_BACKOFF_MS_CONFIG, 50);
        config.put(CommonClientConfigs.RETRY_BACKOFF_MAX_MS_CONFIG, 200);
        return config;
    }

    private Map<String, Object> admin() {
        return client("PLAIN", "admin", "admin-secret");
    }

    private static String password(String user) {
        return user + "-secret";
    }

    @Test
    void everyAcknowledgedSecurityChangeOutlivesAKill() throws Exception {
        // The kills' moments follow the seed; what a kill strikes depends on timing too.
        long seed = Long.getLong("sluice.kill.seed", System.nanoTime());
        System.out.println("SecurityRecordsKillTest seed " + seed + " (-Dsluice.kill.seed=" + seed
                + " to run it again)");
        Random random = new Random(seed);
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            port = socket.getLocalPort();
        }
        start(0);
        AtomicBoolean stop = new AtomicBoolean();
        List<Thread> writers = List.of(
                Thread.ofPlatform().name("scram").start(() -> change(stop, this::alterScram)),
                Thread.ofPlatform().name("acls").start(() -> change(stop, this::createAcl)),
                Thread.ofPlatform().name("quotas").start(() -> change(stop, this::alterQuota)));
        for (int round = 1; round <= ROUNDS; round++) {
            // Each kind of change is acknowledged again after the start before the kill, so that each kill strikes
            // writers at work.
            awaitChanges(scram.size(), acls.size(), quotas.size());
            Thread.sleep(random.nextInt(1_000));
            process.destroyForcibly(); // SIGKILL
            process.waitFor(30, TimeUnit.SECONDS);
            // Nothing is acknowledged once the broker is gone: what was is what must be there after the start.
            List<String> users;
            synchronized (scram) {
                users = List.copyOf(scram);
            }
            Set<String> bindings = Set.copyOf(acls);
            Set<String> quotaUsers = Set.copyOf(quotas);
            start(round);
            check(users, bindings, quotaUsers, random);
        }
        stop.set(true);
        for (Thread writer : writers) {
            writer.join(30_000);
        }
        List<String> users;
        synchronized (scram) {
            users = List.copyOf(scram);
        }
        check(users, Set.copyOf(acls), Set.copyOf(quotas), random);
        assertThat(users).as("credentials acknowledged").hasSizeGreaterThan(ROUNDS * USERS_PER_REQUEST);
        assertThat(acls).as("ACL bindings acknowledged").hasSizeGreaterThan(ROUNDS);
        assertThat(quotas).as("quotas acknowledged").hasSizeGreaterThan(ROUNDS);
        System.out.printf("security changes across %d kills: %d credentials, %d ACL bindings, %d quotas%n", ROUNDS,
                users.size(), acls.size(), quotas.size());
    }

    /** Waits until more changes of each kind were acknowledged than the counts given. */
    private void awaitChanges(int users, int bindings, int quotaUsers) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (scram.size() <= users || acls.size() <= bindings || quotas.size() <= quotaUsers) {
            assertThat(System.nanoTime()).as("changes acknowledged after a start in time").isLessThan(deadline);
            Thread.sleep(10);
        }
    }

    /** One kind of change: makes change number {@code n} through {@code admin}, returning once it is acknowledged. */
    private interface Change {
        void make(Admin admin, int n) throws Exception;
    }

    /**
     * Makes changes one after the other until stopped. One that fails (the broker is down) is made again, the same:
     * it may have been made, but a second time changes nothing a check looks at.
     */
    private void change(AtomicBoolean stop, Change change) {
        try (Admin admin = Admin.create(admin())) {
            int n = 0;
            while (!stop.get()) {
                try {
                    change.make(admin, n);
                    n++;
                } catch (InterruptedException e) {
                    return;
                } catch (Exception e) {
                    Thread.sleep(50);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private void alterScram(Admin admin, int n) throws Exception {
        List<UserScramCredentialAlteration> upserts = new ArrayList<>();
        List<String> users = new ArrayList<>();
        for (int i = 0; i < USERS_PER_REQUEST; i++) {
            String user = "user-" + (n * USERS_PER_REQUEST + i);
            users.add(user);
            upserts.add(new UserScramCredentialUpsertion(user, new ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256,
                    4096), password(user)));
        }
        admin.alterUserScramCredentials(upserts).all().get(10, TimeUnit.SECONDS);
        scram.addAll(users);
    }

    private void createAcl(Admin admin, int n) throws Exception {
        String user = "acl-" + n;
        admin.createAcls(List.of(binding(user))).all().get(10, TimeUnit.SECONDS);
        acls.add(user);
    }

    private static AclBinding binding(String user) {
        return new AclBinding(new ResourcePattern(ResourceType.TOPIC, "topic-of-" + user, PatternType.LITERAL),
                new AccessControlEntry("User:" + user, "*", AclOperation.READ, AclPermissionType.ALLOW));
    }

    private void alterQuota(Admin admin, int n) throws Exception {
        String user = "quota-" + n;
        admin.alterClientQuotas(List.of(new ClientQuotaAlteration(new ClientQuotaEntity(Map.of(ClientQuotaEntity.USER,
                user)), List.of(new ClientQuotaAlteration.Op(QuotaSet.PRODUCER_BYTE_RATE, rate(n))))))
                .all().get(10, TimeUnit.SECONDS);
        quotas.add(user);
    }

    private static double rate(int n) {
        return 1024.0 + n;
    }

    private static int number(String name) {
        return Integer.parseInt(name.substring(name.lastIndexOf('-') + 1));
    }

    /**
     * Checks that the changes acknowledged are there: through the broker, in the records' files, and by signing in as
     * the last user acknowledged and two others.
     */
    private void check(List<String> users, Set<String> bindings, Set<String> quotaUsers, Random random)
            throws Exception {
        try (Admin admin = Admin.create(admin())) {
            assertThat(admin.describeUserScramCredentials().all().get(30, TimeUnit.SECONDS).keySet())
                    .as("users with a credential").containsAll(users);
            assertThat(admin.describeAcls(AclBindingFilter.ANY).values().get(30, TimeUnit.SECONDS))
                    .as("ACL bindings").containsAll(bindings.stream().map(SecurityRecordsKillTest::binding).toList());
            Map<String, Map<String, Double>> described = new HashMap<>();
            admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get(30, TimeUnit.SECONDS).forEach(
                    (entity, values) -> described.put(entity.entries().get(ClientQuotaEntity.USER), values));
            for (String user : quotaUsers) {
                assertThat(described.get(user)).as("quotas of %s", user)
                        .isEqualTo(Map.of(QuotaSet.PRODUCER_BYTE_RATE, rate(number(user))));
            }
        }
        // The records on disk parse, and hold what was acknowledged.
        Path security = dir.resolve("store").resolve("security");
        ScramCredentials credentials = ScramCredentials.decode(read(security.resolve("scram")));
        for (String user : users) {
            assertThat(credentials.get("SCRAM-SHA-256", user)).as("%s's credential on disk", user).isNotNull();
        }
        Set<String> principals = AclSet.ofRecord(read(security.resolve("acls"))).acls().stream()
                .map(Acl::principal).collect(Collectors.toSet());
        assertThat(principals).as("ACL principals on disk").containsAll(bindings.stream().map(u -> "User:" + u)
                .toList());
        QuotaSet quotaSet = QuotaSet.ofRecord(read(security.resolve("quotas")));
        for (String user : quotaUsers) {
            assertThat(quotaSet.quota(QuotaEntity.user(user), QuotaSet.PRODUCER_BYTE_RATE))
                    .as("%s's quota on disk", user).isEqualTo(rate(number(user)));
        }
        if (!users.isEmpty()) {
            List<String> signIns = List.of(users.getLast(), users.get(random.nextInt(users.size())),
                    users.get(random.nextInt(users.size())));
            for (String user : signIns) {
                try (Admin signedIn = Admin.create(client("SCRAM-SHA-256", user, password(user)))) {
                    assertThat(signedIn.describeCluster().clusterId().get(30, TimeUnit.SECONDS)).as("%s signed in",
                            user).isNotEmpty();
                }
            }
        }
    }

    private static String read(Path file) throws Exception {
        return Files.exists(file) ? Files.readString(file) : "";
    }
}
