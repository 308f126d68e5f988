package io.sluice.broker.kafka.security;

import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.SortedMap;
import java.util.TreeMap;
import java.util.zip.CRC32C;

/**
 * The stored form of a {@link QuotaSet}: text, one quota value a line, so that it reads in a file or a log.
 *
 * <pre>
 * sluice-client-quotas 1                                      magic and version
 * =alice\t&lt;default&gt;\t\tproducer_byte_rate\t1048576.0       one line a value, in entity then key order, five
 * \t\t=10.0.0.1\tconnection_creation_rate\t20.0              fields split by a tab: user, client id, IP, key, value
 * end 2 crc32c=0a1b2c3d                                       the count of values, and the CRC32C (8 lower-case hex
 *                                                             digits) of the UTF-8 bytes of every line before this one
 * </pre>
 *
 * Every line ends with a line feed, the last one too. An entity component is empty when the entity has none,
 * {@code <default>} for the default of its kind, or {@code =} and the name, escaped as {@link AclSetFormat} escapes
 * names (so a name {@code <default>} reads {@code =<default>}). The key is one of Kafka's quota keys; the value is
 * {@link Double#toString(double)} of the value, the one spelling that reads back to the same double.
 *
 * <p>The same set is always the same text. Reading is strict: another magic, a version other than 1, a missing or
 * wrong trailer, a checksum or count that does not match, a line that is not five fields, an entity Kafka does not
 * take, a key its entity does not take, a value not spelled as this class writes it, or values out of order or
 * repeated, each refuse the whole text with a {@link CorruptQuotaSetException} naming the line. A newer build that
 * changes the form writes another version, which this build refuses rather than misreads.
 *
 * <p>Stateless and thread-safe.
 */
final class QuotaSetFormat {

    static final String MAGIC = "sluice-client-quotas";
    static final int VERSION = 1;
    static final String TRAILER = "end ";
    private static final String CRC_FIELD = " crc32c=";
    private static final String DEFAULT = "<default>";
    private static final int FIELDS = 5;

    private QuotaSetFormat() {
    }

    static String encode(QuotaSet set) {
        StringBuilder out = new StringBuilder(64 + 64 * set.size());
        out.append(MAGIC).append(' ').append(VERSION).append('\n');
        for (Map.Entry<QuotaEntity, SortedMap<String, Double>> entity : set.entities().entrySet()) {
            for (Map.Entry<String, Double> value : entity.getValue().entrySet()) {
                component(entity.getKey().user(), out);
                out.append('\t');
                component(entity.getKey().clientId(), out);
                out.append('\t');
                component(entity.getKey().ip(), out);
                out.append('\t').append(value.getKey()).append('\t').append(Double.toString(value.getValue()))
                        .append('\n');
            }
        }
        long crc = crc(out);
        out.append(TRAILER).append(set.size()).append(CRC_FIELD).append(String.format("%08x", crc)).append('\n');
        return out.toString();
    }

    static QuotaSet decode(String text) {
        if (text == null) {
            throw new CorruptQuotaSetException("quota set: no text");
        }
        if (text.isEmpty() || text.charAt(text.length() - 1) != '\n') {
            throw new CorruptQuotaSetException("quota set: cut short (the text does not end with a line feed)");
        }
        String[] lines = text.substring(0, text.length() - 1).split("\n", -1);
        checkHeader(lines[0]);
        if (lines.length < 2 || !lines[lines.length - 1].startsWith(TRAILER)) {
            throw new CorruptQuotaSetException("quota set: cut short (no trailer line \"end <count> crc32c=<hex>\")");
        }
        String trailer = lines[lines.length - 1];
        int values = lines.length - 2;
        checkTrailer(trailer, lines.length, values, text.substring(0, text.length() - trailer.length() - 1));
        Map<QuotaEntity, SortedMap<String, Double>> quotas = new LinkedHashMap<>();
        QuotaEntity previousEntity = null;
        String previousKey = null;
        for (int i = 1; i <= values; i++) {
            int number = i + 1;
            String[] fields = lines[i].split("\t", -1);
            if (fields.length != FIELDS) {
                throw new CorruptQuotaSetException("quota set: line " + number + ": " + fields.length
                        + " fields, not " + FIELDS);
            }
            QuotaEntity entity = entity(fields, number);
            String key = fields[3];
            checkKey(entity, key, number);
            int order = previousEntity == null ? 1 : entity.compareTo(previousEntity);
            if (order < 0 || order == 0 && key.compareTo(previousKey) <= 0) {
                throw new CorruptQuotaSetException("quota set: line " + number + ": values out of order or repeated");
            }
            quotas.computeIfAbsent(entity, e -> new TreeMap<>()).put(key, value(fields[4], number));
            previousEntity = entity;
            previousKey = key;
        }
        return QuotaSet.of(quotas);
    }

