package io.sluice.cli;

import static org.assertj.core.api.Assertions.assertThat;

import io.sluice.store.Message;
import io.sluice.store.Store;
import io.sluice.store.StoreConfig;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.SequenceInputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The CLI's JSON output.
 * <ul>
 * <li>{@code consume --json} and {@code lookup --json} print valid JSON for any body: the body as UTF-8 text when
 *     it is valid UTF-8, otherwise base64, with the encoding named ({@code "bodyEncoding":"utf-8"} or
 *     {@code "base64"}); a binary body is never mangled.</li>
 * <li>{@code produce --json} that fails part-way ends with a JSON summary carrying the acknowledged count and the
 *     error, and exits non-zero.</li>
 * </ul>
 */
class CliOutputTest {

    /** Not valid UTF-8: 0xff and 0xfe never occur in it, and 0x80 is a lone continuation byte. */
    private static final byte[] BINARY = {(byte) 0xff, (byte) 0xfe, 0x00, (byte) 0x80};
    private static final String TEXT = "héllo \"wörld\"\n\t\u0001 ✓ \uD83D\uDE00";

    @TempDir
    Path dir;

    private static StoreConfig smallConfig() {
        return StoreConfig.builder().segmentSizeBytes(64 * 1024).maxMessageBytes(16 * 1024)
                .queueIndexEntriesPerFile(1024).keyIndexSlotsPerFile(256).keyIndexEntriesPerFile(4096).build();
    }

    private Path storeWithABinaryAndATextBody() {
        Path store = dir.resolve("store");
        try (Store s = Store.open(store, smallConfig())) {
            s.append("t", 0, Message.builder().keys("k").body(BINARY).build()).join();
            s.append("t", 0, Message.builder().keys("k").body(TEXT.getBytes(StandardCharsets.UTF_8)).build()).join();
        }
        return store;
    }

