package io.sluice.broker.kafka.security;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) for what a client or a key file hands the broker: JWT headers and claims, JSON Web
 * Key Sets. It takes one value and nothing after it but whitespace; it refuses duplicate member names (a token whose
 * {@code sub} appears twice must not mean one thing here and another at the issuer), control characters in strings,
 * numbers outside the grammar (leading zeros, {@code NaN}, a bare {@code .5}), numbers longer than
 * {@link #MAX_NUMBER_CHARACTERS} or with a scale beyond {@link #MAX_SCALE}, and nesting deeper than
 * {@link #MAX_DEPTH}. Any refusal is a {@link Malformed}, never another exception.
 *
 * <p>Values come back as {@code Map<String, Object>} (members in order, unmodifiable), {@code List<Object>}
 * (unmodifiable), {@link String}, {@link BigDecimal}, {@link Boolean}, or {@link #NULL}. The static methods are
 * thread-safe.
 */
final class Json {

    /** JSON's {@code null}, which a map cannot hold as a value. */
    static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    /** The deepest nesting of arrays and objects taken. */
    static final int MAX_DEPTH = 32;

    /**
     * The longest number taken, in characters. Reading a decimal number costs time quadratic in its length, and an
     * unauthenticated client chooses the claims: a token of a few hundred thousand digits must not hold a thread.
     */
    static final int MAX_NUMBER_CHARACTERS = 64;

    /** The largest {@link BigDecimal#scale()} of a number, either way (1e-400 and 1e400 are taken). */
    static final int MAX_SCALE = 400;

    /** A refused document, with the position of the fault. */
    static final class Malformed extends Exception {
        private static final long serialVersionUID = 1L;

        Malformed(String message) {
            super(message);
        }
    }

    private final String text;
    private int position;

    private Json(String text) {
        this.text = text;
    }

    /** @return the one value {@code text} holds */
    static Object parse(String text) throws Malformed {
        Json reader = new Json(text);
        reader.skipWhitespace();
        Object value = reader.value(0);
        reader.skipWhitespace();
        if (reader.position != text.length()) {
            throw reader.fault("content after the value");
        }
        return value;
    }

    /** @return the object {@code text} holds */
    @SuppressWarnings("unchecked") // parse() makes objects only as Map<String, Object>
    static Map<String, Object> parseObject(String text) throws Malformed {
        Object value = parse(text);
        if (!(value instanceof Map<?, ?>)) {
            throw new Malformed("malformed JSON: not a JSON object");
        }
        return (Map<String, Object>) value;
    }

    private Object value(int depth) throws Malformed {
        if (position >= text.length()) {
            throw fault("end of input where a value was expected");
        }
        char c = text.charAt(position);
        return switch (c) {
            case '{' -> object(depth + 1);
            case '[' -> array(depth + 1);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", NULL);
            default -> {
                if (c == '-' || c >= '0' && c <= '9') {
                    yield number();
                }
                throw fault("unexpected character '" + printable(c) + "'");
            }
        };
    }

    private Map<String, Object> object(int depth) throws Malformed {
        checkDepth(depth);
        position++; // '{'
        Map<String, Object> members = new LinkedHashMap<>();
        skipWhitespace();
        if (peek() == '}') {
            position++;
            return Collections.unmodifiableMap(members);
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') {
                throw fault("a member name must be a string");
            }
            int nameAt = position;
            String name = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            Object value = value(depth);
            if (members.putIfAbsent(name, value) != null) {
                position = nameAt;
                throw fault("duplicate member name \"" + name + "\"");
            }
            skipWhitespace();
            char next = peek();
            position++;
            if (next == '}') {
                return Collections.unmodifiableMap(members);
            }
            if (next != ',') {
                position--;
                throw fault("expected ',' or '}'");
            }
        }
    }

    private List<Object> array(int depth) throws Malformed {
        checkDepth(depth);
        position++; // '['
        List<Object> items = new ArrayList<>();
        skipWhitespace();
        if (peek() == ']') {
            position++;
            return Collections.unmodifiableList(items);
        }
        while (true) {
            skipWhitespace();
            items.add(value(depth));
            skipWhitespace();
            char next = peek();
            position++;
            if (next == ']') {
                return Collections.unmodifiableList(items);
            }
            if (next != ',') {
                position--;
                throw fault("expected ',' or ']'");
            }
        }
    }

    private String string() throws Malformed {
        position++; // '"'
        StringBuilder out = new StringBuilder();
        while (true) {
            if (position >= text.length()) {
                throw fault("unterminated string");
            }
            char c = text.charAt(position++);
            if (c == '"') {
                return out.toString();
            }
            if (c < 0x20) {
                position--;
                throw fault("control character in a string");
            }
            if (c != '\\') {
                out.append(c);
                continue;
            }
            if (position >= text.length()) {
                throw fault("unterminated escape");
            }
            char escaped = text.charAt(position++);
            switch (escaped) {
                case '"', '\\', '/' -> out.append(escaped);
                case 'b' -> out.append('\b');
                case 'f' -> out.append('\f');
                case 'n' -> out.append('\n');
                case 'r' -> out.append('\r');
                case 't' -> out.append('\t');
                case 'u' -> out.append(hexCharacter());
                default -> {
                    position--;
                    throw fault("invalid escape '\\" + printable(escaped) + "'");
                }
            }
        }
    }

    private char hexCharacter() throws Malformed {
        if (position + 4 > text.length()) {
            throw fault("truncated \\u escape");
        }
        int value = 0;
        for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(position + i), 16);
            if (digit < 0) {
                throw fault("invalid \\u escape");
            }
            value = value * 16 + digit;
        }
        position += 4;
        return (char) value;
    }

    private BigDecimal number() throws Malformed {
        int start = position;
        if (peek() == '-') {
            position++;
        }
        if (peek() == '0') {
            position++;
        } else if (isDigit(peek())) {
            digits();
        } else {
            throw fault("a number needs digits");
        }
        if (peek() == '.') {
            position++;
            if (!isDigit(peek())) {
                throw fault("a fraction needs digits");
            }
            digits();
        }
        if (peek() == 'e' || peek() == 'E') {
            position++;
            if (peek() == '+' || peek() == '-') {
                position++;
            }
            if (!isDigit(peek())) {
                throw fault("an exponent needs digits");
            }
            digits();
        }
        if (position - start > MAX_NUMBER_CHARACTERS) {
            position = start;
            throw fault("number longer than " + MAX_NUMBER_CHARACTERS + " characters");
        }
        BigDecimal value;
        try {
            value = new BigDecimal(text.substring(start, position));
        } catch (NumberFormatException e) {
            value = null; // an exponent beyond an int
        }
        // Arithmetic on 1e999999999 would spell out its digits: bound the exponent as well as the length.
        if (value == null || Math.abs(value.scale()) > MAX_SCALE) {
            position = start;
            throw fault("number out of range");
        }
        return value;
    }

    private void digits() {
        while (isDigit(peek())) {
            position++;
        }
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    private Object literal(String word, Object value) throws Malformed {
        if (!text.startsWith(word, position)) {
            throw fault("unexpected word");
        }
        position += word.length();
        return value;
    }

    private void checkDepth(int depth) throws Malformed {
        if (depth > MAX_DEPTH) {
            throw fault("nested deeper than " + MAX_DEPTH);
        }
    }

    private void expect(char c) throws Malformed {
        if (peek() != c) {
            throw fault("expected '" + c + "'");
        }
        position++;
    }

    /** @return the character at the position, or NUL at the end (NUL is never valid outside a string) */
    private char peek() {
        return position < text.length() ? text.charAt(position) : '\u0000';
    }

    private void skipWhitespace() {
        while (position < text.length()) {
            char c = text.charAt(position);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
                return;
            }
            position++;
        }
    }

    private Malformed fault(String reason) {
        return new Malformed("malformed JSON at position " + position + ": " + reason);
    }

    private static String printable(char c) {
        return c < 0x20 || c > 0x7e ? String.format("\\u%04x", (int) c) : String.valueOf(c);
    }
}