    private static void component(QuotaEntity.Name name, StringBuilder out) {
        if (name == null) {
            return;
        }
        if (name.isDefault()) {
            out.append(DEFAULT);
        } else {
            out.append('=');
            AclSetFormat.escape(name.value(), out);
        }
    }

    private static QuotaEntity entity(String[] fields, int number) {
        QuotaEntity entity;
        try {
            entity = new QuotaEntity(name(fields[0]), name(fields[1]), name(fields[2]));
        } catch (IllegalArgumentException e) {
            throw new CorruptQuotaSetException("quota set: line " + number + ": " + e.getMessage(), e);
        }
        String refusal = entity.shapeError();
        if (refusal != null) {
            throw new CorruptQuotaSetException("quota set: line " + number + ": " + refusal);
        }
        return entity;
    }

    private static QuotaEntity.Name name(String field) {
        if (field.isEmpty()) {
            return null;
        }
        if (field.equals(DEFAULT)) {
            return QuotaEntity.Name.DEFAULT;
        }
        if (field.charAt(0) != '=') {
            throw new IllegalArgumentException("an entity component is neither empty, " + DEFAULT
                    + " nor =<name>: \"" + shorten(field) + "\"");
        }
        String value = AclSetFormat.unescape(field.substring(1));
        if (value.isEmpty()) {
            throw new IllegalArgumentException("an empty entity name");
        }
        return new QuotaEntity.Name(value);
    }

    private static void checkKey(QuotaEntity entity, String key, int number) {
        boolean taken = entity.isUserOrClient() ? QuotaSet.USER_AND_CLIENT_KEYS.contains(key)
                : QuotaSet.CONNECTION_CREATION_RATE.equals(key);
        if (!taken) {
            throw new CorruptQuotaSetException("quota set: line " + number + ": key \"" + shorten(key)
                    + "\" is not a quota of " + entity);
        }
    }

    private static double value(String field, int number) {
        double value;
        try {
            value = Double.parseDouble(field);
        } catch (NumberFormatException e) {
            throw new CorruptQuotaSetException("quota set: line " + number + ": value \"" + shorten(field)
                    + "\" is not a number", e);
        }
        if (!Double.toString(value).equals(field)) {
            throw new CorruptQuotaSetException("quota set: line " + number + ": value \"" + shorten(field)
                    + "\" is not written as this build writes " + value);
        }
        return value;
    }

    private static void checkHeader(String header) {
        if (!header.startsWith(MAGIC + ' ')) {
            throw new CorruptQuotaSetException("quota set: line 1: not a quota set (expected \"" + MAGIC + " "
                    + VERSION + "\", found \"" + shorten(header) + "\")");
        }
        String version = header.substring(MAGIC.length() + 1);
        if (!version.equals(String.valueOf(VERSION))) {
            throw new CorruptQuotaSetException("quota set: line 1: version " + shorten(version)
                    + ", and this build reads version " + VERSION + " only");
        }
    }

    private static void checkTrailer(String trailer, int line, int values, String covered) {
        int crcAt = trailer.indexOf(CRC_FIELD);
        if (crcAt < 0) {
            throw new CorruptQuotaSetException("quota set: line " + line + ": malformed trailer \""
                    + shorten(trailer) + "\"");
        }
        String count = trailer.substring(TRAILER.length(), crcAt);
        String crc = trailer.substring(crcAt + CRC_FIELD.length());
        String expected = String.format("%08x", crc(covered));
        if (!crc.equals(expected)) {
            throw new CorruptQuotaSetException("quota set: line " + line + ": checksum " + shorten(crc)
                    + " does not match the text's " + expected);
        }
        if (!count.equals(String.valueOf(values))) {
            throw new CorruptQuotaSetException("quota set: line " + line + ": the trailer counts " + shorten(count)
                    + " values, the text has " + values);
        }
    }

    private static long crc(CharSequence text) {
        CRC32C crc = new CRC32C();
        crc.update(text.toString().getBytes(StandardCharsets.UTF_8));
        return crc.getValue();
    }

    private static String shorten(String value) {
        String shown = value.length() > 40 ? value.substring(0, 40) + "..." : value;
        StringBuilder out = new StringBuilder();
        AclSetFormat.escape(shown, out);
        return out.toString();
    }
}
