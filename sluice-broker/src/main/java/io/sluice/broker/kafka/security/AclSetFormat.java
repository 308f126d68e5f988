package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.CRC32C;
import org.apache.kafka.common.acl.AclOperation;
import org.apache.kafka.common.acl.AclPermissionType;
import org.apache.kafka.common.resource.PatternType;
import org.apache.kafka.common.resource.ResourceType;

/**
 * The stored form of an {@link AclSet}: text, one binding a line, so that it reads in a file or a log.
 *
 * <pre>
 * sluice-acls 1                                          magic and version
 * TOPIC\torders\tLITERAL\tUser:alice\t*\tREAD\tALLOW       one line a binding, in Acl.ORDER, fields split by a tab:
 * ...                                                    resource type, resource name, pattern type, principal,
 *                                                        host, operation, permission
 * end 1 crc32c=0a1b2c3d                                  the count of bindings, and the CRC32C (8 lower-case hex
 *                                                        digits) of the UTF-8 bytes of every line before this one
 * </pre>
 *
 * Every line ends with a line feed, the last one too. The resource type, pattern type, operation and permission are
 * the names of kafka-clients' enums ({@code TOPIC}, {@code PREFIXED}, {@code IDEMPOTENT_WRITE}, {@code DENY}): names
 * Kafka never changes, so the text does not depend on a kafka-clients version's codes. The name, principal and host
 * are any string a client sent, so they are escaped: a backslash as {@code \\}, a tab as {@code \t}, a line feed as
 * {@code \n}, a carriage return as {@code \r}, and every other character that could end a line or does not survive
 * UTF-8 (other control characters, U+0085, U+2028, U+2029, a surrogate without its pair) as a backslash, {@code u}
 * and four hex digits.
 *
 * <p>The same set is always the same text. Reading is strict: another magic, a version other than 1, a missing or
 * wrong trailer, a checksum or count that does not match, a line that is not seven fields, an escape or name that is
 * not one of the above, a binding Kafka could not hold, or bindings out of order or repeated, each refuse the whole
 * text with a {@link CorruptAclSetException} naming the line. A newer build that changes the form writes another
 * version, which this build refuses rather than misreads.
 *
 * <p>Stateless and thread-safe.
 */
final class AclSetFormat {

    static final String MAGIC = "sluice-acls";
    static final int VERSION = 1;
    static final String TRAILER = "end ";
    private static final String CRC_FIELD = " crc32c=";
    private static final int FIELDS = 7;

    private AclSetFormat() {
    }

    static String encode(AclSet set) {
        StringBuilder out = new StringBuilder(64 + 48 * set.size());
        out.append(MAGIC).append(' ').append(VERSION).append('\n');
        for (Acl acl : set.acls()) {
            out.append(acl.resourceType().name()).append('\t');
            escape(acl.resourceName(), out);
            out.append('\t').append(acl.patternType().name()).append('\t');
            escape(acl.principal(), out);
            out.append('\t');
            escape(acl.host(), out);
            out.append('\t').append(acl.operation().name()).append('\t').append(acl.permission().name()).append('\n');
        }
        long crc = crc(out);
        out.append(TRAILER).append(set.size()).append(CRC_FIELD).append(String.format("%08x", crc)).append('\n');
        return out.toString();
    }

    static AclSet decode(String text) {
        if (text == null) {
            throw new CorruptAclSetException("ACL set: no text");
        }
        if (text.isEmpty() || text.charAt(text.length() - 1) != '\n') {
            throw new CorruptAclSetException("ACL set: cut short (the text does not end with a line feed)");
        }
        String[] lines = text.substring(0, text.length() - 1).split("\n", -1);
        checkHeader(lines[0]);
        if (lines.length < 2 || !lines[lines.length - 1].startsWith(TRAILER)) {
            throw new CorruptAclSetException("ACL set: cut short (no trailer line \"end <count> crc32c=<hex>\")");
        }
        int trailerLine = lines.length;
        String trailer = lines[lines.length - 1];
        int bindings = lines.length - 2;
        checkTrailer(trailer, trailerLine, bindings, text.substring(0, text.length() - trailer.length() - 1));
        List<Acl> acls = new ArrayList<>(bindings);
        Acl previous = null;
        for (int i = 1; i <= bindings; i++) {
            Acl acl = binding(lines[i], i + 1);
            if (previous != null && previous.compareTo(acl) >= 0) {
                throw new CorruptAclSetException("ACL set: line " + (i + 1) + ": bindings out of order or repeated");
            }
            acls.add(acl);
            previous = acl;
        }
        return AclSet.of(acls);
    }

