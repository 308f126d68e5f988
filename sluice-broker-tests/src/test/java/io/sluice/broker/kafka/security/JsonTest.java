package io.sluice.broker.kafka.security;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The strict JSON reader: what it takes, and that anything else is a {@link Json.Malformed}, never a crash. */
class JsonTest {

    @Test
    void readsTheValuesOfJson() throws Exception {
        Map<String, Object> object = Json.parseObject(" {\"a\" : [1, -2.5e3, \"x\\u00e9\\n\\\"\\/\"], \"b\":true,"
                + "\"c\":null, \"d\":{}, \"e\":[] , \"f\":false}\n");
        assertThat(object).containsOnlyKeys("a", "b", "c", "d", "e", "f");
        assertThat(object.get("a")).isEqualTo(List.of(new BigDecimal("1"), new BigDecimal("-2.5e3"),
                "x\u00e9\n\"/"));
        assertThat(object.get("b")).isEqualTo(Boolean.TRUE);
        assertThat(object.get("c")).isSameAs(Json.NULL);
        assertThat(object.get("d")).isEqualTo(Map.of());
        assertThat(object.get("f")).isEqualTo(Boolean.FALSE);
        assertThat(Json.parse("\"\\ud83d\\ude00\"")).isEqualTo("\ud83d\ude00");
        assertThat(Json.parse("0")).isEqualTo(BigDecimal.ZERO);
    }

    @ParameterizedTest
    @ValueSource(strings = {"", " ", "{", "}", "[1,]", "{\"a\":1,}", "{\"a\" 1}", "{a:1}", "{'a':1}", "[1 2]",
        "{\"a\":1}x", "{\"a\":1}{}", "01", "-", "1.", ".5", "1e", "+1", "NaN", "Infinity", "tru", "nul", "\"abc",
        "\"a\\x\"", "\"\\u12\"", "\"\\u12G4\"", "\"tab\there\"", "\"new\nline\"", "[\"a\"", "{\"a\":}",
        "{\"a\":1,\"a\":2}", "{\"\":1,\"\":1}", "1e999999999999", "1e401", "1e-401", "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["
        + "1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]", "\u0000", "[1]\u0000"})
    void refusesWhatIsNotStrictJson(String text) {
        assertThatThrownBy(() -> Json.parse(text)).isInstanceOf(Json.Malformed.class)
                .hasMessageStartingWith("malformed JSON at position");
    }

    @Test
    void refusesDuplicateNamesNamingThem() {
        assertThatThrownBy(() -> Json.parse("{\"sub\":\"alice\",\"sub\":\"mallory\"}"))
                .isInstanceOf(Json.Malformed.class).hasMessageContaining("duplicate member name \"sub\"");
    }

    @Test
    void boundsNestingNumbersAndExponents() throws Exception {
        String deep = "[".repeat(Json.MAX_DEPTH) + "]".repeat(Json.MAX_DEPTH);
        assertThat(Json.parse(deep)).isInstanceOf(List.class);
        assertThatThrownBy(() -> Json.parse("[" + deep + "]")).isInstanceOf(Json.Malformed.class)
                .hasMessageContaining("nested deeper");
        assertThatThrownBy(() -> Json.parse("[".repeat(100_000))).isInstanceOf(Json.Malformed.class);
        String longest = "9".repeat(Json.MAX_NUMBER_CHARACTERS);
        assertThat(Json.parse(longest)).isEqualTo(new BigDecimal(longest));
        assertThatThrownBy(() -> Json.parse("9" + longest)).isInstanceOf(Json.Malformed.class)
                .hasMessageContaining("longer than");
        assertThat(Json.parse("1e400")).isEqualTo(new BigDecimal("1e400"));
    }

    @Test
    void parseObjectRefusesOtherValues() {
        assertThatThrownBy(() -> Json.parseObject("[1]")).isInstanceOf(Json.Malformed.class)
                .hasMessage("malformed JSON: not a JSON object");
    }

    /** Random damage to a valid document: each result is a value or a Malformed, nothing else. */
    @Test
    void damagedDocumentsAreRefusedOrRead() {
        long seed = Long.getLong("sluice.json.seed", System.nanoTime());
        System.out.println("JsonTest seed " + seed + " (-Dsluice.json.seed=" + seed + " to run it again)");
        Random random = new Random(seed);
        String valid = "{\"sub\":\"alice\",\"aud\":[\"a\",\"b\"],\"exp\":1796613175,\"scope\":\"read write\","
                + "\"x\":{\"y\":[true,false,null,-1.5e-3,\"\\u00e9\\\\\"]}}";
        String alphabet = "{}[]\",:\\0123456789.eE+-tfnul \t\nabc\u0000\u00e9";
        for (int round = 0; round < 20_000; round++) {
            StringBuilder damaged = new StringBuilder(valid);
            int edits = 1 + random.nextInt(4);
            for (int i = 0; i < edits && !damaged.isEmpty(); i++) {
                int at = random.nextInt(damaged.length());
                switch (random.nextInt(3)) {
                    case 0 -> damaged.deleteCharAt(at);
                    case 1 -> damaged.insert(at, alphabet.charAt(random.nextInt(alphabet.length())));
                    default -> damaged.setCharAt(at, alphabet.charAt(random.nextInt(alphabet.length())));
                }
            }
            try {
                Json.parse(damaged.toString());
            } catch (Json.Malformed expected) {
                // refused, as it should be when damaged
            } catch (RuntimeException e) {
                throw new AssertionError("seed " + seed + ", round " + round + ": " + damaged, e);
            }
        }
    }
}
