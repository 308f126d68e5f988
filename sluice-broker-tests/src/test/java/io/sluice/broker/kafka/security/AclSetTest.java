package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;
import org.junit.jupiter.api.Test;

/** The ACL set, its bindings' checks, and its stored text: the round trip, its escapes and what it refuses. */
class AclSetTest {

    private static final Acl READ_ORDERS = new Acl(ResourceType.TOPIC, "orders", PatternType.LITERAL, "User:alice",
            "*", AclOperation.READ, AclPermissionType.ALLOW);
    private static final Acl DENY_TEAM = new Acl(ResourceType.TOPIC, "team-", PatternType.PREFIXED, "User:*",
            "10.0.0.1", AclOperation.WRITE, AclPermissionType.DENY);
    private static final Acl GROUP_ALL = new Acl(ResourceType.GROUP, "*", PatternType.LITERAL, "Group:ops", "*",
            AclOperation.ALL, AclPermissionType.ALLOW);

    @Test
    void theTextIsOneBindingALineBetweenAHeaderAndAChecksummedTrailer() {
        String text = AclSet.of(List.of(DENY_TEAM, READ_ORDERS)).encode();
        String[] lines = text.split("\n");
        assertThat(lines).hasSize(4);
        assertThat(lines[0]).isEqualTo("sluice-acls 1");
        assertThat(lines[1]).isEqualTo("TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW");
        assertThat(lines[2]).isEqualTo("TOPIC\tteam-\tPREFIXED\tUser:*\t10.0.0.1\tWRITE\tDENY");
        assertThat(lines[3]).matches("end 2 crc32c=[0-9a-f]{8}");
        assertThat(text).endsWith("\n");
        assertThat(AclSet.decode(text)).isEqualTo(AclSet.of(List.of(READ_ORDERS, DENY_TEAM)));
    }

    @Test
    void theSameSetIsTheSameTextWhateverTheOrderItWasGivenIn() {
        assertThat(AclSet.of(List.of(GROUP_ALL, DENY_TEAM, READ_ORDERS, DENY_TEAM)).encode())
                .isEqualTo(AclSet.of(List.of(READ_ORDERS, GROUP_ALL, DENY_TEAM)).encode());
        assertThat(AclSet.of(List.of(READ_ORDERS, READ_ORDERS)).size()).isEqualTo(1);
        assertThat(AclSet.decode(AclSet.empty().encode())).isEqualTo(AclSet.empty());
    }

    @Test
    void anEmptyRecordIsTheEmptySet() {
        assertThat(AclSet.ofRecord("")).isEqualTo(AclSet.empty());
        assertThat(AclSet.ofRecord(null)).isEqualTo(AclSet.empty());
        AclSet set = AclSet.of(List.of(READ_ORDERS));
        assertThat(AclSet.ofRecord(set.encode())).isEqualTo(set);
        assertThatThrownBy(() -> AclSet.ofRecord("\n")).isInstanceOf(CorruptAclSetException.class);
        assertThatThrownBy(() -> AclSet.decode("")).as("a text that is not a record").isInstanceOf(
                CorruptAclSetException.class);
    }

    @Test
    void plusAndMinusReturnTheSameSetWhenNothingChanges() {
        AclSet set = AclSet.of(List.of(READ_ORDERS));
        assertThat(set.plus(List.of(READ_ORDERS))).isSameAs(set);
        assertThat(set.minus(List.of(DENY_TEAM))).isSameAs(set);
        assertThat(set.plus(List.of(DENY_TEAM)).acls()).containsExactly(READ_ORDERS, DENY_TEAM);
        assertThat(set.minus(List.of(READ_ORDERS))).isEqualTo(AclSet.empty());
    }