    private static void checkHeader(String header) {
        if (!header.startsWith(MAGIC + ' ')) {
            throw new CorruptAclSetException("ACL set: line 1: not an ACL set (expected \"" + MAGIC + " "
                    + VERSION + "\", found \"" + shorten(header) + "\")");
        }
        String version = header.substring(MAGIC.length() + 1);
        if (!version.equals(String.valueOf(VERSION))) {
            throw new CorruptAclSetException("ACL set: line 1: version " + shorten(version)
                    + ", and this build reads version " + VERSION + " only");
        }
    }

    private static void checkTrailer(String trailer, int line, int bindings, String covered) {
        int crcAt = trailer.indexOf(CRC_FIELD);
        if (crcAt < 0) {
            throw new CorruptAclSetException("ACL set: line " + line + ": malformed trailer \"" + shorten(trailer)
                    + "\"");
        }
        String count = trailer.substring(TRAILER.length(), crcAt);
        String crc = trailer.substring(crcAt + CRC_FIELD.length());
        String expected = String.format("%08x", crc(covered));
        if (!crc.equals(expected)) {
            throw new CorruptAclSetException("ACL set: line " + line + ": checksum " + shorten(crc)
                    + " does not match the text's " + expected);
        }
        if (!count.equals(String.valueOf(bindings))) {
            throw new CorruptAclSetException("ACL set: line " + line + ": the trailer counts " + shorten(count)
                    + " bindings, the text has " + bindings);
        }
    }

    private static Acl binding(String line, int number) {
        String[] fields = line.split("\t", -1);
        if (fields.length != FIELDS) {
            throw new CorruptAclSetException("ACL set: line " + number + ": " + fields.length + " fields, not "
                    + FIELDS);
        }
        try {
            return new Acl(ResourceType.valueOf(fields[0]), unescape(fields[1]), PatternType.valueOf(fields[2]),
                    unescape(fields[3]), unescape(fields[4]), AclOperation.valueOf(fields[5]),
                    AclPermissionType.valueOf(fields[6]));
        } catch (IllegalArgumentException e) {
            throw new CorruptAclSetException("ACL set: line " + number + ": " + e.getMessage(), e);
        }
    }

    /** Writes {@code value} so that it holds no tab, no line break, and survives UTF-8. */
    static void escape(String value, StringBuilder out) {
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            switch (c) {
                case '\\' -> out.append("\\\\");
                case '\t' -> out.append("\\t");
                case '\n' -> out.append("\\n");
                case '\r' -> out.append("\\r");
                default -> {
                    if (Character.isHighSurrogate(c) && i + 1 < value.length()
                            && Character.isLowSurrogate(value.charAt(i + 1))) {
                        out.append(c).append(value.charAt(++i));
                    } else if (mustEscape(c)) {
                        out.append(String.format("\\u%04X", (int) c));
                    } else {
                        out.append(c);
                    }
                }
            }
        }
    }

    /** @throws IllegalArgumentException if {@code field} holds what {@link #escape} never writes */
    static String unescape(String field) {
        StringBuilder out = new StringBuilder(field.length());
        for (int i = 0; i < field.length(); i++) {
            char c = field.charAt(i);
            if (c != '\\') {
                if (mustEscape(c) && !Character.isSurrogate(c)) {
                    throw new IllegalArgumentException(String.format("unescaped character U+%04X", (int) c));
                }
                out.append(c);
                continue;
            }
            if (++i == field.length()) {
                throw new IllegalArgumentException("a field ends inside an escape");
            }
            switch (field.charAt(i)) {
                case '\\' -> out.append('\\');
                case 't' -> out.append('\t');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 'u' -> {
                    if (i + 4 >= field.length()) {
                        throw new IllegalArgumentException("a field ends inside an escape");
                    }
                    out.append(hex(field.substring(i + 1, i + 5)));
                    i += 4;
                }
                default -> throw new IllegalArgumentException("unknown escape \\" + field.charAt(i));
            }
        }
        return out.toString();
    }

    private static char hex(String digits) {
        int value = 0;
        for (int i = 0; i < digits.length(); i++) {
            int digit = Character.digit(digits.charAt(i), 16);
            if (digit < 0) {
                throw new IllegalArgumentException("malformed escape \\u" + digits);
            }
            value = value * 16 + digit;
        }
        return (char) value;
    }

    private static boolean mustEscape(char c) {
        return c < 0x20 || c == 0x7F || c == 0x85 || c == 0x2028 || c == 0x2029 || Character.isSurrogate(c);
    }

    private static long crc(CharSequence text) {
        CRC32C crc = new CRC32C();
        crc.update(text.toString().getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }

    private static String shorten(String value) {
        String shown = value.length() > 40 ? value.substring(0, 40) + "..." : value;
        StringBuilder out = new StringBuilder();
        escape(shown, out);
        return out.toString();
    }
}