    /** Runs the CLI and returns its stdout's raw bytes, which must be valid UTF-8. */
    private static List<Map<String, Object>> jsonLines(String... args) {
        ByteArrayOutputStream raw = new ByteArrayOutputStream();
        CliRun run = CliRun.run(new ByteArrayInputStream(new byte[0]), raw, args);
        assertThat(run.exit()).as(run.err()).isZero();
        String out;
        try {
            out = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(raw.toByteArray()))
                    .toString();
        } catch (CharacterCodingException e) {
            throw new AssertionError("stdout is not valid UTF-8", e);
        }
        List<Map<String, Object>> objects = new ArrayList<>();
        out.lines().forEach(line -> objects.add(StrictJson.parseObject(line)));
        return objects;
    }

    /** @return the body the JSON object carries, decoded as its "bodyEncoding" says */
    private static byte[] body(Map<String, Object> message) {
        assertThat(message).containsKeys("body", "bodyEncoding");
        String body = (String) message.get("body");
        return switch ((String) message.get("bodyEncoding")) {
            case "utf-8" -> body.getBytes(StandardCharsets.UTF_8);
            case "base64" -> Base64.getDecoder().decode(body);
            default -> throw new AssertionError("unknown bodyEncoding " + message.get("bodyEncoding"));
        };
    }

    @Test
    void consumeJsonCarriesABinaryBodyAsBase64AndATextBodyAsText() {
        Path store = storeWithABinaryAndATextBody();

        List<Map<String, Object>> messages = jsonLines("consume", "--dir", store.toString(), "--topic", "t",
                "--queue", "0", "--json");

        assertThat(messages).hasSize(2);
        assertThat(messages.get(0)).containsEntry("offset", 0L).containsEntry("bodyEncoding", "base64")
                .containsEntry("body", "//4AgA==");
        assertThat(body(messages.get(0))).containsExactly(BINARY);
        assertThat(messages.get(1)).containsEntry("offset", 1L).containsEntry("bodyEncoding", "utf-8")
                .containsEntry("body", TEXT);
        assertThat(body(messages.get(1))).containsExactly(TEXT.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void lookupJsonCarriesABinaryBodyAsBase64AndATextBodyAsText() {
        Path store = storeWithABinaryAndATextBody();

        List<Map<String, Object>> messages = jsonLines("lookup", "--dir", store.toString(), "--topic", "t", "--key",
                "k", "--json");

        assertThat(messages).hasSize(2);
        Map<String, Object> binary = messages.stream().filter(m -> m.get("offset").equals(0L)).findFirst().orElseThrow();
        Map<String, Object> text = messages.stream().filter(m -> m.get("offset").equals(1L)).findFirst().orElseThrow();
        assertThat(body(binary)).containsExactly(BINARY);
        assertThat(body(text)).containsExactly(TEXT.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * A stdin line too large for the store (over {@code maxMessageBytes}, a quarter of a 64 KiB segment) after
     * three good ones: the three are acknowledged, then the append of the fourth throws.
     */
    @Test
    void produceJsonReportsTheAcknowledgedCountWhenAnAppendIsRejectedPartWay() {
        String store = dir.resolve("store").toString();
        String stdin = "one\ntwo\nthree\n" + "x".repeat(20_000) + "\nfive\n";

        CliRun run = CliRun.run(stdin, "produce", "--dir", store, "--topic", "t", "--segment-size", "65536",
                "--json");

        assertThat(run.exit()).as("exit code").isNotZero();
        List<String> lines = run.out().lines().toList();
        assertThat(lines).as("stdout (exit %d, stderr: %s)", run.exit(), run.err()).isNotEmpty();
        Map<String, Object> summary = StrictJson.parseObject(lines.getLast());
        assertThat(summary).containsEntry("event", "summary").containsEntry("acknowledged", 3L).containsKey("error");
        try (Store s = Store.open(Path.of(store), StoreConfig.defaults())) {
            assertThat(s.maxOffset("t", 0)).isEqualTo(3);
        }
    }

    /**
     * The store fails mid-run: once the store is open, a directory appears at the third segment's name (as an
     * I/O error would stop its creation), so the append that needs it fails and the store turns read-only. The
     * summary must still say how many messages were acknowledged, and that number must be what the store holds.
     */
    @Test
    void produceJsonReportsTheAcknowledgedCountWhenTheStoreFailsPartWay() throws IOException {
        Path store = dir.resolve("store");
        assertThat(CliRun.run("first\n", "produce", "--dir", store.toString(), "--topic", "t", "--segment-size",
                "65536").exit()).isZero();
        Path obstruction = store.resolve("log").resolve(String.format("%020d", 2 * 65536));
        String lines5000 = ("x".repeat(99) + "\n").repeat(5000);
        InputStream stdin = new SequenceInputStream(new InputStream() {
            @Override
            public int read() throws IOException {
                Files.createDirectories(obstruction); // read first, after the store opened
                return -1;
            }
        }, new ByteArrayInputStream(lines5000.getBytes(StandardCharsets.US_ASCII)));

        CliRun run = CliRun.run(stdin, null, "produce", "--dir", store.toString(), "--topic", "t", "--json");

        assertThat(run.exit()).as("exit code").isNotZero();
        List<String> lines = run.out().lines().toList();
        assertThat(lines).as("stdout (exit %d, stderr: %s)", run.exit(), run.err()).isNotEmpty();
        Map<String, Object> summary = StrictJson.parseObject(lines.getLast());
        assertThat(summary).containsEntry("event", "summary").containsKey("error");
        long acknowledged = (Long) summary.get("acknowledged");
        assertThat(acknowledged).isBetween(1L, 4999L);
        Files.delete(obstruction);
        try (Store s = Store.open(store, StoreConfig.defaults())) {
            assertThat(s.maxOffset("t", 0)).as("messages stored").isEqualTo(1 + acknowledged);
        }
    }

    /**
     * A strict RFC 8259 parser for one JSON object per line: objects, arrays, strings (escapes checked, no raw
     * control characters, no unpaired surrogates), integers as Long, other numbers as Double, literals.
     */
    static final class StrictJson {
        private final String text;
        private int at;

        private StrictJson(String text) {
            this.text = text;
        }

        @SuppressWarnings("unchecked")
        static Map<String, Object> parseObject(String text) {
            StrictJson parser = new StrictJson(text);
            parser.space();
            Object value = parser.value();
            parser.space();
            if (parser.at != text.length() || !(value instanceof Map)) {
                throw parser.error("one JSON object expected");
            }
            return (Map<String, Object>) value;
        }

        private AssertionError error(String what) {
            return new AssertionError("invalid JSON at " + at + " (" + what + "): " + text);
        }

        private void space() {
            while (at < text.length() && " \t\r\n".indexOf(text.charAt(at)) >= 0) {
                at++;
            }
        }

        private char peek() {
            if (at >= text.length()) {
                throw error("unexpected end");
            }
            return text.charAt(at);
        }

        private void expect(char c) {
            if (peek() != c) {
                throw error("expected '" + c + "'");
            }
            at++;
        }

        private Object value() {
            char c = peek();
            switch (c) {
                case '{' -> {
                    at++;
                    Map<String, Object> object = new LinkedHashMap<>();
                    space();
                    if (peek() == '}') {
                        at++;
                        return object;
                    }
                    while (true) {
                        space();
                        String name = string();
                        space();
                        expect(':');
                        space();
                        if (object.put(name, value()) != null) {
                            throw error("duplicate name " + name);
                        }
                        space();
                        if (peek() == ',') {
                            at++;
                        } else {
                            expect('}');
                            return object;
                        }
                    }
                }
                case '[' -> {
                    at++;
                    List<Object> array = new ArrayList<>();
                    space();
                    if (peek() == ']') {
                        at++;
                        return array;
                    }
                    while (true) {
                        space();
                        array.add(value());
                        space();
                        if (peek() == ',') {
                            at++;
                        } else {
                            expect(']');
                            return array;
                        }
                    }
                }
                case '"' -> {
                    return string();
                }
                default -> {
                    for (String literal : new String[] {"true", "false", "null"}) {
                        if (text.startsWith(literal, at)) {
                            at += literal.length();
                            return literal.equals("null") ? null : Boolean.valueOf(literal);
                        }
                    }
                    return number();
                }
            }
        }

        private Object number() {
            int start = at;
            if (peek() == '-') {
                at++;
            }
            if (peek() == '0') {
                at++;
            } else if (peek() >= '1' && peek() <= '9') {
                digits();
            } else {
                throw error("a value expected");
            }
            boolean integral = true;
            if (at < text.length() && text.charAt(at) == '.') {
                at++;
                integral = false;
                if (!(peek() >= '0' && peek() <= '9')) {
                    throw error("digits after '.' expected");
                }
                digits();
            }
            if (at < text.length() && (text.charAt(at) == 'e' || text.charAt(at) == 'E')) {
                at++;
                integral = false;
                if (peek() == '+' || peek() == '-') {
                    at++;
                }
                if (!(peek() >= '0' && peek() <= '9')) {
                    throw error("exponent digits expected");
                }
                digits();
            }
            String number = text.substring(start, at);
            return integral ? (Object) Long.parseLong(number) : (Object) Double.parseDouble(number);
        }

        private void digits() {
            while (at < text.length() && text.charAt(at) >= '0' && text.charAt(at) <= '9') {
                at++;
            }
        }

        private String string() {
            expect('"');
            StringBuilder out = new StringBuilder();
            while (true) {
                char c = peek();
                at++;
                if (c == '"') {
                    break;
                }
                if (c < 0x20) {
                    throw error("raw control character in a string");
                }
                if (c != '\\') {
                    out.append(c);
                    continue;
                }
                char e = peek();
                at++;
                switch (e) {
                    case '"', '\\', '/' -> out.append(e);
                    case 'b' -> out.append('\b');
                    case 'f' -> out.append('\f');
                    case 'n' -> out.append('\n');
                    case 'r' -> out.append('\r');
                    case 't' -> out.append('\t');
                    case 'u' -> {
                        if (at + 4 > text.length()) {
                            throw error("short \\u escape");
                        }
                        try {
                            out.append((char) Integer.parseInt(text.substring(at, at + 4), 16));
                        } catch (NumberFormatException ex) {
                            throw error("bad \\u escape");
                        }
                        at += 4;
                    }
                    default -> throw error("bad escape \\" + e);
                }
            }
            String value = out.toString();
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (Character.isHighSurrogate(c) && i + 1 < value.length()
                        && Character.isLowSurrogate(value.charAt(i + 1))) {
                    i++;
                } else if (Character.isSurrogate(c)) {
                    throw error("unpaired surrogate in a string");
                }
            }
            return value;
        }
    }
}