    @Test
    void namesPrincipalsAndHostsSurviveWhateverTheyHold() {
        List<String> awkward = List.of("tab\there", "line\nbreak", "cr\rlf", "back\\slash", "\\t literally",
                "\u0000\u001f\u007f", "next\u0085line", "sep\u2028par\u2029", "emoji \uD83D\uDE00",
                "lone \uD800 high", "lone \uDC00 low", "end high \uDBFF", "ünïcødé", "\\u0041", " spaced ");
        List<Acl> acls = new ArrayList<>();
        for (String value : awkward) {
            acls.add(new Acl(ResourceType.TRANSACTIONAL_ID, value, PatternType.PREFIXED, "User:" + value, value,
                    AclOperation.DESCRIBE, AclPermissionType.ALLOW));
        }
        AclSet set = AclSet.of(acls);
        String text = set.encode();
        assertThat(text.split("\n", -1)).hasSize(awkward.size() + 3);
        assertThat(text.chars().filter(c -> c < 0x20 && c != '\t' && c != '\n')).isEmpty();
        assertThat(text.chars().filter(c -> Character.isSurrogate((char) c)).count())
                .as("only the emoji's pair stays raw").isEqualTo(3 * 2);
        assertThat(AclSet.decode(text)).isEqualTo(set);
    }

    /** Random bindings from every field's values, and names from an alphabet heavy in what must be escaped. */
    @Test
    void randomSetsRoundTrip() {
        long seed = Long.getLong("sluice.acls.seed", System.nanoTime());
        System.out.println("AclSetTest seed " + seed + " (-Dsluice.acls.seed=" + seed + " to run it again)");
        Random random = new Random(seed);
        for (int round = 0; round < 200; round++) {
            List<Acl> acls = new ArrayList<>();
            for (int i = random.nextInt(30); i > 0; i--) {
                acls.add(randomAcl(random));
            }
            AclSet set = AclSet.of(acls);
            assertThat(AclSet.decode(set.encode())).as("seed %d round %d", seed, round).isEqualTo(set);
        }
    }

