package io.sluice.broker.kafka.security;

import java.math.BigDecimal;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Map;

/**
 * The pieces of a JSON Web Signature in compact serialization (RFC 7515 section 7.1), the form of an OAUTHBEARER
 * token: {@code BASE64URL(header) "." BASE64URL(claims) "." BASE64URL(signature)}, header and claims being JSON
 * objects. Decoding is strict: base64url only, UTF-8 only, {@link Json}'s grammar. Stateless helpers.
 */
final class Jws {

    private Jws() {
    }

    /** @return the dot-separated sections of a token, keeping empty ones ("a.b." has three, the last empty) */
    static List<String> sections(String token) {
        List<String> sections = new ArrayList<>(3);
        int start = 0;
        for (int dot = token.indexOf('.'); dot >= 0; dot = token.indexOf('.', start)) {
            sections.add(token.substring(start, dot));
            start = dot + 1;
        }
        sections.add(token.substring(start));
        return sections;
    }

    /** @return the bytes of a base64url section */
    static byte[] bytes(String section) throws TokenValidator.Refused {
        try {
            return Base64.getUrlDecoder().decode(section);
        } catch (IllegalArgumentException e) {
            throw new TokenValidator.Refused("malformed Base64 URL encoded value");
        }
    }

    /** @return the JSON object a base64url section holds */
    static Map<String, Object> object(String section) throws TokenValidator.Refused {
        String text;
        try {
            text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes(section))).toString();
        } catch (CharacterCodingException e) {
            throw new TokenValidator.Refused("malformed JSON: not UTF-8");
        }
        try {
            return Json.parseObject(text);
        } catch (Json.Malformed e) {
            throw new TokenValidator.Refused(e.getMessage()); // "malformed JSON ..."
        }
    }

    /** @return the claim's value, or null if it is absent or JSON null */
    static Object claim(Map<String, Object> claims, String name) {
        Object value = claims.get(name);
        return value == Json.NULL ? null : value;
    }

    /** @return a string claim, or null if absent */
    static String stringClaim(Map<String, Object> claims, String name) throws TokenValidator.Refused {
        Object value = claim(claims, name);
        if (value != null && !(value instanceof String)) {
            throw wrongType(name, "String", value);
        }
        return (String) value;
    }

    /** @return a numeric claim, or null if absent */
    static BigDecimal numberClaim(Map<String, Object> claims, String name) throws TokenValidator.Refused {
        Object value = claim(claims, name);
        if (value != null && !(value instanceof BigDecimal)) {
            throw wrongType(name, "Number", value);
        }
        return (BigDecimal) value;
    }

    /** @return the list of strings a claim holds, or null if absent */
    static List<String> stringListClaim(Map<String, Object> claims, String name) throws TokenValidator.Refused {
        Object value = claim(claims, name);
        if (value == null) {
            return null;
        }
        if (!(value instanceof List<?> items)) {
            throw wrongType(name, "List", value);
        }
        List<String> strings = new ArrayList<>(items.size());
        for (Object item : items) {
            if (!(item instanceof String string)) {
                throw new TokenValidator.Refused("The '" + name + "' claim holds a " + typeName(item)
                        + " where a String was expected");
            }
            strings.add(string);
        }
        return strings;
    }

    private static TokenValidator.Refused wrongType(String name, String expected, Object value) {
        return new TokenValidator.Refused("The '" + name + "' claim was not of type " + expected + ": "
                + typeName(value));
    }

    private static String typeName(Object value) {
        return switch (value) {
            case String s -> "String";
            case BigDecimal n -> "Number";
            case Boolean b -> "Boolean";
            case List<?> l -> "List";
            case Map<?, ?> m -> "Object";
            default -> "null";
        };
    }
}