    @Test
    void aBindingKafkaCouldNotHoldIsRefusedWithKafkasMessage() {
        assertThatThrownBy(() -> new Acl(ResourceType.ANY, "t", PatternType.LITERAL, "User:a", "*",
                AclOperation.READ, AclPermissionType.ALLOW)).hasMessage("Invalid resourceType ANY");
        assertThatThrownBy(() -> new Acl(ResourceType.TOPIC, "t", PatternType.MATCH, "User:a", "*",
                AclOperation.READ, AclPermissionType.ALLOW)).hasMessage("Invalid patternType MATCH");
        assertThatThrownBy(() -> new Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*",
                AclOperation.UNKNOWN, AclPermissionType.ALLOW)).hasMessage("Invalid operation UNKNOWN");
        assertThatThrownBy(() -> new Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a", "*",
                AclOperation.READ, AclPermissionType.ANY)).hasMessage("Invalid permissionType ANY");
        assertThatThrownBy(() -> new Acl(ResourceType.TOPIC, "", PatternType.PREFIXED, "User:a", "*",
                AclOperation.READ, AclPermissionType.ALLOW)).hasMessage("Resource name should not be empty");
        assertThatThrownBy(() -> new Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "alice", "*",
                AclOperation.READ, AclPermissionType.ALLOW)).hasMessage("Could not parse principal from `alice` "
                        + "(no colon is present separating the principal type from the principal name)");
        Acl colon = new Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, ":", "", AclOperation.READ,
                AclPermissionType.ALLOW);
        assertThat(colon.principalType()).isEmpty();
        assertThat(colon.principalName()).isEmpty();
        assertThat(new Acl(ResourceType.TOPIC, "t", PatternType.LITERAL, "User:a:b", "*", AclOperation.READ,
                AclPermissionType.ALLOW).principalName()).isEqualTo("a:b");
    }

    @Test
    void corruptTextIsRefusedNamingWhatAndWhere() {
        String good = AclSet.of(List.of(READ_ORDERS, DENY_TEAM)).encode();
        assertCorrupt(null, "no text");
        assertCorrupt("", "cut short");
        assertCorrupt(good.substring(0, good.length() - 1), "cut short");
        assertCorrupt(good.substring(0, good.indexOf("end ")), "no trailer");
        assertCorrupt("kafka-acls 1\n", "line 1: not an ACL set");
        assertCorrupt(good.replace("sluice-acls 1", "sluice-acls 2"), "line 1: version 2, and this build reads "
                + "version 1 only");
        assertCorrupt(good.replace("orders", "orderz"), "line 4: checksum");
        assertCorrupt(good.replace("crc32c=", "crc="), "line 4: malformed trailer");
        assertCorrupt(good + "trailing\n", "no trailer");
        // Well-formed text with a checksum that matches, each broken in one way.
        assertCorrupt(sealed(2, "TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW"), "line 3: the trailer counts 2 "
                + "bindings, the text has 1");
        assertCorrupt(sealed(1, "TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD"), "line 2: 6 fields, not 7");
        assertCorrupt(sealed(1, "TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW\textra"), "line 2: 8 fields");
        assertCorrupt(sealed(1, "TOPIX\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW"), "line 2: No enum constant");
        assertCorrupt(sealed(1, "ANY\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: Invalid resourceType ANY");
        assertCorrupt(sealed(1, "TOPIC\t\tPREFIXED\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: Resource name should not be empty");
        assertCorrupt(sealed(1, "TOPIC\torders\tLITERAL\talice\t*\tREAD\tALLOW"), "line 2: Could not parse principal");
        assertCorrupt(sealed(1, "TOPIC\tord\\qers\tLITERAL\tUser:alice\t*\tREAD\tALLOW"), "line 2: unknown escape \\q");
        assertCorrupt(sealed(1, "TOPIC\torders\\\tLITERAL\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: a field ends inside an escape");
        assertCorrupt(sealed(1, "TOPIC\torders\\u00\tLITERAL\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: a field ends inside an escape");
        assertCorrupt(sealed(1, "TOPIC\torders\\u00zz\tLITERAL\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: malformed escape \\u00zz");
        assertCorrupt(sealed(1, "TOPIC\tord\rers\tLITERAL\tUser:alice\t*\tREAD\tALLOW"),
                "line 2: unescaped character U+000D");
        String line = "TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW";
        assertCorrupt(sealed(2, line, line), "line 3: bindings out of order or repeated");
        assertCorrupt(sealed(2, "TOPIC\tz\tLITERAL\tUser:alice\t*\tREAD\tALLOW", line),
                "line 3: bindings out of order or repeated");
        assertThat(AclSet.decode(sealed(1, line)).acls()).containsExactly(READ_ORDERS);
    }

    /** @return the text of these lines under a valid header and a trailer with their checksum and {@code count} */
    private static String sealed(int count, String... lines) {
        StringBuilder text = new StringBuilder("sluice-acls 1\n");
        for (String line : lines) {
            text.append(line).append('\n');
        }
        java.util.zip.CRC32C crc = new java.util.zip.CRC32C();
        crc.update(text.toString().getBytes(java.nio.charset.StandardCharsets.UTF_8));
        return text.append("end ").append(count).append(" crc32c=").append(String.format("%08x", crc.getValue()))
                .append('\n').toString();
    }

    private static void assertCorrupt(String text, String message) {
        assertThatThrownBy(() -> AclSet.decode(text)).isInstanceOf(CorruptAclSetException.class)
                .hasMessageContaining(message);
    }

    static Acl randomAcl(Random random) {
        ResourceType[] types = {ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
            ResourceType.TRANSACTIONAL_ID, ResourceType.DELEGATION_TOKEN, ResourceType.USER};
        AclOperation[] operations = {AclOperation.ALL, AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE,
            AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE, AclOperation.CLUSTER_ACTION,
            AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE,
            AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS, AclOperation.TWO_PHASE_COMMIT};
        String alphabet = "ab*:\\\t\n\r\u0001\u0085\u2028é\uD83D\uDE00\uD800";
        return new Acl(types[random.nextInt(types.length)], randomString(random, alphabet, 1),
                random.nextBoolean() ? PatternType.LITERAL : PatternType.PREFIXED,
                randomString(random, alphabet, 0) + ":" + randomString(random, alphabet, 0),
                random.nextBoolean() ? "*" : randomString(random, alphabet, 0),
                operations[random.nextInt(operations.length)],
                random.nextBoolean() ? AclPermissionType.ALLOW : AclPermissionType.DENY);
    }

    private static String randomString(Random random, String alphabet, int minLength) {
        StringBuilder out = new StringBuilder();
        for (int i = minLength + random.nextInt(6); i > 0; i--) {
            out.append(alphabet.charAt(random.nextInt(alphabet.length())));
        }
        return out.toString();
    }
}
